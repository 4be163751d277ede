/*
 * examples/corpus/c85_dual_camera_arena_null_stream.cu: corpus workload (CUDA C++). Motion
 * detection for two 4096 x 2048 traffic cameras: each camera is a lane with its own stream
 * (cudaStreamCreate, blocking) and kernels sized to half of the GPU's multiprocessors, so that
 * the two lanes run side by side; per frame a lane reads the sensor (a synthetic scene of moving
 * vehicles over noise and vignetting), blurs it (5 x 5 box), updates a running-average background
 * and thresholds the difference, and counts the dilated foreground per 64 x 64 tile. The frame's
 * raw, blurred and mask planes (40 MB) are scratch from a ScratchArena that takes them from the
 * device's default memory pool with cudaMallocAsync and gives them back with cudaFreeAsync (the
 * pool's release threshold is raised at start-up, so the memory stays reserved). The arena is
 * meant to order its scratch on the lane's stream, but CameraLane builds it with a default
 * member initializer, ScratchArena arena{stream}, which copies the stream handle when the lane is
 * constructed, before open() creates the stream: the arena's stream is 0, the legacy default
 * stream. cudaMallocAsync and cudaFreeAsync insert their operations into the stream given and
 * "use standard default stream semantics" (runtime API reference), and the legacy default stream
 * synchronizes with every blocking stream (CUDA programming guide, implicit synchronization):
 * each camera's allocation waits for all work queued on both lanes, and the next lane's kernels
 * wait for it. The two lanes, built to overlap, run one after the other every frame (half the GPU
 * idle), while the program stays correct because the implicit barriers order everything. Setting
 * the arena's stream after the lane's stream exists would fix it.
 * Planted: the cudaMallocAsync in ScratchArena::take() and the cudaFreeAsync in
 * ScratchArena::give(), on the legacy default stream, every frame of both cameras (one problem,
 * two lines).
 * Clean: the setup allocations and the background's initialization, the one synchronization
 * after the loop and the final reads of the tile counts, teardown.
 */
#include "corpus.h"

#include <string.h>

enum { FRAMES = 60, CAMERAS = 2, W = 4096, H = 2048, TILE = 64, TILES_X = W / TILE, TILES_Y = H / TILE, NTILES = TILES_X * TILES_Y, BLOBS = 24, THREADS = 256 };

#define PIXELS ((size_t)W * H)
#define SCRATCH_BYTES (PIXELS * (2 * sizeof(uint16_t) + 1))
#define BG_INIT 432
#define FG_THRESHOLD 60

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the scene: vehicles (squares) moving across a noisy, vignetted road */
__host__ __device__ static inline int sensor(int cam, int frame, int x, int y)
{
	int v = 400 + (int)(mix32(((uint32_t)(cam * FRAMES + frame) * H + (uint32_t)y) * W + (uint32_t)x) & 63u);
	int dx = x - W / 2, dy = y - H / 2;
	v += (dx * dx + dy * dy) >> 16;
	for (int b = 0; b < BLOBS; b++) {
		int r = 16 + (b * 13) % 48;
		int cx = (b * 977 + cam * 1013 + frame * (4 + b % 9) * 3) % W;
		int cy = (b * 1553 + cam * 509 + frame * (2 + b % 5) * 2) % H;
		int ax = x - cx, ay = y - cy;
		if ((ax < 0 ? -ax : ax) <= r && (ay < 0 ? -ay : ay) <= r)
			return v + 500;
	}
	return v;
}

__global__ void read_sensor(int cam, int frame, uint16_t *raw)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < PIXELS; i += (size_t)gridDim.x * blockDim.x)
		raw[i] = (uint16_t)sensor(cam, frame, (int)(i % W), (int)(i / W));
}

__host__ __device__ static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

__global__ void box_blur(const uint16_t *raw, uint16_t *blur)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < PIXELS; i += (size_t)gridDim.x * blockDim.x) {
		int x = (int)(i % W), y = (int)(i / W), s = 0;
		for (int dy = -2; dy <= 2; dy++)
			for (int dx = -2; dx <= 2; dx++)
				s += raw[clampi(y + dy, 0, H - 1) * W + clampi(x + dx, 0, W - 1)];
		blur[i] = (uint16_t)(s / 25);
	}
}

__host__ __device__ static inline int foreground(int blur, int bg)
{
	int d = blur - bg;
	return (d < 0 ? -d : d) > FG_THRESHOLD;
}

__global__ void subtract_background(const uint16_t *blur, uint16_t *bg, uint8_t *mask)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < PIXELS; i += (size_t)gridDim.x * blockDim.x) {
		int b = blur[i], g = bg[i];
		mask[i] = (uint8_t)foreground(b, g);
		bg[i] = (uint16_t)(g + (b - g) / 16);
	}
}

__global__ void count_tiles(const uint8_t *mask, uint32_t *counts)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < PIXELS; i += (size_t)gridDim.x * blockDim.x) {
		int x = (int)(i % W), y = (int)(i / W), hit = 0;
		for (int dy = -1; dy <= 1 && !hit; dy++)
			for (int dx = -1; dx <= 1; dx++)
				hit |= mask[clampi(y + dy, 0, H - 1) * W + clampi(x + dx, 0, W - 1)];
		if (hit)
			atomicAdd(&counts[(y / TILE) * TILES_X + x / TILE], 1u);
	}
}

__global__ void fill_background(uint16_t *bg)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < PIXELS; i += (size_t)gridDim.x * blockDim.x)
		bg[i] = BG_INIT;
}

/* --- the lanes ------------------------------------------------------------------------------ */

class ScratchArena {
public:
	explicit ScratchArena(cudaStream_t stream) : stream_(stream) {}
	void *take(size_t bytes)
	{
		void *p;
		CHECK(cudaMallocAsync(&p, bytes, stream_)); // SYNCSPY-PROBLEM: the arena's stream is 0 (copied before the lane's stream existed): a legacy-default-stream barrier between the two camera lanes, every frame
		return p;
	}
	void give(void *p)
	{
		CHECK(cudaFreeAsync(p, stream_)); // SYNCSPY-PROBLEM: the same: freed on the legacy default stream, a barrier between the lanes, every frame
	}

private:
	cudaStream_t stream_;
};

struct CameraLane {
	int cam = 0, blocks = 0;
	cudaStream_t stream = nullptr;
	ScratchArena arena{stream}; /* scratch ordered on the lane's stream */
	uint16_t *d_bg = nullptr;
	uint32_t *d_counts = nullptr; /* FRAMES x NTILES */

	void open(int c, int grid)
	{
		cam = c;
		blocks = grid;
		CHECK(cudaStreamCreate(&stream));
		CHECK(cudaMalloc(&d_bg, PIXELS * sizeof(uint16_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&d_counts, (size_t)FRAMES * NTILES * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMemsetAsync(d_counts, 0, (size_t)FRAMES * NTILES * sizeof(uint32_t), stream));
		fill_background<<<blocks, THREADS, 0, stream>>>(d_bg);
		CHECK_LAUNCH();
	}

	void process(int frame)
	{
		uint8_t *scratch = (uint8_t *)arena.take(SCRATCH_BYTES);
		uint16_t *raw = (uint16_t *)scratch, *blur = raw + PIXELS;
		uint8_t *mask = (uint8_t *)(blur + PIXELS);
		read_sensor<<<blocks, THREADS, 0, stream>>>(cam, frame, raw);
		CHECK_LAUNCH();
		box_blur<<<blocks, THREADS, 0, stream>>>(raw, blur);
		CHECK_LAUNCH();
		subtract_background<<<blocks, THREADS, 0, stream>>>(blur, d_bg, mask);
		CHECK_LAUNCH();
		count_tiles<<<blocks, THREADS, 0, stream>>>(mask, d_counts + (size_t)frame * NTILES);
		CHECK_LAUNCH();
		arena.give(scratch);
	}

	void close()
	{
		CHECK(cudaFree(d_bg)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_counts)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(stream));
	}
};

/* one tile of one camera through all frames, on the CPU (the tile, its dilation border and the
 * blur's border) */
static void reference_tile(int cam, int tile, uint32_t *want)
{
	enum { B = 3, R = TILE + 2 * B };
	int x0 = (tile % TILES_X) * TILE - B, y0 = (tile / TILES_X) * TILE - B;
	static int raw[R + 4][R + 4], bg[R][R], mask[R][R];
	for (int y = 0; y < R; y++)
		for (int x = 0; x < R; x++)
			bg[y][x] = BG_INIT;
	for (int f = 0; f < FRAMES; f++) {
		for (int y = 0; y < R + 4; y++)
			for (int x = 0; x < R + 4; x++)
				raw[y][x] = sensor(cam, f, clampi(x0 + x - 2, 0, W - 1), clampi(y0 + y - 2, 0, H - 1));
		for (int y = 0; y < R; y++)
			for (int x = 0; x < R; x++) {
				int gx = x0 + x, gy = y0 + y, s = 0;
				if (gx < 0 || gy < 0 || gx >= W || gy >= H)
					continue;
				for (int dy = -2; dy <= 2; dy++)
					for (int dx = -2; dx <= 2; dx++) {
						int sx = clampi(gx + dx, 0, W - 1) - x0 + 2, sy = clampi(gy + dy, 0, H - 1) - y0 + 2;
						s += raw[sy][sx];
					}
				int b = s / 25;
				mask[y][x] = foreground(b, bg[y][x]);
				bg[y][x] = bg[y][x] + (b - bg[y][x]) / 16;
			}
		uint32_t count = 0;
		for (int y = B; y < B + TILE; y++)
			for (int x = B; x < B + TILE; x++) {
				int gx = x0 + x, gy = y0 + y, hit = 0;
				for (int dy = -1; dy <= 1; dy++)
					for (int dx = -1; dx <= 1; dx++)
						hit |= mask[clampi(gy + dy, 0, H - 1) - y0][clampi(gx + dx, 0, W - 1) - x0];
				count += (uint32_t)hit;
			}
		want[f] = count;
	}
}

int main(void)
{
	const char *name = "c85_dual_camera_arena_null_stream";
	CameraLane lanes[CAMERAS];
	int sms;
	cudaMemPool_t pool;
	uint64_t keep = UINT64_MAX;

	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
	for (int c = 0; c < CAMERAS; c++)
		lanes[c].open(c, sms / CAMERAS > 0 ? sms / CAMERAS : 1);

	for (int frame = 0; frame < FRAMES; frame++)
		for (int c = 0; c < CAMERAS; c++)
			lanes[c].process(frame);

	uint32_t *counts = (uint32_t *)malloc((size_t)CAMERAS * FRAMES * NTILES * sizeof(uint32_t));
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: once, after the loop
	for (int c = 0; c < CAMERAS; c++)
		CHECK(cudaMemcpy(counts + (size_t)c * FRAMES * NTILES, lanes[c].d_counts, (size_t)FRAMES * NTILES * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of each camera's tile counts

	/* tiles checked on the CPU: corners, and tiles that vehicles cross */
	uint32_t want[FRAMES];
	const int checked[4][2] = {{0, 0}, {1, NTILES - 1}, {0, (1553 % H / TILE) * TILES_X + 977 % W / TILE}, {1, ((1553 + 509) % H / TILE) * TILES_X + (977 + 1013) % W / TILE}};
	unsigned long long seen = 0;
	for (int k = 0; k < 4; k++) {
		int cam = checked[k][0], tile = checked[k][1];
		reference_tile(cam, tile, want);
		for (int f = 0; f < FRAMES; f++) {
			corpus_expect(name, "foreground pixels in tile", counts[((size_t)cam * FRAMES + f) * NTILES + tile], want[f]);
			seen += want[f];
		}
	}
	corpus_expect(name, "checked tiles see vehicles", seen > 0, 1);
	unsigned long long checksum = 0;
	for (size_t i = 0; i < (size_t)CAMERAS * FRAMES * NTILES; i++)
		checksum = checksum * 1000003u + counts[i];

	for (int c = 0; c < CAMERAS; c++)
		lanes[c].close();
	free(counts);
	corpus_result(name, FRAMES, checksum);
	return 0;
}
