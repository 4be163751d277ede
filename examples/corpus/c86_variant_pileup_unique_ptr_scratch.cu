/*
 * examples/corpus/c86_variant_pileup_unique_ptr_scratch.cu: corpus workload (CUDA C++,
 * std::unique_ptr). The pileup stage of a germline variant-calling benchmark on a 4 Mbp
 * reference window: every batch the host decodes 256K alignment records (position, and the read
 * simulator's truth: aligner shift and error class) into one of two pinned staging buffers, which
 * an upload stream copies to the GPU; there the read simulator synthesizes the 250 bp reads'
 * base calls, a banded realignment moves each read to its best offset within +-12 bp, and reads
 * with at most 16 mismatches are piled up into per-base counts; the counts are read once at the
 * end and the variants called on the host. Device memory is held by std::unique_ptr with a
 * deleter that calls cudaFree, made by make_device<T>(n) (cudaMalloc), the codebase's idiom for
 * exception-safe device buffers. call_batch() makes its two scratch arrays (the 64 MB of base
 * calls and the per-read hits) with make_device, so they are allocated on entry and freed when
 * the function returns, every batch. The CUDA programming guide lists device memory allocation
 * and deallocation among the operations after which commands of other streams cannot run
 * concurrently, and cudaFree of memory from cudaMalloc waits for the device (runtime API
 * reference: cudaFree may implicitly synchronize; here the kernels that use the scratch are still
 * queued when it is called): every batch the host waits for the batch's kernels to finish before
 * it decodes the next batch's records, so the GPU idles through the decoding and the next
 * allocation, and the staging double buffer the upload stream was built for never gets ahead.
 * Scratch kept for the run (made once in setup, or from cudaMallocAsync) would remove both calls.
 * Planted: the cudaMalloc in make_device() and the cudaFree in cuda_free::operator(), run for
 * call_batch()'s two scratch arrays every batch (one problem, two lines; the same lines make the
 * run's long-lived buffers at setup and free them at teardown).
 * Clean: the pinned staging's allocation, the reference window's upload, the staging double
 * buffer's cudaEventSynchronize on the upload two batches back, the per-batch upload from pinned
 * memory on the upload stream, the one synchronization after the loop and the final read of the
 * counts, teardown.
 */
#include "corpus.h"

#include <memory>
#include <string.h>

enum { BATCHES = 48, READS = 1 << 18, READ_LEN = 250, WINDOW = 1 << 22, BAND = 12, OFFSETS = 2 * BAND + 1, MAX_MISMATCH = 16, THREADS = 256 };

/* --- device buffers, the codebase's RAII idiom ------------------------------------------------- */

struct cuda_free {
	void operator()(void *p) const
	{
		CHECK(cudaFree(p)); // SYNCSPY-PROBLEM: frees call_batch()'s scratch when it returns: waits for the batch's kernels, every batch
	}
};

template <typename T> using device_ptr = std::unique_ptr<T[], cuda_free>;

template <typename T> static device_ptr<T> make_device(size_t n)
{
	T *p;
	CHECK(cudaMalloc(&p, n * sizeof(T))); // SYNCSPY-PROBLEM: allocates call_batch()'s scratch again, every batch
	return device_ptr<T>(p);
}

/* --- the simulated sample ------------------------------------------------------------------ */

struct alignment_record {
	int32_t pos;   /* where the aligner put the read */
	uint32_t meta; /* simulator truth: (error percent << 8) | (shift + 3) */
};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline int ref_base(int p) { return (int)(mix32((uint32_t)p * 0x9e3779b1u + 7u) & 3u); }
__host__ __device__ static inline int is_variant(int p) { return mix32((uint32_t)p * 7u + 3u) % 1000u == 0u; }
__host__ __device__ static inline int sample_base(int p) { return is_variant(p) ? (ref_base(p) + 2) & 3 : ref_base(p); }

static struct alignment_record make_record(int batch, int r)
{
	uint32_t h = mix32((uint32_t)batch * READS + (uint32_t)r + 0x1234567u), h2 = h * 0x9e3779b1u;
	int true_pos = 16 + (int)(((uint64_t)h * (uint64_t)(WINDOW - READ_LEN - 2 * OFFSETS)) >> 32);
	int shift = (h2 >> 28) < 2u ? (int)((h2 >> 20) & 7u) - 3 : 0; /* one read in eight misplaced by -3..+4 */
	uint32_t err = ((h2 >> 12) & 31u) < 2u ? 20u : 1u;           /* one in sixteen from a bad cluster */
	struct alignment_record rec = {true_pos + shift, (err << 8) | (uint32_t)(shift + 3)};
	return rec;
}

__host__ __device__ static inline int call_base(int batch, int r, int i, struct alignment_record rec)
{
	int shift = (int)(rec.meta & 0xffu) - 3, err = (int)(rec.meta >> 8);
	int b = sample_base(rec.pos - shift + i);
	uint32_t h = mix32(((uint32_t)batch * READS + (uint32_t)r) * 251u + (uint32_t)i);
	return (int)(h % 100u) < err ? (b + 1 + (int)((h >> 8) % 3u)) & 3 : b;
}

/* the band's offsets in order 0, -1, +1, -2, ... */
__host__ __device__ static inline int band_offset(int k) { return (k + 1) / 2 * (k % 2 ? -1 : 1); }

__host__ __device__ static inline uint32_t band_mismatches(const uint8_t *codes, const uint8_t *ref, int pos, int k)
{
	uint32_t m = 0;
	for (int i = 0; i < READ_LEN; i++)
		m += codes[i] != ref[pos + band_offset(k) + i];
	return m;
}

/* the best offset, the first in band order among the fewest mismatches: (mismatches << 8) | k */
static uint32_t realign_read(const uint8_t *codes, const uint8_t *ref, int pos)
{
	uint32_t best = 0xffffffffu;
	for (int k = 0; k < OFFSETS; k++) {
		uint32_t key = band_mismatches(codes, ref, pos, k) << 8 | (uint32_t)k;
		best = key < best ? key : best;
	}
	return best;
}

__global__ void simulate_calls(const struct alignment_record *rec, int batch, uint8_t *codes)
{
	size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (idx < (size_t)READS * READ_LEN) {
		int r = (int)(idx / READ_LEN), i = (int)(idx % READ_LEN);
		codes[idx] = (uint8_t)call_base(batch, r, i, rec[r]);
	}
}

/* thread (read, offset); hits[r] starts at 0xffffffff and keeps the smallest key */
__global__ void realign(const struct alignment_record *rec, const uint8_t *codes, const uint8_t *ref, uint32_t *hits)
{
	size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (idx < (size_t)READS * OFFSETS) {
		int r = (int)(idx / OFFSETS), k = (int)(idx % OFFSETS);
		atomicMin(&hits[r], band_mismatches(codes + (size_t)r * READ_LEN, ref, rec[r].pos, k) << 8 | (uint32_t)k);
	}
}

__global__ void pileup(const struct alignment_record *rec, const uint8_t *codes, const uint32_t *hits, uint32_t *counts)
{
	size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (idx < (size_t)READS * READ_LEN) {
		int r = (int)(idx / READ_LEN), i = (int)(idx % READ_LEN);
		uint32_t h = hits[r];
		if ((h >> 8) <= MAX_MISMATCH)
			atomicAdd(&counts[(size_t)codes[idx] * WINDOW + rec[r].pos + band_offset((int)(h & 0xffu)) + i], 1u);
	}
}

/* --- the pileup stage ------------------------------------------------------------------------ */

struct pileup_stage {
	cudaStream_t s, up;
	struct alignment_record *h_rec[2]; /* pinned staging */
	device_ptr<struct alignment_record> d_rec[2];
	device_ptr<uint8_t> d_ref;
	device_ptr<uint32_t> d_counts; /* 4 x WINDOW */
	cudaEvent_t uploaded[2], consumed[2];
};

static void stage_batch(struct pileup_stage *ps, int batch)
{
	int slot = batch % 2;
	if (batch >= 2)
		CHECK(cudaEventSynchronize(ps->uploaded[slot])); // SYNCSPY-CLEAN: the staging double buffer: the upload from this buffer two batches back
	for (int r = 0; r < READS; r++)
		ps->h_rec[slot][r] = make_record(batch, r);
	if (batch >= 2)
		CHECK(cudaStreamWaitEvent(ps->up, ps->consumed[slot], 0));
	CHECK(cudaMemcpyAsync(ps->d_rec[slot].get(), ps->h_rec[slot], READS * sizeof(struct alignment_record), cudaMemcpyHostToDevice, ps->up)); // SYNCSPY-CLEAN: async upload from pinned staging on the upload stream
	CHECK(cudaEventRecord(ps->uploaded[slot], ps->up));
}

static void call_batch(struct pileup_stage *ps, int batch)
{
	int slot = batch % 2;
	device_ptr<uint8_t> codes = make_device<uint8_t>((size_t)READS * READ_LEN);
	device_ptr<uint32_t> hits = make_device<uint32_t>(READS);
	const struct alignment_record *rec = ps->d_rec[slot].get();
	CHECK(cudaStreamWaitEvent(ps->s, ps->uploaded[slot], 0));
	simulate_calls<<<READS * READ_LEN / THREADS, THREADS, 0, ps->s>>>(rec, batch, codes.get());
	CHECK_LAUNCH();
	CHECK(cudaMemsetAsync(hits.get(), 0xff, READS * sizeof(uint32_t), ps->s));
	realign<<<READS * OFFSETS / THREADS, THREADS, 0, ps->s>>>(rec, codes.get(), ps->d_ref.get(), hits.get());
	CHECK_LAUNCH();
	pileup<<<READS * READ_LEN / THREADS, THREADS, 0, ps->s>>>(rec, codes.get(), hits.get(), ps->d_counts.get());
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(ps->consumed[slot], ps->s));
}

/* the counts of [x0, x0 + n) from every batch's reads, on the CPU */
static void reference_window(const uint8_t *ref, int x0, int n, uint32_t *want)
{
	uint8_t codes[READ_LEN];
	memset(want, 0, 4 * (size_t)n * sizeof(uint32_t));
	for (int batch = 0; batch < BATCHES; batch++)
		for (int r = 0; r < READS; r++) {
			struct alignment_record rec = make_record(batch, r);
			if (rec.pos + READ_LEN + BAND <= x0 || rec.pos - BAND >= x0 + n)
				continue;
			for (int i = 0; i < READ_LEN; i++)
				codes[i] = (uint8_t)call_base(batch, r, i, rec);
			uint32_t h = realign_read(codes, ref, rec.pos);
			if ((h >> 8) > MAX_MISMATCH)
				continue;
			for (int i = 0; i < READ_LEN; i++) {
				int p = rec.pos + band_offset((int)(h & 0xffu)) + i;
				if (p >= x0 && p < x0 + n)
					want[(size_t)codes[i] * n + (p - x0)]++;
			}
		}
}

int main(void)
{
	const char *name = "c86_variant_pileup_unique_ptr_scratch";
	unsigned long long checksum = 0;
	uint8_t *ref = (uint8_t *)malloc(WINDOW);
	uint32_t *counts = (uint32_t *)malloc((size_t)4 * WINDOW * sizeof(uint32_t));
	for (int p = 0; p < WINDOW; p++)
		ref[p] = (uint8_t)ref_base(p);

	{
		struct pileup_stage ps;
		CHECK(cudaStreamCreateWithFlags(&ps.s, cudaStreamNonBlocking));
		CHECK(cudaStreamCreateWithFlags(&ps.up, cudaStreamNonBlocking));
		for (int b = 0; b < 2; b++) {
			CHECK(cudaMallocHost(&ps.h_rec[b], READS * sizeof(struct alignment_record))); // SYNCSPY-CLEAN: setup pinned staging
			ps.d_rec[b] = make_device<struct alignment_record>(READS);
			CHECK(cudaEventCreateWithFlags(&ps.uploaded[b], cudaEventDisableTiming));
			CHECK(cudaEventCreateWithFlags(&ps.consumed[b], cudaEventDisableTiming));
		}
		ps.d_ref = make_device<uint8_t>(WINDOW);
		ps.d_counts = make_device<uint32_t>((size_t)4 * WINDOW);
		CHECK(cudaMemcpyAsync(ps.d_ref.get(), ref, WINDOW, cudaMemcpyHostToDevice, ps.s)); // SYNCSPY-CLEAN: setup, the reference window once
		CHECK(cudaMemsetAsync(ps.d_counts.get(), 0, (size_t)4 * WINDOW * sizeof(uint32_t), ps.s));

		for (int batch = 0; batch < BATCHES; batch++) {
			stage_batch(&ps, batch);
			call_batch(&ps, batch);
		}

		CHECK(cudaStreamSynchronize(ps.s)); // SYNCSPY-CLEAN: once, after the loop
		CHECK(cudaMemcpy(counts, ps.d_counts.get(), (size_t)4 * WINDOW * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the pileup
		for (int b = 0; b < 2; b++) {
			CHECK(cudaFreeHost(ps.h_rec[b])); // SYNCSPY-CLEAN: teardown
			CHECK(cudaEventDestroy(ps.uploaded[b]));
			CHECK(cudaEventDestroy(ps.consumed[b]));
		}
		CHECK(cudaStreamDestroy(ps.s));
		CHECK(cudaStreamDestroy(ps.up));
	} /* the device buffers go here, through cuda_free */

	/* the counts of a 2 kbp window, recomputed on the CPU */
	enum { X0 = 1234567, N = 2048 };
	uint32_t *want = (uint32_t *)malloc((size_t)4 * N * sizeof(uint32_t));
	reference_window(ref, X0, N, want);
	for (int b = 0; b < 4; b++)
		for (int i = 0; i < N; i++)
			corpus_expect(name, "pileup count", counts[(size_t)b * WINDOW + X0 + i], want[(size_t)b * N + i]);

	/* call the variants: an alternative base in at least 80% of a depth of 20 or more */
	int called = 0, true_calls = 0;
	for (int p = 0; p < WINDOW; p++) {
		uint32_t depth = 0, top = 0;
		int top_base = 0;
		for (int b = 0; b < 4; b++) {
			uint32_t c = counts[(size_t)b * WINDOW + p];
			depth += c;
			if (c > top) {
				top = c;
				top_base = b;
			}
		}
		if (depth >= 20 && top_base != ref[p] && top * 5 >= depth * 4) {
			called++;
			true_calls += is_variant(p);
			checksum = checksum * 1000003u + (unsigned long long)p * 4u + (unsigned long long)top_base;
		}
	}
	corpus_expect(name, "variant calls that are true", true_calls, called);
	checksum = checksum * 1000003u + (unsigned long long)called;
	for (int b = 0; b < 4; b++)
		for (int i = 0; i < N; i++)
			checksum = checksum * 1000003u + want[(size_t)b * N + i];

	free(ref);
	free(counts);
	free(want);
	corpus_result(name, BATCHES, checksum);
	return 0;
}
