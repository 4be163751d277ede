/*
 * examples/corpus/c47_rpc_default_pool_release.cu: corpus workload (CUDA C). A scoring service
 * driven by an interactive client: each request carries a query, the server expands it into a
 * candidate table in scratch memory, scores the candidates and replies with the score; the
 * client builds its next query from that reply, so the server must finish each request before
 * the next one exists (the one wait per request is the protocol, not a choice). The request
 * handler takes its 8 MB scratch table from the stream-ordered allocator, cudaMallocAsync and
 * cudaFreeAsync on the server stream, from the device's default memory pool, whose release
 * threshold was never raised: the default is 0, and the pool then gives its unused memory back
 * to the OS at every stream, event or device synchronization (CUDA runtime docs,
 * cudaMemPoolAttrReleaseThreshold). The handler's own per-request synchronization therefore
 * empties the pool, and every request's cudaMallocAsync has to map fresh memory again, where
 * cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold) once at start-up (or one scratch
 * buffer kept by the server) would serve it from memory the pool kept.
 * Planted: the cudaMallocAsync of the scratch table in server_handle(), every request.
 * Clean: the per-request stream-ordered cudaFreeAsync, the query upload and the reply
 * download from pinned memory, the per-request cudaStreamSynchronize that the reply needs, the
 * setup allocations, teardown.
 */
#include "corpus.h"

#include <string.h>

enum { REQUESTS = 60, CANDIDATES = 1 << 21, QUERY = 64, THREADS = 256 };

__host__ __device__ static inline uint32_t candidate(const uint32_t *query, int i)
{
	return query[i % QUERY] * 2654435761u ^ (uint32_t)i;
}

__host__ __device__ static inline uint32_t candidate_score(uint32_t c)
{
	c = (c ^ (c >> 16)) * 0x7feb352du;
	c = (c ^ (c >> 15)) * 0x846ca68bu;
	return (c ^ (c >> 16)) >> 20;
}

__global__ void expand_query(const uint32_t *query, uint32_t *cand, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		cand[i] = candidate(query, i);
}

__global__ void score_candidates(const uint32_t *cand, int n, unsigned long long *reply)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += candidate_score(cand[i]);
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(reply, t);
	}
}

/* --- the server -------------------------------------------------------------------------- */

struct scoring_server {
	cudaStream_t s;
	uint32_t *d_query, *h_query;           /* h_query pinned */
	unsigned long long *d_reply, *h_reply; /* h_reply pinned */
	int served;
};

static void server_init(struct scoring_server *sv)
{
	CHECK(cudaStreamCreateWithFlags(&sv->s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&sv->d_query, QUERY * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&sv->d_reply, sizeof *sv->d_reply)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&sv->h_query, QUERY * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMallocHost(&sv->h_reply, sizeof *sv->h_reply)); // SYNCSPY-CLEAN: setup pinned allocation
	sv->served = 0;
}

/* one request: query in, score out */
static unsigned long long server_handle(struct scoring_server *sv, const uint32_t *query)
{
	uint32_t *cand;
	memcpy(sv->h_query, query, QUERY * sizeof(uint32_t));
	CHECK(cudaMallocAsync(&cand, CANDIDATES * sizeof(uint32_t), sv->s)); // SYNCSPY-PROBLEM: default pool, release threshold 0: emptied at the last request's sync, so the scratch is mapped anew every request
	CHECK(cudaMemcpyAsync(sv->d_query, sv->h_query, QUERY * sizeof(uint32_t), cudaMemcpyHostToDevice, sv->s)); // SYNCSPY-CLEAN: async upload from pinned memory
	CHECK(cudaMemsetAsync(sv->d_reply, 0, sizeof *sv->d_reply, sv->s));
	expand_query<<<CANDIDATES / THREADS, THREADS, 0, sv->s>>>(sv->d_query, cand, CANDIDATES);
	score_candidates<<<512, THREADS, 0, sv->s>>>(cand, CANDIDATES, sv->d_reply);
	CHECK_LAUNCH();
	CHECK(cudaFreeAsync(cand, sv->s)); // SYNCSPY-CLEAN: stream-ordered free, no wait
	CHECK(cudaMemcpyAsync(sv->h_reply, sv->d_reply, sizeof *sv->h_reply, cudaMemcpyDeviceToHost, sv->s)); // SYNCSPY-CLEAN: async download into pinned memory
	CHECK(cudaStreamSynchronize(sv->s)); // SYNCSPY-CLEAN: the reply is the client's next input: one wait per request is the protocol
	sv->served++;
	return *sv->h_reply;
}

static void server_teardown(struct scoring_server *sv)
{
	CHECK(cudaFree(sv->d_query)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(sv->d_reply)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(sv->h_query)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(sv->h_reply)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(sv->s));
}

/* --- the client -------------------------------------------------------------------------- */

static void client_next_query(uint32_t *query, unsigned long long last_reply, int request)
{
	uint64_t h = last_reply * 6364136223846793005ull + (uint64_t)request * 1442695040888963407ull;
	for (int j = 0; j < QUERY; j++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		query[j] = (uint32_t)(h >> 32);
	}
}

static unsigned long long reference_reply(const uint32_t *query)
{
	unsigned long long s = 0;
	for (int i = 0; i < CANDIDATES; i++)
		s += candidate_score(candidate(query, i));
	return s;
}

int main(void)
{
	const char *name = "c47_rpc_default_pool_release";
	struct scoring_server sv;
	uint32_t query[QUERY];
	unsigned long long replies[REQUESTS], reply = 0;

	server_init(&sv);
	for (int request = 0; request < REQUESTS; request++) {
		client_next_query(query, reply, request);
		reply = server_handle(&sv, query);
		replies[request] = reply;
	}
	server_teardown(&sv);

	/* replay the session on the host */
	unsigned long long checksum = 0, want = 0;
	for (int request = 0; request < REQUESTS; request++) {
		client_next_query(query, want, request);
		want = reference_reply(query);
		corpus_expect(name, "reply", (long long)replies[request], (long long)want);
		checksum = checksum * 1000003u + replies[request];
	}
	corpus_result(name, sv.served, checksum);
	return 0;
}
