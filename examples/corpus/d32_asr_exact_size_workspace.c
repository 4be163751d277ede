/*
 * examples/corpus/d32_asr_exact_size_workspace.c: corpus workload (CUDA driver API). The feature
 * front end of a speech recognizer's batch server: every batch packs a different number of
 * utterances, so its frame count (and the feature workspace it needs, 1M to 2.5M frames of one
 * word) changes from batch to batch. A kernel expands the batch's audio into the workspace,
 * another applies the filterbank rounds in place, and a reduction adds the batch's frame energy
 * to its slot. The workspace comes from the backend's workspace cache, workspace_get(), which
 * keeps one buffer but matches requests by exact size: whenever the size differs from the
 * cached one (every batch here) it frees the buffer with cuMemFree and allocates a new one with
 * cuMemAlloc. cuMemFree "may perform implicit synchronization" for memory from cuMemAlloc
 * (driver API reference, cuMemFree), and a device allocation keeps commands of different
 * streams from overlapping (CUDA programming guide, implicit synchronization): every batch
 * drains the GPU before the next one can be queued, and pays an allocation besides. A cache that
 * only grows (d35), or one buffer of the largest batch size, would allocate once.
 * Planted: the cuMemFree and the cuMemAlloc in workspace_get(), every batch (one problem, two
 * lines).
 * Clean: the setup allocation and the zeroing wait, the final wait and read, teardown.
 *   d32_asr_exact_size_workspace driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { BATCHES = 60, MIN_FRAMES = 1 << 20, SPREAD = 3 << 19, THREADS = 256, ROUNDS = 64, SUM_BLOCKS = 128 };

struct workspace {
	CUdeviceptr ptr;
	size_t bytes;
};

struct frontend {
	CUfunction fill_hash, mix_rounds, sum_into;
	CUstream s;
	struct workspace ws;
	CUdeviceptr d_energy;
};

/* the batch's frame count: the utterances packed into it, a multiple of the block size */
static int batch_frames(int b)
{
	uint32_t h = (uint32_t)b * 2654435761u;
	h ^= h >> 15;
	return MIN_FRAMES + (int)((h * 40503u >> 8) % (SPREAD / THREADS)) * THREADS;
}

static uint32_t frame_host(int b, int i)
{
	uint32_t v = ((uint32_t)i * 2654435761u) ^ ((uint32_t)b * 40503u);
	v ^= (uint32_t)b * 0x9e3779b9u;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- the backend's workspace cache --------------------------------------------------------- */

static CUdeviceptr workspace_get(struct workspace *w, size_t bytes)
{
	if (bytes != w->bytes) {
		if (w->ptr)
			DCHECK(cuMemFree(w->ptr)); // SYNCSPY-PROBLEM: the exact-size cache frees its buffer whenever the size changes: every batch
		DCHECK(cuMemAlloc(&w->ptr, bytes)); // SYNCSPY-PROBLEM: and allocates the new size, every batch
		w->bytes = bytes;
	}
	return w->ptr;
}

static void run_batch(struct frontend *fe, int b)
{
	int n = batch_frames(b), rounds = ROUNDS;
	CUdeviceptr work = workspace_get(&fe->ws, (size_t)n * sizeof(uint32_t));
	CUdeviceptr slot = fe->d_energy + (size_t)b * sizeof(unsigned long long);
	void *fill_args[] = {&work, &n, &b};
	void *mix_args[] = {&work, &n, &b, &rounds};
	void *sum_args[] = {&work, &n, &slot};
	DCHECK(cuLaunchKernel(fe->fill_hash, n / THREADS, 1, 1, THREADS, 1, 1, 0, fe->s, fill_args, NULL));
	DCHECK(cuLaunchKernel(fe->mix_rounds, n / THREADS, 1, 1, THREADS, 1, 1, 0, fe->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(fe->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, fe->s, sum_args, NULL));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct frontend fe;
	static unsigned long long h_energy[BATCHES];

	DCHECK(cuModuleGetFunction(&fe.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&fe.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&fe.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&fe.s, CU_STREAM_NON_BLOCKING));
	fe.ws.ptr = 0;
	fe.ws.bytes = 0;
	DCHECK(cuMemAlloc(&fe.d_energy, sizeof h_energy)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(fe.d_energy, 0u, 2 * BATCHES, fe.s));
	DCHECK(cuStreamSynchronize(fe.s)); // SYNCSPY-CLEAN: setup, once

	for (int b = 0; b < BATCHES; b++)
		run_batch(&fe, b);

	DCHECK(cuStreamSynchronize(fe.s)); // SYNCSPY-CLEAN: the one wait, after the last batch
	DCHECK(cuMemcpyDtoH(h_energy, fe.d_energy, sizeof h_energy)); // SYNCSPY-CLEAN: final read

	unsigned long long checksum = 0;
	for (int b = 0; b < BATCHES; b++) {
		if (b == 7 || b == 45) {
			unsigned long long want = 0;
			for (int i = 0; i < batch_frames(b); i++)
				want += frame_host(b, i) >> 8;
			if (h_energy[b] != want) {
				fprintf(stderr, "d32: batch %d energy = %llu, want %llu\n", b, h_energy[b], want);
				return 1;
			}
		}
		checksum = checksum * 1000003u + h_energy[b];
	}

	DCHECK(cuMemFree(fe.ws.ptr)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(fe.d_energy)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(fe.s));
	driver_teardown(module);
	printf("d32_asr_exact_size_workspace: steps=%d checksum=%llu result=OK\n", BATCHES, checksum);
	return 0;
}
