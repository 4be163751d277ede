/*
 * examples/corpus/c38_clean_thread_per_stream.cu: corpus workload (CUDA C, pthreads), CLEAN.
 * A multi-tenant scoring service: four host threads each serve one tenant, each with its own
 * non-blocking stream (cudaStreamCreateWithFlags(cudaStreamNonBlocking), so no thread's work
 * waits on the legacy default stream or on another thread's stream). Every step a thread
 * uploads its tenant's request batch from its own pinned buffer with cudaMemcpyAsync, scores it
 * and folds the scores into a per-tenant total on the device. The request batches are written
 * into pinned memory once, before the threads start (each step reads a different slice), so
 * nothing has to wait before the host reuses a buffer. Each thread synchronizes its own stream
 * once, after its last step, and reads its total. All allocations happen in the main thread
 * before the workers start, and are freed after they are joined.
 */
#include "corpus.h"

#include <pthread.h>

enum { STEPS = 60, TENANTS = 4, BATCH = 1 << 18, THREADS = 256, ROUNDS = 192 };

struct tenant {
	int id;
	cudaStream_t stream;
	uint32_t *h_batches; /* pinned, STEPS batches */
	uint32_t *d_batch;
	unsigned long long *d_total, *h_total; /* h_total pinned */
};

__global__ void score(const uint32_t *req, int n, int tenant, int step, unsigned long long *total)
{
	__shared__ unsigned long long sh[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long s = 0;
	if (i < n) {
		uint32_t h = req[i] ^ ((uint32_t)tenant << 28) ^ (uint32_t)step;
		for (int r = 0; r < ROUNDS; r++)
			h = (h ^ (h >> 16)) * 0x45d9f3bu + (uint32_t)r;
		s = h >> 12;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(total, t);
	}
}

static void *serve(void *arg)
{
	struct tenant *t = (struct tenant *)arg;
	for (int step = 0; step < STEPS; step++) {
		CHECK(cudaMemcpyAsync(t->d_batch, t->h_batches + (size_t)step * BATCH, BATCH * sizeof(uint32_t), cudaMemcpyHostToDevice, t->stream)); // SYNCSPY-CLEAN: async upload from pinned memory on the thread's own stream
		score<<<BATCH / THREADS, THREADS, 0, t->stream>>>(t->d_batch, BATCH, t->id, step, t->d_total);
		CHECK_LAUNCH();
	}
	CHECK(cudaMemcpyAsync(t->h_total, t->d_total, sizeof *t->h_total, cudaMemcpyDeviceToHost, t->stream)); // SYNCSPY-CLEAN: the thread's final read, pinned
	CHECK(cudaStreamSynchronize(t->stream)); // SYNCSPY-CLEAN: the thread's one wait, after its last step
	return NULL;
}

int main(void)
{
	struct tenant ts[TENANTS];
	pthread_t th[TENANTS];
	unsigned long long checksum = 0;

	for (int k = 0; k < TENANTS; k++) {
		struct tenant *t = &ts[k];
		t->id = k;
		CHECK(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking));
		CHECK(cudaMallocHost(&t->h_batches, (size_t)STEPS * BATCH * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
		CHECK(cudaMallocHost(&t->h_total, sizeof *t->h_total)); // SYNCSPY-CLEAN: setup pinned allocation
		CHECK(cudaMalloc(&t->d_batch, BATCH * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&t->d_total, sizeof *t->d_total)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMemsetAsync(t->d_total, 0, sizeof *t->d_total, t->stream));
		for (size_t i = 0; i < (size_t)STEPS * BATCH; i++)
			t->h_batches[i] = (uint32_t)(i * 2654435761u) + (uint32_t)k * 40503u;
	}
	for (int k = 0; k < TENANTS; k++)
		if (pthread_create(&th[k], NULL, serve, &ts[k]) != 0) {
			fprintf(stderr, "c38: pthread_create failed\n");
			return 1;
		}
	for (int k = 0; k < TENANTS; k++)
		pthread_join(th[k], NULL);
	for (int k = 0; k < TENANTS; k++) {
		checksum = checksum * 1000003u + *ts[k].h_total;
		CHECK(cudaFreeHost(ts[k].h_batches)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(ts[k].h_total)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(ts[k].d_batch)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(ts[k].d_total)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(ts[k].stream));
	}
	corpus_result("c38_clean_thread_per_stream", STEPS, checksum);
	return 0;
}
