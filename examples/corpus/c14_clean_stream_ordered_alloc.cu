/*
 * examples/corpus/c14_clean_stream_ordered_alloc.cu: corpus workload (CUDA C), CLEAN. A
 * variable-size batch pipeline that takes its per-step scratch memory from the stream-ordered
 * allocator (cudaMallocAsync/cudaFreeAsync) with the device's default pool told to keep its
 * memory (release threshold: unlimited): after the first steps the pool serves every request
 * without the driver and nothing waits. Compare c03_scratch_malloc.cu (cudaMalloc/cudaFree).
 */
#include "corpus.h"

enum { STEPS = 70, MAX_N = 1 << 20, THREADS = 256 };

__global__ void expand(int *scratch, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		scratch[i] = (i * 31 + step) % 8191;
}

__global__ void reduce_into(const int *scratch, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += scratch[i];
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
	cudaStream_t s;
	cudaMemPool_t pool;
	unsigned long long *d_acc, acc = 0;
	uint64_t keep = UINT64_MAX;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
	CHECK(cudaMalloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_acc, 0, sizeof acc, s));

	for (int step = 0; step < STEPS; step++) {
		int n = MAX_N / 2 + (step * 7919) % (MAX_N / 2);
		int *scratch;
		CHECK(cudaMallocAsync(&scratch, n * sizeof(int), s)); // SYNCSPY-CLEAN: stream-ordered, served by the pool
		expand<<<(n + THREADS - 1) / THREADS, THREADS, 0, s>>>(scratch, n, step);
		reduce_into<<<128, THREADS, 0, s>>>(scratch, n, d_acc);
		CHECK_LAUNCH();
		CHECK(cudaFreeAsync(scratch, s)); // SYNCSPY-CLEAN: stream-ordered free, no sync
	}

	CHECK(cudaMemcpyAsync(&acc, d_acc, sizeof acc, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c14_clean_stream_ordered_alloc", STEPS, acc);
	return 0;
}
