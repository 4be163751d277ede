/*
 * examples/corpus/c44_texture_array_per_frame.cu: corpus workload (CUDA C). A video denoiser
 * that samples each frame through a texture object (3x3 box filter, clamped edges) and sums
 * the filtered frame into a per-frame statistic. The capture side writes each frame into one
 * of two pinned staging buffers; the host waits on the event of the frame two behind before it
 * overwrites a staging buffer (the double buffer's wait). The texture side is written as a
 * per-frame resource: frame_texture_create() allocates a new CUDA array with cudaMallocArray,
 * uploads the frame into it with cudaMemcpy2DToArrayAsync from the pinned staging buffer and
 * builds a texture object over it; frame_texture_release() destroys the texture object and
 * frees the array with cudaFreeArray, when the staging slot comes round again. An array
 * allocation and a free every frame (CUDA programming guide, "Implicit Synchronization": a
 * device memory allocation serializes work across streams; cudaFree-class calls may
 * synchronize the device) where two arrays and two texture objects made once in setup, refilled
 * with the same async copy, would do.
 * Planted: the cudaMallocArray in frame_texture_create() and the cudaFreeArray in
 * frame_texture_release(), every frame.
 * Clean: the per-frame cudaMemcpy2DToArrayAsync from pinned memory, the staging double
 * buffer's cudaEventSynchronize on the frame two behind, the setup allocations, the final
 * synchronize and read, teardown.
 */
#include "corpus.h"

#include <string.h>

enum { FRAMES = 48, W = 1024, H = 256, THREADS = 256, SLOTS = 2 };

__host__ __device__ static inline uint32_t capture_pixel(int frame, int x, int y)
{
	uint32_t h = ((uint32_t)x * 73856093u) ^ ((uint32_t)y * 19349663u) ^ ((uint32_t)frame * 83492791u);
	h = (h ^ (h >> 13)) * 0x5bd1e995u;
	return (h ^ (h >> 15)) & 0xffffffu;
}

__global__ void box3(cudaTextureObject_t tex, uint32_t *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x >= w || y >= h)
		return;
	uint32_t s = 0;
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++)
			s += tex2D<unsigned int>(tex, (float)(x + dx) + 0.5f, (float)(y + dy) + 0.5f);
	out[(size_t)y * w + x] = s / 9u;
}

__global__ void frame_sum(const uint32_t *img, int n, unsigned long long *slot)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += img[i];
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(slot, t);
	}
}

/* --- the per-frame texture resource ------------------------------------------------------ */

struct frame_texture {
	cudaArray_t array;
	cudaTextureObject_t tex;
};

static void frame_texture_create(struct frame_texture *ft, const uint32_t *h_frame, cudaStream_t s)
{
	cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned int>();
	struct cudaResourceDesc res;
	struct cudaTextureDesc td;

	CHECK(cudaMallocArray(&ft->array, &desc, W, H)); // SYNCSPY-PROBLEM: a new CUDA array every frame
	CHECK(cudaMemcpy2DToArrayAsync(ft->array, 0, 0, h_frame, W * sizeof(uint32_t), W * sizeof(uint32_t), H, cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: async upload from pinned staging
	memset(&res, 0, sizeof res);
	res.resType = cudaResourceTypeArray;
	res.res.array.array = ft->array;
	memset(&td, 0, sizeof td);
	td.addressMode[0] = cudaAddressModeClamp;
	td.addressMode[1] = cudaAddressModeClamp;
	td.filterMode = cudaFilterModePoint;
	td.readMode = cudaReadModeElementType;
	td.normalizedCoords = 0;
	CHECK(cudaCreateTextureObject(&ft->tex, &res, &td, NULL));
}

static void frame_texture_release(struct frame_texture *ft)
{
	CHECK(cudaDestroyTextureObject(ft->tex));
	CHECK(cudaFreeArray(ft->array)); // SYNCSPY-PROBLEM: the frame's array freed every frame
}

/* --- capture ----------------------------------------------------------------------------- */

static void capture_frame(uint32_t *staging, int frame)
{
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			staging[(size_t)y * W + x] = capture_pixel(frame, x, y);
}

static unsigned long long reference_frame(uint32_t *img, int frame)
{
	unsigned long long sum = 0;
	capture_frame(img, frame);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			uint32_t s = 0;
			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++) {
					int xx = x + dx < 0 ? 0 : x + dx >= W ? W - 1 : x + dx;
					int yy = y + dy < 0 ? 0 : y + dy >= H ? H - 1 : y + dy;
					s += img[(size_t)yy * W + xx];
				}
			sum += s / 9u;
		}
	return sum;
}

int main(void)
{
	const char *name = "c44_texture_array_per_frame";
	uint32_t *staging[SLOTS], *d_out;
	unsigned long long *d_sums, *h_sums;
	struct frame_texture tex[SLOTS];
	cudaEvent_t frame_done[SLOTS];
	cudaStream_t s;
	dim3 grid(W / THREADS, H);

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMallocHost(&staging[k], (size_t)W * H * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned staging
		CHECK(cudaEventCreateWithFlags(&frame_done[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_out, (size_t)W * H * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_sums, FRAMES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_sums, FRAMES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemsetAsync(d_sums, 0, FRAMES * sizeof(unsigned long long), s));

	for (int frame = 0; frame < FRAMES; frame++) {
		int slot = frame % SLOTS;
		if (frame >= SLOTS) {
			CHECK(cudaEventSynchronize(frame_done[slot])); // SYNCSPY-CLEAN: double buffer: the frame two behind is done with this staging slot
			frame_texture_release(&tex[slot]);
		}
		capture_frame(staging[slot], frame);
		frame_texture_create(&tex[slot], staging[slot], s);
		box3<<<grid, THREADS, 0, s>>>(tex[slot].tex, d_out, W, H);
		frame_sum<<<128, THREADS, 0, s>>>(d_out, W * H, d_sums + frame);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(frame_done[slot], s));
	}

	CHECK(cudaMemcpyAsync(h_sums, d_sums, FRAMES * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	for (int k = 0; k < SLOTS; k++) {
		frame_texture_release(&tex[k]);
		CHECK(cudaFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(frame_done[k]));
	}
	CHECK(cudaFree(d_out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_sums)); // SYNCSPY-CLEAN: teardown

	unsigned long long checksum = 0;
	uint32_t *img = (uint32_t *)malloc((size_t)W * H * sizeof(uint32_t));
	for (int frame = 0; frame < FRAMES; frame++) {
		corpus_expect(name, "frame sum", (long long)h_sums[frame], (long long)reference_frame(img, frame));
		checksum = checksum * 1000003u + h_sums[frame];
	}
	free(img);
	CHECK(cudaFreeHost(h_sums)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result(name, FRAMES, checksum);
	return 0;
}
