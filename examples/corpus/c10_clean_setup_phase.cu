/*
 * examples/corpus/c10_clean_setup_phase.cu: corpus workload (CUDA C), CLEAN. A small layered
 * inference engine: a long setup phase allocates each layer's weights and a pinned staging
 * buffer per layer in a loop, uploads them and synchronizes once; then the step loop only
 * queues kernels on one stream; the final result is read once after the loop.
 * Nothing in the step loop syncs, allocates or copies.
 */
#include "corpus.h"

enum { LAYERS = 8, WIDTH = 1 << 18, STEPS = 80, THREADS = 256 };

__global__ void layer(const int *w, const int *in, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = (in[i] * 3 + w[i] + in[(i + 1) % n]) & 0xffff;
}

int main(void)
{
	int *d_w[LAYERS], *h_stage[LAYERS], *d_act[2], *result;
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	/* setup: per-layer weights through pinned staging buffers */
	for (int l = 0; l < LAYERS; l++) {
		CHECK(cudaMallocHost(&h_stage[l], WIDTH * sizeof(int))); // SYNCSPY-CLEAN: setup pinned staging, once per layer
		CHECK(cudaMalloc(&d_w[l], WIDTH * sizeof(int))); // SYNCSPY-CLEAN: setup weights, once per layer
		for (int i = 0; i < WIDTH; i++)
			h_stage[l][i] = (i * (l + 7)) % 101;
		CHECK(cudaMemcpyAsync(d_w[l], h_stage[l], WIDTH * sizeof(int), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload
	}
	for (int k = 0; k < 2; k++)
		CHECK(cudaMalloc(&d_act[k], WIDTH * sizeof(int))); // SYNCSPY-CLEAN: setup activations
	CHECK(cudaMallocHost(&result, WIDTH * sizeof(int))); // SYNCSPY-CLEAN: setup result buffer
	CHECK(cudaMemsetAsync(d_act[0], 0, WIDTH * sizeof(int), s));
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: end of setup, staging buffers reusable
	for (int l = 0; l < LAYERS; l++)
		CHECK(cudaFreeHost(h_stage[l])); // SYNCSPY-CLEAN: setup staging released before the loop

	for (int step = 0; step < STEPS; step++) {
		for (int l = 0; l < LAYERS; l++) {
			int in = (step * LAYERS + l) & 1;
			layer<<<WIDTH / THREADS, THREADS, 0, s>>>(d_w[l], d_act[in], d_act[!in], WIDTH);
		}
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpyAsync(result, d_act[0], WIDTH * sizeof(int), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0;
	for (int i = 0; i < WIDTH; i++)
		checksum = checksum * 31 + (unsigned)result[i];
	for (int l = 0; l < LAYERS; l++)
		CHECK(cudaFree(d_w[l])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_act[0])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_act[1])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(result)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c10_clean_setup_phase", STEPS, checksum);
	return 0;
}
