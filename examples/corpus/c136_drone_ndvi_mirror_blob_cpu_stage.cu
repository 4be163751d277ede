/*
 * examples/corpus/c136_drone_ndvi_mirror_blob_cpu_stage.cu: corpus workload (CUDA C++, a lazily
 * synchronized host/device buffer). An agricultural drone survey's crop-health pipeline: 40
 * frames of a four-band multispectral camera (green, red, red edge, near infrared; 1024 x 1024
 * pixels, 16-bit) flown in a lawnmower pattern over 4096 field parcels. Each frame is replayed on
 * the device from the survey's scene model (parcels of different vigour, bare fields, clouds and
 * their shadows), calibrated to reflectance (3 x 3 smoothing, the frame's irradiance), masked for
 * clouds and cloud shadows, and reduced to each parcel's NDVI sum, clear-pixel count and
 * low-vigour count, which the survey monitor reads one frame late from a pinned ring.
 * The pipeline's buffers are Blob<T>s, a mirrored host/device buffer in the style of Caffe's
 * SyncedMemory: host() and dev() return the side asked for, copying the whole buffer across first
 * with cudaMemcpy when the other side holds the newer data, and the mutable accessors mark their
 * side the newer one. The cloud-shadow mask stage has only a CPU implementation (a port of
 * the survey's old desktop tool: a band test and a 3 x 3 dilation), so every frame it asks for
 * refl.host() and writes mask.mutable_host(), and the next stage's mask.dev() sends the mask back:
 * an 8 MB device-to-host cudaMemcpy, which "returns only once the copy has completed" (runtime API
 * synchronization rules) and, on the legacy default stream, waits for the frame's kernels on the
 * blocking pipeline stream; then 3-5 ms of CPU work while the GPU idles; then a 1 MB host-to-device
 * cudaMemcpy, "synchronous with respect to the host" from the page-locked host side. The GPU and
 * the host take turns every frame. The mask stage as a kernel, the blobs staying on the device,
 * would do (c140).
 * Planted: the cudaMemcpy in Blob::to_host() and the cudaMemcpy in Blob::to_device(), every frame
 * (one problem, two lines).
 * Clean: the Blob allocations (cudaMallocHost and cudaMalloc, as the framework does with a GPU)
 * and their frees, the per-frame download of the parcel table into the pinned ring, the monitor's
 * cudaEventSynchronize one frame behind, the final wait, teardown. The per-frame cudaMemsetAsync of
 * the parcel table is an enqueue (unmarked).
 * Per frame (estimates, H100): the replay, calibration and parcel sums, about 0.1-0.2 ms of
 * kernels; the 8 MB download 0.2-0.35 ms, the CPU mask 3-5 ms, the 1 MB upload about 0.05 ms.
 * Checks after the loop: the last frame's mask recomputed from its reflectance, the last frame's
 * parcel table recomputed on the host, 64 sampled reflectances recomputed from the scene model,
 * and between 1% and 50% of all pixels masked.
 */
#include "corpus.h"

#include <string.h>

enum { W = 1024, H = 1024, NPIX = W * H, BANDS = 4, FRAMES = 40, FIELD = 96, FW = 64, NFIELD = FW * FW, THREADS = 256, SAMPLES = 64 };
enum { G = 0, R = 1, RE = 2, NIR = 3, MASK_CLOUD = 1, MASK_SHADOW = 2 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the frame's position over the survey area (ground pixels), and its irradiance factor (/1024) */
__host__ __device__ static inline int frame_ox(int f) { return 256 + (f % 8) * 600; }
__host__ __device__ static inline int frame_oy(int f) { return 256 + (f / 8) * 900; }
__host__ __device__ static inline int frame_sun(int f) { return 900 + (f * 37) % 200; }

/* the scene: reflectance x 10000 of band b at ground pixel (gx, gy) in frame f, clouds and shadows included */
__host__ __device__ static inline int scene_refl(int b, int gx, int gy, int f)
{
	uint32_t fid = (uint32_t)((gy / FIELD) * FW + gx / FIELD), h = mix32(fid ^ 0x2545f491u);
	int v = h % 10u == 0 ? 5 : 15 + (int)(h >> 8) % 85; /* vigour: bare or planted */
	int r = b == G ? 800 + 2 * v : b == R ? 2100 - 20 * v : b == RE ? 1800 + 15 * v : 2400 + 40 * v;
	for (int k = 0; k < 3; k++) {
		uint32_t c = mix32((uint32_t)(f * 3 + k) ^ 0x68e31da4u);
		int cx = frame_ox(f) + (int)(c % W), cy = frame_oy(f) + (int)((c >> 10) % H), rad = 60 + (int)(c >> 20) % 60;
		int dx = gx - cx, dy = gy - cy, sx = dx - 70, sy = dy - 50;
		if (dx * dx + dy * dy < rad * rad)
			return r * 3 / 10 + 6500;
		if (sx * sx + sy * sy < rad * rad)
			r = r * 35 / 100;
	}
	int noise = (int)(mix32((uint32_t)(gy * 8192 + gx) * 4u + (uint32_t)b + (uint32_t)f * 0x9e3779b9u) % 128u) - 64;
	return r + noise < 0 ? 0 : r + noise;
}

/* the camera's digital number */
__host__ __device__ static inline int raw_dn(int b, int x, int y, int f)
{
	return scene_refl(b, frame_ox(f) + x, frame_oy(f) + y, f) * frame_sun(f) / 1024 + 100;
}

/* calibrated reflectance: the 3 x 3 mean (edges clamped) less the dark level, over the irradiance */
__host__ __device__ static inline int calib(const uint16_t *raw, int b, int x, int y, int f)
{
	int s = 0;
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++) {
			int xx = min(max(x + dx, 0), W - 1), yy = min(max(y + dy, 0), H - 1);
			s += raw[(size_t)b * NPIX + yy * W + xx];
		}
	int r = (s - 900) * 1024 / (9 * frame_sun(f));
	return r < 0 ? 0 : r > 20000 ? 20000 : r;
}

__host__ __device__ static inline int ndvi(int nir, int red)
{
	return nir + red > 0 ? (nir - red) * 10000 / (nir + red) : 0;
}

/* the survey's lazily mirrored host/device buffer */
template <typename T> class Blob {
public:
	explicit Blob(size_t n) : n_(n)
	{
		CHECK(cudaMallocHost(&h_, bytes())); // SYNCSPY-CLEAN: setup, the blob's page-locked host side
		CHECK(cudaMalloc(&d_, bytes())); // SYNCSPY-CLEAN: setup, the blob's device side
	}
	~Blob()
	{
		CHECK(cudaFreeHost(h_)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_)); // SYNCSPY-CLEAN: teardown
	}
	Blob(const Blob &) = delete;
	Blob &operator=(const Blob &) = delete;
	size_t bytes() const { return n_ * sizeof(T); }
	const T *host() { to_host(); return h_; }
	T *mutable_host() { to_host(); head_ = AT_HOST; return h_; }
	const T *dev() { to_device(); return d_; }
	T *mutable_dev() { to_device(); head_ = AT_DEVICE; return d_; }

private:
	enum head { UNINITIALIZED, AT_HOST, AT_DEVICE, SYNCED };
	void to_host()
	{
		if (head_ == AT_DEVICE) {
			CHECK(cudaMemcpy(h_, d_, bytes(), cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: the whole blob down for the CPU-only stage, every frame: waits for the frame's kernels
			head_ = SYNCED;
		} else if (head_ == UNINITIALIZED) {
			head_ = AT_HOST;
		}
	}
	void to_device()
	{
		if (head_ == AT_HOST) {
			CHECK(cudaMemcpy(d_, h_, bytes(), cudaMemcpyHostToDevice)); // SYNCSPY-PROBLEM: and the CPU stage's output back up, every frame: synchronous from pinned memory
			head_ = SYNCED;
		} else if (head_ == UNINITIALIZED) {
			head_ = AT_DEVICE;
		}
	}
	size_t n_;
	T *h_ = nullptr, *d_ = nullptr;
	head head_ = UNINITIALIZED;
};

/* replay: the camera's four bands of frame f */
__global__ void replay_frame(uint16_t *raw, int f)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	for (int b = 0; b < BANDS; b++)
		raw[(size_t)b * NPIX + y * W + x] = (uint16_t)raw_dn(b, x, y, f);
}

__global__ void calibrate(const uint16_t *raw, uint16_t *refl, int f)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	for (int b = 0; b < BANDS; b++)
		refl[(size_t)b * NPIX + y * W + x] = (uint16_t)calib(raw, b, x, y, f);
}

/* each parcel's NDVI sum, clear pixels and low-vigour pixels; a block's 256 pixels of one row
 * touch at most 4 parcels, summed in shared memory first */
__global__ void parcel_stats(const uint16_t *refl, const uint8_t *mask, int f, unsigned long long *table)
{
	__shared__ unsigned long long acc[4][3];
	int x0 = blockIdx.x * blockDim.x, x = x0 + threadIdx.x, y = blockIdx.y, ox = frame_ox(f);
	int base = (ox + x0) / FIELD;
	if (threadIdx.x < 12)
		acc[threadIdx.x / 3][threadIdx.x % 3] = 0;
	__syncthreads();
	int i = y * W + x;
	if (!mask[i]) {
		int v = ndvi(refl[(size_t)NIR * NPIX + i], refl[(size_t)R * NPIX + i]), slot = (ox + x) / FIELD - base;
		atomicAdd(&acc[slot][0], (unsigned long long)(long long)v);
		atomicAdd(&acc[slot][1], 1ull);
		if (v < 3000)
			atomicAdd(&acc[slot][2], 1ull);
	}
	__syncthreads();
	if (threadIdx.x < 12) {
		int slot = threadIdx.x / 3, fid = ((frame_oy(f) + y) / FIELD) * FW + base + slot;
		if (acc[slot][1] && base + slot < FW)
			atomicAdd(&table[fid * 3 + threadIdx.x % 3], acc[slot][threadIdx.x % 3]);
	}
}

/* a pixel's class: cloud (bright in every band) or cloud shadow (dark, low near infrared) */
__host__ __device__ static inline uint8_t mask_code(const uint16_t *refl, int i)
{
	int g = refl[i], r = refl[NPIX + i], re = refl[2 * NPIX + i], nir = refl[3 * NPIX + i];
	int bright = (g + r + re + nir) / 4;
	return bright > 6000 ? MASK_CLOUD : nir < 1800 && bright < 1400 ? MASK_SHADOW : 0;
}

/* the cloud and cloud-shadow mask, CPU only: the band test, then a 3 x 3 dilation (rows, then columns) */
static void shadow_mask_cpu(const uint16_t *refl, uint8_t *mask)
{
	static uint8_t code[NPIX], row[NPIX];
	for (int i = 0; i < NPIX; i++)
		code[i] = mask_code(refl, i);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			int i = y * W + x;
			row[i] = code[i] | (x > 0 ? code[i - 1] : 0) | (x < W - 1 ? code[i + 1] : 0);
		}
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			int i = y * W + x;
			mask[i] = row[i] | (y > 0 ? row[i - W] : 0) | (y < H - 1 ? row[i + W] : 0);
		}
}

/* the host's parcel table of frame f (the mirror of parcel_stats) */
static void host_stats(const uint16_t *refl, const uint8_t *mask, int f, unsigned long long *table)
{
	memset(table, 0, NFIELD * 3 * sizeof(unsigned long long));
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			int i = y * W + x;
			if (mask[i])
				continue;
			int v = ndvi(refl[3 * NPIX + i], refl[NPIX + i]), fid = ((frame_oy(f) + y) / FIELD) * FW + (frame_ox(f) + x) / FIELD;
			table[fid * 3] += (unsigned long long)(long long)v;
			table[fid * 3 + 1]++;
			table[fid * 3 + 2] += v < 3000;
		}
}

int main(void)
{
	const char *name = "c136_drone_ndvi_mirror_blob_cpu_stage";
	cudaStream_t pipe;
	unsigned long long *d_table, *h_table[2];
	cudaEvent_t summed[2];
	CHECK(cudaStreamCreate(&pipe));
	CHECK(cudaMalloc(&d_table, NFIELD * 3 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&h_table[k], NFIELD * 3 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup, the monitor's pinned ring
		CHECK(cudaEventCreateWithFlags(&summed[k], cudaEventDisableTiming));
	}
	static unsigned long long season[NFIELD * 3], want[NFIELD * 3];
	unsigned long long checksum = 14695981039346656037ull;
	long long masked = 0;
	{
		Blob<uint16_t> raw((size_t)BANDS * NPIX), refl((size_t)BANDS * NPIX);
		Blob<uint8_t> mask(NPIX);
		const dim3 grid(W / THREADS, H);
		for (int f = 0; f <= FRAMES; f++) {
			if (f < FRAMES) {
				replay_frame<<<grid, THREADS, 0, pipe>>>(raw.mutable_dev(), f);
				CHECK_LAUNCH();
				calibrate<<<grid, THREADS, 0, pipe>>>(raw.dev(), refl.mutable_dev(), f);
				CHECK_LAUNCH();
				shadow_mask_cpu(refl.host(), mask.mutable_host()); /* the stage without a GPU implementation */
				CHECK(cudaMemsetAsync(d_table, 0, NFIELD * 3 * sizeof(unsigned long long), pipe));
				parcel_stats<<<grid, THREADS, 0, pipe>>>(refl.dev(), mask.dev(), f, d_table);
				CHECK_LAUNCH();
				CHECK(cudaMemcpyAsync(h_table[f % 2], d_table, NFIELD * 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, pipe)); // SYNCSPY-CLEAN: into the monitor's pinned ring
				CHECK(cudaEventRecord(summed[f % 2], pipe));
			}
			if (f == 0)
				continue;
			int g = f - 1; /* frame g's parcels, one frame behind */
			CHECK(cudaEventSynchronize(summed[g % 2])); // SYNCSPY-CLEAN: the monitor's frame one behind
			const unsigned long long *t = h_table[g % 2];
			long long clear = 0;
			for (int i = 0; i < NFIELD * 3; i++) {
				season[i] += t[i];
				if (i % 3 == 1)
					clear += (long long)t[i];
				checksum = (checksum ^ t[i]) * 1099511628211ull;
			}
			masked += NPIX - clear;
		}
		CHECK(cudaStreamSynchronize(pipe)); // SYNCSPY-CLEAN: the final wait

		/* the checks, on the last frame */
		const int f = FRAMES - 1;
		const uint16_t *r = refl.host();
		const uint8_t *m = mask.host();
		static uint8_t m2[NPIX];
		shadow_mask_cpu(r, m2);
		if (memcmp(m, m2, NPIX)) {
			printf("%s: the last frame's mask differs from the CPU mask result=FAIL\n", name);
			return 1;
		}
		host_stats(r, m, f, want);
		for (int i = 0; i < NFIELD * 3; i++)
			if (want[i] != h_table[f % 2][i]) {
				printf("%s: parcel %d stat %d: %llu, want %llu result=FAIL\n", name, i / 3, i % 3, h_table[f % 2][i], want[i]);
				return 1;
			}
		static uint16_t raw_h[BANDS * NPIX];
		for (int b = 0; b < BANDS; b++)
			for (int i = 0; i < NPIX; i++)
				raw_h[b * NPIX + i] = (uint16_t)raw_dn(b, i % W, i / W, f);
		for (int s = 0; s < SAMPLES; s++) {
			uint32_t h = mix32((uint32_t)s ^ 0x7f4a7c15u);
			int b = (int)(h % BANDS), x = (int)((h >> 2) % W), y = (int)((h >> 12) % H);
			int wantr = calib(raw_h, b, x, y, f);
			if (r[(size_t)b * NPIX + y * W + x] != wantr) {
				printf("%s: reflectance band %d (%d, %d): %d, want %d result=FAIL\n", name, b, x, y, r[(size_t)b * NPIX + y * W + x], wantr);
				return 1;
			}
		}
	}
	if (masked * 100 < (long long)FRAMES * NPIX || masked * 2 > (long long)FRAMES * NPIX) {
		printf("%s: %lld of %lld pixels masked result=FAIL\n", name, masked, (long long)FRAMES * NPIX);
		return 1;
	}
	long long clear = 0, low = 0, parcels = 0;
	for (int i = 0; i < NFIELD; i++) {
		clear += (long long)season[i * 3 + 1];
		low += (long long)season[i * 3 + 2];
		parcels += season[i * 3 + 1] != 0;
	}
	CHECK(cudaFree(d_table)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(h_table[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(summed[k]));
	}
	CHECK(cudaStreamDestroy(pipe));
	printf("%s: frames=%d parcels=%lld clear_pixels=%lld low_vigour=%lld masked_pixels=%lld checksum=%016llx result=OK\n", name,
	       FRAMES, parcels, clear, low, masked, checksum);
	return 0;
}
