/*
 * examples/corpus/c121_radar_nowcast_legacy_d2d_remember.cu: corpus workload (CUDA C). A
 * precipitation nowcasting hindcast for a weather service: 32 composite radar scans (2048 x 2048
 * pixels of uint8 reflectivity levels, 0.5 dBZ steps), already loaded from the day's archive into
 * pinned memory, run through an extrapolation nowcast. For each scan a copy stream uploads the
 * scan into one of two device slots; the compute stream (ordered by events both ways) estimates
 * the motion of each 32 x 32 tile against the previous scan by block matching (+-6 pixels, 169
 * candidates), extrapolates the scan along the tiles' motion for 12 lead times (5 to 60 minutes)
 * and counts the pixels above 30 dBZ at each lead; the motion field and the counts come back
 * into a pinned ring, which the host verifies one scan behind.
 * The motion tracker keeps its own copy of the previous scan: motion_remember() copies the current
 * scan into it with cudaMemcpy(..., cudaMemcpyDeviceToDevice), every scan. The runtime API
 * reference (API synchronization behavior): "For transfers from device memory to device memory,
 * no host-side synchronization is performed", so the host does not wait, but the copy goes to the
 * legacy default stream, and the two streams here are blocking streams (cudaStreamCreate). The
 * legacy default stream "is an implicit stream which synchronizes with all other streams in the
 * same CUcontext except for non-blocking streams" (the driver API's stream synchronization
 * behavior): the copy waits for the scan's nowcast on the compute stream, and the copy stream's
 * upload of the next scan, queued after it, waits for the copy. The two-slot upload was meant to
 * bring scan s+1 in while scan s is tracked and extrapolated; instead every upload runs alone
 * between two scans' compute. The fix is to keep the previous scan by pointer (the upload slots
 * already hold it) or to copy with cudaMemcpyAsync on the compute stream.
 * Planted: the device-to-device cudaMemcpy in motion_remember(), every scan (one line).
 * Clean: the archive's pinned allocation and the device allocations, the one setup
 * cudaDeviceSynchronize, each scan's async upload from the pinned archive on the copy stream, the
 * motion field's and counts' async download into the pinned ring and the cudaEventSynchronize one
 * scan behind, the final wait, teardown.
 * Per scan (estimates, H100): 700M absolute differences of block matching (about 0.5 ms), 50M
 * gathers of extrapolation (about 0.1 ms), a 4 MB upload (about 0.2 ms at 25 GB/s); the host only
 * checks. Everything is integer; the host recomputes two tiles' motion every scan, requires three
 * quarters of the tiles to find their rain system's true motion, and recomputes one lead's count
 * every 8 scans.
 */
#include "corpus.h"

#include <vector>

enum { NX = 2048, NY = 2048, PIXELS = NX * NY, SCANS = 32, TILE = 32, TX = NX / TILE };
enum { TY = NY / TILE, TILES = TX * TY, SEARCH = 6, CANDS = (2 * SEARCH + 1) * (2 * SEARCH + 1) };
enum { LEADS = 12, RAIN = 124, SLOTS = 2, THREADS = 256, CHECK_EVERY = 8 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;
static const cudaMemcpyKind D2D = cudaMemcpyDeviceToDevice;
#define SCAN_BYTES ((size_t)PIXELS)

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* what a scan's nowcast downloads: each tile's motion (pixels a scan) and each lead's count */
struct nowcast {
	int motion[TILES][2];
	unsigned int rain[LEADS];
	int scan;
};

__host__ __device__ static inline int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* sum of |cur - prev displaced by candidate c| over tile t */
__host__ __device__ static inline unsigned tile_sad(const uint8_t *prev, const uint8_t *cur, int t,
						    int c)
{
	int dx = c % (2 * SEARCH + 1) - SEARCH, dy = c / (2 * SEARCH + 1) - SEARCH;
	int x0 = (t % TX) * TILE, y0 = (t / TX) * TILE;
	unsigned sad = 0;
	for (int y = y0; y < y0 + TILE; y++)
		for (int x = x0; x < x0 + TILE; x++) {
			int p = prev[clampi(y - dy, 0, NY - 1) * NX + clampi(x - dx, 0, NX - 1)];
			int d = cur[y * NX + x] - p;
			sad += d < 0 ? -d : d;
		}
	return sad;
}

/* the best candidate: the lowest SAD, the first in candidate order on ties */
__host__ __device__ static inline void best_motion(const unsigned *sad, int *motion)
{
	int best = 0;
	for (int c = 1; c < CANDS; c++)
		if (sad[c] < sad[best])
			best = c;
	motion[0] = best % (2 * SEARCH + 1) - SEARCH, motion[1] = best / (2 * SEARCH + 1) - SEARCH;
}

/* one thread per (tile, candidate) */
__global__ void block_match(const uint8_t *prev, const uint8_t *cur, unsigned *sad)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < TILES * CANDS)
		sad[i] = tile_sad(prev, cur, i / CANDS, i % CANDS);
}

__global__ void pick_motion(const unsigned *sad, struct nowcast *out, int scan)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < TILES)
		best_motion(sad + t * CANDS, out->motion[t]);
	if (t == 0)
		out->scan = scan;
}

/* the extrapolated level of pixel (x, y) at lead l: semi-Lagrangian, the tile's motion */
__host__ __device__ static inline int extrapolate(const uint8_t *cur, const int (*motion)[2], int x,
						  int y, int l)
{
	const int *m = motion[(y / TILE) * TX + x / TILE];
	return cur[clampi(y - l * m[1], 0, NY - 1) * NX + clampi(x - l * m[0], 0, NX - 1)];
}

/* one thread a pixel, all leads; counts above RAIN added up a warp at a time */
__global__ void advect_counts(const uint8_t *cur, struct nowcast *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	for (int l = 1; l <= LEADS; l++) {
		unsigned wet = extrapolate(cur, out->motion, i % NX, i / NX, l) >= RAIN;
		wet = __reduce_add_sync(0xffffffffu, wet);
		if (threadIdx.x % 32 == 0 && wet)
			atomicAdd(&out->rain[l - 1], wet);
	}
}

/* --- the motion tracker -------------------------------------------------------------------- */

struct motion_tracker {
	uint8_t *prev; /* the previous scan */
	unsigned *sad;
};

/* keeps the scan as the previous one for the next call */
static void motion_remember(struct motion_tracker *m, const uint8_t *scan)
{
	CHECK(cudaMemcpy(m->prev, scan, SCAN_BYTES, D2D)); // SYNCSPY-PROBLEM: legacy stream, every scan
}

static void motion_track(struct motion_tracker *m, const uint8_t *scan, struct nowcast *out, int s,
			 cudaStream_t stream)
{
	const int blocks = (TILES * CANDS + THREADS - 1) / THREADS;
	block_match<<<blocks, THREADS, 0, stream>>>(m->prev, scan, m->sad);
	CHECK_LAUNCH();
	pick_motion<<<TILES / THREADS, THREADS, 0, stream>>>(m->sad, out, s);
	CHECK_LAUNCH();
}

/* --- the host ------------------------------------------------------------------------------ */

/* the archive: two rain systems, the west one moving (3, -2) pixels a scan, the east one (-1, 2),
 * both over a fixed base field of convective cells */
static void make_archive(uint8_t *archive)
{
	const int W = 4096;
	std::vector<uint8_t> base((size_t)W * W);
	for (int y = 0; y < W; y++)
		for (int x = 0; x < W; x++)
			base[(size_t)y * W + x] = (uint8_t)(mix32((uint32_t)(y * W + x)) % 40u);
	for (int c = 0; c < 400; c++) {
		uint32_t h = mix32((uint32_t)c + 0xb0a7u);
		int cx = (int)(h % W), cy = (int)((h >> 12) % W), r = 20 + (int)((h >> 24) % 90u);
		int amp = 100 + (int)(mix32(h) % 120u);
		for (int y = cy - r; y <= cy + r; y++)
			for (int x = cx - r; x <= cx + r; x++) {
				int d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
				if (d2 >= r * r)
					continue;
				uint8_t *v = &base[(size_t)((y + W) % W) * W + (x + W) % W];
				int level = *v + amp * (r * r - d2) / (r * r);
				*v = (uint8_t)(level > 254 ? 254 : level);
			}
	}
	for (int s = 0; s < SCANS; s++)
		for (int y = 0; y < NY; y++)
			for (int x = 0; x < NX; x++) {
				int bx = x < NX / 2 ? x - 3 * s + 512 : x + s + 512;
				int by = x < NX / 2 ? y + 2 * s + 512 : y - 2 * s + 1024;
				archive[(size_t)s * PIXELS + y * NX + x] = base[(size_t)by * W + bx];
			}
}

/* checks scan s's nowcast against the host; returns its digest */
static unsigned long long check_nowcast(int s, const struct nowcast *got, const uint8_t *archive)
{
	const uint8_t *prev = archive + (size_t)(s - 1) * PIXELS, *cur = archive + (size_t)s * PIXELS;
	corpus_expect("c121", "nowcast scan", got->scan, s);
	for (int k = 0; k < 2; k++) {
		int t = (int)(mix32((uint32_t)(s * 2 + k)) % TILES), want[2];
		unsigned sad[CANDS];
		for (int c = 0; c < CANDS; c++)
			sad[c] = tile_sad(prev, cur, t, c);
		best_motion(sad, want);
		corpus_expect("c121", "tile motion x", got->motion[t][0], want[0]);
		corpus_expect("c121", "tile motion y", got->motion[t][1], want[1]);
	}
	int agree = 0; /* tiles that found their rain system's true motion */
	for (int t = 0; t < TILES; t++) {
		bool west = (t % TX) * TILE < NX / 2;
		agree += got->motion[t][0] == (west ? 3 : -1) && got->motion[t][1] == (west ? -2 : 2);
	}
	if (agree < TILES * 3 / 4) {
		fprintf(stderr, "c121: scan %d: %d of %d tiles found the true motion\n", s, agree, TILES);
		exit(1);
	}
	if (s % CHECK_EVERY == 0) {
		int l = 1 + s % LEADS;
		long long wet = 0;
		for (int y = 0; y < NY; y++)
			for (int x = 0; x < NX; x++)
				wet += extrapolate(cur, got->motion, x, y, l) >= RAIN;
		corpus_expect("c121", "rain pixels", got->rain[l - 1], wet);
	}
	unsigned long long h = (unsigned long long)s * 1000003u + (unsigned)agree;
	for (int t = 0; t < TILES; t++)
		h = h * 1000003u + (unsigned)(got->motion[t][0] * 16 + got->motion[t][1] + 128);
	for (int l = 0; l < LEADS; l++)
		h = h * 1000003u + got->rain[l];
	return h;
}

int main(void)
{
	const char *name = "c121_radar_nowcast_legacy_d2d_remember";
	uint8_t *archive, *d_scan[SLOTS];
	struct nowcast *d_out, *h_out[SLOTS];
	struct motion_tracker tracker;
	CHECK(cudaMallocHost(&archive, SCANS * SCAN_BYTES)); // SYNCSPY-CLEAN: setup, pinned archive
	make_archive(archive);
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMalloc(&d_scan[k], SCAN_BYTES)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&h_out[k], sizeof(struct nowcast))); // SYNCSPY-CLEAN: pinned ring
	}
	CHECK(cudaMalloc(&d_out, sizeof(struct nowcast))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&tracker.prev, SCAN_BYTES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&tracker.sad, TILES * CANDS * sizeof(unsigned))); // SYNCSPY-CLEAN: setup
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, before the scans

	cudaStream_t copy, compute;
	CHECK(cudaStreamCreate(&copy));
	CHECK(cudaStreamCreate(&compute));
	cudaEvent_t uploaded[SLOTS], consumed[SLOTS], reported[SLOTS];
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&reported[k], cudaEventDisableTiming));
	}

	unsigned long long checksum = 0;
	for (int s = 0; s < SCANS; s++) {
		int k = s % SLOTS;
		if (s >= SLOTS)
			CHECK(cudaStreamWaitEvent(copy, consumed[k], 0)); /* scan s-2 is done with the slot */
		const uint8_t *src = archive + (size_t)s * PIXELS;
		CHECK(cudaMemcpyAsync(d_scan[k], src, SCAN_BYTES, H2D, copy)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(uploaded[k], copy));
		CHECK(cudaStreamWaitEvent(compute, uploaded[k], 0));
		if (s > 0) {
			CHECK(cudaMemsetAsync(d_out->rain, 0, sizeof d_out->rain, compute));
			motion_track(&tracker, d_scan[k], d_out, s, compute);
			advect_counts<<<PIXELS / THREADS, THREADS, 0, compute>>>(d_scan[k], d_out);
			CHECK_LAUNCH();
			CHECK(cudaMemcpyAsync(h_out[k], d_out, sizeof(struct nowcast), D2H, compute)); // SYNCSPY-CLEAN: pinned
			CHECK(cudaEventRecord(reported[k], compute));
		}
		motion_remember(&tracker, d_scan[k]);
		CHECK(cudaEventRecord(consumed[k], compute)); /* after the nowcast and the copy */
		if (s > 1) {
			int p = (s - 1) % SLOTS;
			CHECK(cudaEventSynchronize(reported[p])); // SYNCSPY-CLEAN: one scan behind
			checksum = checksum * 31u + check_nowcast(s - 1, h_out[p], archive);
		}
	}
	int last = (SCANS - 1) % SLOTS;
	CHECK(cudaEventSynchronize(reported[last])); // SYNCSPY-CLEAN: the last scan
	checksum = checksum * 31u + check_nowcast(SCANS - 1, h_out[last], archive);
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: the final wait, before teardown

	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(consumed[k]));
		CHECK(cudaEventDestroy(reported[k]));
		CHECK(cudaFree(d_scan[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_out[k])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaFree(d_out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(tracker.prev)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(tracker.sad)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(archive)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, SCANS, checksum);
	return 0;
}
