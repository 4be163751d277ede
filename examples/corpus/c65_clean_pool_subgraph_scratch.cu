/*
 * examples/corpus/c65_clean_pool_subgraph_scratch.cu: corpus workload (CUDA C), CLEAN. Sparse
 * graph analytics: personalized-PageRank scores over sampled subgraphs of an implicit graph
 * (node v links to (5v+3) mod n and (11v+7) mod n). Every step samples a subgraph whose size
 * comes from the sampler's schedule (it varies step to step), so its scratch (two rank vectors)
 * is taken from the stream-ordered allocator with cudaMallocFromPoolAsync and returned with
 * cudaFreeAsync. The pool is the application's own (cudaMemPoolCreate) with its release
 * threshold raised to the maximum, so memory freed to it stays reserved across the
 * synchronizations (CUDA programming guide, stream-ordered memory allocator: the release
 * threshold; runtime API: cudaFreeAsync returns the memory to the pool, no synchronization),
 * and a warm-up allocation of the largest size at setup reserves it once. After every epoch
 * (25 steps, outside the step loop) the scores so far are copied into a pinned checkpoint
 * buffer and the host waits for them to write the epoch's summary.
 * Clean: the pool's allocations and frees every step, the setup allocations and warm-up
 * synchronization, the per-epoch checkpoint copy and wait (the last one is the final read),
 * teardown (the pool destroyed).
 */
#include "corpus.h"

enum { EPOCHS = 3, STEPS = 25, NODES = 1 << 22, MAX_SUB = 1 << 18, ITERS = 8, THREADS = 256 };

static int subgraph_size(int step)
{
	return (MAX_SUB / 4) + (int)(((uint32_t)step * 7919u) % (3u * MAX_SUB / 4));
}

__host__ __device__ static inline uint32_t sub_node(int step, int j)
{
	return ((uint32_t)j * 2654435761u + (uint32_t)step * 40503u) % (uint32_t)NODES;
}

/* local index of a neighbour inside the subgraph (the sampler keeps the subgraph closed) */
__host__ __device__ static inline int local_nb(uint32_t v, int k, int n)
{
	uint32_t u = k ? (11u * v + 7u) : (5u * v + 3u);
	return (int)(u % (uint32_t)n);
}

__global__ void init_rank(uint32_t *r, int n, int step)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j < n)
		r[j] = (sub_node(step, j) & 1023u) + 1u;
}

__global__ void propagate(const uint32_t *src, uint32_t *dst, int n, int step)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= n)
		return;
	uint32_t v = sub_node(step, j);
	dst[j] = (src[j] >> 1) + (src[local_nb(v, 0, n)] >> 2) + (src[local_nb(v, 1, n)] >> 2) + 3u;
}

__global__ void sum_ranks(const uint32_t *r, int n, unsigned long long *out)
{
	unsigned long long s = 0;
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x)
		s += r[j];
	atomicAdd(out, s);
}

struct analytics {
	cudaStream_t s;
	cudaMemPool_t pool;
	unsigned long long *d_scores, *h_ckpt;
};

static void run_step(struct analytics *a, int step)
{
	int n = subgraph_size(step), blocks = (n + THREADS - 1) / THREADS;
	uint32_t *ra, *rb;
	CHECK(cudaMallocFromPoolAsync(&ra, (size_t)n * sizeof(uint32_t), a->pool, a->s)); // SYNCSPY-CLEAN: stream-ordered, served from the pool's reserve
	CHECK(cudaMallocFromPoolAsync(&rb, (size_t)n * sizeof(uint32_t), a->pool, a->s)); // SYNCSPY-CLEAN: stream-ordered, served from the pool's reserve
	init_rank<<<blocks, THREADS, 0, a->s>>>(ra, n, step);
	CHECK_LAUNCH();
	for (int it = 0; it < ITERS; it++) {
		propagate<<<blocks, THREADS, 0, a->s>>>(ra, rb, n, step);
		CHECK_LAUNCH();
		uint32_t *t = ra;
		ra = rb;
		rb = t;
	}
	sum_ranks<<<128, THREADS, 0, a->s>>>(ra, n, a->d_scores + step);
	CHECK_LAUNCH();
	CHECK(cudaFreeAsync(ra, a->s)); // SYNCSPY-CLEAN: stream-ordered free back to the pool, no sync
	CHECK(cudaFreeAsync(rb, a->s)); // SYNCSPY-CLEAN: stream-ordered free back to the pool, no sync
}

static unsigned long long reference(int step)
{
	int n = subgraph_size(step);
	uint32_t *ra = (uint32_t *)malloc((size_t)n * sizeof(uint32_t)), *rb = (uint32_t *)malloc((size_t)n * sizeof(uint32_t));
	for (int j = 0; j < n; j++)
		ra[j] = (sub_node(step, j) & 1023u) + 1u;
	for (int it = 0; it < ITERS; it++) {
		for (int j = 0; j < n; j++) {
			uint32_t v = sub_node(step, j);
			rb[j] = (ra[j] >> 1) + (ra[local_nb(v, 0, n)] >> 2) + (ra[local_nb(v, 1, n)] >> 2) + 3u;
		}
		uint32_t *t = ra;
		ra = rb;
		rb = t;
	}
	unsigned long long s = 0;
	for (int j = 0; j < n; j++)
		s += ra[j];
	free(ra);
	free(rb);
	return s;
}

int main(void)
{
	const char *name = "c65_clean_pool_subgraph_scratch";
	const int total = EPOCHS * STEPS;
	struct analytics a;
	cudaMemPoolProps props = {};
	uint64_t keep = UINT64_MAX;
	void *warm;
	unsigned long long epoch_sum[EPOCHS];

	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaStreamCreateWithFlags(&a.s, cudaStreamNonBlocking));
	CHECK(cudaMemPoolCreate(&a.pool, &props));
	CHECK(cudaMemPoolSetAttribute(a.pool, cudaMemPoolAttrReleaseThreshold, &keep));
	CHECK(cudaMalloc(&a.d_scores, total * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&a.h_ckpt, total * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned checkpoint buffer
	CHECK(cudaMemsetAsync(a.d_scores, 0, total * sizeof(unsigned long long), a.s));
	CHECK(cudaMallocFromPoolAsync(&warm, 2 * (size_t)MAX_SUB * sizeof(uint32_t), a.pool, a.s)); // SYNCSPY-CLEAN: setup, reserves the pool's memory once
	CHECK(cudaFreeAsync(warm, a.s)); // SYNCSPY-CLEAN: setup, back to the pool (kept: the threshold is raised)
	CHECK(cudaStreamSynchronize(a.s)); // SYNCSPY-CLEAN: setup, once

	for (int epoch = 0; epoch < EPOCHS; epoch++) {
		for (int k = 0; k < STEPS; k++)
			run_step(&a, epoch * STEPS + k);
		/* the epoch's checkpoint, outside the step loop */
		CHECK(cudaMemcpyAsync(a.h_ckpt, a.d_scores, total * sizeof(unsigned long long), cudaMemcpyDeviceToHost, a.s)); // SYNCSPY-CLEAN: once per epoch, into pinned memory
		CHECK(cudaStreamSynchronize(a.s)); // SYNCSPY-CLEAN: once per epoch, the checkpoint is written from it
		epoch_sum[epoch] = 0;
		for (int k = 0; k < STEPS; k++)
			epoch_sum[epoch] += a.h_ckpt[epoch * STEPS + k];
	}

	unsigned long long checksum = 0;
	for (int step = 0; step < total; step++) {
		if (step % 17 == 0)
			corpus_expect(name, "step score", (long long)a.h_ckpt[step], (long long)reference(step));
		checksum = checksum * 1000003u + a.h_ckpt[step];
	}
	for (int epoch = 0; epoch < EPOCHS; epoch++)
		checksum = checksum * 31u + epoch_sum[epoch];

	CHECK(cudaFree(a.d_scores)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(a.h_ckpt)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaMemPoolDestroy(a.pool)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(a.s));
	corpus_result(name, total, checksum);
	return 0;
}
