/*
 * examples/corpus/d24_pageable_async_download.c: corpus workload (CUDA driver API). A
 * simulation with a trajectory recorder: every step a mixing kernel advances the state, and the
 * recorder's record_snapshot() queues a cuMemcpyDtoHAsync of the observed quarter of the state
 * into one of two host snapshot buffers, records an event, and the host digests the previous
 * step's snapshot after waiting on its event (a double buffer, meant to overlap the digest with
 * the next step). The snapshot buffers come from malloc: pageable memory. For transfers between
 * device memory and pageable host memory the asynchronous copy "might be synchronous with
 * respect to host" (driver API docs, "API synchronization behavior"; for device-to-pageable the
 * copy completes before the call returns), so the host waits for the step's kernel and the copy
 * inside the call, every step, and the double buffer overlaps nothing. Snapshot buffers from
 * cuMemAllocHost would make the copy asynchronous.
 * Planted: the cuMemcpyDtoHAsync into malloc'd memory in record_snapshot(), every step.
 * Clean: the double buffer's cuEventSynchronize on the previous step's snapshot, the setup
 * allocations and upload, the final sync and read, teardown.
 *   d24_pageable_async_download driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, N = 1 << 19, SNAP = N / 4, THREADS = 256, ROUNDS = 16, BUFS = 2 };

struct recorder {
	uint32_t *snap[BUFS]; /* malloc'd */
	CUevent taken[BUFS];
	unsigned long long digest;
};

static uint32_t mix_host(uint32_t x, int step)
{
	uint32_t v = x ^ ((uint32_t)step * 0x9e3779b9u);
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- the trajectory recorder ------------------------------------------------------------- */

static void record_snapshot(struct recorder *rec, CUdeviceptr d_x, int step, CUstream s)
{
	int b = step % BUFS;
	DCHECK(cuMemcpyDtoHAsync(rec->snap[b], d_x, SNAP * sizeof(uint32_t), s)); // SYNCSPY-PROBLEM: async copy into malloc'd (pageable) memory, synchronous in effect, every step
	DCHECK(cuEventRecord(rec->taken[b], s));
}

static void digest_snapshot(struct recorder *rec, int step)
{
	int b = step % BUFS;
	DCHECK(cuEventSynchronize(rec->taken[b])); // SYNCSPY-CLEAN: the double buffer's wait, on the previous step's snapshot
	for (int i = 0; i < SNAP; i++)
		rec->digest = rec->digest * 1000003u + rec->snap[b][i];
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix_rounds;
	CUstream s;
	CUdeviceptr d_x;
	struct recorder rec;
	uint32_t *h_x = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	int n = N, rounds = ROUNDS;

	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int b = 0; b < BUFS; b++) {
		rec.snap[b] = (uint32_t *)malloc(SNAP * sizeof(uint32_t));
		DCHECK(cuEventCreate(&rec.taken[b], CU_EVENT_DISABLE_TIMING));
	}
	rec.digest = 0;
	for (int i = 0; i < N; i++)
		h_x[i] = (uint32_t)i * 2654435761u;
	DCHECK(cuMemAlloc(&d_x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(d_x, h_x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		void *args[] = {&d_x, &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, args, NULL));
		record_snapshot(&rec, d_x, step, s);
		if (step > 0)
			digest_snapshot(&rec, step - 1);
	}
	digest_snapshot(&rec, STEPS - 1);

	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final sync
	DCHECK(cuMemcpyDtoH(h_x, d_x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: final read

	/* the same trajectory on the host */
	unsigned long long want_digest = 0;
	uint32_t *ref = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	for (int i = 0; i < N; i++)
		ref[i] = (uint32_t)i * 2654435761u;
	for (int step = 0; step < STEPS; step++) {
		for (int i = 0; i < N; i++)
			ref[i] = mix_host(ref[i], step);
		for (int i = 0; i < SNAP; i++)
			want_digest = want_digest * 1000003u + ref[i];
	}
	if (rec.digest != want_digest) {
		fprintf(stderr, "d24: snapshot digest = %llu, want %llu\n", rec.digest, want_digest);
		return 1;
	}
	unsigned long long checksum = rec.digest;
	for (int i = 0; i < N; i++) {
		if (h_x[i] != ref[i]) {
			fprintf(stderr, "d24: x[%d] = %u, want %u\n", i, h_x[i], ref[i]);
			return 1;
		}
		checksum = checksum * 1000003u + h_x[i];
	}

	for (int b = 0; b < BUFS; b++) {
		DCHECK(cuEventDestroy(rec.taken[b]));
		free(rec.snap[b]);
	}
	DCHECK(cuMemFree(d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(h_x);
	free(ref);
	printf("d24_pageable_async_download: steps=%d checksum=%llu result=OK\n", STEPS, checksum);
	return 0;
}
