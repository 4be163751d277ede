/*
 * examples/corpus/c13_clean_prefetch_loader.cu: corpus workload (CUDA C), CLEAN. A prefetching
 * loader: the whole dataset sits in pinned memory; a loader stream uploads and normalizes batch
 * i+1 into one of three device slots while the compute stream trains on batch i. Streams are
 * ordered by events both ways (a slot is refilled only after compute has consumed it); the host
 * never waits inside the loop. Setup allocates and fills; the model is read once at the end.
 */
#include "corpus.h"

enum { STEPS = 90, BATCH = 1 << 19, SLOTS = 3, THREADS = 256 };

__global__ void normalize(const int16_t *raw, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = (raw[i] + 32768) >> 4;
}

__global__ void train(const int *batch, int *model, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		model[i] = (model[i] * 7 + batch[i]) % 1048573;
}

int main(void)
{
	int16_t *dataset, *d_raw[SLOTS];
	int *d_batch[SLOTS], *d_model, *model;
	cudaStream_t loader, compute;
	cudaEvent_t ready[SLOTS], free_slot[SLOTS];
	const int batches_in_dataset = 16;

	CHECK(cudaStreamCreateWithFlags(&loader, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaHostAlloc(&dataset, (size_t)BATCH * batches_in_dataset * sizeof(int16_t), cudaHostAllocDefault)); // SYNCSPY-CLEAN: setup pinned dataset
	for (size_t i = 0; i < (size_t)BATCH * batches_in_dataset; i++)
		dataset[i] = (int16_t)(i * 48271u);
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMalloc(&d_raw[k], BATCH * sizeof(int16_t))); // SYNCSPY-CLEAN: setup slot
		CHECK(cudaMalloc(&d_batch[k], BATCH * sizeof(int))); // SYNCSPY-CLEAN: setup slot
		CHECK(cudaEventCreateWithFlags(&ready[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&free_slot[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_model, BATCH * sizeof(int))); // SYNCSPY-CLEAN: setup model
	CHECK(cudaMallocHost(&model, BATCH * sizeof(int))); // SYNCSPY-CLEAN: setup result buffer
	CHECK(cudaMemsetAsync(d_model, 0, BATCH * sizeof(int), compute));

	/* prefetch(i): batch i into slot i % SLOTS on the loader stream */
	for (int i = 0; i <= STEPS; i++) {
		if (i < STEPS) {
			int k = i % SLOTS;
			if (i >= SLOTS)
				CHECK(cudaStreamWaitEvent(loader, free_slot[k], 0));
			const int16_t *src = dataset + (size_t)(i % batches_in_dataset) * BATCH;
			CHECK(cudaMemcpyAsync(d_raw[k], src, BATCH * sizeof(int16_t), cudaMemcpyHostToDevice, loader)); // SYNCSPY-CLEAN: prefetch on the loader stream
			normalize<<<BATCH / THREADS, THREADS, 0, loader>>>(d_raw[k], d_batch[k], BATCH);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(ready[k], loader));
		}
		if (i >= 1) { /* train on batch i-1 */
			int k = (i - 1) % SLOTS;
			CHECK(cudaStreamWaitEvent(compute, ready[k], 0));
			train<<<BATCH / THREADS, THREADS, 0, compute>>>(d_batch[k], d_model, BATCH);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(free_slot[k], compute));
		}
	}

	CHECK(cudaMemcpyAsync(model, d_model, BATCH * sizeof(int), cudaMemcpyDeviceToHost, compute)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(compute)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0;
	for (int i = 0; i < BATCH; i++)
		checksum = checksum * 1000003 + (unsigned)model[i];
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaFree(d_raw[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_batch[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(ready[k]));
		CHECK(cudaEventDestroy(free_slot[k]));
	}
	CHECK(cudaFree(d_model)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(model)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(dataset)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(loader));
	CHECK(cudaStreamDestroy(compute));
	corpus_result("c13_clean_prefetch_loader", STEPS, checksum);
	return 0;
}
