/*
 * examples/corpus/c78_clean_pyramid_graph_memory_nodes.cu: corpus workload (CUDA C), CLEAN. The
 * front end of a visual odometry pipeline: every camera frame (2048 x 1024) is rendered by the
 * camera model, reduced to a four-level image pyramid, and a corner detector counts strong
 * corners per level into the frame's row of a device table. The three coarser levels are
 * scratch that lives only during the frame: they are allocated with cudaMallocAsync and freed
 * with cudaFreeAsync inside the frame's stream capture, so the captured graph holds them as
 * graph memory nodes (CUDA programming guide, graph memory nodes): the graph is instantiated
 * and uploaded once at setup, which maps the graph's memory, and every cudaGraphLaunch reuses
 * it with no allocation call, no free and no synchronization. The frame index lives on the
 * device (a one-thread kernel at the end of the graph advances it), so the graph never changes.
 * One wait and one read at the end.
 * Clean: the captured cudaMallocAsync and cudaFreeAsync (they run once, at capture), the graph's
 * instantiation and upload at setup, the setup allocations, the final wait and read, teardown.
 */
#include "corpus.h"

enum { FRAMES = 60, W = 2048, H = 1024, LEVELS = 4, THREADS = 256, CORNER_LEVEL = 90 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the camera model: a calibration checkerboard with scattered point lights, panning right by
 * 3 pixels a frame, plus sensor noise */
__host__ __device__ static inline uint32_t camera_pixel(int frame, int x, int y)
{
	int sx = x + 3 * frame;
	uint32_t scene = (((sx >> 3) ^ (y >> 3)) & 1) ? 200u : 40u;
	scene += mix32((uint32_t)((sx >> 6) * 131 + (y >> 6))) & 63u;
	if (mix32((uint32_t)sx * 7919u + (uint32_t)y * 104729u) % 211u == 0u)
		scene += 1000u;
	return scene + (mix32((uint32_t)(y * W + x) ^ (uint32_t)frame * 0x9e3779b9u) & 7u);
}

__host__ __device__ static inline uint32_t down_at(const uint32_t *src, int sw, int x, int y)
{
	const uint32_t *p = src + (size_t)(2 * y) * sw + 2 * x;
	return (p[0] + p[1] + p[sw] + p[sw + 1] + 2u) >> 2;
}

/* a FAST-like test: the centre differs from both ends of a horizontal or a vertical segment */
__host__ __device__ static inline int corner_at(const uint32_t *img, int w, int h, int x, int y)
{
	if (x < 3 || y < 3 || x >= w - 3 || y >= h - 3)
		return 0;
	int c = (int)img[y * w + x];
	int l = (int)img[y * w + x - 3], r = (int)img[y * w + x + 3], u = (int)img[(y - 3) * w + x], d = (int)img[(y + 3) * w + x];
	int dh = abs(c - l) < abs(c - r) ? abs(c - l) : abs(c - r), dv = abs(c - u) < abs(c - d) ? abs(c - u) : abs(c - d);
	return dh > CORNER_LEVEL && dv > CORNER_LEVEL;
}

__global__ void render(uint32_t *img, const int *frame_idx)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	img[y * W + x] = camera_pixel(*frame_idx, x, y);
}

__global__ void downsample(const uint32_t *src, uint32_t *dst, int dw)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x < dw)
		dst[y * dw + x] = down_at(src, 2 * dw, x, y);
}

__global__ void count_corners(const uint32_t *img, int w, int h, unsigned int *counts, const int *frame_idx, int level)
{
	__shared__ unsigned int sh[THREADS];
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	sh[threadIdx.x] = x < w ? corner_at(img, w, h, x, y) : 0;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned int t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		if (t)
			atomicAdd(&counts[*frame_idx * LEVELS + level], t);
	}
}

__global__ void next_frame(int *frame_idx) { *frame_idx += 1; }

struct frontend {
	cudaStream_t s;
	uint32_t *d_img;
	unsigned int *d_counts;
	int *d_frame_idx;
	cudaGraphExec_t exec;
};

static dim3 level_grid(int w, int h) { return dim3((w + THREADS - 1) / THREADS, h); }

/* --- the frame graph, captured once ------------------------------------------------------- */

static void build_frame_graph(struct frontend *f)
{
	cudaGraph_t g;
	uint32_t *lvl[LEVELS];
	CHECK(cudaStreamBeginCapture(f->s, cudaStreamCaptureModeThreadLocal));
	render<<<level_grid(W, H), THREADS, 0, f->s>>>(f->d_img, f->d_frame_idx);
	CHECK_LAUNCH();
	lvl[0] = f->d_img;
	for (int l = 1; l < LEVELS; l++) {
		int w = W >> l, h = H >> l;
		CHECK(cudaMallocAsync(&lvl[l], (size_t)w * h * sizeof(uint32_t), f->s)); // SYNCSPY-CLEAN: captured once: a graph allocation node, mapped at upload, reused by every launch
		downsample<<<level_grid(w, h), THREADS, 0, f->s>>>(lvl[l - 1], lvl[l], w);
		CHECK_LAUNCH();
	}
	for (int l = 0; l < LEVELS; l++) {
		count_corners<<<level_grid(W >> l, H >> l), THREADS, 0, f->s>>>(lvl[l], W >> l, H >> l, f->d_counts, f->d_frame_idx, l);
		CHECK_LAUNCH();
	}
	for (int l = 1; l < LEVELS; l++)
		CHECK(cudaFreeAsync(lvl[l], f->s)); // SYNCSPY-CLEAN: captured once: the graph's free node for the level
	next_frame<<<1, 1, 0, f->s>>>(f->d_frame_idx);
	CHECK_LAUNCH();
	CHECK(cudaStreamEndCapture(f->s, &g));
	CHECK(cudaGraphInstantiate(&f->exec, g, 0)); // SYNCSPY-CLEAN: setup, instantiated once
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaGraphUpload(f->exec, f->s)); // SYNCSPY-CLEAN: setup, uploaded once (maps the graph's memory)
}

static void reference(int frame, unsigned int want[LEVELS])
{
	uint32_t *lvl[LEVELS];
	for (int l = 0; l < LEVELS; l++)
		lvl[l] = (uint32_t *)malloc((size_t)(W >> l) * (H >> l) * sizeof(uint32_t));
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			lvl[0][y * W + x] = camera_pixel(frame, x, y);
	for (int l = 1; l < LEVELS; l++)
		for (int y = 0; y < (H >> l); y++)
			for (int x = 0; x < (W >> l); x++)
				lvl[l][y * (W >> l) + x] = down_at(lvl[l - 1], W >> (l - 1), x, y);
	for (int l = 0; l < LEVELS; l++) {
		want[l] = 0;
		for (int y = 0; y < (H >> l); y++)
			for (int x = 0; x < (W >> l); x++)
				want[l] += corner_at(lvl[l], W >> l, H >> l, x, y);
		free(lvl[l]);
	}
}

int main(void)
{
	const char *name = "c78_clean_pyramid_graph_memory_nodes";
	struct frontend f;
	unsigned int *h_counts;

	CHECK(cudaStreamCreateWithFlags(&f.s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&f.d_img, (size_t)W * H * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&f.d_counts, FRAMES * LEVELS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&f.d_frame_idx, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_counts, FRAMES * LEVELS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup pinned result buffer
	CHECK(cudaMemsetAsync(f.d_counts, 0, FRAMES * LEVELS * sizeof(unsigned int), f.s));
	CHECK(cudaMemsetAsync(f.d_frame_idx, 0, sizeof(int), f.s));
	CHECK(cudaStreamSynchronize(f.s)); // SYNCSPY-CLEAN: setup, once, before the capture
	build_frame_graph(&f);

	for (int frame = 0; frame < FRAMES; frame++)
		CHECK(cudaGraphLaunch(f.exec, f.s));

	CHECK(cudaMemcpyAsync(h_counts, f.d_counts, FRAMES * LEVELS * sizeof(unsigned int), cudaMemcpyDeviceToHost, f.s)); // SYNCSPY-CLEAN: final read, into pinned memory
	CHECK(cudaStreamSynchronize(f.s)); // SYNCSPY-CLEAN: the one wait, after the last frame

	unsigned long long checksum = 0;
	for (int frame = 0; frame < FRAMES; frame++) {
		if (frame == 0 || frame == 37) {
			unsigned int want[LEVELS];
			reference(frame, want);
			for (int l = 0; l < LEVELS; l++)
				corpus_expect(name, "corners", h_counts[frame * LEVELS + l], want[l]);
		}
		for (int l = 0; l < LEVELS; l++)
			checksum = checksum * 1000003u + h_counts[frame * LEVELS + l];
	}

	CHECK(cudaGraphExecDestroy(f.exec));
	CHECK(cudaFree(f.d_img)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(f.d_counts)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(f.d_frame_idx)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_counts)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(f.s));
	corpus_result(name, FRAMES, checksum);
	return 0;
}
