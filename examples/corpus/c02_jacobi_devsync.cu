/*
 * examples/corpus/c02_jacobi_devsync.cu: corpus workload (CUDA C). A 2D Jacobi relaxation on a
 * non-blocking stream, written the way debugging code often stays in: a cudaDeviceSynchronize
 * after every sweep "to catch kernel errors early".
 * Planted: cudaDeviceSynchronize every sweep.
 * Clean: setup allocation and upload of the initial grid, the final read of the result.
 */
#include "corpus.h"

enum { N = 1024, SWEEPS = 80 };

/* Integer heat: values stay exact, so the checksum is the same on every run. */
__global__ void sweep(const int *in, int *out, int n)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x <= 0 || y <= 0 || x >= n - 1 || y >= n - 1)
		return;
	int s = in[(y - 1) * n + x] + in[(y + 1) * n + x] + in[y * n + x - 1] + in[y * n + x + 1];
	out[y * n + x] = s / 4;
}

int main(void)
{
	const size_t bytes = (size_t)N * N * sizeof(int);
	int *grid = (int *)malloc(bytes);
	int *d_a, *d_b;
	cudaStream_t stream;

	for (int i = 0; i < N * N; i++)
		grid[i] = (i / N == 0 || i % N == 0) ? 1 << 20 : 0; /* hot top and left edges */
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_a, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_b, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_a, grid, bytes, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: initial grid
	CHECK(cudaMemcpy(d_b, grid, bytes, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: initial grid

	dim3 threads(32, 8), blocks(N / 32, N / 8);
	for (int it = 0; it < SWEEPS; it++) {
		sweep<<<blocks, threads, 0, stream>>>(d_a, d_b, N);
		CHECK_LAUNCH();
		sweep<<<blocks, threads, 0, stream>>>(d_b, d_a, N);
		CHECK(cudaDeviceSynchronize()); // SYNCSPY-PROBLEM: debug sync left in every sweep
	}

	CHECK(cudaMemcpyAsync(grid, d_a, bytes, cudaMemcpyDeviceToHost, stream)); // SYNCSPY-CLEAN: final read (pageable)
	CHECK(cudaStreamSynchronize(stream)); // SYNCSPY-CLEAN: final read of the result
	unsigned long long sum = 0;
	for (int i = 0; i < N * N; i++)
		sum = sum * 31 + (unsigned)grid[i];
	CHECK(cudaFree(d_a)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_b)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(stream));
	free(grid);
	corpus_result("c02_jacobi_devsync", SWEEPS, sum);
	return 0;
}
