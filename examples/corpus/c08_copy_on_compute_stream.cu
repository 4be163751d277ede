/*
 * examples/corpus/c08_copy_on_compute_stream.cu: corpus workload (CUDA C). A dataset held in
 * pinned host memory is streamed batch by batch to the GPU and transformed. The upload of each
 * batch is queued on the same stream as the compute kernels, so the copy engine and the SMs
 * take turns instead of overlapping (the copy of batch i+1 could run during the compute of
 * batch i on a second stream).
 * Planted: the H2D batch copy on the compute stream every step.
 * Clean: setup pinned/device allocations, the final read.
 */
#include "corpus.h"

enum { STEPS = 48, BATCH = 1 << 21, THREADS = 256 };

__global__ void transform(const uint32_t *in, uint32_t *state, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t x = state[i] ^ in[i];
	for (int r = 0; r < 48; r++)
		x = x * 1664525u + 1013904223u;
	state[i] = x;
}

int main(void)
{
	uint32_t *dataset, *d_batch, *d_state, *result;
	cudaStream_t compute;
	const size_t batch_bytes = BATCH * sizeof(uint32_t);

	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaMallocHost(&dataset, batch_bytes * STEPS)); // SYNCSPY-CLEAN: setup pinned dataset
	CHECK(cudaMallocHost(&result, batch_bytes)); // SYNCSPY-CLEAN: setup pinned result buffer
	CHECK(cudaMalloc(&d_batch, batch_bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_state, batch_bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_state, 0, batch_bytes, compute));
	for (size_t i = 0; i < (size_t)BATCH * STEPS; i++)
		dataset[i] = (uint32_t)(i * 40503u);

	for (int step = 0; step < STEPS; step++) {
		CHECK(cudaMemcpyAsync(d_batch, dataset + (size_t)step * BATCH, batch_bytes, cudaMemcpyHostToDevice, compute)); // SYNCSPY-PROBLEM: upload serialized with compute on one stream
		transform<<<BATCH / THREADS, THREADS, 0, compute>>>(d_batch, d_state, BATCH);
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpyAsync(result, d_state, batch_bytes, cudaMemcpyDeviceToHost, compute)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(compute)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0;
	for (int i = 0; i < BATCH; i++)
		checksum = checksum * 31 + result[i];
	CHECK(cudaFree(d_batch)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_state)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(result)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(dataset)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(compute));
	corpus_result("c08_copy_on_compute_stream", STEPS, checksum);
	return 0;
}
