/*
 * examples/corpus/c17_pageable_snapshot.cu: corpus workload (CUDA C). A molecular-dynamics
 * style integrator that records a trajectory: each step integrates the particles, gathers every
 * 32nd position into a device snapshot and copies it with cudaMemcpyAsync into the step's slot
 * of a trajectory buffer, then computes the next step's external drive on the host, meant to
 * overlap with the GPU. The trajectory was allocated with malloc: a device-to-host
 * cudaMemcpyAsync into pageable memory returns only once the copy is done, so the host waits
 * for the whole step before it computes the drive, every step (the GPU idles meanwhile).
 * Planted: the per-step cudaMemcpyAsync D2H into pageable memory (the trajectory wants
 * cudaMallocHost).
 * Clean: setup allocations and upload, the one stream synchronize after the loop, teardown.
 */
#include "corpus.h"

enum { STEPS = 50, N = 1 << 21, STRIDE = 32, SNAP = N / STRIDE, THREADS = 256, SUBSTEPS = 64 };

__global__ void integrate(int *x, int *v, int n, int substeps, int drive)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int xi = x[i], vi = v[i];
	for (int s = 0; s < substeps; s++) {
		vi += -(xi >> 5) + ((i & 7) - 3) + drive;
		xi += vi >> 3;
		xi = min(max(xi, -(1 << 20)), 1 << 20);
		vi = min(max(vi, -(1 << 16)), 1 << 16);
	}
	x[i] = xi;
	v[i] = vi;
}

__global__ void gather(const int *x, int *snap, int m, int stride)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j < m)
		snap[j] = x[(size_t)j * stride];
}

/* The host's share of a step: the next external drive, from a small pseudo-random schedule
 * (about a fraction of a millisecond of CPU work). */
static int next_drive(int step)
{
	uint32_t h = (uint32_t)step * 2246822519u + 374761393u;
	for (int k = 0; k < 200000; k++)
		h = h * 1103515245u + 12345u;
	return (int)(h >> 29) - 3;
}

int main(void)
{
	int *d_x, *d_v, *d_snap;
	int *init = (int *)malloc((size_t)N * sizeof(int));
	int *traj = (int *)malloc((size_t)STEPS * SNAP * sizeof(int));
	cudaStream_t s;
	unsigned long long checksum = 0;
	int drive = 0;

	for (int i = 0; i < N; i++)
		init[i] = (int)((i * 40503u) % 2001) - 1000;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_x, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_v, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_snap, SNAP * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpyAsync(d_x, init, (size_t)N * sizeof(int), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	CHECK(cudaMemsetAsync(d_v, 0, (size_t)N * sizeof(int), s));

	for (int step = 0; step < STEPS; step++) {
		integrate<<<N / THREADS, THREADS, 0, s>>>(d_x, d_v, N, SUBSTEPS, drive);
		gather<<<SNAP / THREADS, THREADS, 0, s>>>(d_x, d_snap, SNAP, STRIDE);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(traj + (size_t)step * SNAP, d_snap, SNAP * sizeof(int), cudaMemcpyDeviceToHost, s)); // SYNCSPY-PROBLEM: D2H into malloc'd memory returns only when the step is done
		drive = next_drive(step);
	}

	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: once, before reading the trajectory
	for (size_t k = 0; k < (size_t)STEPS * SNAP; k++)
		checksum = checksum * 1099511628211ull + (uint32_t)traj[k];
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_v)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_snap)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	free(init);
	free(traj);
	corpus_result("c17_pageable_snapshot", STEPS, checksum);
	return 0;
}
