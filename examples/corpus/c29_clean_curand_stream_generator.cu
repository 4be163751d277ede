/*
 * examples/corpus/c29_clean_curand_stream_generator.cu: corpus workload (CUDA C + cuRAND),
 * CLEAN. A Monte Carlo estimate of a barrier option's knock-out rate with integer random walks:
 * the cuRAND host-API generator is created once, seeded, bound to the compute stream with
 * curandSetStream, and its starting states are set up once (curandGenerateSeeds) before the
 * loop. Every step curandGenerate fills a preallocated device buffer on that stream (an enqueue
 * like a kernel launch: no allocation, no wait), a kernel advances the walks with those numbers
 * and counts the knocked-out paths into a device counter; the host reads the counters once,
 * after the loop. curandGenerate's result is deterministic for a fixed seed and call order.
 */
// CORPUS-LDLIBS: -lcurand
#include "corpus.h"

#include <curand.h>

enum { STEPS = 64, PATHS = 1 << 20, DRAWS = 4, THREADS = 256, BARRIER = 1 << 12 };

#define CHECK_RAND(call)                                                                           \
	do {                                                                                       \
		curandStatus_t check_rand_ = (call);                                               \
		if (check_rand_ != CURAND_STATUS_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_rand_);                                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* DRAWS sub-steps per step; a path that crosses the barrier stays knocked out. */
__global__ void advance(int *price, int *out_step, const uint32_t *rnd, int n, int step,
			unsigned long long *knocked)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n || out_step[i] >= 0)
		return;
	int p = price[i];
	for (int k = 0; k < DRAWS; k++) {
		uint32_t u = rnd[(size_t)k * n + i];
		int move = (int)(u % 513u) - 256;
		for (int r = 0; r < 16; r++)
			move = (move * 3 + (int)((u >> r) & 1)) % 257;
		p += move;
		if (p >= BARRIER || p <= -BARRIER) {
			out_step[i] = step;
			atomicAdd(knocked, 1ull);
			break;
		}
	}
	price[i] = p;
}

__global__ void survivors_sum(const int *price, const int *out_step, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += out_step[i] < 0 ? (unsigned long long)(price[i] + BARRIER) : (unsigned long long)out_step[i];
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
	curandGenerator_t gen;
	cudaStream_t s;
	uint32_t *d_rnd;
	int *d_price, *d_out_step;
	unsigned long long *d_stats, *h_stats;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_rnd, (size_t)DRAWS * PATHS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_price, PATHS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_out_step, PATHS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_stats, 2 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_stats, 2 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemsetAsync(d_price, 0, PATHS * sizeof(int), s));
	CHECK(cudaMemsetAsync(d_out_step, 0xff, PATHS * sizeof(int), s));
	CHECK(cudaMemsetAsync(d_stats, 0, 2 * sizeof(unsigned long long), s));
	CHECK_RAND(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_XORWOW)); // SYNCSPY-CLEAN: setup, the generator and its state, once
	CHECK_RAND(curandSetPseudoRandomGeneratorSeed(gen, 20240611ull));
	CHECK_RAND(curandSetStream(gen, s));
	CHECK_RAND(curandGenerateSeeds(gen)); // SYNCSPY-CLEAN: setup, the generator's starting states, once

	for (int step = 0; step < STEPS; step++) {
		CHECK_RAND(curandGenerate(gen, d_rnd, (size_t)DRAWS * PATHS));
		advance<<<PATHS / THREADS, THREADS, 0, s>>>(d_price, d_out_step, d_rnd, PATHS, step, d_stats);
		CHECK_LAUNCH();
	}
	survivors_sum<<<128, THREADS, 0, s>>>(d_price, d_out_step, PATHS, d_stats + 1);
	CHECK_LAUNCH();

	CHECK(cudaMemcpyAsync(h_stats, d_stats, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = h_stats[0] * 1000003 + h_stats[1];
	CHECK_RAND(curandDestroyGenerator(gen)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_rnd)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_price)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_out_step)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_stats)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_stats)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c29_clean_curand_stream_generator", STEPS, checksum);
	return 0;
}
