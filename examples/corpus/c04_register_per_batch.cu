/*
 * examples/corpus/c04_register_per_batch.cu: corpus workload (CUDA C). A CPU "decoder" fills a
 * fresh host buffer per batch; to get an asynchronous copy the program pins it with
 * cudaHostRegister, uploads it on a stream, and unregisters it once the batch is processed.
 * Planted: cudaHostRegister and cudaHostUnregister every batch (page pinning is an expensive
 * driver call, and unregistering waits for the copy).
 * Clean: setup allocation, the final read.
 */
#include "corpus.h"

#include <string.h>

enum { STEPS = 40, BATCH = 1 << 20, THREADS = 256 };

__global__ void consume(const uint32_t *in, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += in[i] % 1009;
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

static void decode(uint32_t *dst, int n, int batch)
{
	for (int i = 0; i < n; i++)
		dst[i] = (uint32_t)i * 2246822519u + (uint32_t)batch * 3266489917u;
}

int main(void)
{
	uint32_t *d_in;
	unsigned long long *d_acc, acc = 0;
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_in, BATCH * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_acc, 0, sizeof acc, s));

	uint32_t *host = (uint32_t *)aligned_alloc(4096, BATCH * sizeof(uint32_t));
	for (int b = 0; b < STEPS; b++) {
		decode(host, BATCH, b);
		CHECK(cudaHostRegister(host, BATCH * sizeof(uint32_t), cudaHostRegisterDefault)); // SYNCSPY-PROBLEM: pinning the batch buffer every step
		CHECK(cudaMemcpyAsync(d_in, host, BATCH * sizeof(uint32_t), cudaMemcpyHostToDevice, s)); // (no marker: a consequence of the registration: README.md)
		consume<<<128, THREADS, 0, s>>>(d_in, BATCH, d_acc);
		CHECK_LAUNCH();
		CHECK(cudaHostUnregister(host)); // SYNCSPY-PROBLEM: unpinning every step
	}
	free(host);

	CHECK(cudaMemcpyAsync(&acc, d_acc, sizeof acc, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaFree(d_in)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c04_register_per_batch", STEPS, acc);
	return 0;
}
