/*
 * examples/corpus/c54_vector_async_upload.cu: corpus workload (CUDA C++). A batch scoring
 * server: each request is a batch of 64 token sequences that the tokenizer returns as a
 * std::vector<uint32_t>; the server uploads it with cudaMemcpyAsync on its stream, a scoring
 * kernel reduces every sequence to one score, the scores go back into a pinned reply ring with
 * cudaMemcpyAsync, and the host replies to the previous request (waiting on its event) while
 * the current one runs. The pipeline only overlaps if the upload returns at once, but its
 * source is the vector's heap storage: pageable memory. For transfers between device memory and
 * pageable host memory, cudaMemcpyAsync "might be synchronous with respect to host" (CUDA
 * runtime docs, "API synchronization behavior"): the driver stages the data through its own
 * pinned buffer and may wait for the stream first, so the host stalls on the previous request's
 * kernel every request. Tokenizing into a pinned buffer (cudaMallocHost, or cudaHostRegister of
 * the vector's storage once) would keep the upload asynchronous.
 * Planted: the cudaMemcpyAsync from the std::vector in upload_request(), every request.
 * Clean: the download of the scores into the pinned reply ring, the ring's cudaEventSynchronize
 * on the previous request (the reply needs it), the setup allocations, the final sync, teardown.
 */
#include "corpus.h"

#include <vector>

enum { REQUESTS = 60, SEQS = 64, SEQ_LEN = 2048, THREADS = 256, RING = 2 };

__host__ __device__ static inline uint32_t token_logit(uint32_t tok, int pos)
{
	uint32_t h = tok * 0x9e3779b9u + (uint32_t)pos * 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	return (h ^ (h >> 16)) & 0xfffu;
}

/* one block per sequence */
__global__ void score_sequences(const uint32_t *tokens, uint32_t *scores)
{
	__shared__ uint32_t sh[THREADS];
	const uint32_t *seq = tokens + (size_t)blockIdx.x * SEQ_LEN;
	uint32_t s = 0;
	for (int p = threadIdx.x; p < SEQ_LEN; p += THREADS)
		s += token_logit(seq[p], p);
	sh[threadIdx.x] = s;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		scores[blockIdx.x] = sh[0];
}

/* the tokenizer: a request's batch, as the text front end returns it */
static std::vector<uint32_t> tokenize(int request)
{
	std::vector<uint32_t> ids((size_t)SEQS * SEQ_LEN);
	for (size_t i = 0; i < ids.size(); i++) {
		uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)request * 40503u;
		ids[i] = (h ^ (h >> 11)) % 50257u;
	}
	return ids;
}

struct server {
	cudaStream_t stream;
	uint32_t *d_tokens, *d_scores;
	uint32_t *h_reply; /* pinned, RING x SEQS */
	cudaEvent_t done[RING];
};

/* --- request path --------------------------------------------------------------------------- */

static void upload_request(struct server *sv, const std::vector<uint32_t> &ids)
{
	CHECK(cudaMemcpyAsync(sv->d_tokens, ids.data(), ids.size() * sizeof(uint32_t), cudaMemcpyHostToDevice, sv->stream)); // SYNCSPY-PROBLEM: async copy from a pageable std::vector, every request
}

static void run_request(struct server *sv, int request)
{
	int slot = request % RING;
	score_sequences<<<SEQS, THREADS, 0, sv->stream>>>(sv->d_tokens, sv->d_scores);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(sv->h_reply + slot * SEQS, sv->d_scores, SEQS * sizeof(uint32_t), cudaMemcpyDeviceToHost, sv->stream)); // SYNCSPY-CLEAN: async download into the pinned reply ring
	CHECK(cudaEventRecord(sv->done[slot], sv->stream));
}

static unsigned long long reply(struct server *sv, int request, const std::vector<uint32_t> &ids)
{
	int slot = request % RING;
	unsigned long long digest = 0;
	CHECK(cudaEventSynchronize(sv->done[slot])); // SYNCSPY-CLEAN: the reply needs this request's scores; the next request is already queued
	for (int s = 0; s < SEQS; s++) {
		uint32_t want = 0;
		for (int p = 0; p < SEQ_LEN; p++)
			want += token_logit(ids[(size_t)s * SEQ_LEN + p], p);
		corpus_expect("c54_vector_async_upload", "score", sv->h_reply[slot * SEQS + s], want);
		digest = digest * 1000003u + want;
	}
	return digest;
}

int main(void)
{
	const char *name = "c54_vector_async_upload";
	struct server sv;
	unsigned long long checksum = 0;
	std::vector<uint32_t> prev;

	CHECK(cudaStreamCreateWithFlags(&sv.stream, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&sv.d_tokens, (size_t)SEQS * SEQ_LEN * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&sv.d_scores, SEQS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&sv.h_reply, RING * SEQS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	for (int k = 0; k < RING; k++)
		CHECK(cudaEventCreateWithFlags(&sv.done[k], cudaEventDisableTiming));

	for (int request = 0; request < REQUESTS; request++) {
		std::vector<uint32_t> ids = tokenize(request);
		upload_request(&sv, ids);
		run_request(&sv, request);
		if (request > 0)
			checksum = checksum * 31u + reply(&sv, request - 1, prev);
		prev.swap(ids);
	}
	checksum = checksum * 31u + reply(&sv, REQUESTS - 1, prev);

	CHECK(cudaStreamSynchronize(sv.stream)); // SYNCSPY-CLEAN: final sync at shutdown
	for (int k = 0; k < RING; k++)
		CHECK(cudaEventDestroy(sv.done[k]));
	CHECK(cudaFreeHost(sv.h_reply)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(sv.d_tokens)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(sv.d_scores)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(sv.stream));
	corpus_result(name, REQUESTS, checksum);
	return 0;
}
