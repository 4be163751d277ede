/*
 * examples/corpus/c108_rover_obstacles_devsync_waits_map_fusion.cu: corpus workload (CUDA C,
 * stream priorities). The perception loop of a rover's depth camera, 640 x 480 frames in mm. Every
 * frame the host receives the camera's frame into a pinned double buffer. On a high-priority
 * non-blocking stream the GPU fills speckle holes and reduces the frame to 64 column sectors, each
 * sector's nearest obstacle in the rover's height band. The sectors come back into a pinned slot,
 * and the steering controller reads them at once: this frame's sectors are what it steers by.
 * Every fourth frame is also a keyframe. The frame stream copies the filtered frame into one of two
 * keyframe buffers, and a low-priority stream fuses it into a 3D occupancy grid: a ray march per
 * pixel, a long job that is meant to run in the background across the next frames.
 * wait_for_sectors() waits with cudaDeviceSynchronize, which "blocks until the device has
 * completed all preceding requested tasks" (runtime API reference): on keyframes it also waits for
 * the map fusion just queued on the background stream. The controller gets its sectors only when
 * the whole fusion is done. The host cannot render, upload or queue the next frames meanwhile,
 * and the next frames' filtering cannot use the GPU beside the fusion as the stream priorities
 * intend. The controller needs only the frame stream's work: a cudaEventSynchronize on an event
 * recorded after the sectors' download (or a cudaStreamSynchronize of the frame stream) waits
 * for that alone.
 * Planted: the cudaDeviceSynchronize in wait_for_sectors(), every frame (one line; its cost is
 * the fusion it waits for on keyframes).
 * Clean: the setup allocations and the grid's reset, the frame's async upload from the pinned
 * double buffer (a slot reused after a cudaEventSynchronize on its upload two frames back), the
 * sectors' async download into a pinned slot, the keyframe's device-to-device copy on the frame
 * stream (ordered after the fusion that last read the buffer by cudaStreamWaitEvent), the final
 * stream syncs and reads, teardown.
 * Depths, rays and the grid are integers (64-bit counters, integer atomics): the host checks two
 * frames' sectors and the grid's total hits exactly.
 */
#include "corpus.h"

enum { FRAMES = 48, W = 640, H = 480, PIXELS = W * H, SECTORS = 64, SLOTS = 2, KEYFRAME = 4 };
enum { BAND_LO = H / 2 - 60, BAND_HI = H / 2 + 40, FX = 500, FY = 500, CX = W / 2, CY = H / 2 };
enum { GX = 128, GY = 64, GZ = 192, VOXEL = 40, CAM_HEIGHT = 500, MAX_DEPTH = 8000 };
enum { THREADS = 256, CHECKED = 2 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;
static const cudaMemcpyKind D2D = cudaMemcpyDeviceToDevice;

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* a hole (0) takes the nearest valid depth of its 3 x 3 neighbours */
__host__ __device__ static inline unsigned short fill_hole(const unsigned short *raw, int u, int v)
{
	unsigned short d = raw[v * W + u];
	if (d != 0)
		return d;
	unsigned int best = 0xffffu;
	for (int dv = -1; dv <= 1; dv++)
		for (int du = -1; du <= 1; du++) {
			int uu = u + du, vv = v + dv;
			if (uu < 0 || uu >= W || vv < 0 || vv >= H)
				continue;
			unsigned int n = raw[vv * W + uu];
			if (n != 0 && n < best)
				best = n;
		}
	return best == 0xffffu ? 0 : (unsigned short)best;
}

/* the grid voxel of camera point (x, y, z) mm at keyframe k (the rover 100 mm further each),
 * or -1 outside the grid */
__host__ __device__ static inline int voxel_of(int x, int y, int z, int k)
{
	int gx = (x + GX * VOXEL / 2) / VOXEL, gy = (y + GY * VOXEL / 2) / VOXEL;
	int gz = (z + k * 100) / VOXEL;
	if (x + GX * VOXEL / 2 < 0 || y + GY * VOXEL / 2 < 0 || gx >= GX || gy >= GY || gz >= GZ)
		return -1;
	return (gz * GY + gy) * GX + gx;
}

__global__ void despeckle(const unsigned short *raw, unsigned short *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < PIXELS)
		out[i] = fill_hole(raw, i % W, i / W);
}

__global__ void sector_min(const unsigned short *depth, unsigned int *sectors)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int u = i % W, v = BAND_LO + i / W;
	if (v >= BAND_HI)
		return;
	unsigned int d = depth[v * W + u];
	if (d != 0)
		atomicMin(&sectors[u / (W / SECTORS)], d);
}

/* one ray per other pixel (even u and v): misses along the ray, a hit at its end */
__global__ void fuse(const unsigned short *depth, int k, unsigned long long *grid)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= PIXELS / 4)
		return;
	int u = (i % (W / 2)) * 2, v = (i / (W / 2)) * 2, d = depth[v * W + u];
	if (d == 0)
		return;
	int x = (u - CX) * d / FX, y = (v - CY) * d / FY, n = d / VOXEL;
	for (int s = 1; s <= n; s++) {
		int g = voxel_of(x * s / n, y * s / n, d * s / n, k);
		if (g >= 0)
			atomicAdd(&grid[g], s == n ? 1ull << 32 : 1ull);
	}
}

/* --- the camera and the controller (host) -------------------------------------------------- */

/* floor below the horizon, a wall approaching above it, three boxes crossing, speckle holes */
static void render_depth(int f, unsigned short *depth)
{
	static const int box_depth[3] = {1800, 2600, 3900}, box_w[3] = {90, 140, 60};
	static const int box_speed[3] = {7, -5, 11}, box_top[3] = {150, 170, 200};
	int row[H];
	for (int v = 0; v < H; v++) {
		int floor = v > CY ? CAM_HEIGHT * FY / (v - CY) : MAX_DEPTH;
		int wall = 6000 - f * 20;
		row[v] = floor < wall ? floor : wall;
	}
	for (int v = 0; v < H; v++)
		for (int u = 0; u < W; u++) {
			int d = row[v];
			for (int b = 0; b < 3; b++) {
				int left = ((b * 211 + f * box_speed[b]) % W + W) % W;
				int inside = v >= box_top[b] && u >= left && u < left + box_w[b];
				if (inside && box_depth[b] < d)
					d = box_depth[b];
			}
			if (mix32((uint32_t)(f * PIXELS + v * W + u)) % 97u == 0)
				d = 0;
			depth[v * W + u] = (unsigned short)(d > MAX_DEPTH ? 0 : d);
		}
}

/* steer towards the sector with the most clearance; slow down near obstacles ahead */
static unsigned long long steer(const unsigned int *sectors)
{
	unsigned int best = 0, ahead = 0xffffffffu;
	int arg = 0;
	for (int s = 0; s < SECTORS; s++) {
		unsigned int c = sectors[s] == 0xffffffffu ? (unsigned int)MAX_DEPTH : sectors[s];
		if (c > best) {
			best = c;
			arg = s;
		}
		if (s >= SECTORS / 2 - 4 && s < SECTORS / 2 + 4 && c < ahead)
			ahead = c;
	}
	int speed = ahead < 1000 ? 0 : (int)(ahead - 1000) / 20;
	return (unsigned long long)arg << 32 | (unsigned int)speed;
}

static void wait_for_sectors(void)
{
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-PROBLEM: also waits for the background map fusion
}

/* the host's reference of one frame's sectors */
static void host_sectors(const unsigned short *raw, unsigned int *sectors)
{
	for (int s = 0; s < SECTORS; s++)
		sectors[s] = 0xffffffffu;
	for (int v = BAND_LO; v < BAND_HI; v++)
		for (int u = 0; u < W; u++) {
			unsigned int d = fill_hole(raw, u, v);
			if (d != 0 && d < sectors[u / (W / SECTORS)])
				sectors[u / (W / SECTORS)] = d;
		}
}

struct rover {
	cudaStream_t fg, bg; /* the frame stream (high priority), the map stream (low) */
	unsigned short *d_raw, *d_depth, *d_kf[2];
	unsigned int *d_sec;
	unsigned long long *d_grid;
	cudaEvent_t kf_ready[2], fused[2];
};

#define FRAME_BYTES ((size_t)PIXELS * sizeof(unsigned short))
#define SEC_BYTES ((size_t)SECTORS * sizeof(unsigned int))

/* frame f's obstacle sectors, into the pinned slot `sec` */
static void perceive(struct rover *r, const unsigned short *frame, unsigned int *sec)
{
	CHECK(cudaMemcpyAsync(r->d_raw, frame, FRAME_BYTES, H2D, r->fg)); // SYNCSPY-CLEAN: pinned
	despeckle<<<PIXELS / THREADS, THREADS, 0, r->fg>>>(r->d_raw, r->d_depth);
	CHECK_LAUNCH();
	CHECK(cudaMemsetAsync(r->d_sec, 0xff, SEC_BYTES, r->fg));
	int band_blocks = (BAND_HI - BAND_LO) * W / THREADS;
	sector_min<<<band_blocks, THREADS, 0, r->fg>>>(r->d_depth, r->d_sec);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(sec, r->d_sec, SEC_BYTES, D2H, r->fg)); // SYNCSPY-CLEAN: pinned slot
}

/* keyframe kf: copied on the frame stream, fused into the map on the background stream */
static void queue_keyframe(struct rover *r, int kf)
{
	int b = kf % 2;
	unsigned short *dst = r->d_kf[b];
	CHECK(cudaStreamWaitEvent(r->fg, r->fused[b], 0)); /* the fusion that last read dst */
	CHECK(cudaMemcpyAsync(dst, r->d_depth, FRAME_BYTES, D2D, r->fg)); // SYNCSPY-CLEAN: D2D
	CHECK(cudaEventRecord(r->kf_ready[b], r->fg));
	CHECK(cudaStreamWaitEvent(r->bg, r->kf_ready[b], 0));
	fuse<<<PIXELS / 4 / THREADS, THREADS, 0, r->bg>>>(dst, kf, r->d_grid);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(r->fused[b], r->bg));
}

int main(void)
{
	const char *name = "c108_rover_obstacles_devsync_waits_map_fusion";
	const int checked[CHECKED] = {6, 41};
	int least, greatest;
	struct rover rv, *r = &rv;
	unsigned short *h_depth[SLOTS];
	unsigned int *h_sec[SLOTS];
	size_t grid_bytes = (size_t)GX * GY * GZ * sizeof(unsigned long long);
	cudaEvent_t uploaded[SLOTS];
	CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	CHECK(cudaStreamCreateWithPriority(&r->fg, cudaStreamNonBlocking, greatest));
	CHECK(cudaStreamCreateWithPriority(&r->bg, cudaStreamNonBlocking, least));
	CHECK(cudaMalloc(&r->d_raw, FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&r->d_depth, FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&r->d_sec, SEC_BYTES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&r->d_grid, grid_bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(r->d_grid, 0, grid_bytes, r->bg));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMalloc(&r->d_kf[k], FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaEventCreateWithFlags(&r->kf_ready[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&r->fused[k], cudaEventDisableTiming));
	}
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMallocHost(&h_depth[k], FRAME_BYTES)); // SYNCSPY-CLEAN: setup, pinned
		CHECK(cudaMallocHost(&h_sec[k], SEC_BYTES)); // SYNCSPY-CLEAN: setup, pinned
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
	}

	unsigned long long checksum = 0;
	unsigned int kept[CHECKED][SECTORS];
	for (int f = 0; f < FRAMES; f++) {
		int k = f % SLOTS;
		unsigned short *frame = h_depth[k];
		unsigned int *sec = h_sec[k];
		if (f >= SLOTS)
			CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: 2 frames back
		render_depth(f, frame);
		perceive(r, frame, sec);
		CHECK(cudaEventRecord(uploaded[k], r->fg));
		if (f % KEYFRAME == 0)
			queue_keyframe(r, f / KEYFRAME);
		wait_for_sectors();
		checksum = checksum * 1000003u + steer(sec);
		for (int c = 0; c < CHECKED; c++)
			if (f == checked[c]) {
				unsigned int ref[SECTORS];
				host_sectors(frame, ref);
				for (int s = 0; s < SECTORS; s++) {
					corpus_expect(name, "sector", sec[s], ref[s]);
					kept[c][s] = sec[s];
				}
			}
	}
	CHECK(cudaStreamSynchronize(r->fg)); // SYNCSPY-CLEAN: the final wait
	CHECK(cudaStreamSynchronize(r->bg)); // SYNCSPY-CLEAN: the final wait, the last fusion

	/* the grid: its total hits are the rays whose end lies inside it */
	unsigned long long *grid = (unsigned long long *)malloc(grid_bytes);
	CHECK(cudaMemcpy(grid, r->d_grid, grid_bytes, D2H)); // SYNCSPY-CLEAN: final read, the map
	unsigned long long hits = 0, misses = 0, map = 0, want = 0;
	for (size_t g = 0; g < (size_t)GX * GY * GZ; g++) {
		hits += grid[g] >> 32;
		misses += grid[g] & 0xffffffffu;
		map = map * 31u + grid[g];
	}
	unsigned short *raw = (unsigned short *)malloc(FRAME_BYTES);
	for (int f = 0; f < FRAMES; f += KEYFRAME) {
		render_depth(f, raw);
		for (int v = 0; v < H; v += 2)
			for (int u = 0; u < W; u += 2) {
				int d = fill_hole(raw, u, v);
				int x = (u - CX) * d / FX, y = (v - CY) * d / FY;
				int end = voxel_of(x, y, d, f / KEYFRAME);
				want += d != 0 && d / VOXEL > 0 && end >= 0;
			}
	}
	corpus_expect(name, "grid hits", (long long)hits, (long long)want);
	checksum = (checksum * 1000003u + map) * 31u + misses;
	for (int c = 0; c < CHECKED; c++)
		checksum = checksum * 31u + kept[c][SECTORS / 2];

	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(r->d_kf[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(r->kf_ready[k]));
		CHECK(cudaEventDestroy(r->fused[k]));
	}
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaFreeHost(h_depth[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_sec[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[k]));
	}
	CHECK(cudaFree(r->d_raw)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(r->d_depth)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(r->d_sec)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(r->d_grid)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(r->fg));
	CHECK(cudaStreamDestroy(r->bg));
	free(grid);
	free(raw);
	corpus_result(name, FRAMES, checksum);
	return 0;
}
