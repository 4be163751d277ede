/*
 * examples/corpus/c74_microscopy_by_value_device_image.cu: corpus workload (CUDA C++). The
 * restoration stage of a widefield fluorescence microscope: every 2048 x 2048 frame the camera
 * model writes the raw photon counts, the background (a vignetting model) is subtracted, the
 * frame is sharpened by five unsharp-mask passes and reduced to frame statistics (total signal,
 * peak, detected spots). Device images are held by a small RAII template, DeviceImage<T>, whose
 * copy constructor makes a deep copy (cudaMalloc, then cudaMemcpy device to device) and whose
 * destructor calls cudaFree. The two stage functions take their input image by value
 * (DeviceImage<uint32_t> in, where const DeviceImage<uint32_t> & was meant), so every call deep
 * copies a 16 MB frame and frees the copy on return: two allocations, two device-to-device copies
 * on the legacy default stream and two cudaFree per frame. cudaFree "may perform implicit
 * synchronization" for memory from cudaMalloc (runtime API reference, cudaFree), and the
 * programming guide lists device memory allocation among the operations that keep commands of
 * different streams from running concurrently; the copy itself is a command on the legacy default
 * stream, which waits for the blocking pipeline stream. Each call drains the GPU before the host
 * may queue the next frame, so the GPU idles while the host allocates, copies and frees. Passing
 * the images by const reference removes all three calls.
 * Planted: the cudaMalloc and the cudaMemcpy in DeviceImage's copy constructor and the cudaFree in
 * its destructor, twice every frame (one problem, three lines; the destructor's line also frees
 * the pipeline's own images at teardown).
 * Clean: the constructor's cudaMalloc of the pipeline's images (setup), the statistics buffer's
 * allocation, the final read.
 */
#include "corpus.h"

enum { FRAMES = 48, W = 2048, H = 2048, PASSES = 5, THREADS = 256, STAT_BLOCKS = 264, SPOT_LEVEL = 12000 };

template <typename T> class DeviceImage {
public:
	DeviceImage(int w, int h) : w_(w), h_(h)
	{
		CHECK(cudaMalloc(&p_, bytes())); // SYNCSPY-CLEAN: the pipeline's images, allocated once at setup
	}
	DeviceImage(const DeviceImage &o) : w_(o.w_), h_(o.h_)
	{
		CHECK(cudaMalloc(&p_, bytes())); // SYNCSPY-PROBLEM: a deep copy for every by-value argument, every frame
		CHECK(cudaMemcpy(p_, o.p_, bytes(), cudaMemcpyDeviceToDevice)); // SYNCSPY-PROBLEM: the copy's device-to-device cudaMemcpy, legacy default stream, every frame
	}
	DeviceImage &operator=(const DeviceImage &) = delete;
	~DeviceImage()
	{
		CHECK(cudaFree(p_)); // SYNCSPY-PROBLEM: frees the by-value copy when the stage returns: a device-wide wait, every frame
	}
	T *data() const { return p_; }
	int width() const { return w_; }
	int height() const { return h_; }
	size_t bytes() const { return (size_t)w_ * h_ * sizeof(T); }

private:
	T *p_;
	int w_, h_;
};

struct frame_stats {
	unsigned long long signal;
	unsigned int peak, spots;
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

__host__ __device__ static inline uint32_t raw_pixel(int frame, int x, int y)
{
	uint32_t base = 1000u + (uint32_t)((x * 7 + y * 13) % 256) * 4u;
	uint32_t noise = mix32((uint32_t)(y * W + x) * 2654435761u ^ (uint32_t)frame * 0x9e3779b9u) & 127u;
	uint32_t spot = (mix32((uint32_t)((y >> 4) * (W >> 4) + (x >> 4)) + (uint32_t)frame / 8u) % 61u == 0u) ? 20000u : 0u;
	return base + noise + spot;
}

__host__ __device__ static inline uint32_t background(int x, int y) { return 900u + (uint32_t)((x >> 6) + (y >> 6)) * 3u; }

__host__ __device__ static inline uint32_t sharpen_at(const uint32_t *src, int x, int y)
{
	int c = (int)src[y * W + x];
	int l = (int)src[y * W + (x > 0 ? x - 1 : 0)], r = (int)src[y * W + (x < W - 1 ? x + 1 : W - 1)];
	int u = (int)src[(y > 0 ? y - 1 : 0) * W + x], d = (int)src[(y < H - 1 ? y + 1 : H - 1) * W + x];
	int b = (4 * c + l + r + u + d) >> 3;
	int o = c + (c - b) / 2;
	return (uint32_t)(o < 0 ? 0 : (o > (1 << 20) ? (1 << 20) : o));
}

__global__ void acquire(uint32_t *raw, int frame)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	raw[y * W + x] = raw_pixel(frame, x, y);
}

__global__ void subtract_bg(const uint32_t *in, uint32_t *out)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	uint32_t v = in[y * W + x], bg = background(x, y);
	out[y * W + x] = v > bg ? v - bg : 0u;
}

__global__ void unsharp(const uint32_t *src, uint32_t *dst)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	dst[y * W + x] = sharpen_at(src, x, y);
}

__global__ void reduce_stats(const uint32_t *img, struct frame_stats *st)
{
	__shared__ unsigned long long s_sig[THREADS];
	__shared__ unsigned int s_peak[THREADS], s_spots[THREADS];
	unsigned long long sig = 0;
	unsigned int peak = 0, spots = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < W * H; i += gridDim.x * blockDim.x) {
		uint32_t v = img[i];
		sig += v;
		peak = v > peak ? v : peak;
		spots += v > SPOT_LEVEL;
	}
	s_sig[threadIdx.x] = sig;
	s_peak[threadIdx.x] = peak;
	s_spots[threadIdx.x] = spots;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int k = 1; k < THREADS; k++) {
			sig += s_sig[k];
			peak = s_peak[k] > peak ? s_peak[k] : peak;
			spots += s_spots[k];
		}
		atomicAdd(&st->signal, sig);
		atomicMax(&st->peak, peak);
		atomicAdd(&st->spots, spots);
	}
}

/* --- the restoration stages ---------------------------------------------------------------- */

static const dim3 frame_grid(W / THREADS, H);

static void subtract_background(DeviceImage<uint32_t> in, DeviceImage<uint32_t> &out, cudaStream_t s)
{
	subtract_bg<<<frame_grid, THREADS, 0, s>>>(in.data(), out.data());
	CHECK_LAUNCH();
}

static void sharpen(DeviceImage<uint32_t> in, DeviceImage<uint32_t> &out, DeviceImage<uint32_t> &tmp, cudaStream_t s)
{
	/* PASSES is odd: in -> out, then out -> tmp -> out ... ends in out */
	unsharp<<<frame_grid, THREADS, 0, s>>>(in.data(), out.data());
	CHECK_LAUNCH();
	for (int p = 1; p < PASSES; p++) {
		const DeviceImage<uint32_t> &src = (p % 2) ? out : tmp;
		DeviceImage<uint32_t> &dst = (p % 2) ? tmp : out;
		unsharp<<<frame_grid, THREADS, 0, s>>>(src.data(), dst.data());
		CHECK_LAUNCH();
	}
}

static struct frame_stats reference(int frame)
{
	uint32_t *a = (uint32_t *)malloc((size_t)W * H * sizeof(uint32_t)), *b = (uint32_t *)malloc((size_t)W * H * sizeof(uint32_t));
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			uint32_t v = raw_pixel(frame, x, y), bg = background(x, y);
			a[y * W + x] = v > bg ? v - bg : 0u;
		}
	for (int p = 0; p < PASSES; p++) {
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				b[y * W + x] = sharpen_at(a, x, y);
		uint32_t *t = a;
		a = b;
		b = t;
	}
	struct frame_stats st = {0, 0, 0};
	for (int i = 0; i < W * H; i++) {
		st.signal += a[i];
		st.peak = a[i] > st.peak ? a[i] : st.peak;
		st.spots += a[i] > SPOT_LEVEL;
	}
	free(a);
	free(b);
	return st;
}

int main(void)
{
	const char *name = "c74_microscopy_by_value_device_image";
	cudaStream_t s;
	struct frame_stats *d_stats, h_stats[FRAMES];
	unsigned long long checksum = 0;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc(&d_stats, sizeof h_stats)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_stats, 0, sizeof h_stats, s));
	{
		DeviceImage<uint32_t> raw(W, H), flat(W, H), sharp(W, H), tmp(W, H);
		for (int frame = 0; frame < FRAMES; frame++) {
			acquire<<<frame_grid, THREADS, 0, s>>>(raw.data(), frame);
			CHECK_LAUNCH();
			subtract_background(raw, flat, s);
			sharpen(flat, sharp, tmp, s);
			reduce_stats<<<STAT_BLOCKS, THREADS, 0, s>>>(sharp.data(), d_stats + frame);
			CHECK_LAUNCH();
		}
		CHECK(cudaMemcpyAsync(h_stats, d_stats, sizeof h_stats, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read (pageable destination: returns when done)
		CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read, the one explicit wait
	}

	for (int frame = 0; frame < FRAMES; frame++) {
		if (frame == 6 || frame == 41) {
			struct frame_stats want = reference(frame);
			corpus_expect(name, "frame signal", (long long)h_stats[frame].signal, (long long)want.signal);
			corpus_expect(name, "frame peak", h_stats[frame].peak, want.peak);
			corpus_expect(name, "frame spots", h_stats[frame].spots, want.spots);
		}
		checksum = checksum * 1000003u + h_stats[frame].signal + h_stats[frame].peak * 7u + h_stats[frame].spots;
	}

	CHECK(cudaFree(d_stats)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result(name, FRAMES, checksum);
	return 0;
}
