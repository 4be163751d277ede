/*
 * examples/corpus/c76_tick_archive_h2h_on_stream.cu: corpus workload (CUDA C). An intraday risk
 * engine fed by a market-data handler: every batch the host decodes 512K trades into one of two
 * pinned staging buffers, an upload stream copies them to the GPU, and the compute stream
 * aggregates per-symbol bars (volume, notional, high, low, count) for 512 symbols, then revalues
 * a 4M-position book under 256 price-shock scenarios at the bars' VWAPs. The bars and the
 * scenario P&L are downloaded into a pinned output slot, and the archive appends them to its
 * pinned history with archive_append(), which the author wrote as a cudaMemcpyAsync from the
 * output slot to the archive on the compute stream "so that it stays ordered after the
 * download". But both pointers are host memory, and for transfers from any host memory to any
 * host memory the copy functions, the Async ones included, are fully synchronous with respect
 * to the host (CUDA runtime API, "API synchronization behavior"): the call returns only after the
 * compute stream has run everything queued before it, the whole batch. The host cannot decode
 * the next batch while the GPU revalues this one, and the GPU idles while the host decodes. A
 * host memcpy from the slot after an event wait one batch behind (or a cudaLaunchHostFunc on a
 * side stream) would keep the pipeline.
 * Planted: the host-to-host cudaMemcpyAsync in archive_append(), every batch.
 * Clean: the setup allocations, the staging double buffer's cudaEventSynchronize on the upload
 * two batches back, the uploads from pinned memory on the upload stream, the download of the
 * batch's output into a pinned slot, the final wait, teardown.
 */
#include "corpus.h"

enum { BATCHES = 48, TRADES = 1 << 19, SYMBOLS = 512, POSITIONS = 1 << 22, SCENARIOS = 256, THREADS = 256, AGG_BLOCKS = 128, BOOK_BLOCKS = 264 };

struct trade {
	uint32_t price; /* cents */
	uint16_t qty, sym;
};

struct bar {
	unsigned long long volume, notional;
	unsigned int high, low, count, pad;
};

struct batch_out {
	struct bar bars[SYMBOLS];
	long long pnl[SCENARIOS];
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

/* the feed handler: one batch of trades (xorshift over the batch's sequence numbers) */
static void decode_batch(int b, struct trade *t)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(b + 1);
	for (int j = 0; j < TRADES; j++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		uint32_t lo = (uint32_t)s, hi = (uint32_t)(s >> 32);
		t[j].sym = (uint16_t)(lo & (SYMBOLS - 1));
		t[j].qty = (uint16_t)(1u + ((lo >> 9) & 511u));
		t[j].price = 10000u + t[j].sym * 37u + hi % 2001u - 1000u + (uint32_t)b * 3u;
	}
}

/* the book: position p holds qty shares of sym (qty may be short) */
__host__ __device__ static inline uint32_t book_sym(uint32_t p) { return mix32(p * 2u + 1u) & (SYMBOLS - 1); }
__host__ __device__ static inline int book_qty(uint32_t p) { return (int)(mix32(p * 2u + 2u) % 2001u) - 1000; }
/* scenario shock in tenths of a percent, -50..+50 */
__host__ __device__ static inline int shock(int scen, uint32_t sym) { return (int)(mix32((uint32_t)scen * 0x9e3779b9u ^ sym) % 101u) - 50; }

__global__ void reset_bars(struct bar *bars)
{
	int s = blockIdx.x * blockDim.x + threadIdx.x;
	if (s < SYMBOLS) {
		bars[s].volume = bars[s].notional = 0;
		bars[s].high = bars[s].count = 0;
		bars[s].low = 0xffffffffu;
	}
}

/* per-block bars in shared memory, flushed with global atomics */
__global__ void aggregate(const struct trade *t, struct bar *bars)
{
	__shared__ unsigned long long vol[SYMBOLS], notl[SYMBOLS];
	__shared__ unsigned int hi[SYMBOLS], lo[SYMBOLS], cnt[SYMBOLS];
	for (int s = threadIdx.x; s < SYMBOLS; s += blockDim.x) {
		vol[s] = notl[s] = 0;
		hi[s] = cnt[s] = 0;
		lo[s] = 0xffffffffu;
	}
	__syncthreads();
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < TRADES; j += gridDim.x * blockDim.x) {
		struct trade x = t[j];
		atomicAdd(&vol[x.sym], (unsigned long long)x.qty);
		atomicAdd(&notl[x.sym], (unsigned long long)x.qty * x.price);
		atomicMax(&hi[x.sym], x.price);
		atomicMin(&lo[x.sym], x.price);
		atomicAdd(&cnt[x.sym], 1u);
	}
	__syncthreads();
	for (int s = threadIdx.x; s < SYMBOLS; s += blockDim.x) {
		if (!cnt[s])
			continue;
		atomicAdd(&bars[s].volume, vol[s]);
		atomicAdd(&bars[s].notional, notl[s]);
		atomicMax(&bars[s].high, hi[s]);
		atomicMin(&bars[s].low, lo[s]);
		atomicAdd(&bars[s].count, cnt[s]);
	}
}

__global__ void compute_vwap(const struct bar *bars, long long *vwap)
{
	int s = blockIdx.x * blockDim.x + threadIdx.x;
	if (s < SYMBOLS)
		vwap[s] = (long long)(bars[s].notional / bars[s].volume);
}

/* a tile of THREADS positions in shared memory; thread k revalues it under scenario k */
__global__ void revalue(const long long *vwap, long long *pnl)
{
	__shared__ uint32_t s_sym[THREADS];
	__shared__ int s_qty[THREADS];
	__shared__ long long s_px[THREADS];
	int scen = threadIdx.x;
	long long acc = 0;
	for (uint32_t base = blockIdx.x * THREADS; base < POSITIONS; base += gridDim.x * THREADS) {
		uint32_t p = base + threadIdx.x;
		s_sym[threadIdx.x] = book_sym(p);
		s_qty[threadIdx.x] = book_qty(p);
		s_px[threadIdx.x] = vwap[s_sym[threadIdx.x]];
		__syncthreads();
		for (int k = 0; k < THREADS; k++)
			acc += (long long)s_qty[k] * (s_px[k] * shock(scen, s_sym[k]) / 1000);
		__syncthreads();
	}
	atomicAdd((unsigned long long *)&pnl[scen], (unsigned long long)acc);
}

static_assert(THREADS == SCENARIOS, "revalue: one thread per scenario");

struct engine {
	cudaStream_t up, cs;
	long long *d_vwap;
	struct trade *h_stage[2], *d_trades[2];
	struct batch_out *d_out, *h_out[2];
	cudaEvent_t uploaded[2], aggregated[2];
};

struct archive {
	struct batch_out *rows; /* pinned, one per batch */
	int n;
};

/* --- the archive --------------------------------------------------------------------------- */

static void archive_append(struct archive *a, const struct batch_out *slot, cudaStream_t s)
{
	CHECK(cudaMemcpyAsync(&a->rows[a->n++], slot, sizeof *slot, cudaMemcpyHostToHost, s)); // SYNCSPY-PROBLEM: host to host: fully synchronous, waits for the whole batch on the compute stream
}

static void run_batch(struct engine *e, struct archive *arch, int b)
{
	int k = b % 2;
	if (b >= 2)
		CHECK(cudaEventSynchronize(e->uploaded[k])); // SYNCSPY-CLEAN: the staging double buffer: the upload two batches back
	decode_batch(b, e->h_stage[k]);
	CHECK(cudaStreamWaitEvent(e->up, e->aggregated[k], 0));
	CHECK(cudaMemcpyAsync(e->d_trades[k], e->h_stage[k], TRADES * sizeof(struct trade), cudaMemcpyHostToDevice, e->up)); // SYNCSPY-CLEAN: async upload from pinned staging on the upload stream
	CHECK(cudaEventRecord(e->uploaded[k], e->up));

	CHECK(cudaStreamWaitEvent(e->cs, e->uploaded[k], 0));
	reset_bars<<<SYMBOLS / THREADS, THREADS, 0, e->cs>>>(e->d_out->bars);
	CHECK_LAUNCH();
	aggregate<<<AGG_BLOCKS, THREADS, 0, e->cs>>>(e->d_trades[k], e->d_out->bars);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(e->aggregated[k], e->cs));
	CHECK(cudaMemsetAsync(e->d_out->pnl, 0, sizeof e->d_out->pnl, e->cs));
	compute_vwap<<<SYMBOLS / THREADS, THREADS, 0, e->cs>>>(e->d_out->bars, e->d_vwap);
	CHECK_LAUNCH();
	revalue<<<BOOK_BLOCKS, THREADS, 0, e->cs>>>(e->d_vwap, e->d_out->pnl);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(e->h_out[k], e->d_out, sizeof(struct batch_out), cudaMemcpyDeviceToHost, e->cs)); // SYNCSPY-CLEAN: the batch's output, async into a pinned slot
	archive_append(arch, e->h_out[k], e->cs);
}

int main(void)
{
	const char *name = "c76_tick_archive_h2h_on_stream";
	struct engine e;
	struct archive arch = {NULL, 0};

	CHECK(cudaStreamCreateWithFlags(&e.up, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&e.cs, cudaStreamNonBlocking));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&e.h_stage[k], TRADES * sizeof(struct trade))); // SYNCSPY-CLEAN: setup pinned staging
		CHECK(cudaMallocHost(&e.h_out[k], sizeof(struct batch_out))); // SYNCSPY-CLEAN: setup pinned output slot
		CHECK(cudaMalloc(&e.d_trades[k], TRADES * sizeof(struct trade))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaEventCreateWithFlags(&e.uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&e.aggregated[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&e.d_out, sizeof(struct batch_out))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&e.d_vwap, SYMBOLS * sizeof(long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&arch.rows, BATCHES * sizeof(struct batch_out))); // SYNCSPY-CLEAN: setup, the pinned archive

	for (int b = 0; b < BATCHES; b++)
		run_batch(&e, &arch, b);
	CHECK(cudaStreamSynchronize(e.cs)); // SYNCSPY-CLEAN: the one wait, after the last batch

	/* self-check: two batches' bars and a few scenarios' P&L against the host */
	struct trade *t = (struct trade *)malloc(TRADES * sizeof(struct trade));
	static struct bar want[SYMBOLS];
	unsigned long long checksum = 0;
	for (int b = 0; b < BATCHES; b++) {
		const struct batch_out *o = &arch.rows[b];
		if (b == 9 || b == 40) {
			decode_batch(b, t);
			for (int s = 0; s < SYMBOLS; s++) {
				want[s].volume = want[s].notional = 0;
				want[s].high = want[s].count = 0;
				want[s].low = 0xffffffffu;
			}
			for (int j = 0; j < TRADES; j++) {
				struct bar *w = &want[t[j].sym];
				w->volume += t[j].qty;
				w->notional += (unsigned long long)t[j].qty * t[j].price;
				w->high = t[j].price > w->high ? t[j].price : w->high;
				w->low = t[j].price < w->low ? t[j].price : w->low;
				w->count++;
			}
			for (int s = 0; s < SYMBOLS; s++) {
				corpus_expect(name, "bar volume", (long long)o->bars[s].volume, (long long)want[s].volume);
				corpus_expect(name, "bar notional", (long long)o->bars[s].notional, (long long)want[s].notional);
				corpus_expect(name, "bar high", o->bars[s].high, want[s].high);
				corpus_expect(name, "bar low", o->bars[s].low, want[s].low);
				corpus_expect(name, "bar count", o->bars[s].count, want[s].count);
			}
			for (int scen = 0; scen < SCENARIOS; scen += 85) {
				long long p = 0;
				for (uint32_t q = 0; q < POSITIONS; q++) {
					uint32_t sym = book_sym(q);
					long long vwap = (long long)(want[sym].notional / want[sym].volume);
					p += (long long)book_qty(q) * (vwap * shock(scen, sym) / 1000);
				}
				corpus_expect(name, "scenario pnl", o->pnl[scen], p);
			}
		}
		long long worst = o->pnl[0];
		for (int scen = 1; scen < SCENARIOS; scen++)
			worst = o->pnl[scen] < worst ? o->pnl[scen] : worst;
		checksum = checksum * 1000003u + (unsigned long long)worst + o->bars[b % SYMBOLS].notional;
	}
	free(t);

	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(e.h_stage[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(e.h_out[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(e.d_trades[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(e.uploaded[k]));
		CHECK(cudaEventDestroy(e.aggregated[k]));
	}
	CHECK(cudaFree(e.d_out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(e.d_vwap)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(arch.rows)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(e.up));
	CHECK(cudaStreamDestroy(e.cs));
	corpus_result(name, BATCHES, checksum);
	return 0;
}
