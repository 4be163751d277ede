/*
 * examples/corpus/d15_clean_hostfunc_pool_pipeline.c: corpus workload (CUDA driver API),
 * CLEAN. A driver-API streaming aggregator: each step a producer stream takes a scratch
 * buffer from the stream-ordered allocator (cuMemAllocAsync on the device's default pool,
 * told in setup to keep its memory with CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), fills and mixes
 * it and records an event; the consumer stream waits on that event with cuStreamWaitEvent,
 * reduces the buffer into the step's slot, returns the scratch with cuMemFreeAsync and copies
 * the slot into a pinned log array with cuMemcpyDtoHAsync; a cuLaunchHostFunc callback on the
 * consumer stream folds the logged value into the host's digest when the stream reaches it
 * (driver API docs: the host function runs in stream order and must make no CUDA call; it
 * makes none). The main thread never waits until the one cuStreamSynchronize at the end.
 *   d15_clean_hostfunc_pool_pipeline driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, MAX_N = 1 << 20, THREADS = 256, ROUNDS = 256 };

struct log_state {
	const unsigned long long *values; /* pinned, one slot per step */
	unsigned long long digest;
	int entries;
};

struct log_entry {
	struct log_state *log;
	int step;
};

/* runs on the driver's thread in consumer-stream order; no CUDA call */
static void CUDA_CB log_step(void *arg)
{
	struct log_entry *e = (struct log_entry *)arg;
	e->log->digest = e->log->digest * 1000003u + e->log->values[e->step];
	e->log->entries++;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction fill_hash, mix_rounds, sum_into;
	CUdevice dev;
	CUmemoryPool pool;
	cuuint64_t keep = ~(cuuint64_t)0;
	CUstream producer, consumer;
	CUevent filled[STEPS];
	CUdeviceptr d_slots;
	unsigned long long *h_log;
	struct log_state log = {0, 0, 0};
	struct log_entry entries[STEPS];
	int rounds = ROUNDS;

	DCHECK(cuModuleGetFunction(&fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuCtxGetDevice(&dev));
	DCHECK(cuDeviceGetDefaultMemPool(&pool, dev));
	DCHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
	DCHECK(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < STEPS; k++)
		DCHECK(cuEventCreate(&filled[k], CU_EVENT_DISABLE_TIMING));
	DCHECK(cuMemAlloc(&d_slots, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_log, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemsetD32Async(d_slots, 0, STEPS * 2, consumer));
	log.values = h_log;

	for (int step = 0; step < STEPS; step++) {
		int n = MAX_N / 2 + (step * 7919) % (MAX_N / 2);
		CUdeviceptr scratch, slot = d_slots + (size_t)step * sizeof(unsigned long long);
		DCHECK(cuMemAllocAsync(&scratch, (size_t)n * sizeof(uint32_t), producer)); // SYNCSPY-CLEAN: stream-ordered, served by the pool
		void *fill_args[] = {&scratch, &n, &step};
		DCHECK(cuLaunchKernel(fill_hash, (n + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, producer, fill_args, NULL));
		void *mix_args[] = {&scratch, &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, (n + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, producer, mix_args, NULL));
		DCHECK(cuEventRecord(filled[step], producer));
		DCHECK(cuStreamWaitEvent(consumer, filled[step], 0));
		void *sum_args[] = {&scratch, &n, &slot};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, consumer, sum_args, NULL));
		DCHECK(cuMemFreeAsync(scratch, consumer)); // SYNCSPY-CLEAN: stream-ordered free, back to the pool
		DCHECK(cuMemcpyDtoHAsync(&h_log[step], slot, sizeof(unsigned long long), consumer)); // SYNCSPY-CLEAN: async copy into pinned memory
		entries[step].log = &log;
		entries[step].step = step;
		DCHECK(cuLaunchHostFunc(consumer, log_step, &entries[step]));
	}

	DCHECK(cuStreamSynchronize(consumer)); // SYNCSPY-CLEAN: final read, once
	if (log.entries != STEPS) {
		fprintf(stderr, "d15: %d log entries, want %d\n", log.entries, STEPS);
		return 1;
	}
	for (int k = 0; k < STEPS; k++)
		DCHECK(cuEventDestroy(filled[k]));
	DCHECK(cuMemFree(d_slots)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_log)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(producer));
	DCHECK(cuStreamDestroy(consumer));
	driver_teardown(module);
	printf("d15_clean_hostfunc_pool_pipeline: steps=%d checksum=%llu result=OK\n", STEPS, log.digest);
	return 0;
}
