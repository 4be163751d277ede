/*
 * examples/corpus/c21_stream_sync_each_merge.cu: corpus workload (CUDA C). A sharded scoring
 * pass: each step the batch is split over four worker streams, each scoring its shard; a merge
 * kernel on the main stream takes, per candidate slot, the best score over the shards and a fold
 * adds the candidates into a running total. Before the merge the host calls
 * cudaStreamSynchronize on each worker stream in turn, where an event recorded on each worker
 * and a cudaStreamWaitEvent on the main stream would order the merge without the host waiting:
 * the host blocks until the slowest shard is done and can never queue the next step ahead.
 * The candidate buffer grows on demand (grow-only: it is reallocated in the first steps only,
 * until it reaches the largest size the batches ask for).
 * Planted: the cudaStreamSynchronize of every worker stream, every step.
 * Clean: the grow-only reallocation of the candidate buffer (a wait, a free and an allocation
 * in steps 1-3 only; the first allocation in step 0), the setup allocations and upload, the
 * final read, teardown.
 */
#include "corpus.h"

enum { STEPS = 60, N = 1 << 22, SHARDS = 4, SHARD = N / SHARDS, THREADS = 256, UNIT = 1 << 18, ROUNDS = 96 };

__global__ void score_shard(const uint32_t *items, uint32_t *score, int n, int step, int shard)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t h = items[i] ^ ((uint32_t)step * 0x9e3779b9u) ^ ((uint32_t)shard << 28);
	for (int r = 0; r < ROUNDS; r++)
		h = (h ^ (h >> 13)) * 1274126177u + (uint32_t)r;
	score[i] = h >> 8;
}

/* cand[j] = the best score of slot j over the shards (slot j of every shard) */
__global__ void merge_shards(const uint32_t *score, int shard_len, uint32_t *cand, int m)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= m)
		return;
	uint32_t best = 0;
	for (int k = 0; k < SHARDS; k++)
		best = max(best, score[(size_t)k * shard_len + j]);
	cand[j] = best;
}

__global__ void fold(const uint32_t *cand, int m, unsigned long long *acc)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x)
		s += cand[j] >> 4;
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

int main(void)
{
	uint32_t *items = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	uint32_t *d_items, *d_score, *d_cand = NULL;
	unsigned long long *d_acc, *h_acc;
	cudaStream_t work[SHARDS], main_s;
	cudaEvent_t merged;
	int cap = 0;

	for (int i = 0; i < N; i++)
		items[i] = (uint32_t)i * 747796405u + 2891336453u;
	for (int k = 0; k < SHARDS; k++)
		CHECK(cudaStreamCreateWithFlags(&work[k], cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&main_s, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&merged, cudaEventDisableTiming));
	CHECK(cudaMalloc(&d_items, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_score, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_acc, sizeof *d_acc)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_acc, sizeof *h_acc)); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMemcpyAsync(d_items, items, (size_t)N * sizeof(uint32_t), cudaMemcpyHostToDevice, main_s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	CHECK(cudaMemsetAsync(d_acc, 0, sizeof *d_acc, main_s));
	CHECK(cudaEventRecord(merged, main_s));
	for (int k = 0; k < SHARDS; k++)
		CHECK(cudaStreamWaitEvent(work[k], merged, 0));

	for (int step = 0; step < STEPS; step++) {
		for (int k = 0; k < SHARDS; k++)
			score_shard<<<SHARD / THREADS, THREADS, 0, work[k]>>>(d_items + (size_t)k * SHARD, d_score + (size_t)k * SHARD, SHARD, step, k);
		CHECK_LAUNCH();
		for (int k = 0; k < SHARDS; k++)
			CHECK(cudaStreamSynchronize(work[k])); // SYNCSPY-PROBLEM: host waits for each shard in turn; events would order the merge
		int need = UNIT * (1 + step % 4);
		if (need > cap) {
			if (d_cand) {
				CHECK(cudaStreamSynchronize(main_s)); // SYNCSPY-CLEAN: grow-only buffer, steps 1-3 only
				CHECK(cudaFree(d_cand)); // SYNCSPY-CLEAN: grow-only buffer, steps 1-3 only
			}
			CHECK(cudaMalloc(&d_cand, (size_t)need * sizeof(uint32_t))); // SYNCSPY-CLEAN: grow-only buffer, steps 0-3 only
			cap = need;
		}
		merge_shards<<<need / THREADS, THREADS, 0, main_s>>>(d_score, SHARD, d_cand, need);
		fold<<<128, THREADS, 0, main_s>>>(d_cand, need, d_acc);
		CHECK_LAUNCH();
		/* the next step's shards overwrite the scores only after the merge has read them */
		CHECK(cudaEventRecord(merged, main_s));
		for (int k = 0; k < SHARDS; k++)
			CHECK(cudaStreamWaitEvent(work[k], merged, 0));
	}

	CHECK(cudaMemcpyAsync(h_acc, d_acc, sizeof *h_acc, cudaMemcpyDeviceToHost, main_s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(main_s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = *h_acc;
	CHECK(cudaFree(d_items)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_score)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cand)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_acc)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < SHARDS; k++)
		CHECK(cudaStreamDestroy(work[k]));
	CHECK(cudaStreamDestroy(main_s));
	CHECK(cudaEventDestroy(merged));
	free(items);
	corpus_result("c21_stream_sync_each_merge", STEPS, checksum);
	return 0;
}
