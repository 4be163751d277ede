/*
 * examples/corpus/d09_clean_fork_join_pool.c: corpus workload (CUDA driver API), CLEAN. A
 * driver-API executor that runs each request as a fork/join over two worker streams: the main
 * stream takes the request's scratch buffer from the stream-ordered allocator (cuMemAllocAsync;
 * the device's default pool is told to keep its memory), records a fork event that both worker
 * streams wait on, each worker fills and mixes its half, records a join event, the main stream
 * waits on both joins, reduces, and returns the scratch with cuMemFreeAsync. Requests vary in
 * size; after the first few the pool serves them without the driver and nothing waits on the
 * host until the one final read.
 *   d09_clean_fork_join_pool driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 70, MAX_N = 1 << 21, THREADS = 256, ROUNDS = 128 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction fill_hash, mix_rounds, sum_into;
	CUdevice dev;
	CUmemoryPool pool;
	cuuint64_t keep = ~(cuuint64_t)0;
	CUstream main_s, worker[2];
	CUevent fork, join[2];
	CUdeviceptr d_acc;
	unsigned long long *h_acc;
	int rounds = ROUNDS;

	DCHECK(cuModuleGetFunction(&fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuCtxGetDevice(&dev));
	DCHECK(cuDeviceGetDefaultMemPool(&pool, dev));
	DCHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
	DCHECK(cuStreamCreate(&main_s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	for (int w = 0; w < 2; w++) {
		DCHECK(cuStreamCreate(&worker[w], CU_STREAM_NON_BLOCKING));
		DCHECK(cuEventCreate(&join[w], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemAlloc(&d_acc, sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_acc, sizeof *h_acc)); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof(unsigned long long), main_s));

	for (int step = 0; step < STEPS; step++) {
		int n = MAX_N / 2 + (step * 104729) % (MAX_N / 2);
		int part[2] = {n / 2, n - n / 2};
		CUdeviceptr scratch, half[2];
		DCHECK(cuMemAllocAsync(&scratch, (size_t)n * sizeof(uint32_t), main_s)); // SYNCSPY-CLEAN: stream-ordered, served by the pool
		half[0] = scratch;
		half[1] = scratch + (size_t)part[0] * sizeof(uint32_t);
		DCHECK(cuEventRecord(fork, main_s));
		for (int w = 0; w < 2; w++) {
			int seed = step * 2 + w;
			DCHECK(cuStreamWaitEvent(worker[w], fork, 0));
			void *fill_args[] = {&half[w], &part[w], &seed};
			DCHECK(cuLaunchKernel(fill_hash, (part[w] + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, worker[w], fill_args, NULL));
			void *mix_args[] = {&half[w], &part[w], &step, &rounds};
			DCHECK(cuLaunchKernel(mix_rounds, (part[w] + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, worker[w], mix_args, NULL));
			DCHECK(cuEventRecord(join[w], worker[w]));
			DCHECK(cuStreamWaitEvent(main_s, join[w], 0));
		}
		void *sum_args[] = {&scratch, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, main_s, sum_args, NULL));
		DCHECK(cuMemFreeAsync(scratch, main_s)); // SYNCSPY-CLEAN: stream-ordered free, no sync
	}

	DCHECK(cuMemcpyDtoHAsync(h_acc, d_acc, sizeof *h_acc, main_s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(main_s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = *h_acc;
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_acc)); // SYNCSPY-CLEAN: teardown
	for (int w = 0; w < 2; w++) {
		DCHECK(cuEventDestroy(join[w]));
		DCHECK(cuStreamDestroy(worker[w]));
	}
	DCHECK(cuEventDestroy(fork));
	DCHECK(cuStreamDestroy(main_s));
	driver_teardown(module);
	printf("d09_clean_fork_join_pool: steps=%d checksum=%llu result=OK\n", STEPS, checksum);
	return 0;
}
