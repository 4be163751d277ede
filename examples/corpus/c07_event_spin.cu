/*
 * examples/corpus/c07_event_spin.cu: corpus workload (CUDA C). A particle update loop that, to
 * "stay responsive", does not block in cudaStreamSynchronize but records an event after each
 * step and spins on cudaEventQuery until the step is done, doing host bookkeeping in between.
 * It is a sync all the same: the host waits for each step, and the GPU idles while it spins
 * down and queues the next one.
 * Planted: the cudaEventQuery polling loop every step.
 * Clean: setup allocations and upload, the final read.
 */
#include "corpus.h"

enum { STEPS = 50, PARTICLES = 1 << 20, THREADS = 256 };

struct particle {
	int x, v;
};

__global__ void advance(struct particle *p, int n, int substeps)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	struct particle q = p[i];
	for (int s = 0; s < substeps; s++) {
		q.v += (q.x < 0) ? 3 : -3;
		q.x += q.v;
	}
	p[i] = q;
}

int main(void)
{
	struct particle *host = (struct particle *)malloc(PARTICLES * sizeof(struct particle));
	struct particle *d_p;
	cudaStream_t s;
	cudaEvent_t done;
	unsigned long long spins = 0, checksum = 0;

	for (int i = 0; i < PARTICLES; i++) {
		host[i].x = (i % 2001) - 1000;
		host[i].v = 0;
	}
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
	CHECK(cudaMalloc(&d_p, PARTICLES * sizeof(struct particle))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_p, host, PARTICLES * sizeof(struct particle), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		advance<<<PARTICLES / THREADS, THREADS, 0, s>>>(d_p, PARTICLES, 64);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(done, s));
		cudaError_t st;
		while ((st = cudaEventQuery(done)) == cudaErrorNotReady) // SYNCSPY-PROBLEM: spinning on the step's event
			spins++;
		CHECK(st);
	}

	CHECK(cudaMemcpy(host, d_p, PARTICLES * sizeof(struct particle), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	for (int i = 0; i < PARTICLES; i++)
		checksum = checksum * 1099511628211ull + (unsigned)(host[i].x * 31 + host[i].v);
	CHECK(cudaFree(d_p)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaEventDestroy(done));
	CHECK(cudaStreamDestroy(s));
	free(host);
	corpus_result("c07_event_spin", STEPS, checksum);
	return spins == (unsigned long long)-1;
}
