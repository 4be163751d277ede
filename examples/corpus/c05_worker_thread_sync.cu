/*
 * examples/corpus/c05_worker_thread_sync.cu: corpus workload (CUDA C, pthreads). A service
 * that runs its GPU work in a worker thread: the main thread sets up the device buffers, starts
 * the worker and joins it. The worker scores one request batch per step and waits for each
 * batch's best score (cudaMemcpyAsync to pinned memory, then cudaStreamSynchronize) before it
 * takes the next one.
 * Planted: the worker's cudaStreamSynchronize every step (a sync from a non-main thread).
 * Clean: setup allocations (main thread), teardown.
 */
#include "corpus.h"

#include <pthread.h>

enum { STEPS = 60, ITEMS = 1 << 18, THREADS = 256 };

__global__ void score(const int *items, int n, int request, int *best)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		atomicMax(best, (items[i] * (request + 3)) % 65521);
}

struct worker {
	int *d_items, *d_best, *h_best;
	cudaStream_t stream;
	unsigned long long checksum;
};

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	for (int step = 0; step < STEPS; step++) {
		CHECK(cudaMemsetAsync(w->d_best, 0, sizeof(int), w->stream));
		score<<<ITEMS / THREADS, THREADS, 0, w->stream>>>(w->d_items, ITEMS, step, w->d_best);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(w->h_best, w->d_best, sizeof(int), cudaMemcpyDeviceToHost, w->stream));
		CHECK(cudaStreamSynchronize(w->stream)); // SYNCSPY-PROBLEM: worker thread waits for every batch
		w->checksum = w->checksum * 131 + (unsigned)*w->h_best;
	}
	return NULL;
}

int main(void)
{
	struct worker w = {0};
	int *items = (int *)malloc(ITEMS * sizeof(int));
	for (int i = 0; i < ITEMS; i++)
		items[i] = (i * 7919) % 100003;
	CHECK(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&w.d_items, ITEMS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&w.d_best, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&w.h_best, sizeof(int))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemcpy(w.d_items, items, ITEMS * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload

	pthread_t tid;
	if (pthread_create(&tid, NULL, worker_main, &w) != 0)
		return 1;
	pthread_join(tid, NULL);

	CHECK(cudaFreeHost(w.h_best)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(w.d_best)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(w.d_items)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(w.stream));
	free(items);
	corpus_result("c05_worker_thread_sync", STEPS, w.checksum);
	return 0;
}
