/*
 * examples/corpus/c61_denoise_handoff_devsync.cu: corpus workload (CUDA C). A progressive path
 * tracer with a separate denoiser: every frame the render stream traces one sample per pixel
 * (an integer stand-in for the radiance) into one of two radiance buffers, and the denoise
 * stream filters that buffer (a 3-tap cross filter) and sums the frame into its slot. The two
 * stages are handed over in hand_off_to_denoiser(), which calls cudaDeviceSynchronize so that
 * the denoiser "sees a finished frame". A device-wide synchronization blocks the host until all
 * work on every stream is done (runtime API reference), so every frame the host stops queueing
 * and the render of frame f+1 cannot start under the denoise of frame f; the ordering the code
 * needs is a device-side one: cudaEventRecord after the render and cudaStreamWaitEvent on the
 * denoise stream (and the reverse, so a radiance buffer is not re-rendered before its denoise
 * has read it), which the programming guide's stream section gives for exactly this.
 * Planted: the cudaDeviceSynchronize in hand_off_to_denoiser(), every frame.
 * Clean: the setup allocations, the final read of the per-frame sums, teardown.
 */
#include "corpus.h"

enum { FRAMES = 48, W = 1024, H = 512, NPIX = W * H, THREADS = 256 };

__host__ __device__ static inline uint32_t trace_sample(int pix, int frame)
{
	uint32_t h = (uint32_t)pix * 2654435761u ^ (uint32_t)frame * 0x9e3779b9u;
	for (int bounce = 0; bounce < 6; bounce++)
		h = (h ^ (h >> 15)) * 2246822519u + 374761393u;
	return h & 0xffffu;
}

__host__ __device__ static inline uint32_t cross_filter(const uint32_t *r, int pix)
{
	int x = pix % W, y = pix / W;
	uint32_t c = r[pix];
	uint32_t l = r[y * W + (x > 0 ? x - 1 : 0)], rr = r[y * W + (x < W - 1 ? x + 1 : W - 1)];
	uint32_t u = r[(y > 0 ? y - 1 : 0) * W + x], d = r[(y < H - 1 ? y + 1 : H - 1) * W + x];
	return (4u * c + l + rr + u + d) >> 3;
}

__global__ void render(uint32_t *radiance, int frame)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < NPIX)
		radiance[i] = trace_sample(i, frame);
}

__global__ void denoise_sum(const uint32_t *radiance, unsigned long long *frame_sum)
{
	__shared__ unsigned long long sh[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	sh[threadIdx.x] = i < NPIX ? cross_filter(radiance, i) : 0;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(frame_sum, sh[0]);
}

struct tracer {
	cudaStream_t render_s, denoise_s;
	uint32_t *d_radiance[2];
	unsigned long long *d_sums;
};

/* --- the stages --------------------------------------------------------------------------- */

static void render_frame(struct tracer *t, int frame)
{
	render<<<NPIX / THREADS, THREADS, 0, t->render_s>>>(t->d_radiance[frame % 2], frame);
	CHECK_LAUNCH();
}

static void hand_off_to_denoiser(void)
{
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-PROBLEM: device-wide wait every frame to order two streams; an event and cudaStreamWaitEvent would do
}

static void denoise_frame(struct tracer *t, int frame)
{
	denoise_sum<<<NPIX / THREADS, THREADS, 0, t->denoise_s>>>(t->d_radiance[frame % 2], t->d_sums + frame);
	CHECK_LAUNCH();
}

int main(void)
{
	const char *name = "c61_denoise_handoff_devsync";
	struct tracer t;
	unsigned long long h_sums[FRAMES];

	CHECK(cudaStreamCreateWithFlags(&t.render_s, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&t.denoise_s, cudaStreamNonBlocking));
	for (int b = 0; b < 2; b++)
		CHECK(cudaMalloc(&t.d_radiance[b], NPIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&t.d_sums, sizeof h_sums)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(t.d_sums, 0, sizeof h_sums, t.denoise_s));

	for (int frame = 0; frame < FRAMES; frame++) {
		render_frame(&t, frame);
		hand_off_to_denoiser();
		denoise_frame(&t, frame);
	}

	CHECK(cudaMemcpyAsync(h_sums, t.d_sums, sizeof h_sums, cudaMemcpyDeviceToHost, t.denoise_s)); // SYNCSPY-CLEAN: final read of the frame sums
	CHECK(cudaStreamSynchronize(t.denoise_s)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	uint32_t *ref = (uint32_t *)malloc(NPIX * sizeof(uint32_t));
	unsigned long long checksum = 0;
	for (int frame = 0; frame < FRAMES; frame += 7) {
		unsigned long long want = 0;
		for (int i = 0; i < NPIX; i++)
			ref[i] = trace_sample(i, frame);
		for (int i = 0; i < NPIX; i++)
			want += cross_filter(ref, i);
		corpus_expect(name, "frame sum", (long long)h_sums[frame], (long long)want);
	}
	for (int frame = 0; frame < FRAMES; frame++)
		checksum = checksum * 1000003u + h_sums[frame];
	free(ref);

	for (int b = 0; b < 2; b++)
		CHECK(cudaFree(t.d_radiance[b])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(t.d_sums)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(t.render_s));
	CHECK(cudaStreamDestroy(t.denoise_s));
	corpus_result(name, FRAMES, checksum);
	return 0;
}
