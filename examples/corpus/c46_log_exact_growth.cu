/*
 * examples/corpus/c46_log_exact_growth.cu: corpus workload (CUDA C). A trigger farm that keeps
 * every event record on the device for an end-of-run summary: each step a detector kernel
 * appends that step's records (a count the host knows from the step) to a device event log,
 * flagging the ones under the step's trigger threshold (uploaded from a pinned table with
 * cudaMemcpyAsync). The log grows like a vector whose capacity policy is "exactly what is
 * needed": event_log_reserve() allocates a new buffer of the new size with cudaMalloc, moves
 * the old records with a device-to-device cudaMemcpyAsync, waits for the stream (the move must
 * be done before the old buffer goes) and frees the old buffer with cudaFree, and since every
 * step appends, that happens every step. An allocation, a host wait and a free every step
 * (cudaFree of cudaMalloc memory may synchronize the device, CUDA runtime docs; a device
 * allocation is an implicit synchronization point, programming guide) where a geometric growth
 * policy, or the known total reserved once, would grow the log a handful of times.
 * Planted: the cudaMalloc, the cudaStreamSynchronize and the cudaFree in event_log_reserve(),
 * every step.
 * Neither: the device-to-device move of the old records (its per-step cost is a consequence of
 * the growth policy; stream-ordered, no host wait).
 * Clean: the per-step cudaMemcpyAsync of the threshold from pinned memory, the setup
 * allocations, the final read, teardown.
 */
#include "corpus.h"

enum { STEPS = 60, BASE = 1 << 15, THREADS = 256 };

__host__ __device__ static inline uint32_t event_hash(int step, int j)
{
	uint32_t h = ((uint32_t)step * 0x9e3779b9u) ^ ((uint32_t)j * 0x85ebca6bu);
	h = (h ^ (h >> 16)) * 0x7feb352du;
	return h ^ (h >> 15);
}

static int events_in_step(int step)
{
	return BASE + (step * 7919) % BASE;
}

static uint32_t threshold_of_step(int step)
{
	return 0x40000000u + (uint32_t)step * 0x01000000u;
}

__global__ void detect(unsigned long long *rec, int count, int step, const uint32_t *threshold)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= count)
		return;
	uint32_t h = event_hash(step, j);
	unsigned long long flag = h < *threshold ? 1ull << 63 : 0ull;
	rec[j] = flag | ((unsigned long long)step << 32) | h;
}

/* summary[0]: the sum of the low 32 bits, summary[1]: the number of flagged records */
__global__ void summarize(const unsigned long long *rec, size_t n, unsigned long long *summary)
{
	__shared__ unsigned long long sh_sum[THREADS], sh_flag[THREADS];
	unsigned long long s = 0, f = 0;
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		s += rec[i] & 0xffffffffull;
		f += rec[i] >> 63;
	}
	sh_sum[threadIdx.x] = s;
	sh_flag[threadIdx.x] = f;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long ts = 0, tf = 0;
		for (int k = 0; k < THREADS; k++) {
			ts += sh_sum[k];
			tf += sh_flag[k];
		}
		atomicAdd(&summary[0], ts);
		atomicAdd(&summary[1], tf);
	}
}

/* --- the device event log ---------------------------------------------------------------- */

struct event_log {
	cudaStream_t s;
	unsigned long long *d_rec;
	size_t used, cap;
	int grows;
};

static void event_log_reserve(struct event_log *log, size_t need)
{
	if (need <= log->cap)
		return;
	unsigned long long *grown;
	CHECK(cudaMalloc(&grown, need * sizeof *grown)); // SYNCSPY-PROBLEM: capacity grows to exactly what is needed, so a new buffer every step
	if (log->used)
		CHECK(cudaMemcpyAsync(grown, log->d_rec, log->used * sizeof *grown, cudaMemcpyDeviceToDevice, log->s));
	if (log->d_rec) {
		CHECK(cudaStreamSynchronize(log->s)); // SYNCSPY-PROBLEM: waits for the move before freeing the old buffer, every step
		CHECK(cudaFree(log->d_rec)); // SYNCSPY-PROBLEM: the old buffer freed every step
	}
	log->d_rec = grown;
	log->cap = need;
	log->grows++;
}

static void event_log_append(struct event_log *log, int count, int step, const uint32_t *d_threshold)
{
	event_log_reserve(log, log->used + (size_t)count);
	detect<<<(count + THREADS - 1) / THREADS, THREADS, 0, log->s>>>(log->d_rec + log->used, count, step, d_threshold);
	CHECK_LAUNCH();
	log->used += (size_t)count;
}

int main(void)
{
	const char *name = "c46_log_exact_growth";
	struct event_log log = {0, NULL, 0, 0, 0};
	uint32_t *h_thresholds, *d_threshold;
	unsigned long long *d_summary, *h_summary;

	CHECK(cudaStreamCreateWithFlags(&log.s, cudaStreamNonBlocking));
	CHECK(cudaMallocHost(&h_thresholds, STEPS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMallocHost(&h_summary, 2 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMalloc(&d_threshold, sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_summary, 2 * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_summary, 0, 2 * sizeof(unsigned long long), log.s));
	for (int step = 0; step < STEPS; step++)
		h_thresholds[step] = threshold_of_step(step);

	for (int step = 0; step < STEPS; step++) {
		CHECK(cudaMemcpyAsync(d_threshold, &h_thresholds[step], sizeof(uint32_t), cudaMemcpyHostToDevice, log.s)); // SYNCSPY-CLEAN: async upload from pinned memory
		event_log_append(&log, events_in_step(step), step, d_threshold);
	}

	summarize<<<256, THREADS, 0, log.s>>>(log.d_rec, log.used, d_summary);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(h_summary, d_summary, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, log.s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(log.s)); // SYNCSPY-CLEAN: final read

	unsigned long long want_sum = 0, want_flagged = 0, want_used = 0;
	for (int step = 0; step < STEPS; step++)
		for (int j = 0; j < events_in_step(step); j++) {
			uint32_t h = event_hash(step, j);
			want_sum += h;
			want_flagged += h < threshold_of_step(step);
			want_used++;
		}
	corpus_expect(name, "records", (long long)log.used, (long long)want_used);
	corpus_expect(name, "record sum", (long long)h_summary[0], (long long)want_sum);
	corpus_expect(name, "flagged", (long long)h_summary[1], (long long)want_flagged);
	unsigned long long checksum = (h_summary[0] * 1000003u + h_summary[1]) * 1000003u + log.used;

	CHECK(cudaFree(log.d_rec)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_threshold)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_summary)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_thresholds)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_summary)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(log.s));
	corpus_result(name, STEPS, checksum);
	return 0;
}
