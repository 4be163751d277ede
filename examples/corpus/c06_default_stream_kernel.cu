/*
 * examples/corpus/c06_default_stream_kernel.cu: corpus workload (CUDA C). Two independent
 * simulations run on two streams created with cudaStreamCreate (blocking streams), meant to
 * overlap; a small bookkeeping kernel that counts live cells is launched without a stream, on
 * the legacy default stream, which waits for all blocking streams and makes them wait for it:
 * the two simulations never overlap.
 * Planted: the bookkeeping kernel launched on the legacy default stream every step.
 * Clean: setup allocations and upload, the final read.
 */
#include "corpus.h"

enum { STEPS = 60, CELLS = 1 << 20, THREADS = 256 };

__global__ void life_step(const uint8_t *in, uint8_t *out, int n, int rule)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int l = in[(i + n - 1) % n], c = in[i], r = in[(i + 1) % n];
	out[i] = (uint8_t)((rule >> (l << 2 | c << 1 | r)) & 1);
}

__global__ void count_live(const uint8_t *a, const uint8_t *b, int n, unsigned long long *live)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && (a[i] | b[i]))
		atomicAdd(live, 1ull);
}

int main(void)
{
	uint8_t *d_a[2], *d_b[2];
	unsigned long long *d_live, live = 0;
	cudaStream_t sim[2];
	uint8_t *seed = (uint8_t *)malloc(CELLS);
	for (int i = 0; i < CELLS; i++)
		seed[i] = (uint8_t)((i * 2654435761u >> 13) & 1);

	for (int k = 0; k < 2; k++) {
		CHECK(cudaStreamCreate(&sim[k]));
		CHECK(cudaMalloc(&d_a[k], CELLS)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&d_b[k], CELLS)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMemcpy(d_a[k], seed, CELLS, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	}
	CHECK(cudaMalloc(&d_live, sizeof live)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemset(d_live, 0, sizeof live)); // SYNCSPY-CLEAN: setup

	for (int step = 0; step < STEPS; step++) {
		for (int k = 0; k < 2; k++) {
			for (int sub = 0; sub < 4; sub++) {
				life_step<<<CELLS / THREADS, THREADS, 0, sim[k]>>>(d_a[k], d_b[k], CELLS, k ? 110 : 30);
				life_step<<<CELLS / THREADS, THREADS, 0, sim[k]>>>(d_b[k], d_a[k], CELLS, k ? 110 : 30);
			}
		}
		CHECK_LAUNCH();
		count_live<<<CELLS / THREADS, THREADS>>>(d_a[0], d_a[1], CELLS, d_live); // SYNCSPY-PROBLEM: legacy default stream serializes both simulations
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpy(&live, d_live, sizeof live, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(d_a[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_b[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(sim[k]));
	}
	CHECK(cudaFree(d_live)); // SYNCSPY-CLEAN: teardown
	free(seed);
	corpus_result("c06_default_stream_kernel", STEPS, live);
	return 0;
}
