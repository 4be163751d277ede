/*
 * examples/cuda/05_malloc_in_loop.cu: reference workload (5), cudaMalloc and cudaFree every
 * iteration (rule alloc-in-loop, class S6).
 *
 * Each step needs a scratch buffer for an intermediate result.
 *   bad   : cudaMalloc before the kernels and cudaFree after them, every step. cudaFree waits for
 *           the device to be idle (all streams drain) and both calls are slow themselves.
 *   --fixed: the scratch buffer is allocated once before the loop and reused.
 * The steady state of the rule starts after the first 10% of the run; CUDA's context creation in
 * the first call (before the loop) takes far longer than that, so every loop call counts.
 * Each allocation and free outside the loop is on a line of its own: one call per call site.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared 05_malloc_in_loop.cu
 */
#include "workload.h"

enum { ITERATIONS = 20, ELEMENTS = 1 << 20, THREADS = 256 };

__global__ void square_into(int32_t *scratch, int n, int it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		int32_t v = (i % 100) + it;
		scratch[i] = v * v;
	}
}

__global__ void add_from(int32_t *acc, const int32_t *scratch, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		acc[i] += scratch[i];
}

static void step(cudaStream_t stream, int32_t *acc, int32_t *scratch, int it)
{
	const int blocks = (ELEMENTS + THREADS - 1) / THREADS;
	square_into<<<blocks, THREADS, 0, stream>>>(scratch, ELEMENTS, it);
	CHECK_LAUNCH();
	add_from<<<blocks, THREADS, 0, stream>>>(acc, scratch, ELEMENTS);
	CHECK_LAUNCH();
}

int main(int argc, char **argv)
{
	int fixed = parse_variant("05_malloc_in_loop", argc, argv);
	const size_t bytes = (size_t)ELEMENTS * sizeof(int32_t);
	int32_t *acc = NULL, *result = NULL, *scratch = NULL;
	cudaStream_t stream;

	CHECK(cudaHostAlloc((void **)&result, bytes, cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&acc, bytes));
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CHECK(cudaMemsetAsync(acc, 0, bytes, stream));
	if (!fixed) {
		for (int it = 0; it < ITERATIONS; it++) {
			CHECK(cudaMalloc((void **)&scratch, bytes)); // @site malloc
			step(stream, acc, scratch, it);
			CHECK(cudaFree(scratch)); // @site free
		}
	} else {
		CHECK(cudaMalloc((void **)&scratch, bytes));
		for (int it = 0; it < ITERATIONS; it++)
			step(stream, acc, scratch, it);
		CHECK(cudaFree(scratch));
	}
	CHECK(cudaMemcpyAsync(result, acc, bytes, cudaMemcpyDeviceToHost, stream));
	CHECK(cudaStreamSynchronize(stream)); // @site final-sync

	uint64_t checksum = 0;
	for (int i = 0; i < ELEMENTS; i++) {
		long long want = 0;
		for (int it = 0; it < ITERATIONS; it++)
			want += (long long)((i % 100) + it) * ((i % 100) + it);
		expect_equal("acc", i, result[i], want);
		checksum += (uint64_t)result[i] * (uint64_t)(i % 5 + 1);
	}
	CHECK(cudaStreamDestroy(stream));
	CHECK(cudaFree(acc));
	CHECK(cudaFreeHost(result));
	print_result(fixed, "iterations=%lld checksum=%lld", ITERATIONS, (long long)checksum);
	return 0;
}
