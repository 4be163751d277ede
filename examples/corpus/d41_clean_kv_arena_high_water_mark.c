/*
 * examples/corpus/d41_clean_kv_arena_high_water_mark.c: corpus workload (CUDA driver API), CLEAN.
 * d39's decode worker of a language-model server (8K to 32K prompt tokens a batch, 2 KB of keys
 * and values a token, a prefill and 32 decode steps scoring the cache, the scores downloaded into
 * a pinned reply ring and replied two batches later after the host waits for that batch's
 * download event), its key/value cache in the same growable arena on the driver's virtual memory
 * management (a virtual range reserved once, 2 MB chunks created and mapped behind it as batches
 * need them). The arena keeps what it has mapped, a high-water mark: chunks are created and mapped
 * only when a batch needs more than any batch before it (batches 0 and 1 of this schedule), and
 * the arena is trimmed back to its 8 MB baseline once, when the queue runs dry and the server goes
 * idle, after the last batch (the fix of d39, which trims after every batch). Mapping more of a
 * reserved range does not disturb the kernels using the mapped part, so the growth needs no wait.
 * Clean: the arena's growth in the first two batches (cuMemCreate, with the cuMemMap and
 * cuMemSetAccess beside it), the address reservation and other setup allocations, the per-batch
 * download of the scores into the pinned reply ring, the replier's cuEventSynchronize two batches
 * back, the final wait, the one idle trim after the loop (its stream sync, unmaps and releases),
 * teardown.
 *   d41_clean_kv_arena_high_water_mark driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { BATCHES = 48, ROW_WORDS = 512, MIN_TOKENS = 8192, MAX_TOKENS = 32768, DECODE = 32, THREADS = 256, ATTEND_BLOCKS = 528, LAG = 2, RING = 3, MAX_CHUNKS = 64 };
#define CHUNK_BYTES ((size_t)2 << 20)
#define KEEP_BYTES ((size_t)8 << 20)

struct arena {
	CUdeviceptr base;
	size_t reserved, chunk, mapped;
	int chunks;
	CUmemGenericAllocationHandle handles[MAX_CHUNKS];
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
};

struct worker {
	CUfunction prefill, attend;
	CUstream s;
	struct arena kv;
	CUdeviceptr d_scores;
	unsigned long long *h_reply; /* pinned, RING batches of DECODE scores */
	CUevent replied[RING];
	unsigned long long replies[BATCHES][DECODE];
};

/* the scheduler's batches: prompt tokens of batch b */
static int batch_tokens(int b)
{
	uint32_t h = (uint32_t)(b + 11) * 2654435761u;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return MIN_TOKENS + (int)(h % (uint32_t)(MAX_TOKENS - MIN_TOKENS + 1));
}

/* the kernels kv_prefill and kv_attend_sum, on the host */
static uint32_t kv_host(int i, int batch)
{
	uint32_t v = ((uint32_t)i * 2654435761u) ^ ((uint32_t)batch * 0x85ebca6bu);
	v ^= v >> 13;
	v *= 0xc2b2ae35u;
	return v ^ (v >> 16);
}

static unsigned long long attend_host(int words, int batch, int query_seed)
{
	unsigned long long s = 0;
	for (int i = 0; i < words; i++) {
		uint32_t q = (uint32_t)(i % ROW_WORDS) * 0x9e3779b9u + (uint32_t)query_seed * 0x27d4eb2fu;
		q ^= q >> 15;
		s += (kv_host(i, batch) * (q | 1u)) >> 20;
	}
	return s;
}

/* --- the growable arena ---------------------------------------------------------------------- */

static void arena_init(struct arena *a, CUdevice dev, size_t max_bytes)
{
	size_t gran;
	memset(a, 0, sizeof *a);
	a->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	a->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a->prop.location.id = dev;
	a->access.location = a->prop.location;
	a->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	DCHECK(cuMemGetAllocationGranularity(&gran, &a->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	a->chunk = (CHUNK_BYTES + gran - 1) / gran * gran;
	a->reserved = (max_bytes + a->chunk - 1) / a->chunk * a->chunk;
	if (a->reserved / a->chunk > MAX_CHUNKS) {
		fprintf(stderr, "d41: %zu chunks of %zu bytes, at most %d\n", a->reserved / a->chunk, a->chunk, MAX_CHUNKS);
		exit(1);
	}
	DCHECK(cuMemAddressReserve(&a->base, a->reserved, 0, 0, 0)); // SYNCSPY-CLEAN: setup, the arena's virtual range reserved once
}

/* map physical chunks behind the range until it holds `bytes`; mapped chunks stay mapped */
static void arena_grow(struct arena *a, size_t bytes)
{
	while (a->mapped < bytes) {
		CUmemGenericAllocationHandle h;
		DCHECK(cuMemCreate(&h, a->chunk, &a->prop, 0)); // SYNCSPY-CLEAN: grow-only: a chunk is created only past the high-water mark (batches 0 and 1)
		DCHECK(cuMemMap(a->base + a->mapped, a->chunk, 0, h, 0));
		DCHECK(cuMemSetAccess(a->base + a->mapped, a->chunk, &a->access, 1));
		a->handles[a->chunks++] = h;
		a->mapped += a->chunk;
	}
}

/* give the chunks past `keep` back to the device, for the other service on the GPU: only when
 * the server goes idle */
static void arena_trim(struct arena *a, size_t keep, CUstream s)
{
	if (a->mapped <= keep)
		return;
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: once, when the server goes idle after the last batch (nothing left to drain)
	while (a->mapped > keep) {
		a->mapped -= a->chunk;
		a->chunks--;
		DCHECK(cuMemUnmap(a->base + a->mapped, a->chunk)); // SYNCSPY-CLEAN: the idle trim, once after the loop
		DCHECK(cuMemRelease(a->handles[a->chunks])); // SYNCSPY-CLEAN: the idle trim, once after the loop
	}
}

static void arena_destroy(struct arena *a)
{
	while (a->chunks > 0) {
		a->mapped -= a->chunk;
		a->chunks--;
		DCHECK(cuMemUnmap(a->base + a->mapped, a->chunk)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemRelease(a->handles[a->chunks])); // SYNCSPY-CLEAN: teardown
	}
	DCHECK(cuMemAddressFree(a->base, a->reserved)); // SYNCSPY-CLEAN: teardown
}

/* --- the decode worker ----------------------------------------------------------------------- */

static void serve_batch(struct worker *w, int b)
{
	int words = batch_tokens(b) * ROW_WORDS, row_words = ROW_WORDS;
	arena_grow(&w->kv, (size_t)words * sizeof(uint32_t));
	void *prefill_args[] = {&w->kv.base, &words, &b};
	DCHECK(cuLaunchKernel(w->prefill, (words + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, w->s, prefill_args, NULL));
	for (int d = 0; d < DECODE; d++) {
		int seed = b * DECODE + d;
		CUdeviceptr score = w->d_scores + (size_t)seed * sizeof(unsigned long long);
		void *attend_args[] = {&w->kv.base, &words, &row_words, &seed, &score};
		DCHECK(cuLaunchKernel(w->attend, ATTEND_BLOCKS, 1, 1, THREADS, 1, 1, 0, w->s, attend_args, NULL));
	}
	DCHECK(cuMemcpyDtoHAsync(w->h_reply + (size_t)(b % RING) * DECODE, w->d_scores + (size_t)b * DECODE * sizeof(unsigned long long), DECODE * sizeof(unsigned long long), w->s)); // SYNCSPY-CLEAN: the batch's scores, async into the pinned reply ring
	DCHECK(cuEventRecord(w->replied[b % RING], w->s));
}

static void reply_batch(struct worker *w, int b)
{
	DCHECK(cuEventSynchronize(w->replied[b % RING])); // SYNCSPY-CLEAN: the replier, two batches behind: batch b's scores have landed
	memcpy(w->replies[b], w->h_reply + (size_t)(b % RING) * DECODE, sizeof w->replies[b]);
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUdevice dev;
	static struct worker w;

	DCHECK(cuCtxGetDevice(&dev));
	DCHECK(cuModuleGetFunction(&w.prefill, module, "kv_prefill"));
	DCHECK(cuModuleGetFunction(&w.attend, module, "kv_attend_sum"));
	DCHECK(cuStreamCreate(&w.s, CU_STREAM_NON_BLOCKING));
	arena_init(&w.kv, dev, (size_t)MAX_TOKENS * ROW_WORDS * sizeof(uint32_t));
	arena_grow(&w.kv, KEEP_BYTES);
	DCHECK(cuMemAlloc(&w.d_scores, (size_t)BATCHES * DECODE * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&w.h_reply, (size_t)RING * DECODE * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned reply ring
	DCHECK(cuMemsetD32Async(w.d_scores, 0u, (size_t)BATCHES * DECODE * 2, w.s));
	for (int k = 0; k < RING; k++)
		DCHECK(cuEventCreate(&w.replied[k], CU_EVENT_DISABLE_TIMING));

	for (int b = 0; b < BATCHES; b++) {
		serve_batch(&w, b);
		if (b >= LAG)
			reply_batch(&w, b - LAG);
	}
	DCHECK(cuStreamSynchronize(w.s)); // SYNCSPY-CLEAN: the final wait, after the last batch
	for (int b = BATCHES - LAG; b < BATCHES; b++)
		memcpy(w.replies[b], w.h_reply + (size_t)(b % RING) * DECODE, sizeof w.replies[b]);
	size_t peak = w.kv.mapped;
	arena_trim(&w.kv, KEEP_BYTES, w.s); /* the queue is dry: the server goes idle */

	/* self-check: the first and last decode steps of the first and last batches */
	int checked[2] = {0, BATCHES - 1};
	for (int c = 0; c < 2; c++)
		for (int d = 0; d < DECODE; d += DECODE - 1) {
			int b = checked[c];
			unsigned long long want = attend_host(batch_tokens(b) * ROW_WORDS, b, b * DECODE + d);
			if (w.replies[b][d] != want) {
				fprintf(stderr, "d41: batch %d step %d score = %llu, want %llu\n", b, d, w.replies[b][d], want);
				return 1;
			}
		}
	size_t peak_want = KEEP_BYTES;
	for (int b = 0; b < BATCHES; b++)
		if ((size_t)batch_tokens(b) * ROW_WORDS * sizeof(uint32_t) > peak_want)
			peak_want = (size_t)batch_tokens(b) * ROW_WORDS * sizeof(uint32_t);
	peak_want = (peak_want + w.kv.chunk - 1) / w.kv.chunk * w.kv.chunk;
	if (peak != peak_want || w.kv.mapped > KEEP_BYTES || w.kv.mapped + w.kv.chunk <= KEEP_BYTES) {
		fprintf(stderr, "d41: arena peak %zu, idle %zu bytes\n", peak, w.kv.mapped);
		return 1;
	}
	unsigned long long checksum = 0;
	for (int b = 0; b < BATCHES; b++)
		for (int d = 0; d < DECODE; d++)
			checksum = checksum * 1000003u + w.replies[b][d];

	for (int k = 0; k < RING; k++)
		DCHECK(cuEventDestroy(w.replied[k]));
	arena_destroy(&w.kv);
	DCHECK(cuMemFree(w.d_scores)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(w.h_reply)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(w.s));
	driver_teardown(module);
	printf("d41_clean_kv_arena_high_water_mark: steps=%d checksum=%llu result=OK\n", BATCHES, checksum);
	return 0;
}
