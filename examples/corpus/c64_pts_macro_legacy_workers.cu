/*
 * examples/corpus/c64_pts_macro_legacy_workers.cu: corpus workload (CUDA C, pthreads). A
 * ranking server with four worker threads, each serving its own queue of requests: a worker
 * scores the request's candidates on the GPU, copies the top score into its pinned reply slot
 * and waits for it before replying. The workers use stream 0 throughout, and the file defines
 * CUDA_API_PER_THREAD_DEFAULT_STREAM at its top, so the author believes each thread has its own
 * per-thread default stream. The CUDA programming guide (default stream) says the macro must be
 * defined before the CUDA headers are included and cannot be used when the code is compiled by
 * nvcc, which includes cuda_runtime.h implicitly at the top of the translation unit: here it
 * does nothing, and stream 0 is the legacy default stream, one stream shared by every thread of
 * the process. The four workers' kernels and copies serialize on it, and each worker's
 * cudaStreamSynchronize(0) waits for every other worker's queued requests too. Passing
 * cudaStreamPerThread (or a stream per worker), or building with --default-stream per-thread,
 * gives each worker its own stream.
 * Planted: the worker's scoring launch, its reply copy and its cudaStreamSynchronize, all on the
 * legacy default stream (one problem, three lines to change), every request.
 * Clean: the setup allocations, teardown.
 */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1 /* meant to give each worker its own stream 0 */
#include "corpus.h"

#include <pthread.h>

enum { WORKERS = 4, REQUESTS = 40, CANDIDATES = 1 << 18, THREADS = 256, BLOCKS = 256 };

__host__ __device__ static inline uint32_t score(int worker, int req, int c)
{
	uint32_t h = (uint32_t)c * 2654435761u ^ (uint32_t)(worker * 1000 + req) * 0x9e3779b9u;
	for (int layer = 0; layer < 24; layer++)
		h = (h ^ (h >> 15)) * 2246822519u + 374761393u;
	return h >> 8;
}

__global__ void score_candidates(int worker, int req, unsigned int *top)
{
	__shared__ unsigned int sh[THREADS];
	unsigned int best = 0;
	for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < CANDIDATES; c += gridDim.x * blockDim.x) {
		unsigned int v = score(worker, req, c);
		best = v > best ? v : best;
	}
	sh[threadIdx.x] = best;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w && sh[threadIdx.x + w] > sh[threadIdx.x])
			sh[threadIdx.x] = sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicMax(top, sh[0]);
}

struct worker {
	int id;
	unsigned int *d_top;   /* one slot per request */
	unsigned int *h_reply; /* pinned, one slot per request */
	unsigned long long served;
};

/* --- a worker ----------------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	w->served = 0;
	for (int req = 0; req < REQUESTS; req++) {
		score_candidates<<<BLOCKS, THREADS, 0, 0>>>(w->id, req, w->d_top + req); // SYNCSPY-PROBLEM: stream 0 is the legacy default stream (the macro came too late): the workers serialize
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(&w->h_reply[req], w->d_top + req, sizeof(unsigned int), cudaMemcpyDeviceToHost, 0)); // SYNCSPY-PROBLEM: the reply copy on the shared legacy stream
		CHECK(cudaStreamSynchronize(0)); // SYNCSPY-PROBLEM: waits for every worker's queued work on the legacy stream, not this request's
		w->served = w->served * 1000003u + w->h_reply[req];
	}
	return NULL;
}

int main(void)
{
	const char *name = "c64_pts_macro_legacy_workers";
	struct worker ws[WORKERS];
	pthread_t th[WORKERS];

	for (int k = 0; k < WORKERS; k++) {
		ws[k].id = k;
		CHECK(cudaMalloc(&ws[k].d_top, REQUESTS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&ws[k].h_reply, REQUESTS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup pinned allocation
		CHECK(cudaMemset(ws[k].d_top, 0, REQUESTS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup, before any worker runs
	}
	for (int k = 0; k < WORKERS; k++)
		if (pthread_create(&th[k], NULL, worker_main, &ws[k]) != 0) {
			fprintf(stderr, "%s: pthread_create failed\n", name);
			return 1;
		}
	for (int k = 0; k < WORKERS; k++)
		pthread_join(th[k], NULL);

	unsigned long long checksum = 0;
	for (int k = 0; k < WORKERS; k++) {
		for (int req = 0; req < REQUESTS; req += 13) {
			unsigned int want = 0;
			for (int c = 0; c < CANDIDATES; c++) {
				unsigned int v = score(k, req, c);
				want = v > want ? v : want;
			}
			corpus_expect(name, "top score", ws[k].h_reply[req], want);
		}
		checksum = checksum * 1000003u + ws[k].served;
	}

	for (int k = 0; k < WORKERS; k++) {
		CHECK(cudaFree(ws[k].d_top)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(ws[k].h_reply)); // SYNCSPY-CLEAN: teardown
	}
	corpus_result(name, WORKERS * REQUESTS, checksum);
	return 0;
}
