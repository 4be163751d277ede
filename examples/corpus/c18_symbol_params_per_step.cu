/*
 * examples/corpus/c18_symbol_params_per_step.cu: corpus workload (CUDA C). A time-dependent
 * advection-diffusion solver in fixed point, written the textbook way: a 9-tap stencil table and
 * the per-step parameters (a moving source, its amplitude, the advection shift) live in
 * __constant__ memory, and the host fills a parameter struct on its stack and uploads it with
 * cudaMemcpyToSymbol at the top of every step. That is a synchronous copy from pageable memory
 * on the legacy default stream: it first waits for the previous step's four stencil sweeps, so
 * the host can never queue ahead and the GPU idles at every step boundary.
 * Planted: the per-step cudaMemcpyToSymbol of the parameter struct (it could be a kernel
 * argument, or all steps' parameters uploaded once).
 * Clean: the one cudaMemcpyToSymbol of the stencil table in setup, setup allocations and
 * upload, the final read.
 */
#include "corpus.h"

enum { STEPS = 60, N = 1 << 22, THREADS = 256, TAPS = 9, SWEEPS = 4 };

struct step_params {
	int source;    /* cell index of the moving source */
	int amplitude; /* added at the source, per sweep */
	int shift;     /* advection: the stencil's centre offset */
	int step;
};

__constant__ int c_taps[TAPS];
__constant__ struct step_params c_step;

__global__ void sweep(const int *in, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int acc = 0;
	for (int t = 0; t < TAPS; t++) {
		int j = i + t - TAPS / 2 + c_step.shift;
		j = j < 0 ? j + n : (j >= n ? j - n : j);
		acc += c_taps[t] * in[j];
	}
	acc >>= 6; /* the taps sum to 64 */
	if (i == c_step.source)
		acc += c_step.amplitude;
	out[i] = acc;
}

int main(void)
{
	static const int taps[TAPS] = {1, 2, 5, 10, 28, 10, 5, 2, 1};
	int *d_u, *d_w;
	int *host = (int *)malloc((size_t)N * sizeof(int));
	unsigned long long checksum = 0;

	for (int i = 0; i < N; i++)
		host[i] = (i % 8192 < 512) ? 4096 : 0;
	CHECK(cudaMemcpyToSymbol(c_taps, taps, sizeof taps)); // SYNCSPY-CLEAN: setup, the stencil table once
	CHECK(cudaMalloc(&d_u, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_w, (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_u, host, (size_t)N * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		struct step_params p;
		p.source = (int)(((unsigned)step * 69069u) % N);
		p.amplitude = 1000 + 17 * step;
		p.shift = (step / 10) % 3 - 1;
		p.step = step;
		CHECK(cudaMemcpyToSymbol(c_step, &p, sizeof p)); // SYNCSPY-PROBLEM: synchronous upload from the stack waits for the previous step
		for (int k = 0; k < SWEEPS / 2; k++) {
			sweep<<<N / THREADS, THREADS>>>(d_u, d_w, N);
			sweep<<<N / THREADS, THREADS>>>(d_w, d_u, N);
		}
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpy(host, d_u, (size_t)N * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	for (int i = 0; i < N; i++)
		checksum = checksum * 1000003 + (unsigned)host[i];
	CHECK(cudaFree(d_u)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_w)); // SYNCSPY-CLEAN: teardown
	free(host);
	corpus_result("c18_symbol_params_per_step", STEPS, checksum);
	return 0;
}
