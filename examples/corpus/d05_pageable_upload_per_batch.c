/*
 * examples/corpus/d05_pageable_upload_per_batch.c: corpus workload (CUDA driver API). An
 * ingest loop of a driver-API backend: the host decodes each batch into a malloc'd buffer and
 * uploads it with cuMemcpyHtoD, then queues the batch's kernels on its stream (a blocking
 * stream, so the copy on the legacy stream is ordered with them). A synchronous copy from
 * pageable memory first waits for the stream's earlier work, the previous batch's kernels, and
 * is staged through the driver's pinned buffer: the host waits for the GPU every batch and the
 * upload never overlaps the compute.
 * Planted: the per-batch cuMemcpyHtoD from pageable memory (pinned buffers and
 * cuMemcpyHtoDAsync on a copy stream would overlap it, as d03 does).
 * Clean: setup allocations, the final read, teardown.
 *   d05_pageable_upload_per_batch driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 50, N = 1 << 20, THREADS = 256, ROUNDS = 1024 };

/* the host's share: "decode" batch b (a cheap deterministic expansion) */
static void decode_batch(uint32_t *out, int b)
{
	uint32_t base = (uint32_t)b * 40503u;
	for (int i = 0; i < N; i++)
		out[i] = (uint32_t)i * 2654435761u + base;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix_rounds, sum_into;
	CUstream s;
	CUdeviceptr d_in, d_acc;
	uint32_t *batch = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long acc = 0;
	int n = N, rounds = ROUNDS;

	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
	DCHECK(cuMemAlloc(&d_in, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));

	for (int step = 0; step < STEPS; step++) {
		decode_batch(batch, step);
		DCHECK(cuMemcpyHtoD(d_in, batch, (size_t)N * sizeof(uint32_t))); // SYNCSPY-PROBLEM: synchronous pageable upload waits for the previous batch
		void *mix_args[] = {&d_in, &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
		void *sum_args[] = {&d_in, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
	}

	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_in)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(batch);
	printf("d05_pageable_upload_per_batch: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
