/*
 * examples/corpus/c26_clean_device_stats.cu: corpus workload (CUDA C), CLEAN. A Monte Carlo
 * estimator (random walks of a particle through a layered slab, in fixed point) that keeps all
 * its statistics on the device: a 64-bin histogram of exit depths and the sum of the exit
 * weights, accumulated with integer atomics over 80 batches of 2^20 walks, read once at the end.
 * Setup uploads the layers' absorption table once with cudaMemcpyToSymbol, runs one warm-up
 * batch and synchronizes once (a sanity check that the kernels run, before the production
 * loop); the loop only queues kernels on the default stream.
 */
#include "corpus.h"

enum { BATCHES = 80, WALKS = 1 << 20, THREADS = 256, BINS = 64, LAYERS = 16, HOPS = 48 };

struct tally {
	unsigned long long bins[BINS];
	unsigned long long weight;
	unsigned long long absorbed;
};

__constant__ int c_absorb[LAYERS]; /* per mille, per hop */

__device__ uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

__global__ void walk(int batch, struct tally *t)
{
	__shared__ unsigned long long s_bins[BINS];
	__shared__ unsigned long long s_weight, s_absorbed;
	int id = blockIdx.x * blockDim.x + threadIdx.x;
	if (threadIdx.x < BINS)
		s_bins[threadIdx.x] = 0;
	if (threadIdx.x == 0)
		s_weight = s_absorbed = 0;
	__syncthreads();
	if (id < WALKS) {
		uint32_t s = (uint32_t)id * 2654435761u ^ (uint32_t)(batch + 1) * 2246822519u;
		if (s == 0)
			s = 1;
		int depth = 0, weight = 1 << 16, alive = 1;
		for (int h = 0; h < HOPS && alive; h++) {
			uint32_t r = next_rand(&s);
			depth += (int)(r & 7) - 3;
			if (depth < 0)
				depth = -depth;
			int layer = min(depth >> 2, LAYERS - 1);
			weight -= (weight * c_absorb[layer]) / 1000;
			if ((int)((r >> 8) % 1000) < c_absorb[layer] / 4)
				alive = 0;
		}
		if (alive) {
			atomicAdd(&s_bins[min(depth, BINS - 1)], 1ull);
			atomicAdd(&s_weight, (unsigned long long)weight);
		} else {
			atomicAdd(&s_absorbed, 1ull);
		}
	}
	__syncthreads();
	if (threadIdx.x < BINS)
		atomicAdd(&t->bins[threadIdx.x], s_bins[threadIdx.x]);
	if (threadIdx.x == 0) {
		atomicAdd(&t->weight, s_weight);
		atomicAdd(&t->absorbed, s_absorbed);
	}
}

int main(void)
{
	int absorb[LAYERS];
	struct tally *d_tally, h_tally;
	unsigned long long checksum = 0, walks = 0;

	for (int l = 0; l < LAYERS; l++)
		absorb[l] = 5 + (l * 37) % 60;
	CHECK(cudaMemcpyToSymbol(c_absorb, absorb, sizeof absorb)); // SYNCSPY-CLEAN: setup, the table once
	CHECK(cudaMalloc(&d_tally, sizeof *d_tally)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemset(d_tally, 0, sizeof *d_tally)); // SYNCSPY-CLEAN: setup
	walk<<<WALKS / THREADS, THREADS>>>(BATCHES, d_tally); /* warm-up batch, not tallied */
	CHECK_LAUNCH();
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: warm-up checked once, before the loop
	CHECK(cudaMemset(d_tally, 0, sizeof *d_tally)); // SYNCSPY-CLEAN: setup, the warm-up's tally cleared

	for (int b = 0; b < BATCHES; b++) {
		walk<<<WALKS / THREADS, THREADS>>>(b, d_tally);
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpy(&h_tally, d_tally, sizeof h_tally, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	for (int i = 0; i < BINS; i++) {
		walks += h_tally.bins[i];
		checksum = checksum * 1000003 + h_tally.bins[i];
	}
	walks += h_tally.absorbed;
	checksum = checksum * 1000003 + h_tally.weight;
	corpus_expect("c26_clean_device_stats", "walks", (long long)walks, (long long)BATCHES * WALKS);
	CHECK(cudaFree(d_tally)); // SYNCSPY-CLEAN: teardown
	corpus_result("c26_clean_device_stats", BATCHES, checksum);
	return 0;
}
