/*
 * examples/corpus/c15_clean_epoch_checkpoint.cu: corpus workload (CUDA C), CLEAN. Training in
 * epochs: each epoch runs 30 steps that only queue kernels; after each epoch (outside the step
 * loop) the parameters are copied to a pinned checkpoint buffer and the host waits for it to
 * fold them into a checkpoint digest. Three epochs: 90 steps, three checkpoints.
 */
#include "corpus.h"

enum { EPOCHS = 3, STEPS_PER_EPOCH = 30, PARAMS = 1 << 20, THREADS = 256 };

__global__ void sgd_step(int *w, const int *g, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] = w[i] - ((g[i] * (step % 5 + 1)) >> 3) + (i & 7);
}

__global__ void gradient(const int *w, int *g, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] = (w[i] % 97) - 48;
}

int main(void)
{
	int *d_w, *d_g, *ckpt;
	cudaStream_t s;
	unsigned long long digest = 0;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_w, PARAMS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_g, PARAMS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&ckpt, PARAMS * sizeof(int))); // SYNCSPY-CLEAN: setup checkpoint buffer
	for (int i = 0; i < PARAMS; i++)
		ckpt[i] = (i * 17) % 1000;
	CHECK(cudaMemcpyAsync(d_w, ckpt, PARAMS * sizeof(int), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload

	for (int epoch = 0; epoch < EPOCHS; epoch++) {
		for (int step = 0; step < STEPS_PER_EPOCH; step++) {
			gradient<<<PARAMS / THREADS, THREADS, 0, s>>>(d_w, d_g, PARAMS);
			sgd_step<<<PARAMS / THREADS, THREADS, 0, s>>>(d_w, d_g, PARAMS, step);
			CHECK_LAUNCH();
		}
		CHECK(cudaMemcpyAsync(ckpt, d_w, PARAMS * sizeof(int), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: checkpoint once per epoch
		CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: checkpoint once per epoch
		for (int i = 0; i < PARAMS; i++)
			digest = digest * 1099511628211ull + (unsigned)ckpt[i];
	}

	CHECK(cudaFree(d_w)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_g)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(ckpt)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c15_clean_epoch_checkpoint", EPOCHS * STEPS_PER_EPOCH, digest);
	return 0;
}
