/*
 * examples/corpus/c23_clean_producer_consumer.cu: corpus workload (CUDA C, pthreads), CLEAN. A
 * two-thread pipeline sharing one device: a decoder thread expands compressed batches into a
 * ring of three device slots on its own stream, an inference thread scores each decoded batch
 * on its stream. Each slot travels between the threads through a mutex-and-condition queue
 * together with a CUDA event: the decoder records "ready" after filling a slot and the
 * inference thread makes its stream wait on it (cudaStreamWaitEvent); the inference thread
 * records "free" after its kernel and the decoder's stream waits on that before refilling the
 * slot. The threads wait for each other on the host (the ring's depth), never for the GPU; the
 * scores accumulate on the device and are read once, after both threads are joined.
 */
#include "corpus.h"

#include <pthread.h>

enum { BATCHES = 80, SLOT = 1 << 20, DEPTH = 3, THREADS = 256, CODES = 1 << 16, ROUNDS = 48 };

struct pipeline {
	const uint32_t *d_codes; /* the "compressed" stream, uploaded once */
	uint32_t *d_slot[DEPTH];
	unsigned long long *d_acc;
	cudaStream_t decode_s, infer_s;
	cudaEvent_t ready[DEPTH], freed[DEPTH];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int produced, consumed; /* batches handed over, batches done with */
};

__global__ void decode(const uint32_t *codes, uint32_t *out, int n, int batch)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = codes[(i + batch * 977) & (CODES - 1)] + (uint32_t)i;
	for (int r = 0; r < ROUNDS; r++)
		v = v * 1664525u + 1013904223u;
	out[i] = v;
}

__global__ void infer(const uint32_t *in, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		uint32_t x = in[i];
		for (int r = 0; r < ROUNDS; r++)
			x = (x ^ (x >> 11)) * 2246822519u;
		s += x >> 12;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

static void *decoder_main(void *arg)
{
	struct pipeline *p = (struct pipeline *)arg;
	for (int b = 0; b < BATCHES; b++) {
		int k = b % DEPTH;
		pthread_mutex_lock(&p->lock);
		while (b - p->consumed >= DEPTH) /* the ring is full: wait for the other thread, not the GPU */
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
		if (b >= DEPTH)
			CHECK(cudaStreamWaitEvent(p->decode_s, p->freed[k], 0));
		decode<<<SLOT / THREADS, THREADS, 0, p->decode_s>>>(p->d_codes, p->d_slot[k], SLOT, b);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(p->ready[k], p->decode_s));
		pthread_mutex_lock(&p->lock);
		p->produced = b + 1;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

static void *inference_main(void *arg)
{
	struct pipeline *p = (struct pipeline *)arg;
	for (int b = 0; b < BATCHES; b++) {
		int k = b % DEPTH;
		pthread_mutex_lock(&p->lock);
		while (p->produced <= b)
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
		CHECK(cudaStreamWaitEvent(p->infer_s, p->ready[k], 0));
		infer<<<256, THREADS, 0, p->infer_s>>>(p->d_slot[k], SLOT, p->d_acc);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(p->freed[k], p->infer_s));
		pthread_mutex_lock(&p->lock);
		p->consumed = b + 1;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

int main(void)
{
	struct pipeline p;
	uint32_t *codes = (uint32_t *)malloc(CODES * sizeof(uint32_t)), *d_codes;
	unsigned long long *h_acc;
	pthread_t decoder, inference;

	for (int i = 0; i < CODES; i++)
		codes[i] = (uint32_t)i * 2654435761u;
	p.produced = p.consumed = 0;
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	CHECK(cudaStreamCreateWithFlags(&p.decode_s, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&p.infer_s, cudaStreamNonBlocking));
	for (int k = 0; k < DEPTH; k++) {
		CHECK(cudaMalloc(&p.d_slot[k], SLOT * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaEventCreateWithFlags(&p.ready[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&p.freed[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_codes, CODES * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&p.d_acc, sizeof *p.d_acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_acc, sizeof *h_acc)); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemcpy(d_codes, codes, CODES * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemset(p.d_acc, 0, sizeof *p.d_acc)); // SYNCSPY-CLEAN: setup
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the threads start, once
	p.d_codes = d_codes;

	if (pthread_create(&decoder, NULL, decoder_main, &p) != 0 ||
	    pthread_create(&inference, NULL, inference_main, &p) != 0)
		return 1;
	pthread_join(decoder, NULL);
	pthread_join(inference, NULL);

	CHECK(cudaMemcpyAsync(h_acc, p.d_acc, sizeof *h_acc, cudaMemcpyDeviceToHost, p.infer_s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(p.infer_s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = *h_acc;
	for (int k = 0; k < DEPTH; k++) {
		CHECK(cudaFree(p.d_slot[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(p.ready[k]));
		CHECK(cudaEventDestroy(p.freed[k]));
	}
	CHECK(cudaFree(d_codes)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(p.d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(p.decode_s));
	CHECK(cudaStreamDestroy(p.infer_s));
	pthread_mutex_destroy(&p.lock);
	pthread_cond_destroy(&p.cond);
	free(codes);
	corpus_result("c23_clean_producer_consumer", BATCHES, checksum);
	return 0;
}
