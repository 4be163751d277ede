/*
 * examples/corpus/c55_managed_alloc_per_query.cu: corpus workload (CUDA C, managed memory). A
 * nearest-neighbour lookup service over a point cloud kept on the device: every query a kernel
 * computes each block's nearest point into a per-block result array, and the host finishes the
 * reduction and answers. The result array is allocated per query with cudaMallocManaged in
 * query_results_alloc() (so that the host can read it without an explicit copy) and freed with
 * cudaFree in query_results_free() once the answer is out. A managed allocation maps new pages
 * for the device and the host every query, and cudaFree synchronizes the device (CUDA
 * programming guide, implicit synchronization: a device memory allocation or free between two
 * commands; runtime API reference: cudaFree performs an implicit device synchronization); one
 * managed array allocated at startup and reused would serve every query.
 * Planted: the cudaMallocManaged in query_results_alloc() and the cudaFree in
 * query_results_free(), every query.
 * Clean: the per-query cudaStreamSynchronize before the host reads the results (the answer needs
 * them), the setup allocation and upload, teardown.
 */
#include "corpus.h"

enum { QUERIES = 50, NP = 1 << 20, THREADS = 256, BLOCKS = NP / THREADS, SPAN = 1 << 16 };

struct point {
	int x, y, z;
};

__host__ __device__ static inline unsigned long long key(struct point p, struct point q, int idx)
{
	long long dx = p.x - q.x, dy = p.y - q.y, dz = p.z - q.z;
	return ((unsigned long long)(dx * dx + dy * dy + dz * dz) << 20) | (unsigned long long)idx;
}

__global__ void nearest_per_block(const struct point *pts, struct point q, unsigned long long *best)
{
	__shared__ unsigned long long sh[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	sh[threadIdx.x] = key(pts[i], q, i);
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w && sh[threadIdx.x + w] < sh[threadIdx.x])
			sh[threadIdx.x] = sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		best[blockIdx.x] = sh[0];
}

static struct point cloud_point(int i)
{
	uint32_t h = (uint32_t)i * 2654435761u;
	struct point p;
	p.x = (int)(h % SPAN);
	p.y = (int)((h >> 7) * 40503u % SPAN);
	p.z = (int)((h ^ (h >> 13)) * 0x5bd1e995u % SPAN);
	return p;
}

static struct point query_point(int k)
{
	struct point q;
	q.x = (k * 7919) % SPAN;
	q.y = (k * 104729) % SPAN;
	q.z = (k * 1299709) % SPAN;
	return q;
}

/* --- the per-query result array ----------------------------------------------------------- */

static unsigned long long *query_results_alloc(void)
{
	unsigned long long *r;
	CHECK(cudaMallocManaged(&r, BLOCKS * sizeof(unsigned long long))); // SYNCSPY-PROBLEM: a managed allocation every query
	return r;
}

static void query_results_free(unsigned long long *r)
{
	CHECK(cudaFree(r)); // SYNCSPY-PROBLEM: freed every query (cudaFree synchronizes the device)
}

static int answer_query(const struct point *d_pts, cudaStream_t s, struct point q)
{
	unsigned long long *best = query_results_alloc();
	nearest_per_block<<<BLOCKS, THREADS, 0, s>>>(d_pts, q, best);
	CHECK_LAUNCH();
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: the answer needs the per-block results
	unsigned long long m = best[0];
	for (int b = 1; b < BLOCKS; b++)
		if (best[b] < m)
			m = best[b];
	query_results_free(best);
	return (int)(m & ((1u << 20) - 1));
}

int main(void)
{
	const char *name = "c55_managed_alloc_per_query";
	struct point *h_pts = (struct point *)malloc((size_t)NP * sizeof(struct point));
	struct point *d_pts;
	cudaStream_t s;
	int answers[QUERIES];

	for (int i = 0; i < NP; i++)
		h_pts[i] = cloud_point(i);
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_pts, (size_t)NP * sizeof(struct point))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_pts, h_pts, (size_t)NP * sizeof(struct point), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the cloud

	for (int k = 0; k < QUERIES; k++)
		answers[k] = answer_query(d_pts, s, query_point(k));

	CHECK(cudaFree(d_pts)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));

	unsigned long long checksum = 0;
	for (int k = 0; k < QUERIES; k++) {
		struct point q = query_point(k);
		unsigned long long m = ~0ull;
		for (int i = 0; i < NP; i++) {
			unsigned long long kk = key(h_pts[i], q, i);
			if (kk < m)
				m = kk;
		}
		corpus_expect(name, "nearest point", answers[k], (long long)(m & ((1u << 20) - 1)));
		checksum = checksum * 1000003u + (unsigned long long)answers[k];
	}
	free(h_pts);
	corpus_result(name, QUERIES, checksum);
	return 0;
}
