/*
 * examples/corpus/c43_clean_graph_node_params.cu: corpus workload (CUDA C), CLEAN. A wave-tank
 * driver: each step a moving paddle injects energy into a ring of cells at a new position, two
 * diffusion passes spread it and a reduction adds the tank's energy to a running total. The
 * four kernels form a CUDA graph built once with the explicit graph API, instantiated once and
 * uploaded once in setup. The paddle's position and amplitude change every step: instead of
 * re-capturing or re-instantiating, the step updates the inject node of the instantiated graph
 * in place with cudaGraphExecKernelNodeSetParams (CUDA runtime docs: the update affects only
 * later launches; launches already enqueued are unaffected, so no wait is needed) and replays
 * it with cudaGraphLaunch. The host never waits until the one final read.
 */
#include "corpus.h"

enum { STEPS = 60, N = 1 << 16, THREADS = 256, WINDOW = 256 };

__global__ void inject_source(uint32_t *field, int n, int pos, uint32_t amp)
{
	int k = threadIdx.x;
	field[(pos + k) % n] += amp >> (k / 32);
}

__global__ void diffuse(uint32_t *dst, const uint32_t *src, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = (src[(i + n - 1) % n] + 2u * src[i] + src[(i + 1) % n]) >> 2;
}

__global__ void field_energy(const uint32_t *field, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += field[i];
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

/* --- the step graph ---------------------------------------------------------------------- */

struct tank_graph {
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	cudaGraphNode_t inject, spread_ab, spread_ba, energy;
	/* the inject node's arguments: its kernelParams point here */
	uint32_t *field;
	int n, pos;
	uint32_t amp;
	void *inject_args[4];
	cudaKernelNodeParams inject_params;
};

static cudaKernelNodeParams kernel_node(void *func, int blocks, int threads, void **args)
{
	cudaKernelNodeParams p = {};
	p.func = func;
	p.gridDim = dim3(blocks);
	p.blockDim = dim3(threads);
	p.sharedMemBytes = 0;
	p.kernelParams = args;
	p.extra = NULL;
	return p;
}

static void tank_graph_build(struct tank_graph *g, uint32_t *d_a, uint32_t *d_b, unsigned long long *d_acc, cudaStream_t s)
{
	int n = N;
	g->field = d_a;
	g->n = N;
	g->pos = 0;
	g->amp = 0;
	g->inject_args[0] = &g->field;
	g->inject_args[1] = &g->n;
	g->inject_args[2] = &g->pos;
	g->inject_args[3] = &g->amp;
	g->inject_params = kernel_node((void *)inject_source, 1, WINDOW, g->inject_args);
	void *ab_args[] = {&d_b, &d_a, &n};
	void *ba_args[] = {&d_a, &d_b, &n};
	void *energy_args[] = {&d_a, &n, &d_acc};
	cudaKernelNodeParams ab = kernel_node((void *)diffuse, N / THREADS, THREADS, ab_args);
	cudaKernelNodeParams ba = kernel_node((void *)diffuse, N / THREADS, THREADS, ba_args);
	cudaKernelNodeParams en = kernel_node((void *)field_energy, 64, THREADS, energy_args);

	CHECK(cudaGraphCreate(&g->graph, 0));
	CHECK(cudaGraphAddKernelNode(&g->inject, g->graph, NULL, 0, &g->inject_params));
	CHECK(cudaGraphAddKernelNode(&g->spread_ab, g->graph, &g->inject, 1, &ab));
	CHECK(cudaGraphAddKernelNode(&g->spread_ba, g->graph, &g->spread_ab, 1, &ba));
	CHECK(cudaGraphAddKernelNode(&g->energy, g->graph, &g->spread_ba, 1, &en));
	CHECK(cudaGraphInstantiate(&g->exec, g->graph, 0)); // SYNCSPY-CLEAN: setup, instantiated once
	CHECK(cudaGraphUpload(g->exec, s)); // SYNCSPY-CLEAN: setup, the graph's device resources uploaded once
}

/* move the paddle: patch the inject node of the instantiated graph */
static void tank_graph_set_paddle(struct tank_graph *g, int pos, uint32_t amp)
{
	g->pos = pos;
	g->amp = amp;
	CHECK(cudaGraphExecKernelNodeSetParams(g->exec, g->inject, &g->inject_params)); // SYNCSPY-CLEAN: in-place update of the instantiated graph: no re-instantiation, no wait
}

static void tank_graph_destroy(struct tank_graph *g)
{
	CHECK(cudaGraphExecDestroy(g->exec));
	CHECK(cudaGraphDestroy(g->graph));
}

static int paddle_pos(int step)
{
	return (step * 7919) % N;
}

static uint32_t paddle_amp(int step)
{
	return (1u << 20) - (uint32_t)step * 1000u;
}

/* the same steps on the host */
static unsigned long long reference(uint32_t *field)
{
	uint32_t *tmp = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long acc = 0;
	for (int step = 0; step < STEPS; step++) {
		int pos = paddle_pos(step);
		uint32_t amp = paddle_amp(step);
		for (int k = 0; k < WINDOW; k++)
			field[(pos + k) % N] += amp >> (k / 32);
		for (int i = 0; i < N; i++)
			tmp[i] = (field[(i + N - 1) % N] + 2u * field[i] + field[(i + 1) % N]) >> 2;
		for (int i = 0; i < N; i++)
			field[i] = (tmp[(i + N - 1) % N] + 2u * tmp[i] + tmp[(i + 1) % N]) >> 2;
		for (int i = 0; i < N; i++)
			acc += field[i];
	}
	free(tmp);
	return acc;
}

int main(void)
{
	const char *name = "c43_clean_graph_node_params";
	uint32_t *d_a, *d_b, *h_field, *ref;
	unsigned long long *d_acc, *h_acc;
	struct tank_graph g;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_a, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_b, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_acc, sizeof *d_acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_field, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMallocHost(&h_acc, sizeof *h_acc)); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemsetAsync(d_a, 0, (size_t)N * sizeof(uint32_t), s));
	CHECK(cudaMemsetAsync(d_acc, 0, sizeof *d_acc, s));
	tank_graph_build(&g, d_a, d_b, d_acc, s);

	for (int step = 0; step < STEPS; step++) {
		tank_graph_set_paddle(&g, paddle_pos(step), paddle_amp(step));
		CHECK(cudaGraphLaunch(g.exec, s));
	}

	CHECK(cudaMemcpyAsync(h_field, d_a, (size_t)N * sizeof(uint32_t), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpyAsync(h_acc, d_acc, sizeof *h_acc, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read, the one wait
	unsigned long long energy = *h_acc;

	ref = (uint32_t *)calloc(N, sizeof(uint32_t));
	corpus_expect(name, "energy", (long long)energy, (long long)reference(ref));
	unsigned long long checksum = energy;
	for (int i = 0; i < N; i++) {
		if (h_field[i] != ref[i])
			corpus_expect(name, "cell", h_field[i], ref[i]);
		checksum = checksum * 1000003u + h_field[i];
	}
	tank_graph_destroy(&g);
	CHECK(cudaFree(d_a)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_b)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_field)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	free(ref);
	corpus_result(name, STEPS, checksum);
	return 0;
}
