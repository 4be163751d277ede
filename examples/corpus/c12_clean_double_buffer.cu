/*
 * examples/corpus/c12_clean_double_buffer.cu: corpus workload (CUDA C), CLEAN. A pinned,
 * double-buffered input pipeline: the host prepares batch i in pinned buffer i%2 while the GPU
 * copies and processes batch i-1; a copy stream uploads, the compute stream waits on the copy's
 * event, and before refilling a pinned buffer the host waits on the event of the copy that last
 * read it (two batches back, long finished in steady state: the GPU never idles for it).
 */
#include "corpus.h"

enum { STEPS = 64, BATCH = 1 << 20, THREADS = 256, DEPTH = 2 };

__global__ void process(const uint32_t *in, unsigned long long *acc, int n)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		uint32_t x = in[i];
		for (int r = 0; r < 16; r++)
			x = x * 1103515245u + 12345u;
		s += x >> 16;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

int main(void)
{
	uint32_t *h_in[DEPTH], *d_in[DEPTH];
	unsigned long long *d_acc, *h_acc;
	cudaStream_t copy, compute;
	cudaEvent_t uploaded[DEPTH], consumed[DEPTH];
	const size_t bytes = BATCH * sizeof(uint32_t);

	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	for (int k = 0; k < DEPTH; k++) {
		CHECK(cudaMallocHost(&h_in[k], bytes)); // SYNCSPY-CLEAN: setup pinned buffer
		CHECK(cudaMalloc(&d_in[k], bytes)); // SYNCSPY-CLEAN: setup device buffer
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_acc, sizeof *d_acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_acc, sizeof *h_acc)); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemsetAsync(d_acc, 0, sizeof *d_acc, compute));

	for (int step = 0; step < STEPS; step++) {
		int k = step % DEPTH;
		if (step >= DEPTH)
			CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: buffer from two batches back, already free
		for (int i = 0; i < BATCH; i++)
			h_in[k][i] = (uint32_t)(i ^ (step * 2654435761u));
		if (step >= DEPTH)
			CHECK(cudaStreamWaitEvent(copy, consumed[k], 0));
		CHECK(cudaMemcpyAsync(d_in[k], h_in[k], bytes, cudaMemcpyHostToDevice, copy)); // SYNCSPY-CLEAN: async pinned upload on the copy stream
		CHECK(cudaEventRecord(uploaded[k], copy));
		CHECK(cudaStreamWaitEvent(compute, uploaded[k], 0));
		process<<<256, THREADS, 0, compute>>>(d_in[k], d_acc, BATCH);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(consumed[k], compute));
	}

	CHECK(cudaMemcpyAsync(h_acc, d_acc, sizeof *h_acc, cudaMemcpyDeviceToHost, compute)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(compute)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = *h_acc;
	for (int k = 0; k < DEPTH; k++) {
		CHECK(cudaFreeHost(h_in[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_in[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(consumed[k]));
	}
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaStreamDestroy(compute));
	corpus_result("c12_clean_double_buffer", STEPS, checksum);
	return 0;
}
