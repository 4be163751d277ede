/*
 * examples/corpus/d04_memalloc_per_step.c: corpus workload (CUDA driver API). A kernel runner
 * that sizes its output per request: each step allocates the output with cuMemAlloc, runs, and
 * releases it with cuMemFree once the request's digest has been folded on the GPU.
 * Planted: cuMemAlloc and cuMemFree every step (cuMemFree waits for the device).
 * Clean: setup allocation, the final read.
 *   d04_memalloc_per_step driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 50, MAX_N = 1 << 20, THREADS = 256 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix, sum_into;
	CUstream s;
	CUdeviceptr d_acc;
	unsigned long long acc = 0;

	DCHECK(cuModuleGetFunction(&mix, module, "mix"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));

	for (int step = 0; step < STEPS; step++) {
		int n = MAX_N / 4 + (step * 104729) % (MAX_N / 4 * 3);
		CUdeviceptr d_out;
		DCHECK(cuMemAlloc(&d_out, n * sizeof(uint32_t))); // SYNCSPY-PROBLEM: output allocated every request
		DCHECK(cuMemsetD32Async(d_out, (unsigned)step, n, s));
		void *mix_args[] = {&d_out, &n, &step};
		DCHECK(cuLaunchKernel(mix, (n + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
		void *sum_args[] = {&d_out, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		DCHECK(cuMemFree(d_out)); // SYNCSPY-PROBLEM: cuMemFree every request waits for the GPU
	}

	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	printf("d04_memalloc_per_step: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
