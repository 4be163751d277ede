/*
 * examples/corpus/d25_graph_rebuild_per_step.c: corpus workload (CUDA driver API). A solver
 * ported to CUDA graphs without their point: its step_graph_run() captures the step's two
 * kernels (a mixing update and a reduction into the step's slot) from the stream with
 * cuStreamBeginCapture/cuStreamEndCapture, because the step number and the slot are kernel
 * arguments that change every step, then instantiates the graph with cuGraphInstantiate,
 * launches it once and destroys the executable graph, every step. Instantiation builds the
 * executable graph and allocates its resources on the device (driver API reference:
 * cuGraphInstantiate "creates an executable graph ... validates and performs initialization"),
 * far more work than the two launches it replaces; a graph instantiated once and patched with
 * cuGraphExecKernelNodeSetParams (or cuGraphExecUpdate) before each cuGraphLaunch would do.
 * Planted: the cuGraphInstantiate and the cuGraphExecDestroy in step_graph_run(), every step.
 * Clean: the setup allocations and upload, the final sync and reads, teardown.
 *   d25_graph_rebuild_per_step driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, N = 1 << 18, THREADS = 256, SUM_BLOCKS = 64 };

struct stepper {
	CUfunction mix, sum_into;
	CUstream s;
	CUdeviceptr x, sums;
};

static uint32_t mix_host(uint32_t x, int step)
{
	uint32_t v = x + (uint32_t)step;
	for (int r = 0; r < 32; r++)
		v = v * 1664525u + 1013904223u;
	return v;
}

/* --- one step as a graph --------------------------------------------------------------------- */

static void step_graph_run(struct stepper *st, int step)
{
	CUgraph graph;
	CUgraphExec exec;
	int n = N;
	CUdeviceptr slot = st->sums + (size_t)step * sizeof(unsigned long long);
	void *mix_args[] = {&st->x, &n, &step};
	void *sum_args[] = {&st->x, &n, &slot};

	DCHECK(cuStreamBeginCapture(st->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	DCHECK(cuLaunchKernel(st->mix, N / THREADS, 1, 1, THREADS, 1, 1, 0, st->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(st->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, st->s, sum_args, NULL));
	DCHECK(cuStreamEndCapture(st->s, &graph));
	DCHECK(cuGraphInstantiateWithFlags(&exec, graph, 0)); // SYNCSPY-PROBLEM: a new executable graph every step, only because two arguments change
	DCHECK(cuGraphLaunch(exec, st->s));
	DCHECK(cuGraphExecDestroy(exec)); // SYNCSPY-PROBLEM: and destroyed every step
	DCHECK(cuGraphDestroy(graph));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct stepper st;
	uint32_t *h_x = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long h_sums[STEPS];

	DCHECK(cuModuleGetFunction(&st.mix, module, "mix"));
	DCHECK(cuModuleGetFunction(&st.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&st.s, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < N; i++)
		h_x[i] = (uint32_t)i * 40503u + 7u;
	DCHECK(cuMemAlloc(&st.x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&st.sums, sizeof h_sums)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(st.x, h_x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup upload
	DCHECK(cuMemsetD32Async(st.sums, 0u, 2 * STEPS, st.s));

	for (int step = 0; step < STEPS; step++)
		step_graph_run(&st, step);

	DCHECK(cuStreamSynchronize(st.s)); // SYNCSPY-CLEAN: final sync
	DCHECK(cuMemcpyDtoH(h_sums, st.sums, sizeof h_sums)); // SYNCSPY-CLEAN: final read of the per-step sums
	DCHECK(cuMemcpyDtoH(h_x, st.x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: final read of the state

	uint32_t *ref = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long checksum = 0;
	for (int i = 0; i < N; i++)
		ref[i] = (uint32_t)i * 40503u + 7u;
	for (int step = 0; step < STEPS; step++) {
		unsigned long long want = 0;
		for (int i = 0; i < N; i++) {
			ref[i] = mix_host(ref[i], step);
			want += ref[i] >> 8;
		}
		if (h_sums[step] != want) {
			fprintf(stderr, "d25: step %d sum = %llu, want %llu\n", step, h_sums[step], want);
			return 1;
		}
		checksum = checksum * 1000003u + want;
	}
	for (int i = 0; i < N; i++)
		if (h_x[i] != ref[i]) {
			fprintf(stderr, "d25: x[%d] = %u, want %u\n", i, h_x[i], ref[i]);
			return 1;
		}

	DCHECK(cuMemFree(st.x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(st.sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(st.s));
	driver_teardown(module);
	free(h_x);
	free(ref);
	printf("d25_graph_rebuild_per_step: steps=%d checksum=%llu result=OK\n", STEPS, checksum);
	return 0;
}
