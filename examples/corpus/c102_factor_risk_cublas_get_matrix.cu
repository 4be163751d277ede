/*
 * examples/corpus/c102_factor_risk_cublas_get_matrix.cu: corpus workload (CUDA C + cuBLAS). An
 * intraday risk engine: every tick the host draws a fresh set of 8192 factor-return scenarios for
 * 128 risk factors into a pinned double buffer, a copy stream uploads them, and on the compute
 * stream (a blocking stream, bound to the cuBLAS handle) two DGEMMs turn them into scenario P&L:
 * 16384 assets' P&L (exposures x returns, also kept for each asset's running worst loss), then
 * 128 portfolios' P&L (holdings x asset P&L); a kernel reduces each portfolio to its worst and
 * best scenario, its mean and its count of limit breaches, a 128 x 4 statistics matrix.
 * The risk dashboard refreshes every tick with cuBLAS's helper, cublasGetMatrix(128, 4, ...) of
 * the statistics into a host array. The cuBLAS reference describes cublasGetMatrixAsync as having
 * "the same functionality as cublasGetMatrix(), with the exception that the data transfer is done
 * asynchronously (with respect to the host) using the given CUDA stream parameter": the plain
 * helper is synchronous, a device-to-host copy ordered behind the tick's GEMMs, and "for
 * transfers from device to either pageable or pinned host memory, the function returns only once
 * the copy has completed" (runtime API, memcpy behaviour). So every tick the host waits for the
 * whole tick's GPU work before it draws the next tick's scenarios, and the GPU idles while it
 * draws them. cublasGetMatrixAsync into a pinned ring, read a tick later, would not wait.
 * Planted: the cublasGetMatrix in dashboard_refresh(), every tick (one line).
 * Clean: the handle's creation and destruction (its implicit device sync) once, its workspace
 * allocated in setup and given with cublasSetWorkspace after the stream, the setup allocations
 * and the exposure and holdings uploads, the scenarios' pinned double buffer (a slot reused after
 * a cudaEventSynchronize on its upload two ticks back) and its async upload on the copy stream,
 * the final read of the assets' worst losses, teardown.
 * Exposures, returns and holdings are small integers, so every DGEMM result is an exact integer
 * in double precision: the CPU reference checks all portfolios' statistics on two ticks and four
 * assets' worst losses over the run.
 */
// CORPUS-LDLIBS: -lcublas
#include "corpus.h"

#include <cublas_v2.h>
#include <limits.h>
#include <vector>

enum { TICKS = 40, ASSETS = 16384, FACTORS = 128, SCENARIOS = 8192, PORTFOLIOS = 128, STATS = 4, CHUNKS = 64, LIMIT = 80000, THREADS = 256, SLOTS = 2, WATCHED_ASSETS = 4 };

#define WORKSPACE_BYTES ((size_t)32 << 20)

#define CHECK_BLAS(call)                                                                           \
	do {                                                                                       \
		cublasStatus_t check_blas_ = (call);                                               \
		if (check_blas_ != CUBLAS_STATUS_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)check_blas_); \
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

static int exposure(int a, int f) { return (int)(mix32((uint32_t)(a * FACTORS + f) + 0x5bd1e995u) % 9u) - 4; }
static int holding(int p, int a) { uint32_t h = mix32((uint32_t)(p * ASSETS + a) + 0x27d4eb2fu); return h % 8u < 3u ? 1 + (int)(h >> 8) % 3 : 0; }
static int factor_return(int tick, int f, int s) { return (int)(mix32((uint32_t)((tick * SCENARIOS + s) * FACTORS + f)) % 33u) - 16; }

__global__ void asset_worst(const double *pnl, long long *worst)
{
	int a = blockIdx.x * blockDim.x + threadIdx.x;
	if (a >= ASSETS)
		return;
	long long w = LLONG_MAX;
	for (int s = 0; s < SCENARIOS; s++) {
		long long v = (long long)pnl[a + (size_t)s * ASSETS];
		w = v < w ? v : w;
	}
	atomicMin(&worst[a], w);
}

struct partial {
	long long lo[PORTFOLIOS], hi[PORTFOLIOS];
	unsigned long long sum[PORTFOLIOS];
	unsigned int breaches[PORTFOLIOS];
};

__global__ void reset_partial(struct partial *acc)
{
	int p = threadIdx.x;
	acc->lo[p] = LLONG_MAX;
	acc->hi[p] = LLONG_MIN;
	acc->sum[p] = 0;
	acc->breaches[p] = 0;
}

/* thread per (portfolio, chunk of scenarios); pl is PORTFOLIOS x SCENARIOS, column-major */
__global__ void portfolio_stats(const double *pl, struct partial *acc)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int p = t % PORTFOLIOS, c = t / PORTFOLIOS;
	long long lo = LLONG_MAX, hi = LLONG_MIN, sum = 0;
	unsigned int breaches = 0;
	for (int s = c * (SCENARIOS / CHUNKS); s < (c + 1) * (SCENARIOS / CHUNKS); s++) {
		long long v = (long long)pl[p + (size_t)s * PORTFOLIOS];
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		sum += v;
		breaches += v < -LIMIT;
	}
	atomicMin(&acc->lo[p], lo);
	atomicMax(&acc->hi[p], hi);
	atomicAdd(&acc->sum[p], (unsigned long long)sum);
	atomicAdd(&acc->breaches[p], breaches);
}

/* the statistics matrix, PORTFOLIOS x STATS, column-major */
__global__ void finish_stats(const struct partial *acc, double *stats)
{
	int p = threadIdx.x;
	stats[p] = (double)acc->lo[p];
	stats[p + PORTFOLIOS] = (double)acc->hi[p];
	stats[p + 2 * PORTFOLIOS] = (double)(long long)acc->sum[p] / SCENARIOS;
	stats[p + 3 * PORTFOLIOS] = (double)acc->breaches[p];
}

static void dashboard_refresh(const double *d_stats, double *h_stats)
{
	CHECK_BLAS(cublasGetMatrix(PORTFOLIOS, STATS, sizeof(double), d_stats, PORTFOLIOS, h_stats, PORTFOLIOS)); // SYNCSPY-PROBLEM: cuBLAS's synchronous helper: waits for the whole tick's GEMMs before the host can draw the next scenarios, every tick
}

static void draw_scenarios(int tick, double *r)
{
	for (int s = 0; s < SCENARIOS; s++)
		for (int f = 0; f < FACTORS; f++)
			r[(size_t)s * FACTORS + f] = factor_return(tick, f, s);
}

int main(void)
{
	const char *name = "c102_factor_risk_cublas_get_matrix";
	const int checked[2] = {TICKS / 5, TICKS - 2};
	std::vector<double> h_exp((size_t)ASSETS * FACTORS), h_hold((size_t)PORTFOLIOS * ASSETS), h_stats(PORTFOLIOS * STATS), kept[2];
	for (int a = 0; a < ASSETS; a++)
		for (int f = 0; f < FACTORS; f++)
			h_exp[(size_t)f * ASSETS + a] = exposure(a, f);
	for (int p = 0; p < PORTFOLIOS; p++)
		for (int a = 0; a < ASSETS; a++)
			h_hold[(size_t)a * PORTFOLIOS + p] = holding(p, a);

	cublasHandle_t blas;
	cudaStream_t compute, copy;
	double *d_exp, *d_hold, *d_ret[SLOTS], *h_ret[SLOTS], *d_pnl, *d_pl, *d_stats;
	void *d_workspace;
	long long *d_worst;
	struct partial *d_acc;
	cudaEvent_t uploaded[SLOTS], consumed[SLOTS];
	CHECK(cudaStreamCreate(&compute));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK_BLAS(cublasCreate(&blas)); // SYNCSPY-CLEAN: setup, the run's one handle (allocates the library's resources once)
	CHECK(cudaMalloc(&d_workspace, WORKSPACE_BYTES)); // SYNCSPY-CLEAN: setup allocation, cuBLAS's workspace
	CHECK_BLAS(cublasSetStream(blas, compute));
	CHECK_BLAS(cublasSetWorkspace(blas, d_workspace, WORKSPACE_BYTES));
	CHECK(cudaMalloc(&d_exp, h_exp.size() * sizeof(double))); // SYNCSPY-CLEAN: setup allocation, the exposures
	CHECK(cudaMalloc(&d_hold, h_hold.size() * sizeof(double))); // SYNCSPY-CLEAN: setup allocation, the holdings
	CHECK(cudaMalloc(&d_pnl, (size_t)ASSETS * SCENARIOS * sizeof(double))); // SYNCSPY-CLEAN: setup allocation, the asset P&L
	CHECK(cudaMalloc(&d_pl, (size_t)PORTFOLIOS * SCENARIOS * sizeof(double))); // SYNCSPY-CLEAN: setup allocation, the portfolio P&L
	CHECK(cudaMalloc(&d_stats, PORTFOLIOS * STATS * sizeof(double))); // SYNCSPY-CLEAN: setup allocation, the statistics
	CHECK(cudaMalloc(&d_worst, ASSETS * sizeof(long long))); // SYNCSPY-CLEAN: setup allocation, the worst losses
	CHECK(cudaMalloc(&d_acc, sizeof(struct partial))); // SYNCSPY-CLEAN: setup allocation
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&d_ret[s], (size_t)FACTORS * SCENARIOS * sizeof(double))); // SYNCSPY-CLEAN: setup allocation, a scenario slot
		CHECK(cudaMallocHost(&h_ret[s], (size_t)FACTORS * SCENARIOS * sizeof(double))); // SYNCSPY-CLEAN: setup pinned allocation, a scenario staging slot
		CHECK(cudaEventCreateWithFlags(&uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[s], cudaEventDisableTiming));
	}
	CHECK(cudaMemcpy(d_exp, h_exp.data(), h_exp.size() * sizeof(double), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the exposures once
	CHECK(cudaMemcpy(d_hold, h_hold.data(), h_hold.size() * sizeof(double), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the holdings once
	std::vector<long long> worst_init(ASSETS, LLONG_MAX), worst(ASSETS);
	CHECK(cudaMemcpy(d_worst, worst_init.data(), ASSETS * sizeof(long long), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the running worst losses initialized once

	const double one = 1.0, zero = 0.0;
	unsigned long long checksum = 0;
	for (int tick = 0; tick < TICKS; tick++) {
		int s = tick % SLOTS;
		if (tick >= SLOTS)
			CHECK(cudaEventSynchronize(uploaded[s])); // SYNCSPY-CLEAN: the pinned double buffer: this slot's upload two ticks back, long done
		draw_scenarios(tick, h_ret[s]);
		CHECK(cudaStreamWaitEvent(copy, consumed[s], 0));
		CHECK(cudaMemcpyAsync(d_ret[s], h_ret[s], (size_t)FACTORS * SCENARIOS * sizeof(double), cudaMemcpyHostToDevice, copy)); // SYNCSPY-CLEAN: async from the pinned slot on the copy stream
		CHECK(cudaEventRecord(uploaded[s], copy));
		CHECK(cudaStreamWaitEvent(compute, uploaded[s], 0));
		CHECK_BLAS(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, ASSETS, SCENARIOS, FACTORS, &one, d_exp, ASSETS, d_ret[s], FACTORS, &zero, d_pnl, ASSETS));
		CHECK(cudaEventRecord(consumed[s], compute));
		asset_worst<<<ASSETS / THREADS, THREADS, 0, compute>>>(d_pnl, d_worst);
		CHECK_LAUNCH();
		CHECK_BLAS(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, PORTFOLIOS, SCENARIOS, ASSETS, &one, d_hold, PORTFOLIOS, d_pnl, ASSETS, &zero, d_pl, PORTFOLIOS));
		reset_partial<<<1, PORTFOLIOS, 0, compute>>>(d_acc);
		CHECK_LAUNCH();
		portfolio_stats<<<PORTFOLIOS * CHUNKS / THREADS, THREADS, 0, compute>>>(d_pl, d_acc);
		CHECK_LAUNCH();
		finish_stats<<<1, PORTFOLIOS, 0, compute>>>(d_acc, d_stats);
		CHECK_LAUNCH();

		dashboard_refresh(d_stats, h_stats.data());
		for (int i = 0; i < PORTFOLIOS * STATS; i++)
			checksum = checksum * 1000003u + (unsigned long long)(long long)(h_stats[i] * 4.0);
		for (int c = 0; c < 2; c++)
			if (tick == checked[c])
				kept[c] = h_stats;
	}
	CHECK(cudaMemcpy(worst.data(), d_worst, ASSETS * sizeof(long long), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the worst losses

	/* the CPU reference: portfolio P&L = (holdings x exposures) x returns, exact integers */
	std::vector<long long> hx((size_t)PORTFOLIOS * FACTORS, 0), ref_worst(WATCHED_ASSETS, LLONG_MAX);
	std::vector<int> ret((size_t)SCENARIOS * FACTORS), watched(WATCHED_ASSETS), wexp((size_t)WATCHED_ASSETS * FACTORS);
	for (int p = 0; p < PORTFOLIOS; p++)
		for (int a = 0; a < ASSETS; a++)
			if (int w = holding(p, a))
				for (int f = 0; f < FACTORS; f++)
					hx[(size_t)p * FACTORS + f] += (long long)w * exposure(a, f);
	for (int k = 0; k < WATCHED_ASSETS; k++) {
		watched[k] = (int)(mix32((uint32_t)k + 999u) % ASSETS);
		for (int f = 0; f < FACTORS; f++)
			wexp[(size_t)k * FACTORS + f] = exposure(watched[k], f);
	}
	for (int t = 0; t < TICKS; t++) {
		for (int sc = 0; sc < SCENARIOS; sc++)
			for (int f = 0; f < FACTORS; f++)
				ret[(size_t)sc * FACTORS + f] = factor_return(t, f, sc);
		for (int k = 0; k < WATCHED_ASSETS; k++)
			for (int sc = 0; sc < SCENARIOS; sc++) {
				long long v = 0;
				for (int f = 0; f < FACTORS; f++)
					v += (long long)wexp[(size_t)k * FACTORS + f] * ret[(size_t)sc * FACTORS + f];
				ref_worst[k] = v < ref_worst[k] ? v : ref_worst[k];
			}
		for (int c = 0; c < 2; c++)
			for (int p = 0; p < PORTFOLIOS && t == checked[c]; p++) {
				long long lo = LLONG_MAX, hi = LLONG_MIN, sum = 0, breaches = 0;
				for (int sc = 0; sc < SCENARIOS; sc++) {
					long long v = 0;
					for (int f = 0; f < FACTORS; f++)
						v += hx[(size_t)p * FACTORS + f] * ret[(size_t)sc * FACTORS + f];
					lo = v < lo ? v : lo;
					hi = v > hi ? v : hi;
					sum += v;
					breaches += v < -LIMIT;
				}
				corpus_expect(name, "worst scenario", (long long)kept[c][p], lo);
				corpus_expect(name, "best scenario", (long long)kept[c][p + PORTFOLIOS], hi);
				corpus_expect(name, "mean x4", (long long)(kept[c][p + 2 * PORTFOLIOS] * 4.0), (long long)((double)sum / SCENARIOS * 4.0));
				corpus_expect(name, "limit breaches", (long long)kept[c][p + 3 * PORTFOLIOS], breaches);
			}
	}
	for (int k = 0; k < WATCHED_ASSETS; k++) {
		corpus_expect(name, "asset worst loss", worst[watched[k]], ref_worst[k]);
		checksum = checksum * 31u + (unsigned long long)worst[watched[k]];
	}

	CHECK_BLAS(cublasDestroy(blas)); // SYNCSPY-CLEAN: teardown (cublasDestroy's implicit device sync, once)
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaFree(d_ret[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_ret[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[s]));
		CHECK(cudaEventDestroy(consumed[s]));
	}
	CHECK(cudaFree(d_exp)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_hold)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_pnl)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_pl)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_stats)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_worst)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_acc)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_workspace)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaStreamDestroy(copy));
	corpus_result(name, TICKS, checksum);
	return 0;
}
