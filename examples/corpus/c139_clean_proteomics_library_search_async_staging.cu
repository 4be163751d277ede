/*
 * examples/corpus/c139_clean_proteomics_library_search_async_staging.cu: corpus workload (CUDA C).
 * Clean: c135's spectral library search (4096 query spectra of 512 raw peaks a batch against
 * 65,536 library spectra, open search +-40 Da, 40 batches) with the upload made asynchronous, the
 * fix of c135. The host decodes each batch into one of two page-locked staging buffers, and
 * upload_batch() queues it with cudaMemcpyAsync on a non-blocking copy stream into the slot's own
 * device query buffer ("asynchronous with respect to the host", runtime API; from pinned memory it
 * may overlap kernels of other streams). The search stream waits for the slot's upload (an
 * event), the copy stream waits, before it overwrites a slot's device buffer, for the search of
 * the batch two back that read it (an event recorded right after that search), and the host
 * waits on the slot's upload two batches back before it decodes into its staging buffer again.
 * The upload of batch b+1 runs beside the search of batch b; the host decodes while both run.
 * Planted: nothing.
 * Clean: the setup allocations (the two staging buffers, the two device query buffers), the
 * library's uploads and the setup sync, the staging's cudaEventSynchronize two batches back, the
 * cudaMemcpyAsync uploads from pinned staging on the copy stream, the results' cudaMemcpyAsync
 * into the pinned ring, the cudaEventSynchronize on the batch one behind (the host reads its
 * matches), the final wait, teardown.
 * Per batch (estimates, H100): as c135, a search of about 0.8-1.2 ms and an 8 MB upload of
 * 0.2-0.35 ms, which now overlaps the search, beside the host's 1 ms of decoding. The same checks
 * and the same output line as c135.
 */
#include "corpus.h"

#include <math.h>
#include <string.h>

enum { L = 65536, PK = 32, BINS = 4096, TOPK = 32, RAW = 512, QB = 4096, RUN = 16384, BATCHES = 40, THREADS = 256, SAMPLED = 4 };

#define WIN 40000u /* the open-search precursor window, in mDa */
#define PEAK_BYTES ((size_t)QB * RAW * sizeof(uint32_t))
#define QUERY_BYTES (PEAK_BYTES + QB * sizeof(uint32_t)) /* the raw peaks, then the precursor masses */

/* a peptide-spectrum match: the best library index (-1: no candidate), its score, the runner-up's */
struct psm {
	int idx;
	unsigned score, second, ncand;
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

/* the exact integer square root of an intensity (below 2^15) */
__host__ __device__ static inline unsigned isqrt_u(unsigned v)
{
	unsigned r = (unsigned)sqrtf((float)v);
	while (r * r > v)
		r--;
	while ((r + 1) * (r + 1) <= v)
		r++;
	return r;
}

/* the first library entry whose precursor mass is at least m */
__host__ __device__ static inline int lower_bound_u(const uint32_t *a, int n, uint32_t m)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (a[mid] < m)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* a raw peak's ranking key: intensity, then the lower m/z, then the earlier peak; all distinct */
__host__ __device__ static inline unsigned long long peak_key(uint32_t v, int p)
{
	uint32_t mz = v & 0x1FFFFu, in = v >> 17;
	return (unsigned long long)in << 32 | (unsigned long long)(0x1FFFFu - mz) << 10 | (unsigned)(RAW - 1 - p);
}

/* a candidate's ranking key: the score, then the lower library index */
__host__ __device__ static inline unsigned long long cand_key(unsigned score, int c)
{
	return (unsigned long long)score << 32 | (0xFFFFFFFFu - (unsigned)c);
}

/* one block a query: top-32 peaks, dense spectrum, the window's candidates, best and second */
__global__ void __launch_bounds__(THREADS) search_batch(const uint32_t *query, const uint32_t *lib, const uint32_t *lprec,
							struct psm *out)
{
	__shared__ unsigned long long key[RAW], best[THREADS], second[THREADS];
	__shared__ unsigned dense[BINS];
	__shared__ int win[2];
	const int q = blockIdx.x, t = threadIdx.x;
	const uint32_t *peaks = query + (size_t)q * RAW;
	const uint32_t qprec = query[(size_t)QB * RAW + q];
	for (int p = t; p < RAW; p += THREADS)
		key[p] = peak_key(peaks[p], p);
	for (int i = t; i < BINS; i += THREADS)
		dense[i] = 0;
	if (t == 0) {
		win[0] = lower_bound_u(lprec, L, qprec - WIN);
		win[1] = lower_bound_u(lprec, L, qprec + WIN + 1);
	}
	__syncthreads();
	for (int p = t; p < RAW; p += THREADS) {
		unsigned long long k = key[p];
		int rank = 0;
		for (int o = 0; o < RAW; o++)
			rank += key[o] > k;
		if (rank < TOPK) {
			uint32_t v = peaks[p], bin = (v & 0x1FFFFu) / 20u;
			if (bin < BINS)
				atomicMax(&dense[bin], isqrt_u(v >> 17));
		}
	}
	__syncthreads();
	unsigned long long b1 = 0, b2 = 0;
	for (int c = win[0] + t; c < win[1]; c += THREADS) {
		unsigned s = 0;
		for (int k = 0; k < PK; k++) {
			uint32_t e = lib[(size_t)k * L + c];
			s += dense[e >> 8] * (e & 255u);
		}
		unsigned long long ck = cand_key(s, c);
		if (ck > b1) {
			b2 = b1;
			b1 = ck;
		} else if (ck > b2) {
			b2 = ck;
		}
	}
	best[t] = b1;
	second[t] = b2;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s >>= 1) {
		if (t < s) {
			unsigned long long a1 = best[t], a2 = second[t], c1 = best[t + s], c2 = second[t + s];
			unsigned long long hi = a1 > c1 ? a1 : c1, lo = a1 > c1 ? c1 : a1, n2 = a2 > c2 ? a2 : c2;
			best[t] = hi;
			second[t] = n2 > lo ? n2 : lo;
		}
		__syncthreads();
	}
	if (t == 0) {
		struct psm r;
		r.idx = best[0] ? (int)(0xFFFFFFFFu - (unsigned)best[0]) : -1;
		r.score = (unsigned)(best[0] >> 32);
		r.second = (unsigned)(second[0] >> 32);
		r.ncand = (unsigned)(win[1] - win[0]);
		out[q] = r;
	}
}

/* the host's search of one query (the mirror of search_batch, top-32 by sorting) */
static int cmp_desc(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return (x < y) - (x > y);
}

static struct psm host_search(const uint32_t *peaks, uint32_t qprec, const uint32_t *lib, const uint32_t *lprec)
{
	static unsigned long long keys[RAW];
	static unsigned dense[BINS];
	memset(dense, 0, sizeof dense);
	for (int p = 0; p < RAW; p++)
		keys[p] = peak_key(peaks[p], p);
	qsort(keys, RAW, sizeof keys[0], cmp_desc);
	for (int k = 0; k < TOPK; k++) {
		int p = RAW - 1 - (int)(keys[k] & 1023u);
		uint32_t v = peaks[p], bin = (v & 0x1FFFFu) / 20u;
		unsigned w = isqrt_u(v >> 17);
		if (bin < BINS && w > dense[bin])
			dense[bin] = w;
	}
	int lo = lower_bound_u(lprec, L, qprec - WIN), hi = lower_bound_u(lprec, L, qprec + WIN + 1);
	unsigned long long b1 = 0, b2 = 0;
	for (int c = lo; c < hi; c++) {
		unsigned s = 0;
		for (int k = 0; k < PK; k++) {
			uint32_t e = lib[(size_t)k * L + c];
			s += dense[e >> 8] * (e & 255u);
		}
		unsigned long long ck = cand_key(s, c);
		if (ck > b1) {
			b2 = b1;
			b1 = ck;
		} else if (ck > b2) {
			b2 = ck;
		}
	}
	struct psm r;
	r.idx = b1 ? (int)(0xFFFFFFFFu - (unsigned)b1) : -1;
	r.score = (unsigned)(b1 >> 32);
	r.second = (unsigned)(b2 >> 32);
	r.ncand = (unsigned)(hi - lo);
	return r;
}

/* the run: RUN spectra, each 28 or so of its library spectrum's peaks among noise, shuffled */
static void make_run(const uint32_t *lib, const uint32_t *lprec, uint32_t *run, uint32_t *run_prec, int *run_target)
{
	for (int r = 0; r < RUN; r++) {
		uint32_t *pk = run + (size_t)r * RAW;
		int t = (int)(mix32((uint32_t)r ^ 0x5bd1e995u) % L), n = 0;
		run_target[r] = t;
		run_prec[r] = lprec[t] + mix32((uint32_t)r * 3u + 1u) % 41u - 20u;
		for (int k = 0; k < PK; k++) {
			uint32_t h = mix32((uint32_t)(r * PK + k) ^ 0x27d4eb2fu), e = lib[(size_t)k * L + t];
			if (h % 8u == 0)
				continue; /* a fragment the instrument missed */
			uint32_t mz = (e >> 8) * 20u + (h >> 8) % 20u, in = 6000u + (e & 255u) * 100u + (h >> 16) % 256u;
			pk[n++] = mz | in << 17;
		}
		for (; n < RAW; n++) {
			uint32_t h = mix32((uint32_t)(r * RAW + n) ^ 0x165667b1u);
			pk[n] = h % 80000u | (mix32(h) % 9000u) << 17;
		}
		for (int i = RAW - 1; i > 0; i--) { /* the peaks in acquisition order */
			int j = (int)(mix32((uint32_t)(r * RAW + i) ^ 0x9e3779b9u) % (uint32_t)(i + 1));
			uint32_t tmp = pk[i];
			pk[i] = pk[j];
			pk[j] = tmp;
		}
	}
}

/* batch b: QB spectra of the run with the batch's lock-mass correction, into the staging buffer */
static void decode_batch(int b, const uint32_t *run, const uint32_t *run_prec, uint32_t *staging)
{
	int cal = (b * 7) % 9 - 4; /* 0.05 Da units */
	for (int j = 0; j < QB; j++) {
		int r = (b * QB + j) % RUN;
		const uint32_t *src = run + (size_t)r * RAW;
		uint32_t *dst = staging + (size_t)j * RAW;
		for (int p = 0; p < RAW; p++) {
			int mz = (int)(src[p] & 0x1FFFFu) + cal;
			mz = mz < 0 ? 0 : mz > 0x1FFFF ? 0x1FFFF : mz;
			dst[p] = (uint32_t)mz | (src[p] & ~0x1FFFFu);
		}
		staging[(size_t)QB * RAW + j] = run_prec[r];
	}
}

/* the upload of a decoded batch from its page-locked staging buffer, on the copy stream: it waits
 * for the search that last read the slot's device buffer, and marks the slot uploaded */
static void upload_batch(uint32_t *d_query, const uint32_t *staging, cudaStream_t copy, cudaEvent_t searched, cudaEvent_t uploaded)
{
	CHECK(cudaStreamWaitEvent(copy, searched, 0));
	CHECK(cudaMemcpyAsync(d_query, staging, QUERY_BYTES, cudaMemcpyHostToDevice, copy)); // SYNCSPY-CLEAN: async from pinned staging, on the copy stream
	CHECK(cudaEventRecord(uploaded, copy));
}

int main(void)
{
	const char *name = "c139_clean_proteomics_library_search_async_staging";
	uint32_t *lib = (uint32_t *)malloc((size_t)PK * L * sizeof(uint32_t));
	uint32_t *lprec = (uint32_t *)malloc(L * sizeof(uint32_t));
	uint32_t *run = (uint32_t *)malloc((size_t)RUN * RAW * sizeof(uint32_t));
	uint32_t *run_prec = (uint32_t *)malloc(RUN * sizeof(uint32_t));
	int *run_target = (int *)malloc(RUN * sizeof(int));
	for (int i = 0; i < L; i++) {
		lprec[i] = 700000u + 25u * (uint32_t)i + mix32((uint32_t)i) % 25u;
		for (int k = 0; k < PK; k++) {
			uint32_t h = mix32((uint32_t)(i * PK + k) ^ 0xc2b2ae35u);
			lib[(size_t)k * L + i] = (100u + h % 3900u) << 8 | (40u + (h >> 12) % 216u);
		}
	}
	make_run(lib, lprec, run, run_prec, run_target);

	uint32_t *d_lib, *d_lprec, *d_query[2], *staging[2];
	struct psm *d_out, *h_out[2];
	cudaStream_t search, copy;
	cudaEvent_t matched[2], uploaded[2], searched[2];
	CHECK(cudaStreamCreate(&search));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_lib, (size_t)PK * L * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_lprec, L * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_out, QB * sizeof(struct psm))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMalloc(&d_query[k], QUERY_BYTES)); // SYNCSPY-CLEAN: setup allocation, the slot's device query buffer
		CHECK(cudaMallocHost(&staging[k], QUERY_BYTES)); // SYNCSPY-CLEAN: setup, the slot's pinned staging buffer
		CHECK(cudaMallocHost(&h_out[k], QB * sizeof(struct psm))); // SYNCSPY-CLEAN: setup, the pinned result ring
		CHECK(cudaEventCreateWithFlags(&matched[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&searched[k], cudaEventDisableTiming));
		CHECK(cudaEventRecord(searched[k], search)); /* no search has read the slot yet */
	}
	CHECK(cudaMemcpy(d_lib, lib, (size_t)PK * L * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the library peaks
	CHECK(cudaMemcpy(d_lprec, lprec, L * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the precursor masses
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the run

	static uint32_t sample_peaks[2][SAMPLED][RAW], sample_prec[2][SAMPLED];
	unsigned long long checksum = 14695981039346656037ull;
	long long identified = 0, confident = 0;
	for (int b = 0; b <= BATCHES; b++) {
		if (b < BATCHES) {
			int k = b % 2;
			if (b >= 2)
				CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: the staging slot's upload two batches back, before the host decodes into it
			decode_batch(b, run, run_prec, staging[k]);
			for (int s = 0; s < SAMPLED; s++) { /* the queries the host checks, kept before the staging is reused */
				int j = (int)(mix32((uint32_t)(b * SAMPLED + s) ^ 0x85ebca6bu) % QB);
				memcpy(sample_peaks[k][s], staging[k] + (size_t)j * RAW, RAW * sizeof(uint32_t));
				sample_prec[k][s] = staging[k][(size_t)QB * RAW + j];
			}
			upload_batch(d_query[k], staging[k], copy, searched[k], uploaded[k]);
			CHECK(cudaStreamWaitEvent(search, uploaded[k], 0));
			search_batch<<<QB, THREADS, 0, search>>>(d_query[k], d_lib, d_lprec, d_out);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(searched[k], search));
			CHECK(cudaMemcpyAsync(h_out[b % 2], d_out, QB * sizeof(struct psm), cudaMemcpyDeviceToHost, search)); // SYNCSPY-CLEAN: into the pinned result ring
			CHECK(cudaEventRecord(matched[b % 2], search));
		}
		if (b == 0)
			continue;
		int g = b - 1; /* batch g's matches, one batch behind */
		CHECK(cudaEventSynchronize(matched[g % 2])); // SYNCSPY-CLEAN: the batch one behind, the host needs its matches
		const struct psm *res = h_out[g % 2];
		for (int j = 0; j < QB; j++) {
			const struct psm *m = &res[j];
			identified += m->idx == run_target[(g * QB + j) % RUN];
			confident += m->score >= m->second + m->second / 4u;
			checksum = (checksum ^ ((unsigned long long)(unsigned)m->idx << 32 | m->score)) * 1099511628211ull;
			checksum = (checksum ^ m->second) * 1099511628211ull;
		}
		for (int s = 0; s < SAMPLED; s++) {
			int j = (int)(mix32((uint32_t)(g * SAMPLED + s) ^ 0x85ebca6bu) % QB);
			struct psm want = host_search(sample_peaks[g % 2][s], sample_prec[g % 2][s], lib, lprec);
			const struct psm *m = &res[j];
			if (m->idx != want.idx || m->score != want.score || m->second != want.second || m->ncand != want.ncand) {
				printf("%s: batch %d query %d: match %d score %u second %u, want %d %u %u result=FAIL\n", name, g, j, m->idx,
				       m->score, m->second, want.idx, want.score, want.second);
				return 1;
			}
		}
	}
	CHECK(cudaStreamSynchronize(search)); // SYNCSPY-CLEAN: the final wait
	if (identified * 10 < (long long)BATCHES * QB * 9) {
		printf("%s: identified %lld of %d result=FAIL\n", name, identified, BATCHES * QB);
		return 1;
	}

	CHECK(cudaFree(d_lib)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_lprec)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_out)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(d_query[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_out[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(matched[k]));
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(searched[k]));
	}
	CHECK(cudaStreamDestroy(search));
	CHECK(cudaStreamDestroy(copy));
	printf("%s: batches=%d queries=%d identified=%lld confident=%lld checksum=%016llx result=OK\n", name, BATCHES, BATCHES * QB,
	       identified, confident, checksum);
	free(lib);
	free(lprec);
	free(run);
	free(run_prec);
	free(run_target);
	return 0;
}
