/*
 * examples/corpus/c16_kernel_check_macro.cu: corpus workload (CUDA C). A reaction-diffusion
 * texture generator with the project's own launch-check macro, KERNEL_CHECK(), written during a
 * debugging session: it reads the launch error and then calls cudaDeviceSynchronize so that a
 * faulting kernel is reported at its launch site. It was left on in the step loop, after every
 * launch: the host waits for the device twice per step and the launch queue never fills.
 * Planted: the two KERNEL_CHECK() uses in the step loop (the cudaDeviceSynchronize inside the
 * macro runs at the use's line; the fix is a CHECK_LAUNCH()-style check without the sync).
 * Clean: the KERNEL_CHECK() after the one-time initialization kernel in setup, the setup
 * allocations, the final read of the histogram, the teardown frees.
 */
#include "corpus.h"

enum { STEPS = 40, N = 1 << 22, THREADS = 256, BINS = 64, ROUNDS = 128 };

/* A debugging aid: every kernel's execution error is caught where it was launched, at the
 * price of a device-wide wait. (No marker on these lines: the sync runs at each use's line.) */
#define KERNEL_CHECK()                                                                             \
	do {                                                                                       \
		CHECK(cudaGetLastError());                                                         \
		CHECK(cudaDeviceSynchronize());                                                    \
	} while (0)

__global__ void init_field(uint32_t *f, int n, uint32_t seed)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		f[i] = (uint32_t)i * 2654435761u ^ seed;
}

/* One explicit step of a 1-D reaction-diffusion rule in fixed point: a three-point average
 * plus a nonlinear reaction term iterated ROUNDS times per cell. */
__global__ void react_diffuse(const uint32_t *in, uint32_t *out, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t l = in[i > 0 ? i - 1 : n - 1], c = in[i], r = in[i + 1 < n ? i + 1 : 0];
	uint32_t v = (l >> 2) + (c >> 1) + (r >> 2);
	for (int k = 0; k < ROUNDS; k++)
		v = v * 1664525u + 1013904223u + (uint32_t)step;
	out[i] = v;
}

/* The texture's 64-level histogram, accumulated over all steps. */
__global__ void classify(const uint32_t *f, int n, unsigned *bins)
{
	__shared__ unsigned local[BINS];
	if (threadIdx.x < BINS)
		local[threadIdx.x] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		atomicAdd(&local[f[i] >> 26], 1u);
	__syncthreads();
	if (threadIdx.x < BINS)
		atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

int main(void)
{
	uint32_t *d_a, *d_b;
	unsigned *d_bins, bins[BINS];
	const size_t bytes = (size_t)N * sizeof(uint32_t);

	CHECK(cudaMalloc(&d_a, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_b, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_bins, sizeof bins)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemset(d_bins, 0, sizeof bins)); // SYNCSPY-CLEAN: setup
	init_field<<<N / THREADS, THREADS>>>(d_a, N, 0x9e3779b9u);
	KERNEL_CHECK(); // SYNCSPY-CLEAN: setup check, once

	for (int step = 0; step < STEPS; step++) {
		react_diffuse<<<N / THREADS, THREADS>>>(d_a, d_b, N, step);
		KERNEL_CHECK(); // SYNCSPY-PROBLEM: debug check waits for the device after every launch
		classify<<<256, THREADS>>>(d_b, N, d_bins);
		KERNEL_CHECK(); // SYNCSPY-PROBLEM: debug check waits for the device after every launch
		uint32_t *t = d_a;
		d_a = d_b;
		d_b = t;
	}

	CHECK(cudaMemcpy(bins, d_bins, sizeof bins, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	unsigned long long total = 0, checksum = 0;
	for (int b = 0; b < BINS; b++) {
		total += bins[b];
		checksum = checksum * 1000003 + bins[b];
	}
	corpus_expect("c16_kernel_check_macro", "cells", (long long)total, (long long)STEPS * N);
	CHECK(cudaFree(d_a)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_b)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_bins)); // SYNCSPY-CLEAN: teardown
	corpus_result("c16_kernel_check_macro", STEPS, checksum);
	return 0;
}
