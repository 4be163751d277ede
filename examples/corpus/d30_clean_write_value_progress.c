/*
 * examples/corpus/d30_clean_write_value_progress.c: corpus workload (CUDA driver API), CLEAN.
 * A variant-calling job in a driver-API backend that reports its progress to a job monitor
 * without ever waiting for it: each batch of reads is synthesized, scored and reduced into the
 * batch's slot on one stream, and after it cuStreamWriteValue32 writes the batch's number into a
 * progress word in mapped pinned memory (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP); the
 * host reads the word with a plain volatile load whenever it likes (no CUDA call, no wait).
 * So that a cancel request takes effect within a few batches, the host keeps at most four
 * batches queued: before queueing batch b it calls cuEventSynchronize on the event recorded
 * after batch b-4, which by then has usually finished (a bounded queue, the wait on old work of
 * a ring). One final sync and read.
 * Clean: the stream write of the progress word, the bounded queue's cuEventSynchronize on the
 * batch four back, the setup allocations (the mapped progress word included), the final sync
 * and read, teardown.
 *   d30_clean_write_value_progress driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { BATCHES = 80, N = 1 << 20, THREADS = 256, ROUNDS = 20, SUM_BLOCKS = 128, DEPTH = 4 };

struct job {
	CUfunction fill_hash, mix_rounds, sum_into;
	CUstream s;
	CUdeviceptr d_reads, d_sums, d_progress;
	volatile unsigned int *h_progress;
	CUevent done[DEPTH];
};

static uint32_t score_host(int batch, int i)
{
	uint32_t v = ((uint32_t)i * 2654435761u) ^ ((uint32_t)batch * 40503u);
	v ^= (uint32_t)batch * 0x9e3779b9u;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- the job ------------------------------------------------------------------------------ */

static void queue_batch(struct job *j, int batch)
{
	int n = N, rounds = ROUNDS;
	CUdeviceptr slot = j->d_sums + (size_t)batch * sizeof(unsigned long long);
	void *fill_args[] = {&j->d_reads, &n, &batch};
	void *mix_args[] = {&j->d_reads, &n, &batch, &rounds};
	void *sum_args[] = {&j->d_reads, &n, &slot};
	if (batch >= DEPTH)
		DCHECK(cuEventSynchronize(j->done[batch % DEPTH])); // SYNCSPY-CLEAN: the bounded queue's wait, on the batch four back
	DCHECK(cuLaunchKernel(j->fill_hash, N / THREADS, 1, 1, THREADS, 1, 1, 0, j->s, fill_args, NULL));
	DCHECK(cuLaunchKernel(j->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, j->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(j->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, j->s, sum_args, NULL));
	DCHECK(cuStreamWriteValue32(j->s, j->d_progress, (cuuint32_t)(batch + 1), CU_STREAM_WRITE_VALUE_DEFAULT)); // SYNCSPY-CLEAN: progress written by the stream into mapped memory, no host wait
	DCHECK(cuEventRecord(j->done[batch % DEPTH], j->s));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct job j;
	unsigned long long *h_sums;
	unsigned int seen = 0;

	DCHECK(cuModuleGetFunction(&j.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&j.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&j.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&j.s, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < DEPTH; k++)
		DCHECK(cuEventCreate(&j.done[k], CU_EVENT_DISABLE_TIMING));
	DCHECK(cuMemHostAlloc((void **)&j.h_progress, sizeof(unsigned int), CU_MEMHOSTALLOC_DEVICEMAP)); // SYNCSPY-CLEAN: setup, the mapped progress word
	DCHECK(cuMemHostGetDevicePointer(&j.d_progress, (void *)j.h_progress, 0));
	DCHECK(cuMemAllocHost((void **)&h_sums, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAlloc(&j.d_reads, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&j.d_sums, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	*j.h_progress = 0;
	DCHECK(cuMemsetD32Async(j.d_sums, 0u, 2 * BATCHES, j.s));

	for (int batch = 0; batch < BATCHES; batch++) {
		queue_batch(&j, batch);
		unsigned int p = *j.h_progress; /* the monitor's view: a load, no CUDA call */
		if (p > seen)
			seen = p;
	}

	DCHECK(cuMemcpyDtoHAsync(h_sums, j.d_sums, BATCHES * sizeof(unsigned long long), j.s)); // SYNCSPY-CLEAN: final read of the batch sums
	DCHECK(cuStreamSynchronize(j.s)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	if (*j.h_progress != BATCHES || seen > BATCHES) {
		fprintf(stderr, "d30: progress word %u (seen %u), want %d\n", *j.h_progress, seen, BATCHES);
		return 1;
	}
	unsigned long long checksum = 0;
	for (int batch = 0; batch < BATCHES; batch++) {
		if (batch % 23 == 1) {
			unsigned long long want = 0;
			for (int i = 0; i < N; i++)
				want += score_host(batch, i) >> 8;
			if (h_sums[batch] != want) {
				fprintf(stderr, "d30: batch %d sum = %llu, want %llu\n", batch, h_sums[batch], want);
				return 1;
			}
		}
		checksum = checksum * 1000003u + h_sums[batch];
	}

	for (int k = 0; k < DEPTH; k++)
		DCHECK(cuEventDestroy(j.done[k]));
	DCHECK(cuMemFree(j.d_reads)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(j.d_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost((void *)j.h_progress)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(j.s));
	driver_teardown(module);
	printf("d30_clean_write_value_progress: steps=%d checksum=%llu result=OK\n", BATCHES, checksum);
	return 0;
}
