/*
 * examples/corpus/c69_risk_upload_wrapper_sync.cu: corpus workload (CUDA C). A historical
 * value-at-risk engine: every step (one historical day) the host builds the day's market shocks
 * for 2^16 risk factors into one of two pinned staging buffers, the engine uploads them and
 * revalues a portfolio of 2^20 positions under them on its stream, and the day's P&L is reduced
 * into the day's slot; the VaR is taken from all the days at the end. The upload goes through
 * the engine's small device-array library, whose dev_array_upload() queues cudaMemcpyAsync and
 * then calls cudaStreamSynchronize "so that the caller may reuse the host buffer at once". The
 * caller already double-buffers its staging, so the wait is needless, and it is costly: a
 * stream synchronization blocks the host until all preceding commands in the stream are done
 * (runtime API reference), here the previous day's revaluation, so the GPU runs dry every day
 * while the host builds the next day's shocks. An event recorded after the copy, waited on two
 * days later before the staging buffer is refilled, keeps the same guarantee.
 * Planted: the cudaStreamSynchronize in dev_array_upload(), every day.
 * Clean: the cudaMemcpyAsync from pinned staging in dev_array_upload(), the setup allocations and
 * the upload of the portfolio, the final read, teardown.
 */
#include "corpus.h"

enum { DAYS = 64, FACTORS = 1 << 16, POSITIONS = 1 << 20, THREADS = 256 };

/* --- the device-array library ------------------------------------------------------------- */

struct dev_array {
	int *ptr;
	size_t count;
};

static struct dev_array dev_array_create(size_t count)
{
	struct dev_array a;
	a.count = count;
	CHECK(cudaMalloc(&a.ptr, count * sizeof(int))); // SYNCSPY-CLEAN: setup allocation (the engine creates its arrays once)
	return a;
}

static void dev_array_upload(struct dev_array *a, const int *host, cudaStream_t s)
{
	CHECK(cudaMemcpyAsync(a->ptr, host, a->count * sizeof(int), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: async copy from the caller's pinned buffer
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-PROBLEM: waits for the whole stream after every upload "so the host buffer can be reused", every day
}

static void dev_array_destroy(struct dev_array *a)
{
	CHECK(cudaFree(a->ptr)); // SYNCSPY-CLEAN: teardown
}

/* --- the engine --------------------------------------------------------------------------- */

static int day_shock(int day, int f)
{
	uint32_t h = (uint32_t)f * 2654435761u ^ (uint32_t)day * 0x85ebca6bu;
	h = (h ^ (h >> 16)) * 0x7feb352du;
	return (int)((h >> 16) & 1023u) - 512; /* basis points / 10 */
}

__host__ __device__ static inline void position(int p, int *f1, int *f2, int *notional)
{
	uint32_t h = (uint32_t)p * 0x9e3779b9u;
	*f1 = (int)(h % FACTORS);
	*f2 = (int)((h >> 7) * 40503u % FACTORS);
	*notional = (int)((h >> 3) % 1000u) + 1;
}

__global__ void revalue(const int *shocks, int day, long long *pnl)
{
	__shared__ long long sh[THREADS];
	long long s = 0;
	for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < POSITIONS; p += gridDim.x * blockDim.x) {
		int f1, f2, n;
		position(p, &f1, &f2, &n);
		long long d1 = shocks[f1], d2 = shocks[f2];
		/* delta and a small gamma-like cross term */
		s += (long long)n * (2 * d1 - d2) + (d1 * d2 * n) / 4096;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd((unsigned long long *)&pnl[day], (unsigned long long)sh[0]);
}

int main(void)
{
	const char *name = "c69_risk_upload_wrapper_sync";
	cudaStream_t s;
	int *h_stage[2];
	long long *d_pnl, h_pnl[DAYS];

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int b = 0; b < 2; b++)
		CHECK(cudaMallocHost(&h_stage[b], FACTORS * sizeof(int))); // SYNCSPY-CLEAN: setup pinned staging (double-buffered)
	struct dev_array shocks[2] = {dev_array_create(FACTORS), dev_array_create(FACTORS)};
	CHECK(cudaMalloc(&d_pnl, sizeof h_pnl)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_pnl, 0, sizeof h_pnl, s));

	for (int day = 0; day < DAYS; day++) {
		int b = day % 2;
		for (int f = 0; f < FACTORS; f++)
			h_stage[b][f] = day_shock(day, f);
		dev_array_upload(&shocks[b], h_stage[b], s);
		revalue<<<512, THREADS, 0, s>>>(shocks[b].ptr, day, d_pnl);
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpyAsync(h_pnl, d_pnl, sizeof h_pnl, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read of the daily P&L (stack buffer, after the loop)
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	/* VaR: the third-worst day; and a check of a few days on the host */
	long long worst[3] = {0, 0, 0};
	unsigned long long checksum = 0;
	int *sh = (int *)malloc(FACTORS * sizeof(int));
	for (int day = 0; day < DAYS; day++) {
		if (day % 21 == 3) {
			long long want = 0;
			for (int f = 0; f < FACTORS; f++)
				sh[f] = day_shock(day, f);
			for (int p = 0; p < POSITIONS; p++) {
				int f1, f2, n;
				position(p, &f1, &f2, &n);
				long long d1 = sh[f1], d2 = sh[f2];
				want += (long long)n * (2 * d1 - d2) + (d1 * d2 * n) / 4096;
			}
			corpus_expect(name, "day P&L", h_pnl[day], want);
		}
		long long v = h_pnl[day];
		for (int k = 0; k < 3; k++)
			if (v < worst[k]) {
				long long t = worst[k];
				worst[k] = v;
				v = t;
			}
		checksum = checksum * 1000003u + (unsigned long long)h_pnl[day];
	}
	free(sh);
	checksum = checksum * 31u + (unsigned long long)(-worst[2]);

	for (int b = 0; b < 2; b++) {
		dev_array_destroy(&shocks[b]);
		CHECK(cudaFreeHost(h_stage[b])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaFree(d_pnl)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result(name, DAYS, checksum);
	return 0;
}
