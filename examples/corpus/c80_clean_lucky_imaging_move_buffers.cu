/*
 * examples/corpus/c80_clean_lucky_imaging_move_buffers.cu: corpus workload (CUDA C++), CLEAN.
 * Lucky imaging for a small telescope: short exposures of a star field are jittered by the
 * atmosphere; every frame the camera model renders the exposure, a motion score (the sum of
 * absolute differences from the previous exposure) is reduced on the device, and the frame is
 * added into a stack with a weight that the accumulate kernel derives from the score on the
 * device (still frames weigh four times as much). Device memory is held by a move-only RAII
 * template, DeviceBuffer<T>: copying is deleted, the current and previous exposures trade places
 * with std::swap (a move, no copy), and every stage takes its buffers by reference, so the step
 * loop makes no allocation, copy or free (the fix of c74). Once per epoch (outside the step loop)
 * the stack is snapshotted with a device-to-device cudaMemcpyAsync on the compute stream and the
 * snapshot downloaded into pinned memory on an I/O stream that waits for it by an event; the host
 * writes the previous epoch's checkpoint after waiting for its download one epoch behind.
 * Clean: the buffers' allocation at setup and their free at teardown, the per-epoch snapshot
 * copy and download, the checkpoint waits (one epoch behind, and the last one), teardown.
 */
#include "corpus.h"

#include <string.h>
#include <utility>

enum { EPOCHS = 3, STEPS = 20, W = 1024, H = 512, THREADS = 256, SCORE_BLOCKS = 264, STILL_LIMIT = 10000000 };

template <typename T> class DeviceBuffer {
public:
	explicit DeviceBuffer(size_t n) : n_(n)
	{
		CHECK(cudaMalloc(&p_, n * sizeof(T))); // SYNCSPY-CLEAN: setup: the pipeline's buffers, allocated once
	}
	DeviceBuffer(const DeviceBuffer &) = delete;
	DeviceBuffer &operator=(const DeviceBuffer &) = delete;
	DeviceBuffer(DeviceBuffer &&o) noexcept : p_(o.p_), n_(o.n_)
	{
		o.p_ = NULL;
		o.n_ = 0;
	}
	DeviceBuffer &operator=(DeviceBuffer &&o) noexcept
	{
		std::swap(p_, o.p_);
		std::swap(n_, o.n_);
		return *this;
	}
	~DeviceBuffer()
	{
		if (p_)
			CHECK(cudaFree(p_)); // SYNCSPY-CLEAN: teardown only (moved-from buffers hold nothing)
	}
	/* a stream-ordered device-to-device snapshot into a buffer of the same size */
	void snapshot_into(DeviceBuffer &dst, cudaStream_t s) const
	{
		CHECK(cudaMemcpyAsync(dst.p_, p_, n_ * sizeof(T), cudaMemcpyDeviceToDevice, s)); // SYNCSPY-CLEAN: once per epoch, stream-ordered, no host wait
	}
	T *data() const { return p_; }
	size_t size() const { return n_; }

private:
	T *p_;
	size_t n_;
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

/* exposure f: the star field shifted by the atmosphere's jitter, plus read noise */
__host__ __device__ static inline uint32_t exposure_pixel(int f, int x, int y)
{
	int jx = (int)(mix32((uint32_t)f * 2u + 1u) % 3u) - 1, jy = (int)(mix32((uint32_t)f * 2u + 2u) % 3u) - 1;
	int sx = x + jx, sy = y + jy;
	uint32_t sky = 100u + (mix32((uint32_t)sx * 7919u + (uint32_t)sy * 104729u) % 50u == 0u ? 2000u : 0u);
	return sky + (mix32((uint32_t)(y * W + x) ^ (uint32_t)f * 0x9e3779b9u) & 15u);
}

__global__ void expose(uint32_t *img, int f)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	img[y * W + x] = exposure_pixel(f, x, y);
}

__global__ void motion_score(const uint32_t *cur, const uint32_t *prev, unsigned long long *score)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < W * H; i += gridDim.x * blockDim.x)
		s += cur[i] > prev[i] ? cur[i] - prev[i] : prev[i] - cur[i];
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(score, t);
	}
}

__host__ __device__ static inline uint32_t frame_weight(unsigned long long score) { return score < STILL_LIMIT ? 4u : 1u; }

__global__ void accumulate(const uint32_t *cur, const unsigned long long *score, uint32_t *stack)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < W * H)
		stack[i] += cur[i] * frame_weight(*score);
}

struct imager {
	cudaStream_t s, io;
	cudaEvent_t snapped, saved;
	unsigned long long *d_score;
	uint32_t *h_ckpt;
};

static void run_step(struct imager *im, DeviceBuffer<uint32_t> &cur, const DeviceBuffer<uint32_t> &prev, DeviceBuffer<uint32_t> &stack, int f)
{
	expose<<<dim3(W / THREADS, H), THREADS, 0, im->s>>>(cur.data(), f);
	CHECK_LAUNCH();
	motion_score<<<SCORE_BLOCKS, THREADS, 0, im->s>>>(cur.data(), prev.data(), im->d_score + f);
	CHECK_LAUNCH();
	accumulate<<<W * H / THREADS, THREADS, 0, im->s>>>(cur.data(), im->d_score + f, stack.data());
	CHECK_LAUNCH();
}

static unsigned long long checkpoint_sum(const uint32_t *p)
{
	unsigned long long s = 0;
	for (int i = 0; i < W * H; i++)
		s = s * 31u + p[i];
	return s;
}

int main(void)
{
	const char *name = "c80_clean_lucky_imaging_move_buffers";
	const int frames = EPOCHS * STEPS;
	struct imager im;
	unsigned long long saved_sum[EPOCHS];

	CHECK(cudaStreamCreateWithFlags(&im.s, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&im.io, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&im.snapped, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&im.saved, cudaEventDisableTiming));
	CHECK(cudaMalloc(&im.d_score, (frames + 1) * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&im.h_ckpt, (size_t)W * H * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned checkpoint buffer
	{
		DeviceBuffer<uint32_t> cur(W * H), prev(W * H), stack(W * H), snap(W * H);
		CHECK(cudaMemsetAsync(im.d_score, 0, (frames + 1) * sizeof(unsigned long long), im.s));
		CHECK(cudaMemsetAsync(stack.data(), 0, stack.size() * sizeof(uint32_t), im.s));
		expose<<<dim3(W / THREADS, H), THREADS, 0, im.s>>>(prev.data(), 0);
		CHECK_LAUNCH();

		for (int epoch = 0; epoch < EPOCHS; epoch++) {
			for (int k = 0; k < STEPS; k++) {
				int f = 1 + epoch * STEPS + k;
				run_step(&im, cur, prev, stack, f);
				std::swap(cur, prev); /* a move: the buffers trade places, nothing is copied */
			}
			/* the epoch's checkpoint, outside the step loop */
			if (epoch > 0) {
				CHECK(cudaEventSynchronize(im.saved)); // SYNCSPY-CLEAN: once per epoch: the previous epoch's checkpoint, one epoch behind
				saved_sum[epoch - 1] = checkpoint_sum(im.h_ckpt);
			}
			stack.snapshot_into(snap, im.s);
			CHECK(cudaEventRecord(im.snapped, im.s));
			CHECK(cudaStreamWaitEvent(im.io, im.snapped, 0));
			CHECK(cudaMemcpyAsync(im.h_ckpt, snap.data(), snap.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost, im.io)); // SYNCSPY-CLEAN: once per epoch, into pinned memory on the I/O stream
			CHECK(cudaEventRecord(im.saved, im.io));
		}
		CHECK(cudaEventSynchronize(im.saved)); // SYNCSPY-CLEAN: the last checkpoint, after the loop
		saved_sum[EPOCHS - 1] = checkpoint_sum(im.h_ckpt);
		CHECK(cudaStreamSynchronize(im.s)); // SYNCSPY-CLEAN: teardown, the compute stream drained before the buffers go
	}

	/* self-check: the whole run again on the host */
	uint32_t *prev = (uint32_t *)malloc((size_t)W * H * sizeof(uint32_t)), *cur = (uint32_t *)malloc((size_t)W * H * sizeof(uint32_t));
	uint32_t *stack = (uint32_t *)calloc((size_t)W * H, sizeof(uint32_t));
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			prev[y * W + x] = exposure_pixel(0, x, y);
	int still = 0;
	for (int f = 1; f <= frames; f++) {
		unsigned long long score = 0;
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++) {
				int i = y * W + x;
				cur[i] = exposure_pixel(f, x, y);
				score += cur[i] > prev[i] ? cur[i] - prev[i] : prev[i] - cur[i];
			}
		uint32_t w = frame_weight(score);
		still += w > 1;
		for (int i = 0; i < W * H; i++)
			stack[i] += cur[i] * w;
		uint32_t *t = cur;
		cur = prev;
		prev = t;
		if (f % STEPS == 0)
			corpus_expect(name, "epoch checkpoint", saved_sum[f / STEPS - 1] == checkpoint_sum(stack), 1);
	}
	corpus_expect(name, "final stack", memcmp(stack, im.h_ckpt, (size_t)W * H * sizeof(uint32_t)) == 0, 1);
	unsigned long long checksum = (unsigned long long)still;
	for (int epoch = 0; epoch < EPOCHS; epoch++)
		checksum = checksum * 1000003u + saved_sum[epoch];
	free(prev);
	free(cur);
	free(stack);

	CHECK(cudaFree(im.d_score)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(im.h_ckpt)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaEventDestroy(im.snapped));
	CHECK(cudaEventDestroy(im.saved));
	CHECK(cudaStreamDestroy(im.s));
	CHECK(cudaStreamDestroy(im.io));
	corpus_result(name, frames, checksum);
	return 0;
}
