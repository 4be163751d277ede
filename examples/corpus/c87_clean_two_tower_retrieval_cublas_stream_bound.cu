/*
 * examples/corpus/c87_clean_two_tower_retrieval_cublas_stream_bound.cu: corpus workload (CUDA C +
 * cuBLAS), clean. Candidate retrieval for a two-tower recommender, the fix of c81: the item
 * tower's embeddings of a 262144-item catalogue (128 dimensions) sit in pinned host memory in four
 * shards of 32 MB, and every batch of 2048 users (the user tower's embeddings, computed on the
 * GPU) is scored against the four shards in turn. Each step streams the next shard up on an
 * upload stream into one of two device buffers while the current shard is scored on the compute
 * stream (a cublasSgemm for the 65536 x 2048 score block, a top-1 kernel merging the shard's best
 * item per user into a running best); after the last shard the batch's answers are copied into
 * one of two pinned reply buffers on a reply stream, and the host serves batch b-1 while batch b
 * runs. Here the cuBLAS handle is bound to the compute stream with cublasSetStream before the
 * workspace is given to it (cuBLAS's documentation: cublasSetStream sets the stream used by all
 * subsequent calls, and resets a user workspace, so cublasSetWorkspace comes after it), so the
 * GEMM is ordered with the rest of the step by the compute stream and the events alone, and the
 * shard upload overlaps the GEMM and the top-1 scan of the shard before it. The streams are still
 * blocking (cudaStreamCreate): nothing runs on the legacy default stream in the loop.
 * Clean: cublasCreate, the workspace and the setup allocations, the catalogue staged once in
 * pinned memory, the pinned shard uploads on the upload stream (the double buffer's waits are
 * stream waits on events), the batch answers copied into a pinned reply buffer on the reply stream
 * and waited for one batch behind, the last batch's wait after the loop, teardown.
 * Scores are integers (embedding entries in -3..3) held in floats, exact in any summation order.
 */
// CORPUS-LDLIBS: -lcublas
#include "corpus.h"

#include <cublas_v2.h>

enum { BATCHES = 16, SHARDS = 4, STEPS = BATCHES * SHARDS, SHARD_ITEMS = 1 << 16, DIM = 128, USERS = 2048, THREADS = 256 };

#define WORKSPACE_BYTES ((size_t)32 << 20)
#define NO_SCORE (-0x7fffffff - 1)

#define CHECK_BLAS(call)                                                                           \
	do {                                                                                       \
		cublasStatus_t check_blas_ = (call);                                               \
		if (check_blas_ != CUBLAS_STATUS_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_blas_);                                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the two towers' outputs, quantized to -3..3 */
__host__ __device__ static inline int item_value(uint32_t item, int k) { return (int)(mix32(item * 131u + (uint32_t)k * 7919u + 17u) % 7u) - 3; }
__host__ __device__ static inline int user_value(int batch, int u, int k)
{
	return (int)(mix32(((uint32_t)batch * USERS + (uint32_t)u) * 257u + (uint32_t)k + 0x5bd1e995u) % 7u) - 3;
}

/* U is DIM x USERS, column-major (one user's embedding contiguous) */
__global__ void user_tower(int batch, float *U)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < USERS * DIM)
		U[i] = (float)user_value(batch, i / DIM, i % DIM);
}

/* S is SHARD_ITEMS x USERS, column-major: block u scans user u's scores */
__global__ void top1_merge(const float *S, int shard, int *best_score, int *best_item, int *answer)
{
	__shared__ int s_score[THREADS], s_item[THREADS];
	int u = blockIdx.x, t = threadIdx.x;
	const float *col = S + (size_t)u * SHARD_ITEMS;
	int bs = NO_SCORE, bi = 0;
	for (int i = t; i < SHARD_ITEMS; i += THREADS) {
		int s = (int)col[i];
		if (s > bs) {
			bs = s;
			bi = i;
		}
	}
	s_score[t] = bs;
	s_item[t] = bi;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (t < w && (s_score[t + w] > s_score[t] || (s_score[t + w] == s_score[t] && s_item[t + w] < s_item[t]))) {
			s_score[t] = s_score[t + w];
			s_item[t] = s_item[t + w];
		}
		__syncthreads();
	}
	if (t == 0) {
		if (shard == 0 || s_score[0] > best_score[u]) {
			best_score[u] = s_score[0];
			best_item[u] = shard * SHARD_ITEMS + s_item[0];
		}
		if (answer) {
			answer[2 * u] = best_item[u];
			answer[2 * u + 1] = best_score[u];
		}
	}
}

struct retriever {
	cublasHandle_t blas;
	cudaStream_t up, compute, reply;
	float *h_catalogue;                /* pinned, SHARDS x SHARD_ITEMS x DIM */
	float *d_items[2], *d_users, *d_scores;
	int *d_best_score, *d_best_item, *d_answer[2], *h_answer[2];
	void *d_workspace;
	cudaEvent_t uploaded[2], consumed[2], ranked[2], delivered[2];
};

/* --- the retrieval pipeline ---------------------------------------------------------------- */

static void upload_shard(struct retriever *r, int step)
{
	int b = step % 2;
	if (step >= 2)
		CHECK(cudaStreamWaitEvent(r->up, r->consumed[b], 0));
	const float *src = r->h_catalogue + (size_t)(step % SHARDS) * SHARD_ITEMS * DIM;
	CHECK(cudaMemcpyAsync(r->d_items[b], src, (size_t)SHARD_ITEMS * DIM * sizeof(float), cudaMemcpyHostToDevice, r->up)); // SYNCSPY-CLEAN: the next shard, async from the pinned catalogue on the upload stream
	CHECK(cudaEventRecord(r->uploaded[b], r->up));
}

static void score_shard(struct retriever *r, int b)
{
	const float one = 1.0f, zero = 0.0f;
	/* scores = items^T * users: (SHARD_ITEMS x DIM) * (DIM x USERS) */
	CHECK_BLAS(cublasSgemm(r->blas, CUBLAS_OP_T, CUBLAS_OP_N, SHARD_ITEMS, USERS, DIM, &one, r->d_items[b], DIM, r->d_users, DIM, &zero, r->d_scores, SHARD_ITEMS));
}

static void retrieve_step(struct retriever *r, int step)
{
	int b = step % 2, shard = step % SHARDS, batch = step / SHARDS, slot = batch % 2;
	if (step + 1 < STEPS)
		upload_shard(r, step + 1);
	CHECK(cudaStreamWaitEvent(r->compute, r->uploaded[b], 0));
	if (shard == 0) {
		user_tower<<<USERS * DIM / THREADS, THREADS, 0, r->compute>>>(batch, r->d_users);
		CHECK_LAUNCH();
	}
	score_shard(r, b);
	CHECK(cudaEventRecord(r->consumed[b], r->compute));
	int last = shard == SHARDS - 1;
	if (last && batch >= 2)
		CHECK(cudaStreamWaitEvent(r->compute, r->delivered[slot], 0));
	top1_merge<<<USERS, THREADS, 0, r->compute>>>(r->d_scores, shard, r->d_best_score, r->d_best_item, last ? r->d_answer[slot] : NULL);
	CHECK_LAUNCH();
	if (last) {
		CHECK(cudaEventRecord(r->ranked[slot], r->compute));
		CHECK(cudaStreamWaitEvent(r->reply, r->ranked[slot], 0));
		CHECK(cudaMemcpyAsync(r->h_answer[slot], r->d_answer[slot], 2 * USERS * sizeof(int), cudaMemcpyDeviceToHost, r->reply)); // SYNCSPY-CLEAN: the batch's answers, into a pinned reply buffer on the reply stream
		CHECK(cudaEventRecord(r->delivered[slot], r->reply));
	}
}

/* the front end sends a batch's answers (here: kept for the check) */
static void serve_batch(struct retriever *r, int batch, int *served)
{
	CHECK(cudaEventSynchronize(r->delivered[batch % 2])); // SYNCSPY-CLEAN: one batch behind: batch b-1's answers while batch b runs
	for (int i = 0; i < 2 * USERS; i++)
		served[(size_t)batch * 2 * USERS + i] = r->h_answer[batch % 2][i];
}

static void reference_top1(const float *catalogue, int batch, int u, int *score, int *item)
{
	float user[DIM];
	for (int k = 0; k < DIM; k++)
		user[k] = (float)user_value(batch, u, k);
	int bs = NO_SCORE, bi = 0;
	for (int i = 0; i < SHARDS * SHARD_ITEMS; i++) {
		const float *e = catalogue + (size_t)i * DIM;
		float acc = 0.0f; /* integer products and sums below 2^24: exact */
		for (int k = 0; k < DIM; k++)
			acc += e[k] * user[k];
		int s = (int)acc;
		if (s > bs) {
			bs = s;
			bi = i;
		}
	}
	*score = bs;
	*item = bi;
}

int main(void)
{
	const char *name = "c87_clean_two_tower_retrieval_cublas_stream_bound";
	struct retriever r;
	const size_t catalogue_floats = (size_t)SHARDS * SHARD_ITEMS * DIM;
	int *served = (int *)malloc((size_t)BATCHES * 2 * USERS * sizeof(int));

	CHECK(cudaStreamCreate(&r.up));
	CHECK(cudaStreamCreate(&r.compute));
	CHECK(cudaStreamCreate(&r.reply));
	CHECK_BLAS(cublasCreate(&r.blas)); // SYNCSPY-CLEAN: setup, the library's handle
	CHECK(cudaMalloc(&r.d_workspace, WORKSPACE_BYTES)); // SYNCSPY-CLEAN: setup allocation, cuBLAS's workspace
	CHECK_BLAS(cublasSetStream(r.blas, r.compute)); /* every cuBLAS call of the handle on the compute stream */
	CHECK_BLAS(cublasSetWorkspace(r.blas, r.d_workspace, WORKSPACE_BYTES));
	CHECK(cudaMallocHost(&r.h_catalogue, catalogue_floats * sizeof(float))); // SYNCSPY-CLEAN: setup, the pinned catalogue
	for (size_t i = 0; i < catalogue_floats; i++)
		r.h_catalogue[i] = (float)item_value((uint32_t)(i / DIM), (int)(i % DIM));
	for (int b = 0; b < 2; b++) {
		CHECK(cudaMalloc(&r.d_items[b], (size_t)SHARD_ITEMS * DIM * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&r.d_answer[b], 2 * USERS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&r.h_answer[b], 2 * USERS * sizeof(int))); // SYNCSPY-CLEAN: setup pinned reply buffer
		CHECK(cudaEventCreateWithFlags(&r.uploaded[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&r.consumed[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&r.ranked[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&r.delivered[b], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&r.d_users, (size_t)USERS * DIM * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&r.d_scores, (size_t)SHARD_ITEMS * USERS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&r.d_best_score, USERS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&r.d_best_item, USERS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation

	upload_shard(&r, 0);
	for (int step = 0; step < STEPS; step++) {
		retrieve_step(&r, step);
		if (step % SHARDS == SHARDS - 1 && step >= SHARDS)
			serve_batch(&r, step / SHARDS - 1, served);
	}
	serve_batch(&r, BATCHES - 1, served); /* the last batch, after the loop */

	unsigned long long checksum = 0;
	for (int i = 0; i < BATCHES * 2 * USERS; i++)
		checksum = checksum * 1000003u + (unsigned long long)(uint32_t)served[i];
	const int probes[][2] = {{0, 0}, {0, 1777}, {5, 42}, {9, 1023}, {15, 2047}};
	for (int p = 0; p < 5; p++) {
		int batch = probes[p][0], u = probes[p][1], score, item;
		reference_top1(r.h_catalogue, batch, u, &score, &item);
		corpus_expect(name, "best item", served[(size_t)batch * 2 * USERS + 2 * u], item);
		corpus_expect(name, "best score", served[(size_t)batch * 2 * USERS + 2 * u + 1], score);
	}

	CHECK(cudaStreamSynchronize(r.compute)); // SYNCSPY-CLEAN: teardown, the compute stream drained before the buffers go
	CHECK_BLAS(cublasDestroy(r.blas)); // SYNCSPY-CLEAN: teardown
	for (int b = 0; b < 2; b++) {
		CHECK(cudaFree(r.d_items[b])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(r.d_answer[b])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(r.h_answer[b])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(r.uploaded[b]));
		CHECK(cudaEventDestroy(r.consumed[b]));
		CHECK(cudaEventDestroy(r.ranked[b]));
		CHECK(cudaEventDestroy(r.delivered[b]));
	}
	CHECK(cudaFree(r.d_users)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(r.d_scores)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(r.d_best_score)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(r.d_best_item)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(r.d_workspace)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(r.h_catalogue)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(r.up));
	CHECK(cudaStreamDestroy(r.compute));
	CHECK(cudaStreamDestroy(r.reply));
	free(served);
	corpus_result(name, STEPS, checksum);
	return 0;
}
