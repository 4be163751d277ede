/*
 * examples/corpus/d36_clean_particle_filter_graph_update.c: corpus workload (CUDA driver API),
 * CLEAN. The localization filter of a warehouse robot: a particle filter whose particle count
 * follows the planner's schedule (256K to 1M particles, KLD-style: more while the pose is
 * uncertain), one motion-and-measurement kernel over the live particles and a reduction of their
 * weights into the step's slot. The step is recorded as a graph: every step it is captured on a
 * capture-only stream with the step's particle count, slot and step number, the captured graph
 * is applied to the one executable graph with cuGraphExecUpdate (same topology, new kernel
 * parameters and grid sizes: no re-instantiation, and an update only affects later launches,
 * CUDA programming guide, graph update), launched on the filter stream and destroyed. The
 * executable graph is instantiated and uploaded once at setup. Nothing in the loop waits: one
 * final wait, then the weights and the particles are read once for the self-check.
 * Clean: the setup allocations, the one instantiation and upload, the per-step cuGraphExecUpdate,
 * the final wait and reads, teardown.
 *   d36_clean_particle_filter_graph_update driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, MAX_PARTICLES = 1 << 20, MIN_PARTICLES = 1 << 18, THREADS = 256, ROUNDS = 24, SUM_BLOCKS = 128, CHECKED = 512 };

struct filter {
	CUfunction fill_hash, mix_rounds, sum_into;
	CUstream s, capture;
	CUdeviceptr d_particles, d_weights;
	CUgraphExec exec;
};

/* the planner's schedule: the live particle count of each step, a multiple of the block size */
static int live_particles(int step)
{
	uint32_t h = (uint32_t)(step + 1) * 2654435761u;
	h ^= h >> 16;
	return MIN_PARTICLES + (int)(h % ((MAX_PARTICLES - MIN_PARTICLES) / THREADS)) * THREADS;
}

static uint32_t motion_host(uint32_t v, int step)
{
	v ^= (uint32_t)step * 0x9e3779b9u;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

static uint32_t initial_host(int i) { return (uint32_t)i * 2654435761u; } /* fill_hash with seed 0 */

/* --- the step graph ------------------------------------------------------------------------- */

static CUgraph capture_step(struct filter *f, int step)
{
	CUgraph g;
	int n = live_particles(step), rounds = ROUNDS;
	CUdeviceptr slot = f->d_weights + (size_t)step * sizeof(unsigned long long);
	void *mix_args[] = {&f->d_particles, &n, &step, &rounds};
	void *sum_args[] = {&f->d_particles, &n, &slot};
	DCHECK(cuStreamBeginCapture(f->capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	DCHECK(cuLaunchKernel(f->mix_rounds, n / THREADS, 1, 1, THREADS, 1, 1, 0, f->capture, mix_args, NULL));
	DCHECK(cuLaunchKernel(f->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, f->capture, sum_args, NULL));
	DCHECK(cuStreamEndCapture(f->capture, &g));
	return g;
}

static void run_step(struct filter *f, int step)
{
	CUgraphExecUpdateResultInfo info;
	CUgraph g = capture_step(f, step);
	DCHECK(cuGraphExecUpdate(f->exec, g, &info)); // SYNCSPY-CLEAN: in-place update of the executable graph: no re-instantiation, no wait
	DCHECK(cuGraphLaunch(f->exec, f->s));
	DCHECK(cuGraphDestroy(g));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct filter f;
	static unsigned long long h_weights[STEPS];
	uint32_t *h_particles = (uint32_t *)malloc((size_t)MAX_PARTICLES * sizeof(uint32_t));
	int all = MAX_PARTICLES, seed = 0;

	DCHECK(cuModuleGetFunction(&f.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&f.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&f.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&f.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&f.capture, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&f.d_particles, (size_t)MAX_PARTICLES * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&f.d_weights, sizeof h_weights)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(f.d_weights, 0u, 2 * STEPS, f.s));
	void *fill_args[] = {&f.d_particles, &all, &seed};
	DCHECK(cuLaunchKernel(f.fill_hash, MAX_PARTICLES / THREADS, 1, 1, THREADS, 1, 1, 0, f.s, fill_args, NULL));
	CUgraph g0 = capture_step(&f, 0);
	DCHECK(cuGraphInstantiateWithFlags(&f.exec, g0, 0)); // SYNCSPY-CLEAN: setup, instantiated once
	DCHECK(cuGraphDestroy(g0));
	DCHECK(cuGraphUpload(f.exec, f.s)); // SYNCSPY-CLEAN: setup, uploaded once

	for (int step = 0; step < STEPS; step++)
		run_step(&f, step);

	DCHECK(cuStreamSynchronize(f.s)); // SYNCSPY-CLEAN: the one wait, after the last step
	DCHECK(cuMemcpyDtoH(h_weights, f.d_weights, sizeof h_weights)); // SYNCSPY-CLEAN: final read of the weights
	DCHECK(cuMemcpyDtoH(h_particles, f.d_particles, (size_t)MAX_PARTICLES * sizeof(uint32_t))); // SYNCSPY-CLEAN: final read of the particles, for the self-check

	/* self-check: the first two steps' weights in full, sampled particles through all steps */
	for (int step = 0; step < 2; step++) {
		unsigned long long want = 0;
		for (int i = 0; i < live_particles(step); i++) {
			uint32_t v = initial_host(i);
			for (int t = 0; t <= step; t++)
				if (i < live_particles(t))
					v = motion_host(v, t);
			want += v >> 8;
		}
		if (h_weights[step] != want) {
			fprintf(stderr, "d36: step %d weight = %llu, want %llu\n", step, h_weights[step], want);
			return 1;
		}
	}
	for (int k = 0; k < CHECKED; k++) {
		int i = (int)(((uint32_t)k * 2654435761u) % MAX_PARTICLES);
		uint32_t v = initial_host(i);
		for (int t = 0; t < STEPS; t++)
			if (i < live_particles(t))
				v = motion_host(v, t);
		if (h_particles[i] != v) {
			fprintf(stderr, "d36: particle %d = %u, want %u\n", i, h_particles[i], v);
			return 1;
		}
	}
	unsigned long long checksum = 0;
	for (int step = 0; step < STEPS; step++)
		checksum = checksum * 1000003u + h_weights[step];
	free(h_particles);

	DCHECK(cuGraphExecDestroy(f.exec));
	DCHECK(cuMemFree(f.d_particles)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(f.d_weights)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(f.s));
	DCHECK(cuStreamDestroy(f.capture));
	driver_teardown(module);
	printf("d36_clean_particle_filter_graph_update: steps=%d checksum=%llu result=OK\n", STEPS, checksum);
	return 0;
}
