/*
 * examples/corpus/c63_hash_join_exact_output.cu: corpus workload (CUDA C). The probe side of a
 * GPU hash join in a columnar query engine: a dimension table (customer id -> region) sits in
 * device memory as a hash table built once; the fact table (orders) arrives in batches that
 * are generated on the GPU, and each batch is joined in two passes, the textbook way: a count
 * pass, then an exactly sized output buffer, then a materialize pass writing (order, region)
 * pairs, which an aggregation kernel folds into the batch's revenue-by-region checksum. The
 * operator's join_batch() reads the match count back with cudaMemcpy into a stack variable
 * and allocates the output with cudaMalloc of exactly that size, freeing it with cudaFree
 * after the aggregation. A device-to-host cudaMemcpy into pageable memory returns only once
 * the copy is complete (runtime API, API synchronization behavior), so the host waits for the
 * count pass every batch; cudaMalloc and cudaFree of device memory are on the programming
 * guide's list of implicit synchronizations (and cudaFree waits for the device), every batch.
 * The batch size bounds the output: one buffer of that size allocated at setup, and the count
 * kept on the device for the materialize pass, need neither.
 * Planted: (1) the cudaMemcpy of the match count in join_batch(), every batch; (2) the
 * cudaMalloc and the cudaFree of the exactly sized output in join_batch(), every batch.
 * Clean: building the hash table in setup, the final read of the per-batch checksums,
 * teardown.
 */
#include "corpus.h"

enum { BATCHES = 60, ORDERS = 1 << 18, CUSTOMERS = 1 << 16, SLOTS = 1 << 17, THREADS = 256 };
#define EMPTY 0xffffffffu

struct pair {
	uint32_t order, region;
};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h = (h ^ (h >> 16)) * 0x7feb352du;
	h = (h ^ (h >> 15)) * 0x846ca68bu;
	return h ^ (h >> 16);
}

/* the order's customer: half of them are not in the dimension table (ids >= CUSTOMERS) */
__host__ __device__ static inline uint32_t order_customer(int batch, int i)
{
	return mix32((uint32_t)batch * 0x9e3779b9u + (uint32_t)i) % (2u * CUSTOMERS);
}

__host__ __device__ static inline uint32_t customer_region(uint32_t c)
{
	return mix32(c * 2654435761u) % 50u;
}

__global__ void build_table(uint32_t *keys, uint32_t *vals)
{
	uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= CUSTOMERS)
		return;
	uint32_t s = mix32(c) & (SLOTS - 1);
	while (atomicCAS(&keys[s], EMPTY, c) != EMPTY)
		s = (s + 1) & (SLOTS - 1);
	vals[s] = customer_region(c);
}

__device__ static int probe(const uint32_t *keys, const uint32_t *vals, uint32_t c, uint32_t *region)
{
	uint32_t s = mix32(c) & (SLOTS - 1);
	for (;;) {
		uint32_t k = keys[s];
		if (k == c) {
			*region = vals[s];
			return 1;
		}
		if (k == EMPTY)
			return 0;
		s = (s + 1) & (SLOTS - 1);
	}
}

__global__ void count_matches(const uint32_t *keys, const uint32_t *vals, int batch, unsigned int *count)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t r;
	if (i < ORDERS && probe(keys, vals, order_customer(batch, i), &r))
		atomicAdd(count, 1u);
}

__global__ void materialize(const uint32_t *keys, const uint32_t *vals, int batch, struct pair *out, unsigned int *cursor)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t r;
	if (i < ORDERS && probe(keys, vals, order_customer(batch, i), &r)) {
		struct pair p = {(uint32_t)i, r};
		out[atomicAdd(cursor, 1u)] = p;
	}
}

__global__ void revenue_by_region(const struct pair *out, unsigned int n, unsigned long long *sum)
{
	unsigned long long s = 0;
	for (unsigned int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x)
		s += (unsigned long long)(out[j].order % 997u + 1u) * (out[j].region + 1u);
	atomicAdd(sum, s);
}

struct join_op {
	cudaStream_t s;
	uint32_t *d_keys, *d_vals;
	unsigned int *d_counters; /* [0] match count, [1] materialize cursor */
	unsigned long long *d_sums;
};

/* --- the probe operator ------------------------------------------------------------------- */

static void join_batch(struct join_op *j, int batch)
{
	unsigned int matches = 0;
	struct pair *out;

	CHECK(cudaMemsetAsync(j->d_counters, 0, 2 * sizeof(unsigned int), j->s));
	count_matches<<<ORDERS / THREADS, THREADS, 0, j->s>>>(j->d_keys, j->d_vals, batch, j->d_counters);
	CHECK_LAUNCH();
	CHECK(cudaMemcpy(&matches, j->d_counters, sizeof matches, cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: blocking read of the match count, every batch, only to size the output
	CHECK(cudaMalloc(&out, (matches ? matches : 1) * sizeof(struct pair))); // SYNCSPY-PROBLEM: exactly sized output allocated every batch
	materialize<<<ORDERS / THREADS, THREADS, 0, j->s>>>(j->d_keys, j->d_vals, batch, out, j->d_counters + 1);
	CHECK_LAUNCH();
	revenue_by_region<<<128, THREADS, 0, j->s>>>(out, matches, j->d_sums + batch);
	CHECK_LAUNCH();
	CHECK(cudaFree(out)); // SYNCSPY-PROBLEM: and freed every batch (cudaFree synchronizes the device)
}

int main(void)
{
	const char *name = "c63_hash_join_exact_output";
	struct join_op j;
	static unsigned long long h_sums[BATCHES];

	CHECK(cudaStreamCreate(&j.s));
	CHECK(cudaMalloc(&j.d_keys, SLOTS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation of the hash table
	CHECK(cudaMalloc(&j.d_vals, SLOTS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation of the hash table
	CHECK(cudaMalloc(&j.d_counters, 2 * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&j.d_sums, sizeof h_sums)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(j.d_keys, 0xff, SLOTS * sizeof(uint32_t), j.s));
	CHECK(cudaMemsetAsync(j.d_sums, 0, sizeof h_sums, j.s));
	build_table<<<CUSTOMERS / THREADS, THREADS, 0, j.s>>>(j.d_keys, j.d_vals);
	CHECK_LAUNCH();

	for (int batch = 0; batch < BATCHES; batch++)
		join_batch(&j, batch);

	CHECK(cudaMemcpyAsync(h_sums, j.d_sums, sizeof h_sums, cudaMemcpyDeviceToHost, j.s)); // SYNCSPY-CLEAN: final read of the batch checksums
	CHECK(cudaStreamSynchronize(j.s)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	unsigned long long checksum = 0;
	for (int batch = 0; batch < BATCHES; batch++) {
		if (batch % 11 == 0) {
			unsigned long long want = 0;
			for (int i = 0; i < ORDERS; i++) {
				uint32_t c = order_customer(batch, i);
				if (c < CUSTOMERS)
					want += (unsigned long long)((uint32_t)i % 997u + 1u) * (customer_region(c) + 1u);
			}
			corpus_expect(name, "batch revenue", (long long)h_sums[batch], (long long)want);
		}
		checksum = checksum * 1000003u + h_sums[batch];
	}

	CHECK(cudaFree(j.d_keys)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(j.d_vals)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(j.d_counters)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(j.d_sums)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(j.s));
	corpus_result(name, BATCHES, checksum);
	return 0;
}
