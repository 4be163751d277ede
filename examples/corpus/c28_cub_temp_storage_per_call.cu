/*
 * examples/corpus/c28_cub_temp_storage_per_call.cu: corpus workload (CUDA C + CUB). An
 * iterative image denoiser that logs the total variation of the image after every sweep. The
 * total is taken by a small helper written in the usual two-phase CUB idiom: a first
 * cub::DeviceReduce::Sum call with a NULL buffer asks for the temporary storage size, the
 * helper cudaMallocs that much, runs the reduction on the stream into the sweep's device slot,
 * and cudaFrees the storage. The size does not change between calls: allocating the storage
 * once in setup (or taking it from cudaMallocAsync's pool) would keep the loop off the driver's
 * allocator; cudaFree waits for the whole device, so the host cannot queue ahead of the GPU.
 * The size query and the reduction itself only enqueue work.
 * Planted: the helper's cudaMalloc and cudaFree of the temporary storage, every sweep.
 * Clean: setup allocations and upload, the final read of the per-sweep totals, teardown.
 */
#include "corpus.h"

#include <cub/device/device_reduce.cuh>

enum { SWEEPS = 60, W = 2048, H = 1024, N = W * H, THREADS = 256 };

/* One Jacobi-like smoothing sweep of a 2-D integer image, with a fidelity term. */
__global__ void smooth(const uint32_t *src, uint32_t *dst, const uint32_t *noisy, int sweep)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	int x = i % W, y = i / W;
	uint32_t c = src[i];
	uint32_t l = x > 0 ? src[i - 1] : c, r = x < W - 1 ? src[i + 1] : c;
	uint32_t u = y > 0 ? src[i - W] : c, d = y < H - 1 ? src[i + W] : c;
	uint32_t v = (4 * c + l + r + u + d + 2 * noisy[i] + (uint32_t)(sweep & 3)) / 10;
	for (int k = 0; k < 24; k++)
		v = (v * 33u + (v >> 3)) % 65536u;
	dst[i] = (v + c) >> 1;
}

/* |dst[i] - dst[i+1]| + |dst[i] - dst[i+W]|, one value per pixel, for the reduction. */
__global__ void variation(const uint32_t *img, unsigned long long *tv)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	int x = i % W, y = i / W;
	long long c = img[i], t = 0;
	if (x < W - 1)
		t += llabs(c - (long long)img[i + 1]);
	if (y < H - 1)
		t += llabs(c - (long long)img[i + W]);
	tv[i] = (unsigned long long)t;
}

/* The helper: the two-phase CUB call, its storage allocated and freed on every call. */
static void device_sum(const unsigned long long *in, unsigned long long *out, int n, cudaStream_t s)
{
	void *temp = NULL;
	size_t temp_bytes = 0;
	CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, s));
	CHECK(cudaMalloc(&temp, temp_bytes)); // SYNCSPY-PROBLEM: temporary storage allocated on every call
	CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, s));
	CHECK(cudaFree(temp)); // SYNCSPY-PROBLEM: freed on every call (cudaFree waits for the device)
}

int main(void)
{
	uint32_t *h_img = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long h_tv[SWEEPS];
	uint32_t *d_noisy, *d_img[2];
	unsigned long long *d_pixel_tv, *d_tv;
	cudaStream_t s;
	unsigned long long checksum = 0;

	for (int i = 0; i < N; i++)
		h_img[i] = (((uint32_t)i * 2654435761u) >> 16) ^ (uint32_t)((i % W) * 16);
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_noisy, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_img[0], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_img[1], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_pixel_tv, (size_t)N * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_tv, SWEEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpyAsync(d_noisy, h_img, (size_t)N * sizeof(uint32_t), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	CHECK(cudaMemcpyAsync(d_img[0], d_noisy, (size_t)N * sizeof(uint32_t), cudaMemcpyDeviceToDevice, s)); // SYNCSPY-CLEAN: setup, the first iterate (device to device, async)

	for (int sweep = 0; sweep < SWEEPS; sweep++) {
		uint32_t *src = d_img[sweep & 1], *dst = d_img[(sweep & 1) ^ 1];
		smooth<<<N / THREADS, THREADS, 0, s>>>(src, dst, d_noisy, sweep);
		variation<<<N / THREADS, THREADS, 0, s>>>(dst, d_pixel_tv);
		CHECK_LAUNCH();
		device_sum(d_pixel_tv, d_tv + sweep, N, s);
	}

	CHECK(cudaMemcpyAsync(h_tv, d_tv, sizeof h_tv, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read (pageable, once)
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	for (int k = 0; k < SWEEPS; k++)
		checksum = checksum * 1000003 + h_tv[k];
	CHECK(cudaFree(d_noisy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_img[0])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_img[1])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_pixel_tv)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_tv)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	free(h_img);
	corpus_result("c28_cub_temp_storage_per_call", SWEEPS, checksum);
	return 0;
}
