/*
 * examples/corpus/c03_scratch_malloc.cu: corpus workload (CUDA C). A batched reduction whose
 * batch size varies per step; the scratch buffer for the partial sums is allocated with
 * cudaMalloc for each batch and released with cudaFree after it, as a first port from CPU code
 * often does.
 * Planted: cudaMalloc and cudaFree of the scratch buffer every step (cudaFree synchronizes the
 * device; both are slow driver calls).
 * Clean: setup allocation of the input, the final result read, teardown.
 */
#include "corpus.h"

enum { STEPS = 50, MAX_ROWS = 4096, COLS = 512, THREADS = 256 };

__global__ void fill_rows(int *m, int rows, int cols, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < rows * cols)
		m[i] = (i % 977) + step;
}

__global__ void row_sums(const int *m, int rows, int cols, long long *partial)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= rows)
		return;
	long long s = 0;
	for (int c = 0; c < cols; c++)
		s += m[r * cols + c];
	partial[r] = s;
}

__global__ void fold(const long long *partial, int rows, unsigned long long *acc)
{
	__shared__ long long sh[THREADS];
	long long s = 0;
	for (int r = threadIdx.x; r < rows; r += blockDim.x)
		s += partial[r];
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		*acc = (*acc * 1000003ull) ^ (unsigned long long)t;
	}
}

int main(void)
{
	int *d_m;
	unsigned long long *d_acc, acc = 0;
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_m, (size_t)MAX_ROWS * COLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_acc, 0, sizeof acc, s));

	for (int step = 0; step < STEPS; step++) {
		int rows = 1024 + (step * 613) % (MAX_ROWS - 1024);
		long long *d_partial;
		CHECK(cudaMalloc(&d_partial, rows * sizeof(long long))); // SYNCSPY-PROBLEM: scratch allocated every step
		fill_rows<<<(rows * COLS + THREADS - 1) / THREADS, THREADS, 0, s>>>(d_m, rows, COLS, step);
		row_sums<<<(rows + THREADS - 1) / THREADS, THREADS, 0, s>>>(d_m, rows, COLS, d_partial);
		fold<<<1, THREADS, 0, s>>>(d_partial, rows, d_acc);
		CHECK_LAUNCH();
		CHECK(cudaFree(d_partial)); // SYNCSPY-PROBLEM: cudaFree every step synchronizes the device
	}

	CHECK(cudaMemcpyAsync(&acc, d_acc, sizeof acc, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_m)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c03_scratch_malloc", STEPS, acc);
	return 0;
}
