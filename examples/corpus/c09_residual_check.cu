/*
 * examples/corpus/c09_residual_check.cu: corpus workload (CUDA C). An iterative smoother that
 * stops when the residual falls under a tolerance. The residual is reduced on the GPU, copied
 * to pinned memory and the host waits for it after every iteration to decide whether to go on
 * (checking every 10th iteration, or on the GPU, would keep the queue full).
 * Planted: cudaStreamSynchronize every iteration to read the residual.
 * Clean: setup allocations and upload, the final read of the solution.
 */
#include "corpus.h"

enum { N = 1 << 20, MAX_ITERS = 100, THREADS = 256 };

__global__ void smooth(const int *in, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i > 0 && i < n - 1)
		out[i] = (in[i - 1] + 2 * in[i] + in[i + 1]) / 4;
	else if (i == 0 || i == n - 1)
		out[i] = in[i];
}

__global__ void residual(const int *a, const int *b, int n, unsigned long long *r)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && a[i] != b[i])
		atomicAdd(r, (unsigned long long)abs(a[i] - b[i]));
}

int main(void)
{
	int *host = (int *)malloc(N * sizeof(int)), *d_u, *d_v;
	unsigned long long *d_r, *h_r;
	cudaStream_t s;
	int iters = 0;

	for (int i = 0; i < N; i++)
		host[i] = (i % 4096 < 2048) ? 4096 : 0;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_u, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_v, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_r, sizeof *d_r)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_r, sizeof *h_r)); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemcpyAsync(d_u, host, N * sizeof(int), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload (pageable)

	for (iters = 0; iters < MAX_ITERS; iters++) {
		smooth<<<N / THREADS, THREADS, 0, s>>>(d_u, d_v, N);
		smooth<<<N / THREADS, THREADS, 0, s>>>(d_v, d_u, N);
		CHECK(cudaMemsetAsync(d_r, 0, sizeof *d_r, s));
		residual<<<N / THREADS, THREADS, 0, s>>>(d_u, d_v, N, d_r);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(h_r, d_r, sizeof *h_r, cudaMemcpyDeviceToHost, s));
		CHECK(cudaStreamSynchronize(s)); // SYNCSPY-PROBLEM: host waits for the residual every iteration
		if (*h_r < 1000)
			break;
	}

	CHECK(cudaMemcpyAsync(host, d_u, N * sizeof(int), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read (pageable)
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0;
	for (int i = 0; i < N; i++)
		checksum = checksum * 1000003 + (unsigned)host[i];
	CHECK(cudaFree(d_u)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_v)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_r)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_r)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	free(host);
	corpus_result("c09_residual_check", iters, checksum);
	return 0;
}
