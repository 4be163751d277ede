/*
 * examples/corpus/c114_document_scanner_scoped_timer_event_sync.cu: corpus workload (CUDA C++,
 * RAII). The GPU stage of a document-scanning service: 40 A4 pages scanned at 300 dpi (2496 x 3520
 * 8-bit grey). The scanner hands each page to a pinned staging double buffer (the host stamps the
 * page's header band), a copy stream uploads it, and the scan stream runs four stages: tile means
 * of 32 x 32 tiles (the paper's shading), adaptive binarization against them, despeckling with
 * black-pixel counts per row, and a skew profile (the black pixels' row histogram under 9 shears).
 * The profile and row counts come back into a pinned ring; one page later the host picks the
 * page's skew and counts its text lines while the GPU works on the next page.
 * Each stage runs inside a ScopedGpuTimer, an RAII helper the service uses for its per-stage
 * latency metrics: the constructor records a start event, the destructor records a stop event,
 * waits for it with cudaEventSynchronize and adds cudaEventElapsedTime to the stage's total.
 * cudaEventSynchronize "waits until the completion of all work currently captured in event"
 * (runtime API reference), so the host waits at the end of every stage, four times a page: it
 * cannot queue the next stage or the next page's upload until the stage is done, the copy
 * stream's upload of page p+1 never overlaps page p's stages, and the GPU idles while the host
 * queues each stage. The timings could be read a page later, after the wait the host does anyway
 * (c116 is the fix).
 * Planted: the cudaEventSynchronize in ~ScopedGpuTimer(), four times a page (one line).
 * Clean: the setup allocations, the one setup cudaDeviceSynchronize, the page's async upload from
 * the pinned staging slot on the copy stream, the host's cudaEventSynchronize on the upload two
 * pages back before stamping into that slot, the results' async download into the pinned ring,
 * the cudaEventSynchronize on the previous page's results (one page behind), the final wait,
 * teardown.
 * Pixels, means and counts are integers: the host recomputes two pages' row counts and profiles
 * exactly. The checksum hashes every page's results, not the timings (c116 prints the same one).
 */
#include "corpus.h"

#include <string.h>

enum { PAGES = 40, W = 2496, H = 3520, PIXELS = W * H, TILE = 32, TW = W / TILE, TH = H / TILE };
enum { SHEARS = 9, THREADS = 256, SLOTS = 2, STAGES = 4, STAMP_Y = 64, STAMP_H = 64 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;
#define RESULT_BYTES sizeof(struct result)

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* what the host reads back per page */
struct result {
	int prof[SHEARS * H];
	int rows[H];
};

__host__ __device__ static inline int tile_mean(const unsigned char *raw, int t)
{
	int x0 = (t % TW) * TILE, y0 = (t / TW) * TILE, sum = 0;
	for (int y = 0; y < TILE; y++)
		for (int x = 0; x < TILE; x++)
			sum += raw[(y0 + y) * W + x0 + x];
	return sum / (TILE * TILE);
}

__host__ __device__ static inline unsigned char is_ink(const unsigned char *raw, const int *means,
							int i)
{
	int x = i % W, y = i / W;
	return raw[i] * 100 < means[(y / TILE) * TW + x / TILE] * 85;
}

/* an ink pixel survives if at least two of its 8 neighbours are ink */
__host__ __device__ static inline unsigned char keeps_ink(const unsigned char *bin, int i)
{
	if (!bin[i])
		return 0;
	int x = i % W, y = i / W, n = 0;
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++)
			if ((dx || dy) && x + dx >= 0 && x + dx < W && y + dy >= 0 && y + dy < H)
				n += bin[(y + dy) * W + x + dx];
	return n >= 2;
}

/* the row of pixel (x, y) under shear k (k = SHEARS / 2 is no shear) */
__host__ __device__ static inline int sheared_row(int x, int y, int k)
{
	return y + (x - W / 2) * (k - SHEARS / 2) / 1024;
}

__global__ void tile_means(const unsigned char *raw, int *means)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < TW * TH)
		means[t] = tile_mean(raw, t);
}

__global__ void binarize(const unsigned char *raw, const int *means, unsigned char *bin)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < PIXELS)
		bin[i] = is_ink(raw, means, i);
}

__global__ void despeckle(const unsigned char *bin, unsigned char *clean, int *rows)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= PIXELS)
		return;
	clean[i] = keeps_ink(bin, i);
	if (clean[i])
		atomicAdd(&rows[i / W], 1);
}

__global__ void skew_profile(const unsigned char *clean, int *prof)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= PIXELS || !clean[i])
		return;
	for (int k = 0; k < SHEARS; k++) {
		int r = sheared_row(i % W, i / W, k);
		if (r >= 0 && r < H)
			atomicAdd(&prof[k * H + r], 1);
	}
}

/* --- per-stage latency metrics ------------------------------------------------------------- */

struct StageClock {
	const char *name;
	cudaEvent_t start, stop;
	double ms;
	int calls;
};

/* times the GPU work queued on `stream` during its scope */
class ScopedGpuTimer {
public:
	ScopedGpuTimer(StageClock &clock, cudaStream_t stream) : clock_(clock), stream_(stream)
	{
		CHECK(cudaEventRecord(clock_.start, stream_));
	}
	~ScopedGpuTimer()
	{
		CHECK(cudaEventRecord(clock_.stop, stream_));
		CHECK(cudaEventSynchronize(clock_.stop)); // SYNCSPY-PROBLEM: waits for every stage
		float ms = 0.0f;
		CHECK(cudaEventElapsedTime(&ms, clock_.start, clock_.stop));
		clock_.ms += ms;
		clock_.calls++;
	}

private:
	StageClock &clock_;
	cudaStream_t stream_;
};

/* --- the scanner (host) -------------------------------------------------------------------- */

/* a base page: shaded paper, text lines of glyph boxes, skewed by `skew` / 1024 */
static void render_page(int base, unsigned char *page)
{
	int skew = base % 2 ? 2 : -3;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			int shade = 215 + 25 * x / W - 15 * y / H;
			uint32_t h = mix32((uint32_t)(y * W + x) ^ (uint32_t)base << 28);
			int ys = y - (x - W / 2) * skew / 1024, line = ys / 48, in = ys % 48;
			int word = (x + line * 37) / 23;
			int ink = ys > 200 && in >= 14 && in < 34 && x > 150 && x < W - 150 &&
				  mix32((uint32_t)(line * 4099 + word + base)) % 5 != 0 &&
				  (x + line * 37) % 23 < 19;
			int v = ink ? 40 + (int)(h % 40u) : shade + (int)(h % 9u) - 4;
			page[y * W + x] = (unsigned char)v;
		}
}

/* the page's header band: its number in glyph boxes */
static void stamp_header(int p, unsigned char *page)
{
	for (int y = STAMP_Y; y < STAMP_Y + STAMP_H; y++)
		for (int x = 150; x < W - 150; x++) {
			int glyph = x / 40, on = (mix32((uint32_t)(p * 211 + glyph)) & 3) != 0;
			int ink = on && x % 40 < 30 && y >= STAMP_Y + 16 && y < STAMP_Y + 48;
			page[y * W + x] = (unsigned char)(ink ? 30 : 225);
		}
}

/* the host's reference of one page's results */
static void host_result(const unsigned char *raw, struct result *want)
{
	static int means[TW * TH];
	static unsigned char bin[PIXELS];
	memset(want, 0, sizeof *want);
	for (int t = 0; t < TW * TH; t++)
		means[t] = tile_mean(raw, t);
	for (int i = 0; i < PIXELS; i++)
		bin[i] = is_ink(raw, means, i);
	for (int i = 0; i < PIXELS; i++) {
		if (!keeps_ink(bin, i))
			continue;
		want->rows[i / W]++;
		for (int k = 0; k < SHEARS; k++) {
			int r = sheared_row(i % W, i / W, k);
			if (r >= 0 && r < H)
				want->prof[k * H + r]++;
		}
	}
}

/* page p's results: the skew (the sharpest profile) and the text lines; two pages checked */
static unsigned long long consume_result(int p, const struct result *res, const unsigned char *raw)
{
	if (p == 1 || p == PAGES - 2) {
		static struct result want;
		host_result(raw, &want);
		if (memcmp(&want, res, sizeof want) != 0) {
			fprintf(stderr, "c114: page %d: results differ from the host's\n", p);
			exit(1);
		}
	}
	long long best = -1;
	int skew = 0, lines = 0;
	for (int k = 0; k < SHEARS; k++) {
		long long e = 0;
		for (int r = 0; r < H; r++)
			e += (long long)res->prof[k * H + r] * res->prof[k * H + r];
		if (e > best)
			best = e, skew = k - SHEARS / 2;
	}
	for (int r = 1; r < H; r++)
		lines += res->rows[r] > W / 20 && res->rows[r - 1] <= W / 20;
	if (lines < H / 480) {
		fprintf(stderr, "c114: page %d: %d text lines\n", p, lines);
		exit(1);
	}
	return (unsigned long long)(skew + 100) << 32 ^ (unsigned long long)lines << 16 ^
	       (unsigned long long)best;
}

static int blocks_for(int n)
{
	return (n + THREADS - 1) / THREADS;
}

int main(void)
{
	const char *name = "c114_document_scanner_scoped_timer_event_sync";
	unsigned char *staging[SLOTS], *d_raw[SLOTS], *d_bin, *d_clean;
	int *d_means;
	struct result *d_res, *h_res[SLOTS];
	CHECK(cudaMalloc(&d_bin, PIXELS)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_clean, PIXELS)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_means, TW * TH * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_res, sizeof(struct result))); // SYNCSPY-CLEAN: setup allocation
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&d_raw[s], PIXELS)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&staging[s], PIXELS)); // SYNCSPY-CLEAN: setup, pinned staging
		CHECK(cudaMallocHost(&h_res[s], sizeof(struct result))); // SYNCSPY-CLEAN: pinned ring
		render_page(s, staging[s]);
	}
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup

	cudaStream_t scan, copy;
	CHECK(cudaStreamCreateWithFlags(&scan, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	cudaEvent_t uploaded[SLOTS], read_done[SLOTS], results[SLOTS];
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventCreateWithFlags(&uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&read_done[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&results[s], cudaEventDisableTiming));
	}
	StageClock clocks[STAGES] = {{"tile_means", 0, 0, 0.0, 0}, {"binarize", 0, 0, 0.0, 0},
				     {"despeckle", 0, 0, 0.0, 0}, {"skew_profile", 0, 0, 0.0, 0}};
	for (int k = 0; k < STAGES; k++) {
		CHECK(cudaEventCreate(&clocks[k].start));
		CHECK(cudaEventCreate(&clocks[k].stop));
	}

	unsigned long long checksum = 0;
	for (int p = 0; p < PAGES; p++) {
		int s = p % SLOTS;
		if (p >= SLOTS)
			CHECK(cudaEventSynchronize(uploaded[s])); // SYNCSPY-CLEAN: 2 pages back
		stamp_header(p, staging[s]);
		CHECK(cudaStreamWaitEvent(copy, read_done[s], 0)); /* page p - 2's last read */
		CHECK(cudaMemcpyAsync(d_raw[s], staging[s], PIXELS, H2D, copy)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(uploaded[s], copy));

		CHECK(cudaStreamWaitEvent(scan, uploaded[s], 0));
		CHECK(cudaMemsetAsync(d_res, 0, sizeof(struct result), scan));
		{
			ScopedGpuTimer t(clocks[0], scan);
			tile_means<<<blocks_for(TW * TH), THREADS, 0, scan>>>(d_raw[s], d_means);
			CHECK_LAUNCH();
		}
		{
			ScopedGpuTimer t(clocks[1], scan);
			binarize<<<blocks_for(PIXELS), THREADS, 0, scan>>>(d_raw[s], d_means, d_bin);
			CHECK_LAUNCH();
		}
		CHECK(cudaEventRecord(read_done[s], scan));
		{
			ScopedGpuTimer t(clocks[2], scan);
			despeckle<<<blocks_for(PIXELS), THREADS, 0, scan>>>(d_bin, d_clean, d_res->rows);
			CHECK_LAUNCH();
		}
		{
			ScopedGpuTimer t(clocks[3], scan);
			skew_profile<<<blocks_for(PIXELS), THREADS, 0, scan>>>(d_clean, d_res->prof);
			CHECK_LAUNCH();
		}
		CHECK(cudaMemcpyAsync(h_res[s], d_res, RESULT_BYTES, D2H, scan)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(results[s], scan));

		if (p > 0) {
			int q = (p - 1) % SLOTS;
			CHECK(cudaEventSynchronize(results[q])); // SYNCSPY-CLEAN: one page behind
			checksum = checksum * 31u + consume_result(p - 1, h_res[q], staging[q]);
		}
	}
	int last = (PAGES - 1) % SLOTS;
	CHECK(cudaEventSynchronize(results[last])); // SYNCSPY-CLEAN: the final wait
	checksum = checksum * 31u + consume_result(PAGES - 1, h_res[last], staging[last]);
	for (int k = 0; k < STAGES; k++)
		corpus_expect(name, clocks[k].name, clocks[k].calls, PAGES);

	for (int k = 0; k < STAGES; k++) {
		CHECK(cudaEventDestroy(clocks[k].start));
		CHECK(cudaEventDestroy(clocks[k].stop));
	}
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventDestroy(uploaded[s]));
		CHECK(cudaEventDestroy(read_done[s]));
		CHECK(cudaEventDestroy(results[s]));
		CHECK(cudaFree(d_raw[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(staging[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_res[s])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaStreamDestroy(scan));
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaFree(d_bin)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_clean)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_means)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_res)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, PAGES, checksum);
	return 0;
}
