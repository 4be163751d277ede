/*
 * examples/corpus/c131_pagerank_dangling_mass_host_reduce.cu: corpus workload (CUDA C). A web
 * crawler's link-analysis job: PageRank by power iteration over a synthetic crawl of 2,097,152
 * pages and about 16.8M links (4-12 in-links a page, sources skewed towards old, low-numbered
 * pages, so a few pages are hubs and about 0.5% link nowhere), damping 0.85, 50 iterations, the
 * ranks in 40-bit fixed point (one unit of rank is 2^40) so that every run gives the same bits.
 * The pull-form iteration needs, besides each page's share rank/outdegree, the total rank of the
 * dangling pages (no out-links), which is spread evenly over all pages. The contribution kernel
 * adds each dangling page's rank into one partial sum per block; the host finishes the sum, as
 * many hand-written PageRank codes do: it copies the 8192 partials into pinned memory
 * (cudaMemcpyAsync, fine by itself), waits for the stream with cudaStreamSynchronize, adds them
 * and passes the total to the update kernel as an argument. cudaStreamSynchronize "blocks until
 * stream has completed all operations": every iteration the host waits for the contribution
 * pass, and the GPU idles for the round trip (the copy, the wait, the host's sum, the update's
 * launch) between the two kernels; the host never queues an iteration ahead. A kernel that adds
 * the partials on the device, and an update that reads the total from device memory, would do
 * (c134).
 * Planted: the cudaStreamSynchronize after the partials' copy, every iteration (one line).
 * Clean: the setup allocations, the upload of the link offsets, the link build and the setup
 * sync, the partials' cudaMemcpyAsync into pinned memory, the final wait and the final reads of
 * the last two rank vectors, teardown. The per-iteration cudaMemsetAsync of the partials is an
 * enqueue (unmarked).
 * Per iteration (estimates, H100): a contribution pass over 2M pages (about 0.03 ms) and an
 * update gathering 16.8M 8-byte shares, mostly from L2 (about 0.2-0.3 ms); the round trip the
 * sync forces costs some 20-50 us of GPU idle an iteration. The checks after the loop: the rank
 * mass stays within 0.1% of one, the last dangling total matches the host's sum over the
 * previous rank vector, and 1024 sampled pages' last update, recomputed on the host from the
 * previous vector and the same link generator, match exactly.
 */
#include "corpus.h"

enum { LOG2N = 21, N = 1 << LOG2N, ITERS = 50, THREADS = 256, BLOCKS = N / THREADS, SAMPLES = 1024 };

#define RANK_ONE (1ull << 40)
#define TELEPORT (RANK_ONE * 15 / 100 / N)

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the number of links into page v: 4..12 */
__host__ __device__ static inline unsigned in_degree(uint32_t v)
{
	return 4u + mix32(v * 0x9e3779b9u + 17u) % 9u;
}

/* the page that holds v's k-th in-link, N * u^2 for a uniform u: old pages collect the links */
__host__ __device__ static inline uint32_t link_source(uint32_t v, unsigned k)
{
	uint64_t u = mix32(v * 2654435761u ^ mix32(k + 0x51ed27u));
	return (uint32_t)((u * u) >> (64 - LOG2N));
}

/* setup: the in-link lists (CSR by target) and the out-degrees */
__global__ void build_links(const unsigned *row, unsigned *src, unsigned *outdeg)
{
	unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
	if (v >= N)
		return;
	for (unsigned k = 0; k < in_degree(v); k++) {
		unsigned s = link_source(v, k);
		src[row[v] + k] = s;
		atomicAdd(&outdeg[s], 1u);
	}
}

__global__ void init_rank(unsigned long long *rank)
{
	unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
	if (v < N)
		rank[v] = RANK_ONE / N;
}

/* each page's share of its rank per out-link; dangling pages add their rank to the block's partial */
__global__ void pr_contrib(const unsigned long long *rank, const unsigned *outdeg, unsigned long long *contrib,
			   unsigned long long *partial)
{
	unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
	if (v >= N)
		return;
	unsigned d = outdeg[v];
	unsigned long long r = rank[v];
	contrib[v] = d ? r / d : 0;
	if (!d)
		atomicAdd(&partial[blockIdx.x], r);
}

/* pull: the new rank of page v from its in-links, the teleport term and the dangling mass */
__global__ void pr_update(const unsigned *row, const unsigned *src, const unsigned long long *contrib,
			  unsigned long long dangling, unsigned long long *next)
{
	unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
	if (v >= N)
		return;
	unsigned long long sum = 0;
	for (unsigned e = row[v]; e < row[v + 1]; e++)
		sum += contrib[src[e]];
	next[v] = TELEPORT + sum * 85 / 100 + ((dangling * 85 / 100) >> LOG2N);
}

static void fail(const char *name, const char *what, long long got, long long want)
{
	printf("%s: %s = %lld, want %lld result=FAIL\n", name, what, got, want);
	exit(1);
}

int main(void)
{
	const char *name = "c131_pagerank_dangling_mass_host_reduce";
	unsigned *h_row = (unsigned *)malloc((N + 1) * sizeof(unsigned));
	h_row[0] = 0;
	for (unsigned v = 0; v < N; v++)
		h_row[v + 1] = h_row[v] + in_degree(v);
	const unsigned links = h_row[N];

	unsigned *d_row, *d_src, *d_outdeg;
	unsigned long long *d_rank[2], *d_contrib, *d_partial, *h_partial;
	cudaStream_t stream;
	CHECK(cudaStreamCreate(&stream)); /* blocking: ordered after the setup copies on the legacy stream */
	CHECK(cudaMalloc(&d_row, (N + 1) * sizeof(unsigned))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_src, (size_t)links * sizeof(unsigned))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_outdeg, N * sizeof(unsigned))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_rank[0], 2 * (size_t)N * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	d_rank[1] = d_rank[0] + N;
	CHECK(cudaMalloc(&d_contrib, N * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_partial, BLOCKS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_partial, BLOCKS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup, pinned landing buffer for the partials
	CHECK(cudaMemcpy(d_row, h_row, (N + 1) * sizeof(unsigned), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the link offsets
	CHECK(cudaMemsetAsync(d_outdeg, 0, N * sizeof(unsigned), stream));
	build_links<<<BLOCKS, THREADS, 0, stream>>>(d_row, d_src, d_outdeg);
	CHECK_LAUNCH();
	init_rank<<<BLOCKS, THREADS, 0, stream>>>(d_rank[0]);
	CHECK_LAUNCH();
	CHECK(cudaStreamSynchronize(stream)); // SYNCSPY-CLEAN: setup done before the iterations

	unsigned long long dangling_log[ITERS];
	int cur = 0;
	for (int it = 0; it < ITERS; it++) {
		CHECK(cudaMemsetAsync(d_partial, 0, BLOCKS * sizeof(unsigned long long), stream));
		pr_contrib<<<BLOCKS, THREADS, 0, stream>>>(d_rank[cur], d_outdeg, d_contrib, d_partial);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(h_partial, d_partial, BLOCKS * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream)); // SYNCSPY-CLEAN: into pinned memory
		CHECK(cudaStreamSynchronize(stream)); // SYNCSPY-PROBLEM: waits for the contribution pass every iteration, only to add 8192 partials on the host
		unsigned long long dangling = 0;
		for (int b = 0; b < BLOCKS; b++)
			dangling += h_partial[b];
		dangling_log[it] = dangling;
		pr_update<<<BLOCKS, THREADS, 0, stream>>>(d_row, d_src, d_contrib, dangling, d_rank[cur ^ 1]);
		CHECK_LAUNCH();
		cur ^= 1;
	}
	CHECK(cudaStreamSynchronize(stream)); // SYNCSPY-CLEAN: the final wait
	unsigned long long *rank = (unsigned long long *)malloc(2 * (size_t)N * sizeof(unsigned long long));
	unsigned long long *prev = rank + N;
	CHECK(cudaMemcpy(rank, d_rank[cur], N * sizeof(unsigned long long), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the ranks
	CHECK(cudaMemcpy(prev, d_rank[cur ^ 1], N * sizeof(unsigned long long), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the previous ranks, for the check

	/* the checks: the mass, the last dangling total, sampled pages' last update */
	unsigned *outdeg = (unsigned *)calloc(N, sizeof(unsigned));
	for (unsigned v = 0; v < N; v++)
		for (unsigned k = 0; k < in_degree(v); k++)
			outdeg[link_source(v, k)]++;
	unsigned long long mass = 0, dangling = 0, checksum = 14695981039346656037ull;
	unsigned top = 0, dangling_pages = 0;
	for (unsigned v = 0; v < N; v++) {
		mass += rank[v];
		if (rank[v] > rank[top])
			top = v;
		if (!outdeg[v])
			dangling += prev[v], dangling_pages++;
		checksum = (checksum ^ rank[v]) * 1099511628211ull;
	}
	long long drift = (long long)(mass - RANK_ONE);
	if (drift < -(long long)(RANK_ONE / 1000) || drift > (long long)(RANK_ONE / 1000))
		fail(name, "rank mass drift", drift, 0);
	if (dangling != dangling_log[ITERS - 1])
		fail(name, "last dangling total", (long long)dangling_log[ITERS - 1], (long long)dangling);
	for (int q = 0; q < SAMPLES; q++) {
		unsigned v = mix32((uint32_t)q * 7919u + 3u) % N;
		unsigned long long sum = 0;
		for (unsigned k = 0; k < in_degree(v); k++) {
			unsigned s = link_source(v, k);
			sum += prev[s] / outdeg[s];
		}
		unsigned long long want = TELEPORT + sum * 85 / 100 + ((dangling * 85 / 100) >> LOG2N);
		if (rank[v] != want)
			fail(name, "sampled page rank", (long long)rank[v], (long long)want);
	}
	for (int it = 0; it < ITERS; it++)
		checksum = (checksum ^ dangling_log[it]) * 1099511628211ull;

	CHECK(cudaFree(d_row)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_src)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_outdeg)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_rank[0])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_contrib)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_partial)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_partial)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(stream));
	printf("%s: pages=%d links=%u iterations=%d dangling_pages=%u top=%u top_rank=%llu checksum=%016llx result=OK\n", name,
	       N, links, ITERS, dangling_pages, top, rank[top], checksum);
	free(h_row);
	free(rank);
	free(outdeg);
	return 0;
}
