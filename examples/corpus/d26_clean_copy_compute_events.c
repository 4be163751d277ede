/*
 * examples/corpus/d26_clean_copy_compute_events.c: corpus workload (CUDA driver API), clean. A
 * feature-extraction pipeline in a driver-API plugin: the host writes each batch into one of two
 * pinned staging buffers, an upload stream copies it with cuMemcpyHtoDAsync into one of two
 * device buffers, and a compute stream waits for the upload's event (cuStreamWaitEvent), mixes the
 * batch and reduces it into the batch's slot; the upload stream waits on the device for the
 * compute that last used a device buffer, and a cuLaunchHostFunc callback on the compute stream
 * counts finished batches for the plugin's progress report. Before refilling a staging buffer
 * the host waits on the upload two batches back (cuEventSynchronize). One final sync and read.
 * Clean: the uploads from pinned memory, the staging double buffer's cuEventSynchronize, the
 * setup allocations, the final sync and read, teardown.
 *   d26_clean_copy_compute_events driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { BATCHES = 64, N = 1 << 19, THREADS = 256, ROUNDS = 8, BUFS = 2, SUM_BLOCKS = 128 };

struct pipeline {
	CUfunction mix_rounds, sum_into;
	CUstream upload, compute;
	uint32_t *h_stage[BUFS];
	CUdeviceptr d_buf[BUFS], d_sums;
	CUevent uploaded[BUFS], consumed[BUFS];
	volatile int finished; /* written by the callback only */
};

static uint32_t sample(int batch, int i)
{
	uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)batch * 0x9e3779b9u;
	return h ^ (h >> 16);
}

static uint32_t mix_host(uint32_t x, int step)
{
	uint32_t v = x ^ ((uint32_t)step * 0x9e3779b9u);
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

static void CUDA_CB batch_done(void *arg)
{
	struct pipeline *p = (struct pipeline *)arg;
	p->finished = p->finished + 1;
}

/* --- the pipeline ------------------------------------------------------------------------- */

static void stage_batch(struct pipeline *p, int batch)
{
	int b = batch % BUFS;
	if (batch >= BUFS)
		DCHECK(cuEventSynchronize(p->uploaded[b])); // SYNCSPY-CLEAN: the staging double buffer's wait, on the upload two batches back
	for (int i = 0; i < N; i++)
		p->h_stage[b][i] = sample(batch, i);
}

static void submit_batch(struct pipeline *p, int batch)
{
	int b = batch % BUFS, n = N, rounds = ROUNDS;
	CUdeviceptr slot = p->d_sums + (size_t)batch * sizeof(unsigned long long);
	void *mix_args[] = {&p->d_buf[b], &n, &batch, &rounds};
	void *sum_args[] = {&p->d_buf[b], &n, &slot};

	DCHECK(cuStreamWaitEvent(p->upload, p->consumed[b], 0));
	DCHECK(cuMemcpyHtoDAsync(p->d_buf[b], p->h_stage[b], (size_t)N * sizeof(uint32_t), p->upload)); // SYNCSPY-CLEAN: async upload from pinned staging on the upload stream
	DCHECK(cuEventRecord(p->uploaded[b], p->upload));
	DCHECK(cuStreamWaitEvent(p->compute, p->uploaded[b], 0));
	DCHECK(cuLaunchKernel(p->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, p->compute, mix_args, NULL));
	DCHECK(cuLaunchKernel(p->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, p->compute, sum_args, NULL));
	DCHECK(cuEventRecord(p->consumed[b], p->compute));
	DCHECK(cuLaunchHostFunc(p->compute, batch_done, p));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct pipeline p;
	unsigned long long h_sums[BATCHES];

	DCHECK(cuModuleGetFunction(&p.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&p.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&p.upload, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&p.compute, CU_STREAM_NON_BLOCKING));
	for (int b = 0; b < BUFS; b++) {
		DCHECK(cuMemAllocHost((void **)&p.h_stage[b], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
		DCHECK(cuMemAlloc(&p.d_buf[b], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuEventCreate(&p.uploaded[b], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&p.consumed[b], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemAlloc(&p.d_sums, sizeof h_sums)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(p.d_sums, 0u, 2 * BATCHES, p.compute));
	p.finished = 0;

	for (int batch = 0; batch < BATCHES; batch++) {
		stage_batch(&p, batch);
		submit_batch(&p, batch);
	}

	DCHECK(cuMemcpyDtoHAsync(h_sums, p.d_sums, sizeof h_sums, p.compute)); // SYNCSPY-CLEAN: final read of the batch sums
	DCHECK(cuStreamSynchronize(p.compute)); // SYNCSPY-CLEAN: the one wait for the results, after the loop
	DCHECK(cuStreamSynchronize(p.upload)); // SYNCSPY-CLEAN: teardown, the upload stream drained

	if (p.finished != BATCHES) {
		fprintf(stderr, "d26: %d batches reported finished, want %d\n", p.finished, BATCHES);
		return 1;
	}
	unsigned long long checksum = 0;
	for (int batch = 0; batch < BATCHES; batch++) {
		unsigned long long want = 0;
		for (int i = 0; i < N; i++)
			want += mix_host(sample(batch, i), batch) >> 8;
		if (h_sums[batch] != want) {
			fprintf(stderr, "d26: batch %d sum = %llu, want %llu\n", batch, h_sums[batch], want);
			return 1;
		}
		checksum = checksum * 1000003u + want;
	}

	for (int b = 0; b < BUFS; b++) {
		DCHECK(cuEventDestroy(p.uploaded[b]));
		DCHECK(cuEventDestroy(p.consumed[b]));
		DCHECK(cuMemFreeHost(p.h_stage[b])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(p.d_buf[b])); // SYNCSPY-CLEAN: teardown
	}
	DCHECK(cuMemFree(p.d_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(p.upload));
	DCHECK(cuStreamDestroy(p.compute));
	driver_teardown(module);
	printf("d26_clean_copy_compute_events: steps=%d checksum=%llu result=OK\n", BATCHES, checksum);
	return 0;
}
