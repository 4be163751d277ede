/*
 * examples/corpus/c01_histogram_readback.cu: corpus workload (CUDA C). A video analytics loop:
 * each step builds a 256-bin histogram of one synthetic frame on the GPU and reads it back with
 * a blocking cudaMemcpy to update a running exposure estimate on the host.
 * Planted: the per-frame blocking cudaMemcpy D2H (the host waits for the kernel every frame).
 * Clean: setup allocation and upload, the teardown frees.
 */
#include "corpus.h"

enum { STEPS = 60, FRAME = 1 << 20, BINS = 256, THREADS = 256 };

__global__ void synth_frame(uint8_t *frame, int n, int seed)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		frame[i] = (uint8_t)((i * 2654435761u + seed * 97u) >> 24);
}

__global__ void histogram(const uint8_t *frame, int n, unsigned *bins)
{
	__shared__ unsigned local[BINS];
	local[threadIdx.x] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		atomicAdd(&local[frame[i]], 1u);
	__syncthreads();
	atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

int main(void)
{
	uint8_t *d_frame;
	unsigned *d_bins, bins[BINS];
	unsigned long long exposure = 0;

	/* setup: buffers and a lookup table uploaded once */
	CHECK(cudaMalloc(&d_frame, FRAME)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_bins, BINS * sizeof(unsigned))); // SYNCSPY-CLEAN: setup allocation
	unsigned zero[BINS] = {0};
	CHECK(cudaMemcpy(d_bins, zero, sizeof zero, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		synth_frame<<<FRAME / THREADS, THREADS>>>(d_frame, FRAME, step);
		CHECK_LAUNCH();
		CHECK(cudaMemsetAsync(d_bins, 0, BINS * sizeof(unsigned)));
		histogram<<<64, BINS>>>(d_frame, FRAME, d_bins);
		CHECK_LAUNCH();
		CHECK(cudaMemcpy(bins, d_bins, sizeof bins, cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: blocking read of the histogram every frame
		unsigned long long total = 0, weighted = 0;
		for (int b = 0; b < BINS; b++) {
			total += bins[b];
			weighted += (unsigned long long)b * bins[b];
		}
		corpus_expect("c01_histogram_readback", "pixels", (long long)total, FRAME);
		exposure = (exposure * 7 + weighted / total) % 1000003;
	}

	CHECK(cudaFree(d_bins)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_frame)); // SYNCSPY-CLEAN: teardown
	corpus_result("c01_histogram_readback", STEPS, exposure);
	return 0;
}
