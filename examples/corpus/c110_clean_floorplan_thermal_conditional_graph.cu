/*
 * examples/corpus/c110_clean_floorplan_thermal_conditional_graph.cu: corpus workload (CUDA C++,
 * CUDA graphs with a conditional WHILE node). The thermal check of a chip floorplan explorer:
 * every step the host lays out one candidate, 16 functional blocks on a 256 x 256 grid with their
 * power levels, in a pinned double buffer, and a stream uploads it. The GPU relaxes the
 * steady-state temperature field (Jacobi sweeps with a heat sink below every cell and at the die's
 * edges, warm-started from the previous candidate's field) until a sweep changes nothing, then
 * reduces the hotspot and the total heat. The stats come back into a pinned ring that the host
 * reads one step behind, to rank the candidates. (Each candidate re-powers one block, so the
 * integer sweeps from the previous fixed point move one way and stop at the next, in 8-112.)
 * The convergence loop runs on the device. The step is one graph, built and instantiated once: an
 * init kernel node, a conditional node of type cudaGraphCondTypeWhile whose body (8 sweeps and a
 * decide kernel, captured with cudaStreamBeginCaptureToGraph) runs "as long as the condition is
 * non-zero", and a stats kernel node. The decide kernel sets the condition with
 * cudaGraphSetConditional from the sweep's largest change and the iteration count. The host does
 * not read a residual to decide whether to sweep again (the blocking readback of c09 and c20): it
 * launches the graph once per candidate and queues the next candidate's upload behind it.
 * Clean: the setup allocations, the graph's instantiation and upload once, the candidate's async
 * upload from the pinned double buffer (a slot reused after a cudaEventSynchronize on its upload
 * two steps back), the stats' async download into a pinned ring read one step behind after a
 * cudaEventSynchronize, the final wait and read of the field, teardown.
 * Temperatures are integers (floor arithmetic, integer atomics), so the number of sweeps and every
 * field are the same on every run. The host checks the stats of two candidates against a CPU solve
 * from the same warm start and the final field's hotspot. Conditional nodes and
 * cudaStreamBeginCaptureToGraph need CUDA 12.4 or later.
 */
#include "corpus.h"

#include <string.h>

enum { STEPS = 40, N = 256, CELLS = N * N, BLOCKS = 16, SPAN = N / 4, UNROLL = 8 };
enum { TOL = 0, MAX_SWEEPS = 4096, THREADS = 256, SLOTS = 2, CHECKED = 2 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;

struct solve_state {
	int delta;     /* the largest change of the body's last sweep */
	int sweeps;    /* sweeps so far in this solve */
};

struct stats {
	unsigned long long hotspot; /* temperature << 32 | cell */
	unsigned long long heat;    /* sum of the temperatures */
	int sweeps;
	int pad;
};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* one sweep's new value of cell c: the four neighbours (0 outside the die) and the power, with
 * the sink below the cell (15/64 instead of 1/4) */
__host__ __device__ static inline int relax_cell(const int *t, const int *power, int c)
{
	int x = c % N, y = c / N;
	int s = (x > 0 ? t[c - 1] : 0) + (x < N - 1 ? t[c + 1] : 0) + (y > 0 ? t[c - N] : 0) +
		(y < N - 1 ? t[c + N] : 0);
	return ((s + power[c]) * 15) >> 6;
}

__global__ void sweep(const int *t, const int *power, int *out, struct solve_state *st, int last)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= CELLS)
		return;
	int v = relax_cell(t, power, c);
	out[c] = v;
	if (last)
		atomicMax(&st->delta, abs(v - t[c]));
}

__global__ void solve_init(struct solve_state *st, struct stats *out)
{
	st->delta = 0;
	st->sweeps = 0;
	out->hotspot = 0;
	out->heat = 0;
}

__global__ void decide(struct solve_state *st, cudaGraphConditionalHandle loop)
{
	st->sweeps += UNROLL;
	unsigned int again = st->delta > TOL && st->sweeps < MAX_SWEEPS;
	st->delta = 0;
	cudaGraphSetConditional(loop, again);
}

__global__ void hotspot(const int *t, const struct solve_state *st, struct stats *out)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c == 0)
		out->sweeps = st->sweeps;
	if (c >= CELLS)
		return;
	atomicMax(&out->hotspot, (unsigned long long)(unsigned int)t[c] << 32 | (unsigned int)c);
	atomicAdd(&out->heat, (unsigned long long)t[c]);
}

/* --- the graph ------------------------------------------------------------------------------ */

static cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t *dep, void *func,
				  int blocks, int threads, void **args)
{
	cudaGraphNodeParams np = {};
	np.type = cudaGraphNodeTypeKernel;
	np.kernel.func = func;
	np.kernel.gridDim = dim3(blocks);
	np.kernel.blockDim = dim3(threads);
	np.kernel.kernelParams = args;
	cudaGraphNode_t node;
	CHECK(cudaGraphAddNode(&node, g, dep, NULL, dep ? 1 : 0, &np));
	return node;
}

/* init -> while (condition) { UNROLL sweeps t[0] -> t[1] -> ... -> t[0]; decide } -> hotspot */
static cudaGraph_t build_step_graph(int *t[2], int *power, struct solve_state *st,
				    struct stats *out, cudaStream_t capture)
{
	cudaGraph_t g;
	cudaGraphConditionalHandle loop;
	CHECK(cudaGraphCreate(&g, 0));
	CHECK(cudaGraphConditionalHandleCreate(&loop, g, 1, cudaGraphCondAssignDefault));
	void *init_args[] = {&st, &out};
	cudaGraphNode_t init = add_kernel(g, NULL, (void *)solve_init, 1, 1, init_args);

	cudaGraphNodeParams cp = {};
	cp.type = cudaGraphNodeTypeConditional;
	cp.conditional.handle = loop;
	cp.conditional.type = cudaGraphCondTypeWhile;
	cp.conditional.size = 1;
	cudaGraphNode_t cond;
	CHECK(cudaGraphAddNode(&cond, g, &init, NULL, 1, &cp));
	cudaGraph_t body = cp.conditional.phGraph_out[0];
	CHECK(cudaStreamBeginCaptureToGraph(capture, body, NULL, NULL, 0,
					    cudaStreamCaptureModeThreadLocal));
	for (int k = 0; k < UNROLL; k++) {
		sweep<<<CELLS / THREADS, THREADS, 0, capture>>>(t[k & 1], power, t[~k & 1], st,
							       k == UNROLL - 1);
		CHECK_LAUNCH();
	}
	decide<<<1, 1, 0, capture>>>(st, loop);
	CHECK_LAUNCH();
	cudaGraph_t captured;
	CHECK(cudaStreamEndCapture(capture, &captured));

	void *stat_args[] = {&t[0], &st, &out};
	add_kernel(g, &cond, (void *)hotspot, CELLS / THREADS, THREADS, stat_args);
	return g;
}

/* --- the host side -------------------------------------------------------------------------- */

/* candidate s: each block's power level (0..15) from the explorer's move, 8 units per level */
static void layout(int s, int *power)
{
	int level[BLOCKS];
	for (int b = 0; b < BLOCKS; b++)
		level[b] = (int)(mix32((uint32_t)b * 31u) % 16u);
	for (int m = 0; m <= s; m++) /* the explorer's moves so far: one block re-powered each */
		level[mix32((uint32_t)m + 7u) % BLOCKS] = (int)(mix32((uint32_t)m * 77u) % 16u);
	for (int y = 0; y < N; y++)
		for (int x = 0; x < N; x++) {
			int b = (y / SPAN) * 4 + x / SPAN;
			int edge = x % SPAN < 4 || x % SPAN >= SPAN - 4 || y % SPAN < 4 ||
				   y % SPAN >= SPAN - 4;
			power[y * N + x] = edge ? 0 : level[b] * 8;
		}
}

/* the CPU solve of one candidate from the same warm start: the graph's loop, sweep by sweep */
static struct stats host_solve(int *t, const int *power)
{
	int *next = (int *)malloc(CELLS * sizeof(int));
	struct stats st = {0, 0, 0, 0};
	int again = 1;
	while (again) {
		int delta = 0;
		for (int k = 0; k < UNROLL; k++) {
			for (int c = 0; c < CELLS; c++) {
				next[c] = relax_cell(t, power, c);
				if (k == UNROLL - 1 && abs(next[c] - t[c]) > delta)
					delta = abs(next[c] - t[c]);
			}
			memcpy(t, next, CELLS * sizeof(int));
		}
		st.sweeps += UNROLL;
		again = delta > TOL && st.sweeps < MAX_SWEEPS;
	}
	for (int c = 0; c < CELLS; c++) {
		unsigned long long key = (unsigned long long)(unsigned int)t[c] << 32;
		key |= (unsigned int)c;
		st.hotspot = key > st.hotspot ? key : st.hotspot;
		st.heat += (unsigned long long)t[c];
	}
	free(next);
	return st;
}

int main(void)
{
	const char *name = "c110_clean_floorplan_thermal_conditional_graph";
	const int checked[CHECKED] = {0, 23};
	cudaStream_t s, capture;
	int *d_t[2], *d_power, *h_power[SLOTS];
	struct solve_state *d_st;
	struct stats *d_out, *h_stats;
	cudaEvent_t uploaded[SLOTS], reported[SLOTS];
	cudaGraphExec_t exec;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_t[0], CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_t[1], CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_power, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_st, sizeof *d_st)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_out, sizeof *d_out)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_stats, SLOTS * sizeof *h_stats)); // SYNCSPY-CLEAN: setup, pinned
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMallocHost(&h_power[k], CELLS * 4)); // SYNCSPY-CLEAN: setup, pinned
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&reported[k], cudaEventDisableTiming));
	}
	CHECK(cudaMemsetAsync(d_t[0], 0, CELLS * sizeof(int), s)); /* the die at ambient */

	cudaGraph_t graph = build_step_graph(d_t, d_power, d_st, d_out, capture);
	CHECK(cudaGraphInstantiate(&exec, graph, 0)); // SYNCSPY-CLEAN: setup, instantiated once
	CHECK(cudaGraphUpload(exec, s)); // SYNCSPY-CLEAN: setup, once, to the launch stream

	unsigned long long checksum = 0;
	long long total_sweeps = 0;
	struct stats kept[CHECKED];
	int *warm = (int *)malloc(CELLS * sizeof(int)), *hp = (int *)malloc(CELLS * sizeof(int));
	/* candidate m's stats, one step behind the GPU */
	auto finish = [&](int m) {
		CHECK(cudaEventSynchronize(reported[m % SLOTS])); // SYNCSPY-CLEAN: one step behind
		const struct stats *r = &h_stats[m % SLOTS];
		checksum = (checksum * 1000003u + r->hotspot) * 31u + r->heat;
		total_sweeps += r->sweeps;
		for (int c = 0; c < CHECKED; c++)
			if (m == checked[c])
				kept[c] = *r;
	};
	for (int step = 0; step < STEPS; step++) {
		int k = step % SLOTS, *pw = h_power[k];
		struct stats *slot = &h_stats[k];
		if (step >= SLOTS)
			CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: 2 steps back
		layout(step, pw);
		CHECK(cudaMemcpyAsync(d_power, pw, CELLS * 4, H2D, s)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(uploaded[k], s));
		CHECK(cudaGraphLaunch(exec, s));
		CHECK(cudaMemcpyAsync(slot, d_out, sizeof *slot, D2H, s)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(reported[k], s));
		if (step >= 1)
			finish(step - 1);
	}
	finish(STEPS - 1);

	/* the CPU solves candidates 0 .. checked[1] from the same start; two are compared */
	memset(warm, 0, CELLS * sizeof(int));
	for (int m = 0, c = 0; m <= checked[CHECKED - 1]; m++) {
		layout(m, hp);
		struct stats ref = host_solve(warm, hp);
		if (m != checked[c])
			continue;
		corpus_expect(name, "sweeps", kept[c].sweeps, ref.sweeps);
		corpus_expect(name, "hotspot", (long long)kept[c].hotspot, (long long)ref.hotspot);
		corpus_expect(name, "heat", (long long)kept[c].heat, (long long)ref.heat);
		c++;
	}
	int *field = (int *)malloc(CELLS * sizeof(int));
	CHECK(cudaMemcpy(field, d_t[0], CELLS * sizeof(int), D2H)); // SYNCSPY-CLEAN: final read
	unsigned long long last = h_stats[(STEPS - 1) % SLOTS].hotspot;
	corpus_expect(name, "final hotspot", field[last & 0xffffffffu], (long long)(last >> 32));
	checksum = checksum * 31u + (unsigned long long)total_sweeps;

	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaFreeHost(h_power[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(reported[k]));
	}
	CHECK(cudaFreeHost(h_stats)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_t[0])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_t[1])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_power)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_st)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaStreamDestroy(capture));
	free(warm);
	free(hp);
	free(field);
	corpus_result(name, STEPS, checksum);
	return 0;
}
