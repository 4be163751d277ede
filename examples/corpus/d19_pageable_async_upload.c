/*
 * examples/corpus/d19_pageable_async_upload.c: corpus workload (CUDA driver API). A batch
 * scorer fed by a host-side decoder: the feeder decodes each batch into one of two host
 * buffers and uploads it with cuMemcpyHtoDAsync on an upload stream into one of two device
 * slots, while a compute stream scores the previous batch; events hand the slots back and
 * forth, and the per-batch score is copied into pinned memory asynchronously. The decoder's
 * two host buffers come from malloc: pageable memory. An "async" copy from pageable memory is
 * staged by the driver through its own pinned buffer and may be synchronous with respect to
 * the host (driver API docs, "API synchronization behavior": for transfers between device
 * memory and pageable host memory the function might be synchronous, and if pageable memory
 * must first be staged to pinned memory the driver may synchronize with the stream), so the
 * upload costs host time every batch and does not overlap the decoding of the next batch.
 * Allocating the two decode buffers with cuMemAllocHost is the fix.
 * Planted: the cuMemcpyHtoDAsync from malloc'd memory in feed_batch(), every batch.
 * Clean: the double buffer's cuEventSynchronize before a host buffer is decoded into again,
 * the per-batch async download of the score into pinned memory, the setup allocations, the
 * final synchronize, teardown.
 *   d19_pageable_async_upload driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { BATCHES = 40, N = 1 << 18, THREADS = 256, ROUNDS = 12, SLOTS = 2 };

/* --- the feeder -------------------------------------------------------------------------- */

struct feeder {
	CUstream upload;
	uint32_t *staging[SLOTS]; /* the decoder's buffers: malloc'd, pageable */
	CUdeviceptr d_in[SLOTS];
	CUevent uploaded[SLOTS], consumed[SLOTS];
};

static uint32_t decoded_value(int batch, int i)
{
	return ((uint32_t)i * 2654435761u) ^ ((uint32_t)batch * 0x85ebca6bu) ^ (uint32_t)(i >> 5);
}

static void decode_batch(uint32_t *dst, int batch)
{
	for (int i = 0; i < N; i++)
		dst[i] = decoded_value(batch, i);
}

static void feeder_init(struct feeder *fd)
{
	DCHECK(cuStreamCreate(&fd->upload, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < SLOTS; k++) {
		fd->staging[k] = (uint32_t *)malloc(N * sizeof(uint32_t));
		DCHECK(cuMemAlloc(&fd->d_in[k], N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuEventCreate(&fd->uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&fd->consumed[k], CU_EVENT_DISABLE_TIMING));
	}
}

/* decode batch `batch` and upload it into its device slot; returns the slot */
static int feed_batch(struct feeder *fd, int batch)
{
	int slot = batch % SLOTS;
	if (batch >= SLOTS) {
		DCHECK(cuEventSynchronize(fd->uploaded[slot])); // SYNCSPY-CLEAN: double buffer: the upload from this host buffer two batches back is done
		DCHECK(cuStreamWaitEvent(fd->upload, fd->consumed[slot], 0));
	}
	decode_batch(fd->staging[slot], batch);
	DCHECK(cuMemcpyHtoDAsync(fd->d_in[slot], fd->staging[slot], N * sizeof(uint32_t), fd->upload)); // SYNCSPY-PROBLEM: async copy from malloc'd (pageable) memory: staged by the driver, no overlap
	DCHECK(cuEventRecord(fd->uploaded[slot], fd->upload));
	return slot;
}

static void feeder_teardown(struct feeder *fd)
{
	for (int k = 0; k < SLOTS; k++) {
		free(fd->staging[k]);
		DCHECK(cuMemFree(fd->d_in[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(fd->uploaded[k]));
		DCHECK(cuEventDestroy(fd->consumed[k]));
	}
	DCHECK(cuStreamDestroy(fd->upload));
}

/* --- the scorer -------------------------------------------------------------------------- */

struct scorer {
	CUstream compute;
	CUfunction mix_rounds, sum_into;
	CUdeviceptr d_scores;
	unsigned long long *h_scores; /* pinned */
};

static void score_batch(struct scorer *sc, struct feeder *fd, int slot, int batch)
{
	int n = N, rounds = ROUNDS;
	CUdeviceptr score = sc->d_scores + (size_t)batch * sizeof(unsigned long long);
	void *mix_args[] = {&fd->d_in[slot], &n, &batch, &rounds};
	void *sum_args[] = {&fd->d_in[slot], &n, &score};
	DCHECK(cuStreamWaitEvent(sc->compute, fd->uploaded[slot], 0));
	DCHECK(cuLaunchKernel(sc->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, sc->compute, mix_args, NULL));
	DCHECK(cuLaunchKernel(sc->sum_into, 128, 1, 1, THREADS, 1, 1, 0, sc->compute, sum_args, NULL));
	DCHECK(cuEventRecord(fd->consumed[slot], sc->compute));
	DCHECK(cuMemcpyDtoHAsync(&sc->h_scores[batch], score, sizeof(unsigned long long), sc->compute)); // SYNCSPY-CLEAN: async download into pinned memory
}

static unsigned long long reference_score(int batch)
{
	unsigned long long sum = 0;
	for (int i = 0; i < N; i++) {
		uint32_t v = decoded_value(batch, i) ^ ((uint32_t)batch * 0x9e3779b9u);
		for (int r = 0; r < ROUNDS; r++)
			v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
		sum += v >> 8;
	}
	return sum;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct feeder fd;
	struct scorer sc;

	DCHECK(cuModuleGetFunction(&sc.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sc.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&sc.compute, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&sc.d_scores, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&sc.h_scores, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemsetD32Async(sc.d_scores, 0, BATCHES * 2, sc.compute));
	feeder_init(&fd);

	for (int batch = 0; batch < BATCHES; batch++) {
		int slot = feed_batch(&fd, batch);
		score_batch(&sc, &fd, slot, batch);
	}

	DCHECK(cuStreamSynchronize(sc.compute)); // SYNCSPY-CLEAN: final read, once
	unsigned long long checksum = 0;
	for (int batch = 0; batch < BATCHES; batch++) {
		unsigned long long want = reference_score(batch);
		if (sc.h_scores[batch] != want) {
			fprintf(stderr, "d19: batch %d score = %llu, want %llu\n", batch, sc.h_scores[batch], want);
			return 1;
		}
		checksum = checksum * 1000003u + sc.h_scores[batch];
	}
	feeder_teardown(&fd);
	DCHECK(cuMemFree(sc.d_scores)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(sc.h_scores)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(sc.compute));
	driver_teardown(module);
	printf("d19_pageable_async_upload: steps=%d checksum=%llu result=OK\n", BATCHES, checksum);
	return 0;
}
