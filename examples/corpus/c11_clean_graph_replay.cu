/*
 * examples/corpus/c11_clean_graph_replay.cu: corpus workload (CUDA C), CLEAN. A fixed-shape
 * time step of many small kernels is captured once into a CUDA graph and replayed every step
 * with cudaGraphLaunch; setup allocates and uploads, one warm-up replay is synchronized, and
 * the state is read once at the end.
 */
#include "corpus.h"

enum { STEPS = 100, N = 1 << 16, KERNELS = 12, THREADS = 256 };

__global__ void stage(int *x, int n, int k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = (x[i] * (k + 3) + i) % 65521;
}

int main(void)
{
	int *d_x, *h_x;
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_x, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_x, N * sizeof(int))); // SYNCSPY-CLEAN: setup pinned allocation
	for (int i = 0; i < N; i++)
		h_x[i] = i % 977;
	CHECK(cudaMemcpyAsync(d_x, h_x, N * sizeof(int), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload

	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	for (int k = 0; k < KERNELS; k++)
		stage<<<N / THREADS, THREADS, 0, s>>>(d_x, N, k);
	CHECK(cudaStreamEndCapture(s, &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	CHECK(cudaGraphLaunch(exec, s)); /* warm-up replay (uploads the graph) */
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: warm-up, once

	for (int step = 1; step < STEPS; step++)
		CHECK(cudaGraphLaunch(exec, s));

	CHECK(cudaMemcpyAsync(h_x, d_x, N * sizeof(int), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0;
	for (int i = 0; i < N; i++)
		checksum = checksum * 131 + (unsigned)h_x[i];
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c11_clean_graph_replay", STEPS, checksum);
	return 0;
}
