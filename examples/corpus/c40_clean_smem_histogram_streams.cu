/*
 * examples/corpus/c40_clean_smem_histogram_streams.cu: corpus workload (CUDA C), CLEAN. A
 * packet-classification service with four independent lanes, one non-blocking stream each.
 * The classifier keeps a 16384-bin histogram in shared memory (64 KiB, above the 48 KiB a
 * kernel gets without opting in), so setup raises the kernel's limit once with
 * cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) and sizes the device
 * stack once with cudaDeviceSetLimit(cudaLimitStackSize) for the recursive rule matcher: both
 * are configuration calls made before any work is queued. Every step each lane clears its
 * histogram with cudaMemsetAsync on its own stream (not cudaMemset, which would run on the
 * legacy default stream), classifies its packets and folds the histogram into lane totals;
 * one final read. The streams never wait on each other or on the host.
 */
#include "corpus.h"

enum { STEPS = 50, LANES = 4, PACKETS = 1 << 20, BINS = 16384, THREADS = 512, DEPTH = 6 };

/* a small recursive rule tree: each level hashes the key and picks a branch */
__device__ uint32_t match(uint32_t key, int depth)
{
	if (depth == 0)
		return key;
	uint32_t h = (key ^ (key >> 15)) * 2246822519u + (uint32_t)depth;
	return (h & 1u) ? match(h, depth - 1) : match(h ^ 0x5bd1e995u, depth - 1) + 1u;
}

__global__ void classify(int lane, int step, unsigned int *hist)
{
	extern __shared__ unsigned int bins[];
	for (int b = threadIdx.x; b < BINS; b += blockDim.x)
		bins[b] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < PACKETS; i += gridDim.x * blockDim.x) {
		uint32_t key = (uint32_t)i * 2654435761u ^ ((uint32_t)lane << 24) ^ ((uint32_t)step * 0x27d4eb2fu);
		atomicAdd(&bins[match(key, DEPTH) % BINS], 1u);
	}
	__syncthreads();
	for (int b = threadIdx.x; b < BINS; b += blockDim.x)
		if (bins[b])
			atomicAdd(&hist[b], bins[b]);
}

__global__ void fold(const unsigned int *hist, unsigned long long *total)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b < BINS)
		atomicAdd(total, (unsigned long long)hist[b] * (unsigned long long)(b % 251 + 1));
}

int main(void)
{
	cudaStream_t lane[LANES];
	unsigned int *d_hist[LANES];
	unsigned long long *d_total, *h_total;
	const int smem = BINS * sizeof(unsigned int);
	unsigned long long checksum = 0;

	CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096)); // SYNCSPY-CLEAN: setup, once, before any work is queued
	CHECK(cudaFuncSetAttribute(classify, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
	CHECK(cudaMalloc(&d_total, LANES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_total, LANES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	for (int k = 0; k < LANES; k++) {
		CHECK(cudaStreamCreateWithFlags(&lane[k], cudaStreamNonBlocking));
		CHECK(cudaMalloc(&d_hist[k], smem)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMemsetAsync(&d_total[k], 0, sizeof(unsigned long long), lane[k]));
	}

	for (int step = 0; step < STEPS; step++) {
		for (int k = 0; k < LANES; k++) {
			CHECK(cudaMemsetAsync(d_hist[k], 0, smem, lane[k]));
			classify<<<132, THREADS, smem, lane[k]>>>(k, step, d_hist[k]);
			fold<<<BINS / 256, 256, 0, lane[k]>>>(d_hist[k], &d_total[k]);
			CHECK_LAUNCH();
		}
	}

	for (int k = 0; k < LANES; k++)
		CHECK(cudaMemcpyAsync(&h_total[k], &d_total[k], sizeof(unsigned long long), cudaMemcpyDeviceToHost, lane[k])); // SYNCSPY-CLEAN: final read, pinned
	for (int k = 0; k < LANES; k++)
		CHECK(cudaStreamSynchronize(lane[k])); // SYNCSPY-CLEAN: final read
	for (int k = 0; k < LANES; k++)
		checksum = checksum * 1000003u + h_total[k];
	corpus_expect("c40_clean_smem_histogram_streams", "lane 0 classified", h_total[0] >= (unsigned long long)STEPS * PACKETS, 1);
	for (int k = 0; k < LANES; k++) {
		CHECK(cudaFree(d_hist[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(lane[k]));
	}
	CHECK(cudaFree(d_total)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_total)); // SYNCSPY-CLEAN: teardown
	corpus_result("c40_clean_smem_histogram_streams", STEPS, checksum);
	return 0;
}
