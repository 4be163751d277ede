/*
 * examples/corpus/c72_tile_server_pool_trim_per_request.cu: corpus workload (CUDA C). A map tile
 * server that renders density heat-map tiles of 4M geotagged points kept on the GPU. Each
 * request names a zoom level and a viewport; the server bins the points that fall in it into a
 * density grid (1024^2 to 4096^2 cells by zoom), smooths it with a 3 x 3 kernel, reduces the
 * tile's statistics into a reply and sends it; the client pans to the hottest spot of the reply,
 * so every request depends on the previous reply and the one wait per request is the protocol.
 * The two grids are scratch: taken from the server's own memory pool (cudaMemPoolCreate) with
 * cudaMallocFromPoolAsync and returned with cudaFreeAsync, and the pool's release threshold is
 * raised at start-up so that the freed memory stays reserved across the per-request wait (CUDA
 * programming guide, stream-ordered memory allocator). But after every reply the server's
 * release_idle_memory() calls cudaMemPoolTrimTo(pool, 0) to keep its footprint small between
 * requests: the runtime API reference (cudaMemPoolTrimTo) says it releases memory back to the OS
 * until the pool holds fewer than minBytesToKeep bytes, and after the reply's synchronization
 * the freed grids no longer count as outstanding, so the whole reserve goes back to the OS and
 * the next request's cudaMallocFromPoolAsync calls have to obtain and map up to 128 MB again,
 * every request, while the GPU waits for the request to be queued. Trimming when the server goes
 * idle (or never, with the threshold already set) would keep the reserve. The allocation lines
 * carry no marker: their cost is the trim's consequence (examples/corpus/README.md, "Markers").
 * Planted: the cudaMemPoolTrimTo in release_idle_memory(), every request.
 * Clean: the setup allocations and the pool's warm-up, the per-request cudaFreeAsync, the reply's
 * download into pinned memory and the per-request cudaStreamSynchronize the reply needs,
 * teardown.
 */
#include "corpus.h"

enum { REQUESTS = 60, POINTS = 1 << 22, THREADS = 256, STAT_BLOCKS = 264, MAX_SIDE = 4096 };

#define WORLD_BITS 20
#define WORLD_SIZE (1u << WORLD_BITS)

struct tile_reply {
	unsigned long long sum;
	unsigned int max, nonzero;
};

struct viewport {
	uint32_t x0, y0;
	int side, shift;
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

__host__ __device__ static inline uint32_t point_x(uint32_t i) { return mix32(i * 2u + 11u) & (WORLD_SIZE - 1u); }
__host__ __device__ static inline uint32_t point_y(uint32_t i)
{
	/* points gather along a few diagonal bands (roads), the rest spread out */
	uint32_t h = mix32(i * 2u + 12u);
	return (h & 3u) ? (point_x(i) + (h >> 12) % 4096u) & (WORLD_SIZE - 1u) : h & (WORLD_SIZE - 1u);
}

/* the client pans to the previous reply's hot spot */
static struct viewport viewport_for(int r, const struct tile_reply *prev)
{
	struct viewport v;
	int z = r % 3;
	v.side = 1024 << z;
	v.shift = 9 - 2 * z;
	uint32_t extent = (uint32_t)v.side << v.shift, range = WORLD_SIZE - extent;
	uint32_t pan = prev ? prev->max * 131u + prev->nonzero : 0u;
	v.x0 = (mix32((uint32_t)r * 2u + 1u) + pan) % range;
	v.y0 = (mix32((uint32_t)r * 2u + 2u) + pan) % range;
	v.y0 = (v.x0 + v.y0 / 8u) % range; /* near the bands */
	return v;
}

__global__ void seed_points(uint32_t *px, uint32_t *py)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < POINTS) {
		px[i] = point_x(i);
		py[i] = point_y(i);
	}
}

__global__ void bin_points(const uint32_t *px, const uint32_t *py, struct viewport v, uint32_t *grid)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= POINTS)
		return;
	uint32_t dx = px[i] - v.x0, dy = py[i] - v.y0, extent = (uint32_t)v.side << v.shift;
	if (dx < extent && dy < extent)
		atomicAdd(&grid[(dy >> v.shift) * (uint32_t)v.side + (dx >> v.shift)], 1u);
}

__host__ __device__ static inline int clamp_cell(int v, int side) { return v < 0 ? 0 : (v >= side ? side - 1 : v); }

__host__ __device__ static inline uint32_t smooth_at(const uint32_t *g, int side, int x, int y)
{
	uint32_t s = 0;
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++) {
			int xx = clamp_cell(x + dx, side), yy = clamp_cell(y + dy, side);
			s += g[yy * side + xx] * (uint32_t)((dx ? 1 : 2) * (dy ? 1 : 2));
		}
	return s;
}

__global__ void smooth(const uint32_t *g, uint32_t *heat, int side)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	heat[y * side + x] = smooth_at(g, side, x, y);
}

__global__ void tile_stats(const uint32_t *heat, int cells, struct tile_reply *rep)
{
	__shared__ unsigned long long s_sum[THREADS];
	__shared__ unsigned int s_max[THREADS], s_nz[THREADS];
	unsigned long long sum = 0;
	unsigned int mx = 0, nz = 0;
	for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cells; c += gridDim.x * blockDim.x) {
		uint32_t h = heat[c];
		sum += h;
		mx = h > mx ? h : mx;
		nz += h != 0;
	}
	s_sum[threadIdx.x] = sum;
	s_max[threadIdx.x] = mx;
	s_nz[threadIdx.x] = nz;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int k = 1; k < THREADS; k++) {
			sum += s_sum[k];
			mx = s_max[k] > mx ? s_max[k] : mx;
			nz += s_nz[k];
		}
		atomicAdd(&rep->sum, sum);
		atomicMax(&rep->max, mx);
		atomicAdd(&rep->nonzero, nz);
	}
}

struct server {
	cudaStream_t s;
	cudaMemPool_t pool;
	uint32_t *d_px, *d_py;
	struct tile_reply *d_reply, *h_reply; /* h_reply: pinned, one per request */
};

/* --- the server ---------------------------------------------------------------------------- */

static void release_idle_memory(struct server *srv)
{
	CHECK(cudaMemPoolTrimTo(srv->pool, 0)); // SYNCSPY-PROBLEM: gives the pool's whole reserve back to the OS after every reply: the next request maps it again
}

static void serve_tile(struct server *srv, int r)
{
	struct viewport v = viewport_for(r, r ? &srv->h_reply[r - 1] : NULL);
	size_t bytes = (size_t)v.side * v.side * sizeof(uint32_t);
	uint32_t *grid, *heat;
	CHECK(cudaMallocFromPoolAsync(&grid, bytes, srv->pool, srv->s));
	CHECK(cudaMallocFromPoolAsync(&heat, bytes, srv->pool, srv->s));
	CHECK(cudaMemsetAsync(grid, 0, bytes, srv->s));
	CHECK(cudaMemsetAsync(srv->d_reply, 0, sizeof(struct tile_reply), srv->s));
	bin_points<<<POINTS / THREADS, THREADS, 0, srv->s>>>(srv->d_px, srv->d_py, v, grid);
	CHECK_LAUNCH();
	smooth<<<dim3(v.side / THREADS, v.side), THREADS, 0, srv->s>>>(grid, heat, v.side);
	CHECK_LAUNCH();
	tile_stats<<<STAT_BLOCKS, THREADS, 0, srv->s>>>(heat, v.side * v.side, srv->d_reply);
	CHECK_LAUNCH();
	CHECK(cudaFreeAsync(grid, srv->s)); // SYNCSPY-CLEAN: stream-ordered free back to the pool
	CHECK(cudaFreeAsync(heat, srv->s)); // SYNCSPY-CLEAN: stream-ordered free back to the pool
	CHECK(cudaMemcpyAsync(&srv->h_reply[r], srv->d_reply, sizeof(struct tile_reply), cudaMemcpyDeviceToHost, srv->s)); // SYNCSPY-CLEAN: the reply, into pinned memory
	CHECK(cudaStreamSynchronize(srv->s)); // SYNCSPY-CLEAN: the reply is sent now; the client's next request depends on it
	release_idle_memory(srv);
}

static struct tile_reply reference(int r, const struct tile_reply *prev)
{
	struct viewport v = viewport_for(r, prev);
	uint32_t *g = (uint32_t *)calloc((size_t)v.side * v.side, sizeof(uint32_t));
	uint32_t extent = (uint32_t)v.side << v.shift;
	for (uint32_t i = 0; i < POINTS; i++) {
		uint32_t dx = point_x(i) - v.x0, dy = point_y(i) - v.y0;
		if (dx < extent && dy < extent)
			g[(dy >> v.shift) * (uint32_t)v.side + (dx >> v.shift)]++;
	}
	struct tile_reply t = {0, 0, 0};
	for (int y = 0; y < v.side; y++)
		for (int x = 0; x < v.side; x++) {
			uint32_t h = smooth_at(g, v.side, x, y);
			t.sum += h;
			t.max = h > t.max ? h : t.max;
			t.nonzero += h != 0;
		}
	free(g);
	return t;
}

int main(void)
{
	const char *name = "c72_tile_server_pool_trim_per_request";
	struct server srv;
	cudaMemPoolProps props = {};
	uint64_t keep = UINT64_MAX;
	void *warm[2];
	const size_t max_bytes = (size_t)MAX_SIDE * MAX_SIDE * sizeof(uint32_t);

	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaStreamCreateWithFlags(&srv.s, cudaStreamNonBlocking));
	CHECK(cudaMemPoolCreate(&srv.pool, &props));
	CHECK(cudaMemPoolSetAttribute(srv.pool, cudaMemPoolAttrReleaseThreshold, &keep));
	CHECK(cudaMalloc(&srv.d_px, POINTS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&srv.d_py, POINTS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&srv.d_reply, sizeof(struct tile_reply))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&srv.h_reply, REQUESTS * sizeof(struct tile_reply))); // SYNCSPY-CLEAN: setup pinned reply buffer
	seed_points<<<POINTS / THREADS, THREADS, 0, srv.s>>>(srv.d_px, srv.d_py);
	CHECK_LAUNCH();
	CHECK(cudaMallocFromPoolAsync(&warm[0], max_bytes, srv.pool, srv.s)); // SYNCSPY-CLEAN: setup, reserves the pool's memory once
	CHECK(cudaMallocFromPoolAsync(&warm[1], max_bytes, srv.pool, srv.s)); // SYNCSPY-CLEAN: setup, reserves the pool's memory once
	CHECK(cudaFreeAsync(warm[0], srv.s)); // SYNCSPY-CLEAN: setup, back to the pool (kept: the threshold is raised)
	CHECK(cudaFreeAsync(warm[1], srv.s)); // SYNCSPY-CLEAN: setup, back to the pool (kept: the threshold is raised)
	CHECK(cudaStreamSynchronize(srv.s)); // SYNCSPY-CLEAN: setup, once

	for (int r = 0; r < REQUESTS; r++)
		serve_tile(&srv, r);

	unsigned long long checksum = 0;
	for (int r = 0; r < REQUESTS; r++) {
		if (r == 3 || r == 4 || r == 31) {
			struct tile_reply want = reference(r, &srv.h_reply[r - 1]);
			corpus_expect(name, "tile sum", (long long)srv.h_reply[r].sum, (long long)want.sum);
			corpus_expect(name, "tile max", srv.h_reply[r].max, want.max);
			corpus_expect(name, "tile nonzero cells", srv.h_reply[r].nonzero, want.nonzero);
		}
		checksum = checksum * 1000003u + srv.h_reply[r].sum * 31u + srv.h_reply[r].max + srv.h_reply[r].nonzero;
	}

	CHECK(cudaFree(srv.d_px)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(srv.d_py)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(srv.d_reply)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(srv.h_reply)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaMemPoolDestroy(srv.pool)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(srv.s));
	corpus_result(name, REQUESTS, checksum);
	return 0;
}
