/*
 * examples/corpus/c52_log_helper_devsync.cu: corpus workload (CUDA C). A particle-in-a-box
 * simulation in fixed point: every step a kick-drift kernel moves the particles, a wall kernel
 * reflects them, and a binning kernel counts them per cell on the device. The step loop calls a
 * small logging helper, log_step(), at the default verbosity (LOG_WARN), where it prints
 * nothing; but its author put a cudaDeviceSynchronize at its top "so that log lines line up with
 * the GPU's progress", before the verbosity test. cudaDeviceSynchronize blocks the host until
 * every preceding task on the device has completed (CUDA runtime API reference), so every step
 * waits for the whole step's kernels, for a log line that is never printed.
 * Planted: the cudaDeviceSynchronize in log_step(), every step.
 * Clean: the setup allocations and upload, the final reads, teardown.
 */
#include "corpus.h"

enum { STEPS = 80, NP = 1 << 18, THREADS = 256, CELLS = 64, BOX = 1 << 20 };
enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2 };

static int g_log_level = LOG_WARN;

struct particle {
	int x, v;
};

__host__ __device__ static inline struct particle advance(struct particle p, int step)
{
	int g = ((step & 3) == 0) ? -1 : 0; /* a gravity kick every fourth step */
	p.v += g;
	p.x += p.v;
	if (p.x < 0) {
		p.x = -p.x;
		p.v = -p.v;
	}
	if (p.x >= BOX) {
		p.x = 2 * (BOX - 1) - p.x;
		p.v = -p.v;
	}
	return p;
}

__global__ void kick_drift_walls(struct particle *ps, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		ps[i] = advance(ps[i], step);
}

__global__ void bin_particles(const struct particle *ps, int n, unsigned int *counts)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		atomicAdd(&counts[ps[i].x / (BOX / CELLS)], 1u);
}

/* --- logging --------------------------------------------------------------------------------- */

static void log_step(int level, int step, const char *what)
{
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-PROBLEM: a device-wide wait every step, before the verbosity test that prints nothing
	if (level < g_log_level)
		return;
	fprintf(stderr, "[step %d] %s\n", step, what);
}

/* --- the simulation ------------------------------------------------------------------------ */

static void sim_step(struct particle *d_ps, unsigned int *d_counts, int step)
{
	kick_drift_walls<<<NP / THREADS, THREADS>>>(d_ps, NP, step);
	CHECK_LAUNCH();
	log_step(LOG_DEBUG, step, "drift done");
	bin_particles<<<NP / THREADS, THREADS>>>(d_ps, NP, d_counts);
	CHECK_LAUNCH();
}

static struct particle initial(int i)
{
	struct particle p;
	uint32_t h = (uint32_t)i * 2654435761u;
	p.x = (int)((h ^ (h >> 16)) % (uint32_t)BOX);
	p.v = (int)((h >> 8) % 2001u) - 1000;
	return p;
}

int main(void)
{
	const char *name = "c52_log_helper_devsync";
	struct particle *h_ps = (struct particle *)malloc((size_t)NP * sizeof(struct particle));
	struct particle *d_ps;
	unsigned int *d_counts;
	unsigned int h_counts[CELLS], want_counts[CELLS] = {0};

	for (int i = 0; i < NP; i++)
		h_ps[i] = initial(i);
	CHECK(cudaMalloc(&d_ps, (size_t)NP * sizeof(struct particle))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_counts, sizeof h_counts)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_ps, h_ps, (size_t)NP * sizeof(struct particle), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemset(d_counts, 0, sizeof h_counts)); // SYNCSPY-CLEAN: setup, the counts zeroed once

	for (int step = 0; step < STEPS; step++)
		sim_step(d_ps, d_counts, step);

	CHECK(cudaMemcpy(h_counts, d_counts, sizeof h_counts, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the occupancy counts
	CHECK(cudaMemcpy(h_ps, d_ps, (size_t)NP * sizeof(struct particle), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the particles
	CHECK(cudaFree(d_ps)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_counts)); // SYNCSPY-CLEAN: teardown

	unsigned long long checksum = 0;
	for (int i = 0; i < NP; i++) {
		struct particle p = initial(i);
		for (int step = 0; step < STEPS; step++) {
			p = advance(p, step);
			want_counts[p.x / (BOX / CELLS)]++;
		}
		corpus_expect(name, "particle x", h_ps[i].x, p.x);
		corpus_expect(name, "particle v", h_ps[i].v, p.v);
	}
	for (int c = 0; c < CELLS; c++) {
		corpus_expect(name, "cell count", h_counts[c], want_counts[c]);
		checksum = checksum * 1000003u + h_counts[c];
	}
	free(h_ps);
	corpus_result(name, STEPS, checksum);
	return 0;
}
