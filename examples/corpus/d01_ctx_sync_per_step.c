/*
 * examples/corpus/d01_ctx_sync_per_step.c: corpus workload (CUDA driver API, -lcuda). A hashing
 * job written against the driver API, as a JIT or a framework backend would be: each step
 * launches the mixing kernel on a stream and then calls cuCtxSynchronize, waiting for the whole
 * context, before queuing the next step.
 * Planted: cuCtxSynchronize every step.
 * Clean: setup allocation and upload, the final read.
 *   d01_ctx_sync_per_step driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, N = 1 << 20, THREADS = 256 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix, sum_into;
	CUstream s;
	CUdeviceptr d_x, d_acc;
	uint32_t *host = (uint32_t *)malloc(N * sizeof(uint32_t));
	unsigned long long acc = 0;
	int n = N;

	DCHECK(cuModuleGetFunction(&mix, module, "mix"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < N; i++)
		host[i] = (uint32_t)i * 2654435761u;
	DCHECK(cuMemAlloc(&d_x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(d_x, host, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup upload
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));

	for (int step = 0; step < STEPS; step++) {
		void *mix_args[] = {&d_x, &n, &step};
		DCHECK(cuLaunchKernel(mix, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
		void *sum_args[] = {&d_x, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		DCHECK(cuCtxSynchronize()); // SYNCSPY-PROBLEM: waits for the whole context every step
	}

	DCHECK(cuMemcpyDtoH(&acc, d_acc, sizeof acc)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(host);
	printf("d01_ctx_sync_per_step: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
