/*
 * examples/corpus/c60_clean_pinned_upload_ring.cu: corpus workload (CUDA C), clean. An ingest
 * pipeline for sensor records: the host decodes each batch into one slot of a three-slot pinned
 * staging ring, a copy stream uploads the slot into a matching device slot with cudaMemcpyAsync,
 * and a compute stream (waiting on the upload's event) filters and bins the records into
 * per-batch counters that stay on the device. Before decoding into a slot again, the host waits
 * with cudaEventSynchronize on the upload that last read it, three batches back; the copy stream
 * waits on the device for the compute that last read a device slot. The decode of batch b
 * overlaps the upload of b-1 and the compute of b-2. One final read of the counters.
 * Clean: the uploads from pinned memory, the ring's cudaEventSynchronize on the slot's previous
 * upload, the setup allocations, the final sync and read, teardown.
 */
#include "corpus.h"

enum { BATCHES = 72, RECS = 1 << 18, THREADS = 256, SLOTS = 3, BINS = 32 };

__host__ __device__ static inline int keep(uint32_t r)
{
	return (r & 0xfu) != 0xfu; /* drop malformed records */
}

__host__ __device__ static inline int bin_of(uint32_t r)
{
	uint32_t h = r * 0x85ebca6bu;
	return (int)((h ^ (h >> 16)) % BINS);
}

__global__ void filter_bin(const uint32_t *recs, int n, unsigned int *bins)
{
	__shared__ unsigned int sh[BINS];
	if (threadIdx.x < BINS)
		sh[threadIdx.x] = 0;
	__syncthreads();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && keep(recs[i]))
		atomicAdd(&sh[bin_of(recs[i])], 1u);
	__syncthreads();
	if (threadIdx.x < BINS && sh[threadIdx.x])
		atomicAdd(&bins[threadIdx.x], sh[threadIdx.x]);
}

static uint32_t record(int batch, int i)
{
	uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)batch * 0x9e3779b9u;
	return (h ^ (h >> 13)) * 0x5bd1e995u;
}

/* the decoder: the host's share of each batch */
static void decode_batch(uint32_t *dst, int batch)
{
	for (int i = 0; i < RECS; i++)
		dst[i] = record(batch, i);
}

struct ring {
	uint32_t *h_slot[SLOTS], *d_slot[SLOTS];
	cudaEvent_t uploaded[SLOTS], consumed[SLOTS];
	int used[SLOTS];
};

/* --- the staging ring ---------------------------------------------------------------------- */

static uint32_t *ring_acquire(struct ring *rg, int slot)
{
	if (rg->used[slot])
		CHECK(cudaEventSynchronize(rg->uploaded[slot])); // SYNCSPY-CLEAN: the ring's wait: the slot's upload three batches back
	rg->used[slot] = 1;
	return rg->h_slot[slot];
}

static void ring_submit(struct ring *rg, int slot, cudaStream_t copy, cudaStream_t compute, unsigned int *d_bins)
{
	CHECK(cudaStreamWaitEvent(copy, rg->consumed[slot], 0));
	CHECK(cudaMemcpyAsync(rg->d_slot[slot], rg->h_slot[slot], RECS * sizeof(uint32_t), cudaMemcpyHostToDevice, copy)); // SYNCSPY-CLEAN: async upload from the pinned ring
	CHECK(cudaEventRecord(rg->uploaded[slot], copy));
	CHECK(cudaStreamWaitEvent(compute, rg->uploaded[slot], 0));
	filter_bin<<<RECS / THREADS, THREADS, 0, compute>>>(rg->d_slot[slot], RECS, d_bins);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(rg->consumed[slot], compute));
}

int main(void)
{
	const char *name = "c60_clean_pinned_upload_ring";
	struct ring rg;
	cudaStream_t copy, compute;
	unsigned int *d_bins;
	unsigned int *h_bins = (unsigned int *)malloc(BATCHES * BINS * sizeof(unsigned int));

	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMallocHost(&rg.h_slot[k], RECS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
		CHECK(cudaMalloc(&rg.d_slot[k], RECS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaEventCreateWithFlags(&rg.uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&rg.consumed[k], cudaEventDisableTiming));
		rg.used[k] = 0;
	}
	CHECK(cudaMalloc(&d_bins, BATCHES * BINS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_bins, 0, BATCHES * BINS * sizeof(unsigned int), compute));

	for (int batch = 0; batch < BATCHES; batch++) {
		int slot = batch % SLOTS;
		decode_batch(ring_acquire(&rg, slot), batch);
		ring_submit(&rg, slot, copy, compute, d_bins + batch * BINS);
	}

	CHECK(cudaMemcpyAsync(h_bins, d_bins, BATCHES * BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost, compute)); // SYNCSPY-CLEAN: final read of the counters
	CHECK(cudaStreamSynchronize(compute)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	unsigned long long checksum = 0;
	for (int batch = 0; batch < BATCHES; batch++) {
		unsigned int want[BINS] = {0};
		for (int i = 0; i < RECS; i++) {
			uint32_t r = record(batch, i);
			if (keep(r))
				want[bin_of(r)]++;
		}
		for (int b = 0; b < BINS; b++) {
			corpus_expect(name, "bin count", h_bins[batch * BINS + b], want[b]);
			checksum = checksum * 1000003u + want[b];
		}
	}

	CHECK(cudaStreamSynchronize(copy)); // SYNCSPY-CLEAN: teardown, the copy stream drained before its buffers go
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaEventDestroy(rg.uploaded[k]));
		CHECK(cudaEventDestroy(rg.consumed[k]));
		CHECK(cudaFreeHost(rg.h_slot[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(rg.d_slot[k])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaFree(d_bins)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaStreamDestroy(compute));
	free(h_bins);
	corpus_result(name, BATCHES, checksum);
	return 0;
}
