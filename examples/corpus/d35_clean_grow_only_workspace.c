/*
 * examples/corpus/d35_clean_grow_only_workspace.c: corpus workload (CUDA driver API), CLEAN. The
 * candidate scoring stage of a search engine: every batch of candidate documents is expanded into
 * a token workspace (512K to 3M tokens of one word: the first batches of the day grow as the
 * traffic ramps up, then they vary below the peak), scored in place, and the batch's score is
 * reduced into its slot, downloaded into a pinned log and published two batches later, after the
 * host waits for that batch's download event. The workspace comes from workspace_reserve(), a
 * grow-only cache: it reallocates only when a batch needs more than it holds, and then grows
 * geometrically (1.5x, whole MiB), so the four growing batches at the start allocate (and free the
 * smaller buffer) and the other 56 reuse the buffer without any call (the fix of d32).
 * Clean: the workspace's growth in the first batches, the per-batch download of the score into
 * the pinned log, the publisher's cuEventSynchronize two batches back, the setup allocations,
 * the final wait, teardown.
 *   d35_clean_grow_only_workspace driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { BATCHES = 60, LAG = 2, PEAK_TOKENS = 3 << 20, THREADS = 256, ROUNDS = 48, SUM_BLOCKS = 128 };

struct workspace {
	CUdeviceptr ptr;
	size_t cap;
	int grown;
};

struct scorer {
	CUfunction fill_hash, mix_rounds, sum_into;
	CUstream s;
	struct workspace ws;
	CUdeviceptr d_scores;
	unsigned long long *h_log; /* pinned, one per batch */
	CUevent logged[LAG];
};

/* the batch's token count: ramps up over the first four batches, then varies below the peak */
static int batch_tokens(int b)
{
	static const int ramp[4] = {1 << 19, 1 << 20, 1 << 21, PEAK_TOKENS};
	if (b < 4)
		return ramp[b];
	uint32_t h = (uint32_t)b * 2654435761u;
	h ^= h >> 13;
	return (1 << 20) + (int)((h * 40503u >> 8) % ((PEAK_TOKENS - (1 << 20)) / THREADS)) * THREADS;
}

static uint32_t token_host(int b, int i)
{
	uint32_t v = ((uint32_t)i * 2654435761u) ^ ((uint32_t)b * 40503u);
	v ^= (uint32_t)b * 0x9e3779b9u;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- the grow-only workspace ---------------------------------------------------------------- */

static CUdeviceptr workspace_reserve(struct workspace *w, size_t bytes)
{
	if (bytes > w->cap) {
		size_t cap = w->cap * 3 / 2 > bytes ? w->cap * 3 / 2 : bytes;
		cap = (cap + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
		if (w->ptr)
			DCHECK(cuMemFree(w->ptr)); // SYNCSPY-CLEAN: grow-only: the smaller buffer goes only while the batches grow (the first batches)
		DCHECK(cuMemAlloc(&w->ptr, cap)); // SYNCSPY-CLEAN: grow-only, geometric: four times in the run, all in the first batches
		w->cap = cap;
		w->grown++;
	}
	return w->ptr;
}

static void score_batch(struct scorer *sc, int b)
{
	int n = batch_tokens(b), rounds = ROUNDS;
	CUdeviceptr work = workspace_reserve(&sc->ws, (size_t)n * sizeof(uint32_t));
	CUdeviceptr slot = sc->d_scores + (size_t)b * sizeof(unsigned long long);
	void *fill_args[] = {&work, &n, &b};
	void *mix_args[] = {&work, &n, &b, &rounds};
	void *sum_args[] = {&work, &n, &slot};
	DCHECK(cuLaunchKernel(sc->fill_hash, n / THREADS, 1, 1, THREADS, 1, 1, 0, sc->s, fill_args, NULL));
	DCHECK(cuLaunchKernel(sc->mix_rounds, n / THREADS, 1, 1, THREADS, 1, 1, 0, sc->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(sc->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, sc->s, sum_args, NULL));
	DCHECK(cuMemcpyDtoHAsync(&sc->h_log[b], slot, sizeof(unsigned long long), sc->s)); // SYNCSPY-CLEAN: the batch's score, async into the pinned log
	DCHECK(cuEventRecord(sc->logged[b % LAG], sc->s));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct scorer sc;
	unsigned long long published = 0;

	DCHECK(cuModuleGetFunction(&sc.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&sc.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sc.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&sc.s, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < LAG; k++)
		DCHECK(cuEventCreate(&sc.logged[k], CU_EVENT_DISABLE_TIMING));
	sc.ws.ptr = 0;
	sc.ws.cap = 0;
	sc.ws.grown = 0;
	DCHECK(cuMemAlloc(&sc.d_scores, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&sc.h_log, BATCHES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned log
	DCHECK(cuMemsetD32Async(sc.d_scores, 0u, 2 * BATCHES, sc.s));

	for (int b = 0; b < BATCHES; b++) {
		if (b >= LAG) {
			DCHECK(cuEventSynchronize(sc.logged[b % LAG])); // SYNCSPY-CLEAN: the publisher, two batches behind: batch b-2's score has landed
			published = published * 1000003u + sc.h_log[b - LAG];
		}
		score_batch(&sc, b);
	}
	DCHECK(cuStreamSynchronize(sc.s)); // SYNCSPY-CLEAN: the one full wait, after the last batch
	for (int b = BATCHES - LAG; b < BATCHES; b++)
		published = published * 1000003u + sc.h_log[b];

	if (sc.ws.grown != 4) {
		fprintf(stderr, "d35: the workspace grew %d times, want 4\n", sc.ws.grown);
		return 1;
	}
	unsigned long long checksum = 0;
	for (int b = 0; b < BATCHES; b++) {
		if (b == 3 || b == 44) {
			unsigned long long want = 0;
			for (int i = 0; i < batch_tokens(b); i++)
				want += token_host(b, i) >> 8;
			if (sc.h_log[b] != want) {
				fprintf(stderr, "d35: batch %d score = %llu, want %llu\n", b, sc.h_log[b], want);
				return 1;
			}
		}
		checksum = checksum * 1000003u + sc.h_log[b];
	}
	if (checksum != published) {
		fprintf(stderr, "d35: published %llu, logged %llu\n", published, checksum);
		return 1;
	}

	DCHECK(cuMemFree(sc.ws.ptr)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sc.d_scores)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(sc.h_log)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < LAG; k++)
		DCHECK(cuEventDestroy(sc.logged[k]));
	DCHECK(cuStreamDestroy(sc.s));
	driver_teardown(module);
	printf("d35_clean_grow_only_workspace: steps=%d checksum=%llu result=OK\n", BATCHES, checksum);
	return 0;
}
