/*
 * examples/corpus/d02_procaddress_readback.c: corpus workload (CUDA driver API). A plugin-style
 * backend that looks the driver functions of its step loop up with cuGetProcAddress at start
 * (as cuBLAS, torch's c10 and JITs do), then runs a step loop through the function pointers:
 * launch, then a blocking cuMemcpyDtoH of a per-step statistic into pageable memory.
 * Planted: the blocking cuMemcpyDtoH (through the looked-up pointer) every step.
 * Clean: setup allocation and upload, teardown.
 *   d02_procaddress_readback driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, N = 1 << 20, THREADS = 256 };

/* The driver table this backend uses; filled by cuGetProcAddress only. */
static struct {
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*memcpy_htod)(CUdeviceptr, const void *, size_t);
	CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*memset_async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, CUstream, void **, void **);
} drv;

static void lookup(const char *name, void **fn)
{
	CUdriverProcAddressQueryResult found;
	DCHECK(cuGetProcAddress(name, fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
	if (found != CU_GET_PROC_ADDRESS_SUCCESS || !*fn) {
		fprintf(stderr, "d02_procaddress_readback: no driver function %s\n", name);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix, sum_into;
	CUdeviceptr d_x, d_acc;
	unsigned long long digest = 0, stat;
	uint32_t *host = (uint32_t *)malloc(N * sizeof(uint32_t));
	int n = N;

	lookup("cuMemAlloc", (void **)&drv.mem_alloc);
	lookup("cuMemFree", (void **)&drv.mem_free);
	lookup("cuMemcpyHtoD", (void **)&drv.memcpy_htod);
	lookup("cuMemcpyDtoH", (void **)&drv.memcpy_dtoh);
	lookup("cuMemsetD8Async", (void **)&drv.memset_async);
	lookup("cuLaunchKernel", (void **)&drv.launch);
	DCHECK(cuModuleGetFunction(&mix, module, "mix"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));

	for (int i = 0; i < N; i++)
		host[i] = (uint32_t)(i * 40503u);
	DCHECK(drv.mem_alloc(&d_x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(drv.mem_alloc(&d_acc, sizeof stat)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(drv.memcpy_htod(d_x, host, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		void *mix_args[] = {&d_x, &n, &step};
		void *sum_args[] = {&d_x, &n, &d_acc};
		DCHECK(drv.memset_async(d_acc, 0, sizeof stat, NULL));
		DCHECK(drv.launch(mix, N / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, mix_args, NULL));
		DCHECK(drv.launch(sum_into, 128, 1, 1, THREADS, 1, 1, 0, NULL, sum_args, NULL));
		DCHECK(drv.memcpy_dtoh(&stat, d_acc, sizeof stat)); // SYNCSPY-PROBLEM: blocking read of the statistic every step
		digest = digest * 1000003 + stat;
	}

	DCHECK(drv.mem_free(d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(drv.mem_free(d_acc)); // SYNCSPY-CLEAN: teardown
	driver_teardown(module);
	free(host);
	printf("d02_procaddress_readback: steps=%d checksum=%llu result=OK\n", STEPS, digest);
	return 0;
}
