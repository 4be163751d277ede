/*
 * examples/corpus/c20_label_propagation_flag.cu: corpus workload (CUDA C). Connected components
 * of a graph in CSR form by min-label propagation, written as graph codes often are: every
 * iteration the host resets a device "changed" flag with a blocking cudaMemcpy, launches one
 * propagation sweep, and reads the flag back with a blocking cudaMemcpy to decide whether to go
 * on. The graph is 65536 chains of 64 nodes, so the loop runs 64 sweeps.
 * Planted, two of different cost: the per-iteration cudaMemcpy D2H of the flag (the host waits
 * for every sweep: the expensive one), and the per-iteration cudaMemcpy H2D that resets it (a
 * blocking round trip while the GPU idles; cudaMemsetAsync would queue it: the cheap one).
 * Clean: setup allocations and the CSR upload, the final read of the labels, teardown.
 */
#include "corpus.h"

enum { N = 1 << 22, CHAIN = 64, MAX_ITERS = 100, THREADS = 256 };

__global__ void init_labels(int *label, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		label[i] = i;
}

__global__ void propagate(const int *row, const int *col, const int *in, int *out, int n, int *changed)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int m = in[i];
	for (int e = row[i]; e < row[i + 1]; e++)
		m = min(m, in[col[e]]);
	out[i] = m;
	if (m < in[i])
		*changed = 1;
}

int main(void)
{
	int *row = (int *)malloc((size_t)(N + 1) * sizeof(int));
	int *col = (int *)malloc((size_t)2 * N * sizeof(int));
	int *labels = (int *)malloc((size_t)N * sizeof(int));
	int *d_row, *d_col, *d_a, *d_b, *d_changed;
	int edges = 0, iters = 0, changed = 1;

	/* chains of CHAIN nodes: i - 1 and i + 1 inside the chain */
	for (int i = 0; i < N; i++) {
		row[i] = edges;
		if (i % CHAIN != 0)
			col[edges++] = i - 1;
		if (i % CHAIN != CHAIN - 1)
			col[edges++] = i + 1;
	}
	row[N] = edges;

	CHECK(cudaMalloc(&d_row, (size_t)(N + 1) * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_col, (size_t)edges * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_a, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_b, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_changed, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_row, row, (size_t)(N + 1) * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the graph
	CHECK(cudaMemcpy(d_col, col, (size_t)edges * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the graph
	init_labels<<<N / THREADS, THREADS>>>(d_a, N);
	CHECK_LAUNCH();

	while (changed && iters < MAX_ITERS) {
		changed = 0;
		CHECK(cudaMemcpy(d_changed, &changed, sizeof changed, cudaMemcpyHostToDevice)); // SYNCSPY-PROBLEM: blocking reset of the flag every iteration
		propagate<<<N / THREADS, THREADS>>>(d_row, d_col, d_a, d_b, N, d_changed);
		CHECK_LAUNCH();
		CHECK(cudaMemcpy(&changed, d_changed, sizeof changed, cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: host waits for every sweep to read the flag
		int *t = d_a;
		d_a = d_b;
		d_b = t;
		iters++;
	}

	CHECK(cudaMemcpy(labels, d_a, (size_t)N * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0, components = 0;
	for (int i = 0; i < N; i++) {
		components += labels[i] == i;
		checksum = checksum * 1000003 + (unsigned)labels[i];
	}
	corpus_expect("c20_label_propagation_flag", "components", (long long)components, N / CHAIN);
	corpus_expect("c20_label_propagation_flag", "iterations", iters, CHAIN);
	CHECK(cudaFree(d_row)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_col)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_a)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_b)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_changed)); // SYNCSPY-CLEAN: teardown
	free(row);
	free(col);
	free(labels);
	corpus_result("c20_label_propagation_flag", iters, checksum);
	return 0;
}
