/*
 * examples/corpus/c37_graph_instantiate_per_step.cu: corpus workload (CUDA C). A multigrid-
 * like smoother whose V-cycle is 48 small kernels (red-black sweeps down and up 12 levels); to cut launch overhead the author captures
 * the cycle into a CUDA graph, but because the relaxation weight changes every step (it is a
 * kernel argument) the program captures, instantiates, launches and destroys a new graph every
 * step. cudaGraphInstantiate is the expensive part of a graph's life (CUDA programming guide,
 * "CUDA Graphs": instantiation does the setup and validation "once", so that launches are
 * cheap; an executable graph is meant to be launched many times): building an executable
 * graph per step costs more host time than the 48 launches it replaces, and allocates and
 * frees the executable's resources every step. The fix: instantiate once and update the
 * changed kernel parameters with cudaGraphExecKernelNodeSetParams / cudaGraphExecUpdate, or
 * read the weight from device memory so the graph never changes.
 * Planted: the per-step cudaGraphInstantiate and cudaGraphExecDestroy.
 * Clean: setup allocations, the final read, teardown.
 */
#include "corpus.h"

enum { STEPS = 60, N = 1 << 16, LEVELS = 12, THREADS = 256 };

/* red-black integer relaxation on level `lvl` (a stride-2^lvl view of the ring, m points,
 * m even): the points of one colour, each from its two neighbours of the other colour */
__global__ void relax(int *u, int n, int lvl, int w, int color)
{
	int stride = 1 << lvl, m = n >> lvl;
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= m / 2)
		return;
	int i = 2 * k + color;
	int c = u[i * stride], l = u[((i + m - 1) % m) * stride], r = u[((i + 1) % m) * stride];
	u[i * stride] = c + ((w * (l + r - 2 * c)) >> 6);
}

__global__ void checksum(const int *u, int n, unsigned long long *acc)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		atomicAdd(acc, (unsigned long long)(u[i] & 0xffff) * (unsigned)(i % 97 + 1));
}

__global__ void seed(int *u, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		u[i] = (int)(((unsigned)i * 2654435761u) >> 12);
}

int main(void)
{
	int *d_u;
	unsigned long long *d_acc, h_acc = 0;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_u, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_acc, sizeof *d_acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_acc, 0, sizeof *d_acc, s));
	seed<<<N / THREADS, THREADS, 0, s>>>(d_u, N);
	CHECK_LAUNCH();

	for (int step = 0; step < STEPS; step++) {
		int w = 8 + step % 9;
		cudaGraph_t graph;
		cudaGraphExec_t exec;
		CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
		for (int lvl = 0; lvl < LEVELS; lvl++) /* down the V */
			for (int color = 0; color < 2; color++)
				relax<<<((N >> lvl) / 2 + THREADS - 1) / THREADS, THREADS, 0, s>>>(d_u, N, lvl, w, color);
		for (int lvl = LEVELS - 1; lvl >= 0; lvl--) /* and back up */
			for (int color = 0; color < 2; color++)
				relax<<<((N >> lvl) / 2 + THREADS - 1) / THREADS, THREADS, 0, s>>>(d_u, N, lvl, w, color);
		CHECK(cudaStreamEndCapture(s, &graph));
		CHECK_LAUNCH();
		CHECK(cudaGraphInstantiate(&exec, graph, 0)); // SYNCSPY-PROBLEM: a new executable graph every step (instantiate once, update its parameters)
		CHECK(cudaGraphLaunch(exec, s));
		CHECK(cudaGraphExecDestroy(exec)); // SYNCSPY-PROBLEM: the executable graph destroyed every step
		CHECK(cudaGraphDestroy(graph));
	}
	checksum<<<N / THREADS, THREADS, 0, s>>>(d_u, N, d_acc);
	CHECK_LAUNCH();

	CHECK(cudaMemcpyAsync(&h_acc, d_acc, sizeof h_acc, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaFree(d_u)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c37_graph_instantiate_per_step", STEPS, h_acc);
	return 0;
}
