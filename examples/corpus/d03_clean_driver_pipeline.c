/*
 * examples/corpus/d03_clean_driver_pipeline.c: corpus workload (CUDA driver API), CLEAN. A
 * driver-API streaming job done right: pinned host memory from cuMemAllocHost, per-step uploads
 * with cuMemcpyHtoDAsync on an upload stream, the compute stream ordered after them with
 * cuStreamWaitEvent, each step's statistic copied asynchronously into its own slot of a pinned
 * array; the host synchronizes once, after the loop, and reads all statistics then.
 *   d03_clean_driver_pipeline driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 64, N = 1 << 19, THREADS = 256 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix, sum_into;
	CUstream upload, compute;
	CUevent uploaded, consumed;
	CUdeviceptr d_x, d_stats;
	uint32_t *h_src;
	unsigned long long *h_stats, digest = 0;
	int n = N;

	DCHECK(cuModuleGetFunction(&mix, module, "mix"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&upload, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&compute, CU_STREAM_NON_BLOCKING));
	DCHECK(cuEventCreate(&uploaded, CU_EVENT_DISABLE_TIMING));
	DCHECK(cuEventCreate(&consumed, CU_EVENT_DISABLE_TIMING));
	DCHECK(cuMemAllocHost((void **)&h_src, (size_t)N * sizeof(uint32_t) * 4)); // SYNCSPY-CLEAN: setup pinned source
	DCHECK(cuMemAllocHost((void **)&h_stats, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned results
	DCHECK(cuMemAlloc(&d_x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_stats, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	for (int i = 0; i < N * 4; i++)
		h_src[i] = (uint32_t)i * 747796405u;
	DCHECK(cuMemsetD8Async(d_stats, 0, STEPS * sizeof(unsigned long long), compute));
	DCHECK(cuEventRecord(consumed, compute));

	for (int step = 0; step < STEPS; step++) {
		CUdeviceptr stat = d_stats + step * sizeof(unsigned long long);
		DCHECK(cuStreamWaitEvent(upload, consumed, 0));
		DCHECK(cuMemcpyHtoDAsync(d_x, h_src + (size_t)(step % 4) * N, N * sizeof(uint32_t), upload)); // SYNCSPY-CLEAN: async pinned upload
		DCHECK(cuEventRecord(uploaded, upload));
		DCHECK(cuStreamWaitEvent(compute, uploaded, 0));
		void *mix_args[] = {&d_x, &n, &step};
		DCHECK(cuLaunchKernel(mix, N / THREADS, 1, 1, THREADS, 1, 1, 0, compute, mix_args, NULL));
		void *sum_args[] = {&d_x, &n, &stat};
		DCHECK(cuLaunchKernel(sum_into, 64, 1, 1, THREADS, 1, 1, 0, compute, sum_args, NULL));
		DCHECK(cuEventRecord(consumed, compute));
	}

	DCHECK(cuMemcpyDtoHAsync(h_stats, d_stats, STEPS * sizeof(unsigned long long), compute)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(compute)); // SYNCSPY-CLEAN: final read
	for (int step = 0; step < STEPS; step++)
		digest = digest * 1000003 + h_stats[step];
	DCHECK(cuMemFree(d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_stats)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_src)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_stats)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuEventDestroy(uploaded));
	DCHECK(cuEventDestroy(consumed));
	DCHECK(cuStreamDestroy(upload));
	DCHECK(cuStreamDestroy(compute));
	driver_teardown(module);
	printf("d03_clean_driver_pipeline: steps=%d checksum=%llu result=OK\n", STEPS, digest);
	return 0;
}
