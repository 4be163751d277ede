/*
 * examples/corpus/c92_hdr_dither_curand_noise_callback.cu: corpus workload (CUDA C++ + cuRAND).
 * The display path of an HDR video pipeline: every frame a renderer stand-in writes an 8192 x 4096
 * frame of 16-bit scene values, a tone curve (1024-entry lookup table, 8.8 fixed point) maps them
 * to 8 bits with stochastic dithering, out = min(255, (curve[v >> 6] + (r & 255)) >> 8), where r
 * is one 32-bit random word per pixel, and a histogram of the 8-bit frame goes to the exposure
 * monitor through a two-slot pinned ring on a copy stream; the host reads frame f-1's histogram
 * while frame f runs. Two frames keep a 32-row window of their random words and output for the
 * final check against a CPU re-render.
 * The random words come from the Ditherer's noise callback, a std::function in dither_config whose
 * default, default_noise(), is a lambda over cuRAND's host API, written to be stateless "so that
 * any frame can be re-rendered bit for bit from its index": every call creates a generator of the
 * default type (XORWOW), binds it to the stream, seeds it with the frame's seed, generates, and
 * destroys it. cuRAND's reference: curandCreateGenerator creates a generator (and fails with
 * CURAND_STATUS_ALLOCATION_FAILED "if memory could not be allocated"), its starting states are set
 * up by curandGenerateSeeds, "automatically called by generation functions such as
 * curandGenerate()", and curandDestroyGenerator "free[s] all memory associated with its state".
 * That memory is device memory, and "managing memory allocations using cudaMalloc and cudaFree
 * causes the GPU to synchronize across all executing CUDA streams" (CUDA programming guide,
 * stream-ordered memory allocator): every frame the generator's state is allocated and seeded
 * again, and its destruction waits for the generation just queued, the render before it, and the
 * copy stream. The host cannot queue the dither and the histogram until the noise exists, and the
 * ring's one-behind read finds every histogram already done. One generator created, seeded and
 * bound to the stream in setup, continuing its sequence from frame to frame, removes both calls
 * from the loop (c29 is that pattern; re-rendering frame f then sets the generator's offset to
 * f x pixels with curandSetGeneratorOffset).
 * Planted: curandCreateGenerator and curandDestroyGenerator in default_noise()'s lambda, every
 * frame (one problem, two lines; the curandGenerate between them runs every frame in the fix too,
 * its re-seeding is a consequence and carries no marker).
 * Clean: the setup allocations and the tone curve's one upload, the histogram downloaded async
 * into the pinned ring on the copy stream and read one frame behind, the checked frames' windows
 * copied async into pinned buffers on the render stream, the last histogram's wait and one stream
 * sync after the loop, teardown.
 */
// CORPUS-LDLIBS: -lcurand
#include "corpus.h"

#include <curand.h>
#include <functional>
#include <math.h>
#include <string.h>

enum { FRAMES = 48, WIDTH = 8192, HEIGHT = 4096, PIXELS = WIDTH * HEIGHT, CURVE = 1024, BINS = 256, THREADS = 256, HIST_BLOCKS = 1024, RING = 2, WINDOW_ROW = 1184, WINDOW_ROWS = 32, WINDOW = WINDOW_ROWS * WIDTH };

#define BASE_SEED 0x5eed2024ull

#define CHECK_RAND(call)                                                                           \
	do {                                                                                       \
		curandStatus_t check_rand_ = (call);                                               \
		if (check_rand_ != CURAND_STATUS_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_rand_);                                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static const int checked_frames[2] = {7, 31};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the scene: a sky gradient, a sun disc moving across it, and sensor grain */
__host__ __device__ static inline uint32_t scene_value(int frame, int x, int y)
{
	int v = 4000 + (HEIGHT - y) * 6 + (x >> 3);
	int sx = 1000 + frame * 120, sy = 1200;
	int dx = x - sx, dy = y - sy;
	if (dx * dx + dy * dy < 300 * 300)
		v += 30000;
	v += (int)(mix32((uint32_t)(y * WIDTH + x) ^ ((uint32_t)frame * 0x9e3779b1u)) & 1023u);
	return v > 65535 ? 65535u : (uint32_t)v;
}

__host__ __device__ static inline uint32_t dithered(uint32_t curve_value, uint32_t r)
{
	uint32_t o = (curve_value + (r & 255u)) >> 8;
	return o > 255u ? 255u : o;
}

__global__ void render(int frame, uint16_t *hdr)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < PIXELS)
		hdr[i] = (uint16_t)scene_value(frame, i % WIDTH, i / WIDTH);
}

__global__ void dither(const uint16_t *hdr, const uint32_t *rnd, const uint32_t *curve, uint8_t *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < PIXELS)
		out[i] = (uint8_t)dithered(curve[hdr[i] >> 6], rnd[i]);
}

__global__ void histogram(const uint8_t *out, uint32_t *hist)
{
	__shared__ uint32_t s_hist[BINS];
	s_hist[threadIdx.x] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < PIXELS; i += gridDim.x * blockDim.x)
		atomicAdd(&s_hist[out[i]], 1u);
	__syncthreads();
	atomicAdd(&hist[threadIdx.x], s_hist[threadIdx.x]);
}

/* --- the ditherer and its noise source -------------------------------------------------------- */

using NoiseFn = std::function<void(uint32_t *out, size_t n, unsigned long long seed, cudaStream_t stream)>;

/* the stock noise source: stateless, seeded per frame, so that any frame re-renders from its index */
static NoiseFn default_noise()
{
	return [](uint32_t *out, size_t n, unsigned long long seed, cudaStream_t stream) {
		curandGenerator_t gen;
		CHECK_RAND(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT)); // SYNCSPY-PROBLEM: a generator per frame: its state allocated (and seeded by the generate below) again, every frame
		CHECK_RAND(curandSetStream(gen, stream));
		CHECK_RAND(curandSetPseudoRandomGeneratorSeed(gen, seed));
		CHECK_RAND(curandGenerate(gen, out, n));
		CHECK_RAND(curandDestroyGenerator(gen)); // SYNCSPY-PROBLEM: frees the generator's device state: waits for the generation just queued and all device work, every frame
	};
}

struct dither_config {
	unsigned long long seed = BASE_SEED;
	NoiseFn noise = default_noise();
};

class Ditherer {
public:
	Ditherer(const dither_config &cfg, cudaStream_t stream) : cfg_(cfg), stream_(stream)
	{
		uint32_t h_curve[CURVE];
		for (int k = 0; k < CURVE; k++) {
			double v = (k + 0.5) / CURVE * 4.0; /* scene value in units of mid-grey */
			double mapped = v / (1.0 + v) * 1.25;
			h_curve[k] = (uint32_t)lrint(fmin(mapped, 1.0) * 255.0 * 256.0);
		}
		CHECK(cudaMalloc(&d_curve_, sizeof h_curve)); // SYNCSPY-CLEAN: setup allocation, the tone curve
		CHECK(cudaMalloc(&d_rand_, (size_t)PIXELS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation, the random words
		CHECK(cudaMemcpy(d_curve_, h_curve, sizeof h_curve, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the tone curve once
		memcpy(curve_, h_curve, sizeof h_curve);
	}
	~Ditherer()
	{
		CHECK(cudaFree(d_curve_)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_rand_)); // SYNCSPY-CLEAN: teardown
	}
	Ditherer(const Ditherer &) = delete;
	Ditherer &operator=(const Ditherer &) = delete;

	void apply(int frame, const uint16_t *hdr, uint8_t *out)
	{
		cfg_.noise(d_rand_, PIXELS, cfg_.seed + (unsigned long long)frame, stream_);
		dither<<<PIXELS / THREADS, THREADS, 0, stream_>>>(hdr, d_rand_, d_curve_, out);
		CHECK_LAUNCH();
	}
	const uint32_t *random_words() const { return d_rand_; }
	uint32_t curve(int k) const { return curve_[k]; }

private:
	dither_config cfg_;
	cudaStream_t stream_;
	uint32_t *d_curve_, *d_rand_;
	uint32_t curve_[CURVE];
};

int main(void)
{
	const char *name = "c92_hdr_dither_curand_noise_callback";
	cudaStream_t rs, copy;
	uint16_t *d_hdr;
	uint8_t *d_out;
	uint32_t *d_hist, *h_hist, *h_rand_win[2];
	uint8_t *h_out_win[2];
	cudaEvent_t histogrammed[RING], downloaded[RING];
	unsigned long long checksum = 0;
	long long mean_level[FRAMES];

	CHECK(cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_hdr, (size_t)PIXELS * sizeof(uint16_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_out, (size_t)PIXELS)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_hist, RING * BINS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_hist, RING * BINS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation, the histogram ring
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&h_rand_win[k], WINDOW * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation, a checked window
		CHECK(cudaMallocHost(&h_out_win[k], WINDOW)); // SYNCSPY-CLEAN: setup pinned allocation, a checked window
	}
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventCreateWithFlags(&histogrammed[r], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&downloaded[r], cudaEventDisableTiming));
	}

	{
		dither_config cfg; /* the display's settings: the seed, the stock noise source */
		Ditherer dith(cfg, rs);
		for (int frame = 0; frame <= FRAMES; frame++) {
			if (frame < FRAMES) {
				int r = frame % RING;
				render<<<PIXELS / THREADS, THREADS, 0, rs>>>(frame, d_hdr);
				CHECK_LAUNCH();
				dith.apply(frame, d_hdr, d_out);
				for (int k = 0; k < 2; k++)
					if (frame == checked_frames[k]) {
						CHECK(cudaMemcpyAsync(h_rand_win[k], dith.random_words() + (size_t)WINDOW_ROW * WIDTH, WINDOW * sizeof(uint32_t), cudaMemcpyDeviceToHost, rs)); // SYNCSPY-CLEAN: a checked frame's window, async into pinned memory (twice in the run)
						CHECK(cudaMemcpyAsync(h_out_win[k], d_out + (size_t)WINDOW_ROW * WIDTH, WINDOW, cudaMemcpyDeviceToHost, rs)); // SYNCSPY-CLEAN: a checked frame's window, async into pinned memory (twice in the run)
					}
				if (frame >= RING)
					CHECK(cudaStreamWaitEvent(rs, downloaded[r], 0));
				CHECK(cudaMemsetAsync(d_hist + r * BINS, 0, BINS * sizeof(uint32_t), rs));
				histogram<<<HIST_BLOCKS, BINS, 0, rs>>>(d_out, d_hist + r * BINS);
				CHECK_LAUNCH();
				CHECK(cudaEventRecord(histogrammed[r], rs));
				CHECK(cudaStreamWaitEvent(copy, histogrammed[r], 0));
				CHECK(cudaMemcpyAsync(h_hist + r * BINS, d_hist + r * BINS, BINS * sizeof(uint32_t), cudaMemcpyDeviceToHost, copy)); // SYNCSPY-CLEAN: the histogram, async into the pinned ring on the copy stream
				CHECK(cudaEventRecord(downloaded[r], copy));
			}
			if (frame >= 1) {
				/* the exposure monitor: frame f-1's histogram while frame f runs */
				int q = (frame - 1) % RING;
				CHECK(cudaEventSynchronize(downloaded[q])); // SYNCSPY-CLEAN: one frame behind (the last frame's after the loop)
				long long pixels = 0, level = 0;
				for (int b = 0; b < BINS; b++) {
					pixels += h_hist[q * BINS + b];
					level += (long long)b * h_hist[q * BINS + b];
					checksum = checksum * 1000003u + h_hist[q * BINS + b];
				}
				corpus_expect(name, "histogram pixels", pixels, PIXELS);
				mean_level[frame - 1] = level / PIXELS;
			}
		}
		CHECK(cudaStreamSynchronize(rs)); // SYNCSPY-CLEAN: once after the loop, for the checked windows

		/* the checked windows, re-rendered on the CPU with the frame's random words */
		for (int k = 0; k < 2; k++) {
			int frame = checked_frames[k];
			unsigned long long low_bytes = 0;
			for (int i = 0; i < WINDOW; i++) {
				int x = i % WIDTH, y = WINDOW_ROW + i / WIDTH;
				uint32_t r = h_rand_win[k][i];
				low_bytes += r & 255u;
				corpus_expect(name, "dithered pixel", h_out_win[k][i], dithered(dith.curve((int)(scene_value(frame, x, y) >> 6)), r));
			}
			double mean = (double)low_bytes / WINDOW; /* uniform bytes: 127.5 */
			corpus_expect(name, "noise mean near 127.5", mean > 126.5 && mean < 128.5, 1);
			corpus_expect(name, "mean level in range", mean_level[frame] > 0 && mean_level[frame] < 255, 1);
		}
	}

	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(h_rand_win[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_out_win[k])); // SYNCSPY-CLEAN: teardown
	}
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventDestroy(histogrammed[r]));
		CHECK(cudaEventDestroy(downloaded[r]));
	}
	CHECK(cudaFree(d_hdr)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_hist)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_hist)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(rs));
	CHECK(cudaStreamDestroy(copy));
	corpus_result(name, FRAMES, checksum);
	return 0;
}
