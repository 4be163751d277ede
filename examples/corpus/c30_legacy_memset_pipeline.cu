/*
 * examples/corpus/c30_legacy_memset_pipeline.cu: corpus workload (CUDA C). A log-analytics
 * pipeline: batches of hashed record keys are uploaded from pinned memory on an upload stream
 * while the compute stream bins the previous batch into a histogram and folds the histogram
 * into running totals; events hand each device slot back and forth, so the upload of batch k+1
 * is meant to overlap the binning of batch k. Both streams are made with cudaStreamCreate
 * (blocking streams), and the histogram is cleared each step with plain cudaMemset: a memset
 * of device memory does not make the host wait, but it runs on the legacy default stream,
 * which waits for all work queued on every blocking stream and holds them until it is done.
 * Every step the clear joins the upload and the compute stream, and the overlap the events
 * were set up for never happens. cudaMemsetAsync on the compute stream is the fix.
 * Planted: the per-step cudaMemset of the histogram (legacy default stream).
 * Clean: setup allocations (pinned batches included) and the first upload, the per-step
 * upload of the next batch (pinned memory, its own stream), the final read, teardown.
 */
#include "corpus.h"

enum { STEPS = 60, BATCH = 1 << 18, BINS = 4096, THREADS = 256, ROUNDS = 1536 };

__global__ void rehash(const uint32_t *raw, uint32_t *keys, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t h = raw[i] ^ ((uint32_t)step * 0x27d4eb2fu);
	for (int r = 0; r < ROUNDS; r++)
		h = (h ^ (h >> 16)) * 0x45d9f3bu + (uint32_t)r;
	keys[i] = h;
}

__global__ void bin(const uint32_t *keys, int n, unsigned int *hist)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		atomicAdd(&hist[keys[i] % BINS], 1u);
}

/* totals: the number of heavy bins and a position-weighted sum of the counts. */
__global__ void fold(const unsigned int *hist, unsigned long long *totals)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b >= BINS)
		return;
	unsigned int c = hist[b];
	if (c > BATCH / BINS + 8)
		atomicAdd(&totals[0], 1ull);
	atomicAdd(&totals[1], (unsigned long long)c * (unsigned long long)(b + 1));
}

int main(void)
{
	uint32_t *h_batches, *d_slot[2], *d_keys;
	unsigned int *d_hist;
	unsigned long long *d_totals, h_totals[2];
	cudaStream_t upload, compute;
	cudaEvent_t uploaded[2], consumed[2];
	const size_t batch_bytes = BATCH * sizeof(uint32_t);

	CHECK(cudaStreamCreate(&upload));
	CHECK(cudaStreamCreate(&compute));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[k], cudaEventDisableTiming));
		CHECK(cudaMalloc(&d_slot[k], batch_bytes)); // SYNCSPY-CLEAN: setup allocation
	}
	CHECK(cudaMallocHost(&h_batches, STEPS * batch_bytes)); // SYNCSPY-CLEAN: setup, all batches in pinned memory
	CHECK(cudaMalloc(&d_keys, batch_bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_hist, BINS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_totals, sizeof h_totals)); // SYNCSPY-CLEAN: setup allocation
	for (size_t i = 0; i < (size_t)STEPS * BATCH; i++)
		h_batches[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 7);
	CHECK(cudaMemsetAsync(d_totals, 0, sizeof h_totals, compute));
	CHECK(cudaMemcpyAsync(d_slot[0], h_batches, batch_bytes, cudaMemcpyHostToDevice, upload)); // SYNCSPY-CLEAN: setup, the first batch (pinned, async)
	CHECK(cudaEventRecord(uploaded[0], upload));

	for (int step = 0; step < STEPS; step++) {
		int cur = step & 1, next = cur ^ 1;
		CHECK(cudaStreamWaitEvent(compute, uploaded[cur], 0));
		rehash<<<BATCH / THREADS, THREADS, 0, compute>>>(d_slot[cur], d_keys, BATCH, step);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(consumed[cur], compute));
		CHECK(cudaMemset(d_hist, 0, BINS * sizeof(unsigned int))); // SYNCSPY-PROBLEM: legacy default stream, joins both blocking streams every step
		bin<<<BATCH / THREADS, THREADS, 0, compute>>>(d_keys, BATCH, d_hist);
		fold<<<BINS / THREADS, THREADS, 0, compute>>>(d_hist, d_totals);
		CHECK_LAUNCH();
		if (step + 1 < STEPS) {
			/* slot `next` was last read by step-1's rehash (its consumed event) */
			CHECK(cudaStreamWaitEvent(upload, consumed[next], 0));
			CHECK(cudaMemcpyAsync(d_slot[next], h_batches + (size_t)(step + 1) * BATCH, batch_bytes, cudaMemcpyHostToDevice, upload)); // SYNCSPY-CLEAN: the next batch, pinned, on the upload stream
			CHECK(cudaEventRecord(uploaded[next], upload));
		}
	}

	CHECK(cudaMemcpyAsync(h_totals, d_totals, sizeof h_totals, cudaMemcpyDeviceToHost, compute)); // SYNCSPY-CLEAN: final read (pageable, once)
	CHECK(cudaStreamSynchronize(compute)); // SYNCSPY-CLEAN: final read
	corpus_expect("c30_legacy_memset_pipeline", "binned records", (long long)h_totals[1] > 0, 1);
	unsigned long long checksum = h_totals[0] * 1000003 + h_totals[1];
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(d_slot[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(consumed[k]));
	}
	CHECK(cudaFreeHost(h_batches)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_keys)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_hist)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_totals)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(upload));
	CHECK(cudaStreamDestroy(compute));
	corpus_result("c30_legacy_memset_pipeline", STEPS, checksum);
	return 0;
}
