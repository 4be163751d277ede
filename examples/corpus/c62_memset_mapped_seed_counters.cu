/*
 * examples/corpus/c62_memset_mapped_seed_counters.cu: corpus workload (CUDA C). The seeding
 * stage of a short-read aligner: every batch of reads is split into k-mers on the GPU, each
 * k-mer looked up in a (hashed) reference index, and the seed hits counted per reference bin.
 * The 64 bin counters live in mapped pinned memory (cudaHostAlloc with cudaHostAllocMapped) so
 * that the aligner's progress monitor can read the live counts without a copy; after each batch
 * a small kernel folds them into the batch's row of a device tally. The counters are reset for
 * every batch in reset_seed_counters() with cudaMemset on their device address. The runtime
 * API's "API synchronization behavior" section says the synchronous memset functions are
 * asynchronous with respect to the host except when the target is pinned host memory or a
 * Unified Memory region, in which case they are fully synchronous; it is also a command on the
 * legacy default stream, which waits for the batch stream (created with cudaStreamCreate, a
 * blocking stream). So every batch the host stops until the previous batch's seeding and fold
 * are done. cudaMemsetAsync on the batch stream (always asynchronous) orders the same reset
 * without the wait.
 * Planted: the cudaMemset of the mapped counters in reset_seed_counters(), every batch.
 * Clean: the setup allocations (the mapped pinned counters included), the final read of the
 * tally, teardown.
 */
#include "corpus.h"

enum { BATCHES = 40, READS = 1 << 17, KMERS = 8, BINS = 64, THREADS = 256 };

__host__ __device__ static inline uint32_t kmer_hash(int batch, int read, int k)
{
	uint32_t h = (uint32_t)read * 2654435761u ^ (uint32_t)batch * 0x85ebca6bu ^ (uint32_t)k * 0xc2b2ae35u;
	h = (h ^ (h >> 16)) * 0x7feb352du;
	h = (h ^ (h >> 15)) * 0x846ca68bu;
	return h ^ (h >> 16);
}

/* the reference index: a k-mer is in the reference when its hash passes the filter */
__host__ __device__ static inline int seed_bin(uint32_t h)
{
	return (h % 5u == 0u) ? (int)((h >> 8) & (BINS - 1)) : -1;
}

__global__ void seed_hits(int batch, unsigned int *counters)
{
	__shared__ unsigned int sh[BINS];
	int read = blockIdx.x * blockDim.x + threadIdx.x;
	if (threadIdx.x < BINS)
		sh[threadIdx.x] = 0;
	__syncthreads();
	if (read < READS)
		for (int k = 0; k < KMERS; k++) {
			int b = seed_bin(kmer_hash(batch, read, k));
			if (b >= 0)
				atomicAdd(&sh[b], 1u);
		}
	__syncthreads();
	if (threadIdx.x < BINS && sh[threadIdx.x])
		atomicAdd(&counters[threadIdx.x], sh[threadIdx.x]);
}

__global__ void fold_counters(const unsigned int *counters, unsigned int *tally_row)
{
	if (threadIdx.x < BINS)
		tally_row[threadIdx.x] = counters[threadIdx.x];
}

struct seeder {
	cudaStream_t s;
	unsigned int *h_counters, *d_counters; /* mapped pinned: host and device addresses */
	unsigned int *d_tally;
};

static void reset_seed_counters(struct seeder *sd)
{
	CHECK(cudaMemset(sd->d_counters, 0, BINS * sizeof(unsigned int))); // SYNCSPY-PROBLEM: memset of pinned host memory is fully synchronous (and on the legacy stream), every batch
}

static void seed_batch(struct seeder *sd, int batch)
{
	reset_seed_counters(sd);
	seed_hits<<<READS / THREADS, THREADS, 0, sd->s>>>(batch, sd->d_counters);
	CHECK_LAUNCH();
	fold_counters<<<1, BINS, 0, sd->s>>>(sd->d_counters, sd->d_tally + (size_t)batch * BINS);
	CHECK_LAUNCH();
}

int main(void)
{
	const char *name = "c62_memset_mapped_seed_counters";
	struct seeder sd;
	static unsigned int h_tally[BATCHES * BINS];

	CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CHECK(cudaStreamCreate(&sd.s));
	CHECK(cudaHostAlloc(&sd.h_counters, BINS * sizeof(unsigned int), cudaHostAllocMapped)); // SYNCSPY-CLEAN: setup, mapped pinned counters
	CHECK(cudaHostGetDevicePointer(&sd.d_counters, sd.h_counters, 0));
	CHECK(cudaMalloc(&sd.d_tally, sizeof h_tally)); // SYNCSPY-CLEAN: setup allocation

	for (int batch = 0; batch < BATCHES; batch++)
		seed_batch(&sd, batch);

	CHECK(cudaMemcpyAsync(h_tally, sd.d_tally, sizeof h_tally, cudaMemcpyDeviceToHost, sd.s)); // SYNCSPY-CLEAN: final read of the tally
	CHECK(cudaStreamSynchronize(sd.s)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	unsigned long long checksum = 0;
	for (int batch = 0; batch < BATCHES; batch++) {
		if (batch % 9 == 0) {
			unsigned int want[BINS] = {0};
			for (int read = 0; read < READS; read++)
				for (int k = 0; k < KMERS; k++) {
					int b = seed_bin(kmer_hash(batch, read, k));
					if (b >= 0)
						want[b]++;
				}
			for (int b = 0; b < BINS; b++)
				corpus_expect(name, "bin count", h_tally[batch * BINS + b], want[b]);
		}
		for (int b = 0; b < BINS; b++)
			checksum = checksum * 1000003u + h_tally[batch * BINS + b];
	}

	CHECK(cudaFree(sd.d_tally)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(sd.h_counters)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(sd.s));
	corpus_result(name, BATCHES, checksum);
	return 0;
}
