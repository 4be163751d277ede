/*
 * examples/corpus/c88_clean_hillshade_tiles_stream_lease_events.cu: corpus workload (CUDA C++,
 * RAII), clean. The relief layer of a map tile renderer, the fix of c83: every pass renders 16
 * tiles of 1024 x 1024 elevation samples (a 2 MB 16-bit DEM tile each, staged in pinned memory
 * by the tile reader) into shaded relief: Horn's gradient for a north-west light, ambient
 * occlusion from 64 horizon samples per pixel, then a 256 x 256 preview and the tile's
 * statistics. A small stream pool hands each tile job a lease on one of four non-blocking
 * streams (each stream owns its device buffers); the job uploads its DEM tile, runs the two
 * kernels and downloads the preview into pinned memory, all asynchronous on the leased stream.
 * Here the lease's destructor only hands the slot back: commands in one stream run in order
 * (CUDA programming guide, streams), so the next job on the same stream cannot touch the slot's
 * buffers before the last one is done, and nothing needs to wait. After queuing a pass the pool
 * records a pass event on each of its streams, and the host publishes the previous pass's
 * previews (two pinned preview sets, one per pass parity) after a cudaEventSynchronize on each
 * stream's event of that pass: one pass behind, with the current pass's four streams still
 * busy, so four tiles stay in flight and uploads overlap shading.
 * Clean: the setup allocations, the pinned DEM staging and preview buffers, the statistics'
 * zeroing and the one setup sync, the per-tile upload from pinned memory and preview download into
 * pinned memory on the leased stream, the pass events waited for one pass behind, the last
 * pass's wait after the loop, the final read of the statistics, teardown.
 */
#include "corpus.h"

#include <string.h>

enum { PASSES = 48, TILES = 16, LANES = 4, TILE = 1024, PREVIEW = 256, DEM_TILES = 32, THREADS = 256, AO_STEPS = 8 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

static inline int tri(int v) { return v % 2048 < 1024 ? v % 2048 : 2047 - v % 2048; }

/* the DEM tile reader's output (metres above a datum) */
static uint16_t dem_sample(int src, int x, int y)
{
	int ridges = tri((x + src * 131) * 3 + y) + tri((y * 5 + x) * 2 + src * 977) / 2;
	return (uint16_t)(1000 + ridges + (int)(mix32((uint32_t)(src * TILE + y) * TILE + (uint32_t)x) & 15u));
}

__host__ __device__ static inline int elev(const uint16_t *d, int x, int y)
{
	x = x < 0 ? 0 : (x >= TILE ? TILE - 1 : x);
	y = y < 0 ? 0 : (y >= TILE ? TILE - 1 : y);
	return d[y * TILE + x];
}

__host__ __device__ static inline int shade_at(const uint16_t *d, int x, int y)
{
	int dzdx = (elev(d, x + 1, y - 1) + 2 * elev(d, x + 1, y) + elev(d, x + 1, y + 1)) - (elev(d, x - 1, y - 1) + 2 * elev(d, x - 1, y) + elev(d, x - 1, y + 1));
	int dzdy = (elev(d, x - 1, y + 1) + 2 * elev(d, x, y + 1) + elev(d, x + 1, y + 1)) - (elev(d, x - 1, y - 1) + 2 * elev(d, x, y - 1) + elev(d, x + 1, y - 1));
	int lit = 160 - (dzdx + dzdy) / 4;
	int h0 = elev(d, x, y), occluded = 0;
	for (int dir = 0; dir < 8; dir++) {
		int dx = (dir == 0 || dir == 1 || dir == 7) - (dir == 3 || dir == 4 || dir == 5);
		int dy = (dir >= 1 && dir <= 3) - (dir >= 5 && dir <= 7);
		for (int s = 1; s <= AO_STEPS; s++) {
			int r = s * s;
			if (elev(d, x + dx * r, y + dy * r) - h0 > r * 4) {
				occluded++;
				break;
			}
		}
	}
	int v = lit - occluded * 12;
	return v < 0 ? 0 : (v > 255 ? 255 : v);
}

__global__ void hillshade(const uint16_t *dem, uint8_t *shade)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < TILE * TILE)
		shade[i] = (uint8_t)shade_at(dem, i % TILE, i / TILE);
}

/* 4 x 4 box preview; stats[0] += shade sum, stats[1] += dark pixels */
__global__ void preview(const uint8_t *shade, uint8_t *prev, unsigned long long *stats)
{
	__shared__ unsigned int s_sum[THREADS], s_dark[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x, px = i % PREVIEW, py = i / PREVIEW;
	unsigned int sum = 0, dark = 0;
	for (int y = 0; y < 4; y++)
		for (int x = 0; x < 4; x++) {
			unsigned int v = shade[(py * 4 + y) * TILE + px * 4 + x];
			sum += v;
			dark += v < 64u;
		}
	prev[i] = (uint8_t)(sum >> 4);
	s_sum[threadIdx.x] = sum;
	s_dark[threadIdx.x] = dark;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w) {
			s_sum[threadIdx.x] += s_sum[threadIdx.x + w];
			s_dark[threadIdx.x] += s_dark[threadIdx.x + w];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		atomicAdd(&stats[0], (unsigned long long)s_sum[0]);
		atomicAdd(&stats[1], (unsigned long long)s_dark[0]);
	}
}

/* --- the stream pool ------------------------------------------------------------------------ */

class StreamPool {
public:
	class Lease {
	public:
		Lease(StreamPool *pool, int slot) : pool_(pool), slot_(slot) {}
		Lease(const Lease &) = delete;
		Lease &operator=(const Lease &) = delete;
		~Lease() { pool_->release(slot_); }
		cudaStream_t stream() const { return pool_->streams_[slot_]; }
		int slot() const { return slot_; }

	private:
		StreamPool *pool_;
		int slot_;
	};

	StreamPool()
	{
		for (int k = 0; k < LANES; k++) {
			CHECK(cudaStreamCreateWithFlags(&streams_[k], cudaStreamNonBlocking));
			for (int p = 0; p < 2; p++)
				CHECK(cudaEventCreateWithFlags(&pass_done_[p][k], cudaEventDisableTiming));
		}
	}
	~StreamPool()
	{
		for (int k = 0; k < LANES; k++) {
			CHECK(cudaStreamDestroy(streams_[k]));
			for (int p = 0; p < 2; p++)
				CHECK(cudaEventDestroy(pass_done_[p][k]));
		}
	}
	Lease acquire()
	{
		int slot = next_;
		next_ = (next_ + 1) % LANES;
		leases_out_++;
		return Lease(this, slot);
	}
	/* after a pass is queued: one event per stream */
	void mark_pass(int pass)
	{
		for (int k = 0; k < LANES; k++)
			CHECK(cudaEventRecord(pass_done_[pass % 2][k], streams_[k]));
	}
	void wait_pass(int pass)
	{
		for (int k = 0; k < LANES; k++)
			CHECK(cudaEventSynchronize(pass_done_[pass % 2][k])); // SYNCSPY-CLEAN: one pass behind: the previous pass's tiles, while this pass's run
	}

private:
	/* the slot goes back as it is: the stream's order protects its buffers */
	void release(int /* slot */) { leases_out_--; }

	cudaStream_t streams_[LANES];
	cudaEvent_t pass_done_[2][LANES];
	int next_ = 0, leases_out_ = 0;
};

struct renderer {
	uint16_t *h_dem;                 /* pinned, DEM_TILES staged tiles */
	uint8_t *h_preview;              /* pinned, 2 x TILES previews, by pass parity */
	uint16_t *d_dem[LANES];
	uint8_t *d_shade[LANES], *d_preview[LANES];
	unsigned long long *d_stats;     /* 2 per tile job */
};

static int dem_source(int pass, int tile) { return (pass * 5 + tile * 3) % DEM_TILES; }

static void render_tile(StreamPool &pool, struct renderer *r, int pass, int tile)
{
	StreamPool::Lease lease = pool.acquire();
	cudaStream_t s = lease.stream();
	int k = lease.slot(), job = pass * TILES + tile;
	CHECK(cudaMemcpyAsync(r->d_dem[k], r->h_dem + (size_t)dem_source(pass, tile) * TILE * TILE, (size_t)TILE * TILE * sizeof(uint16_t), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: the DEM tile, async from pinned staging on the leased stream
	hillshade<<<TILE * TILE / THREADS, THREADS, 0, s>>>(r->d_dem[k], r->d_shade[k]);
	CHECK_LAUNCH();
	preview<<<PREVIEW * PREVIEW / THREADS, THREADS, 0, s>>>(r->d_shade[k], r->d_preview[k], r->d_stats + 2 * job);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(r->h_preview + (size_t)((pass % 2) * TILES + tile) * PREVIEW * PREVIEW, r->d_preview[k], PREVIEW * PREVIEW, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: the preview, async into pinned memory on the leased stream
}

static unsigned long long preview_digest(const uint8_t *p)
{
	unsigned long long d = 0;
	const uint32_t *w = (const uint32_t *)p;
	for (int i = 0; i < PREVIEW * PREVIEW / 4; i++)
		d = d * 0x100000001b3ull + w[i];
	return d;
}

/* publish a finished pass (here: digests, and the checked tiles kept) */
static void publish(const struct renderer *r, int pass, uint8_t *kept, const int checked[2][2], unsigned long long *checksum)
{
	for (int tile = 0; tile < TILES; tile++) {
		const uint8_t *p = r->h_preview + (size_t)((pass % 2) * TILES + tile) * PREVIEW * PREVIEW;
		*checksum = *checksum * 1000003u + preview_digest(p);
		for (int c = 0; c < 2; c++)
			if (pass == checked[c][0] && tile == checked[c][1])
				memcpy(kept + c * PREVIEW * PREVIEW, p, PREVIEW * PREVIEW);
	}
}

static void reference_tile(const uint16_t *dem, uint8_t *prev, unsigned long long *sum, unsigned long long *dark)
{
	uint8_t *shade = (uint8_t *)malloc(TILE * TILE);
	for (int y = 0; y < TILE; y++)
		for (int x = 0; x < TILE; x++)
			shade[y * TILE + x] = (uint8_t)shade_at(dem, x, y);
	*sum = *dark = 0;
	for (int i = 0; i < TILE * TILE; i++) {
		*sum += shade[i];
		*dark += shade[i] < 64;
	}
	for (int py = 0; py < PREVIEW; py++)
		for (int px = 0; px < PREVIEW; px++) {
			unsigned int s = 0;
			for (int y = 0; y < 4; y++)
				for (int x = 0; x < 4; x++)
					s += shade[(py * 4 + y) * TILE + px * 4 + x];
			prev[py * PREVIEW + px] = (uint8_t)(s >> 4);
		}
	free(shade);
}

int main(void)
{
	const char *name = "c88_clean_hillshade_tiles_stream_lease_events";
	struct renderer r;
	const int checked[2][2] = {{3, 5}, {40, 14}}; /* (pass, tile) */
	uint8_t *kept = (uint8_t *)malloc(2 * PREVIEW * PREVIEW);
	unsigned long long checksum = 0;

	{
		StreamPool pool;
		CHECK(cudaMallocHost(&r.h_dem, (size_t)DEM_TILES * TILE * TILE * sizeof(uint16_t))); // SYNCSPY-CLEAN: setup, the pinned DEM staging
		CHECK(cudaMallocHost(&r.h_preview, (size_t)2 * TILES * PREVIEW * PREVIEW)); // SYNCSPY-CLEAN: setup, the pinned previews (two passes)
		for (int src = 0; src < DEM_TILES; src++)
			for (int y = 0; y < TILE; y++)
				for (int x = 0; x < TILE; x++)
					r.h_dem[((size_t)src * TILE + y) * TILE + x] = dem_sample(src, x, y);
		for (int k = 0; k < LANES; k++) {
			CHECK(cudaMalloc(&r.d_dem[k], (size_t)TILE * TILE * sizeof(uint16_t))); // SYNCSPY-CLEAN: setup allocation
			CHECK(cudaMalloc(&r.d_shade[k], (size_t)TILE * TILE)); // SYNCSPY-CLEAN: setup allocation
			CHECK(cudaMalloc(&r.d_preview[k], PREVIEW * PREVIEW)); // SYNCSPY-CLEAN: setup allocation
		}
		CHECK(cudaMalloc(&r.d_stats, 2 * PASSES * TILES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMemset(r.d_stats, 0, 2 * PASSES * TILES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup, the statistics zeroed once
		CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, once before the passes

		for (int pass = 0; pass < PASSES; pass++) {
			for (int tile = 0; tile < TILES; tile++)
				render_tile(pool, &r, pass, tile);
			pool.mark_pass(pass);
			if (pass >= 1) {
				pool.wait_pass(pass - 1);
				publish(&r, pass - 1, kept, checked, &checksum);
			}
		}
		pool.wait_pass(PASSES - 1); /* the last pass, after the loop */
		publish(&r, PASSES - 1, kept, checked, &checksum);
	}

	unsigned long long *stats = (unsigned long long *)malloc(2 * PASSES * TILES * sizeof(unsigned long long));
	CHECK(cudaMemcpy(stats, r.d_stats, 2 * PASSES * TILES * sizeof(unsigned long long), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the tile statistics
	uint8_t *want = (uint8_t *)malloc(PREVIEW * PREVIEW);
	for (int c = 0; c < 2; c++) {
		int job = checked[c][0] * TILES + checked[c][1];
		unsigned long long sum, dark;
		reference_tile(r.h_dem + (size_t)dem_source(checked[c][0], checked[c][1]) * TILE * TILE, want, &sum, &dark);
		corpus_expect(name, "tile shade sum", (long long)stats[2 * job], (long long)sum);
		corpus_expect(name, "tile dark pixels", (long long)stats[2 * job + 1], (long long)dark);
		for (int i = 0; i < PREVIEW * PREVIEW; i++)
			if (kept[c * PREVIEW * PREVIEW + i] != want[i]) {
				corpus_expect(name, "preview pixel", kept[c * PREVIEW * PREVIEW + i], want[i]);
				break;
			}
	}
	for (int j = 0; j < 2 * PASSES * TILES; j++)
		checksum = checksum * 1000003u + stats[j];

	for (int k = 0; k < LANES; k++) {
		CHECK(cudaFree(r.d_dem[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(r.d_shade[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(r.d_preview[k])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaFree(r.d_stats)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(r.h_dem)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(r.h_preview)); // SYNCSPY-CLEAN: teardown
	free(kept);
	free(want);
	free(stats);
	corpus_result(name, PASSES, checksum);
	return 0;
}
