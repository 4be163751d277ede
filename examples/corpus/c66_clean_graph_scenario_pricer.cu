/*
 * examples/corpus/c66_clean_graph_scenario_pricer.cu: corpus workload (CUDA C), CLEAN. A Monte
 * Carlo pricer for a book of Asian call options run over a list of market scenarios (overnight
 * risk): each scenario simulates 2^18 fixed-point price paths of 32 fixings, averages each path,
 * and reduces the discounted payoffs into the scenario's slot. The scenario's work is three
 * kernels (paths, payoff reduction, a device-side scenario counter that the other two read), so
 * it is captured once into a CUDA graph, instantiated and uploaded in setup, and replayed with
 * cudaGraphLaunch for every scenario: the arguments never change, the scenario index lives on
 * the device (CUDA programming guide, CUDA graphs: a graph is defined once and launched many
 * times, each launch without the setup cost). The host queues all the scenarios and reads the
 * prices once at the end.
 * Clean: the setup allocations and uploads of the scenario table, the graph replay every
 * scenario, the final read, teardown.
 */
#include "corpus.h"

enum { SCENARIOS = 64, PATHS = 1 << 18, FIXINGS = 32, THREADS = 256 };

struct scenario {
	int spot, strike, vol; /* fixed point, 1/1024 */
};

__host__ __device__ static inline long long path_payoff(struct scenario sc, int path, int scen)
{
	uint32_t rng = (uint32_t)path * 2654435761u ^ (uint32_t)scen * 0x9e3779b9u;
	long long s = sc.spot, avg = 0;
	for (int f = 0; f < FIXINGS; f++) {
		rng = rng * 1664525u + 1013904223u;
		int z = (int)(rng >> 22) - 512; /* -512..511 */
		s += (s * (long long)sc.vol * z) >> 20;
		avg += s;
	}
	avg /= FIXINGS;
	return avg > sc.strike ? avg - sc.strike : 0;
}

__global__ void simulate_paths(const struct scenario *book, const int *scen_idx, long long *payoff)
{
	int path = blockIdx.x * blockDim.x + threadIdx.x;
	int scen = *scen_idx;
	if (path < PATHS)
		payoff[path] = path_payoff(book[scen], path, scen);
}

__global__ void reduce_payoffs(const long long *payoff, const int *scen_idx, long long *price)
{
	__shared__ long long sh[THREADS];
	long long s = 0;
	for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < PATHS; p += gridDim.x * blockDim.x)
		s += payoff[p];
	sh[threadIdx.x] = s;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd((unsigned long long *)&price[*scen_idx], (unsigned long long)sh[0]);
}

__global__ void next_scenario(int *scen_idx)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		*scen_idx += 1;
}

static struct scenario make_scenario(int k)
{
	struct scenario sc;
	sc.spot = 100 * 1024 + (k % 8) * 512;
	sc.strike = 100 * 1024 + ((k / 8) % 4) * 1024;
	sc.vol = 20 + (k % 5) * 6;
	return sc;
}

/* --- the scenario graph ------------------------------------------------------------------- */

static cudaGraphExec_t build_scenario_graph(cudaStream_t s, const struct scenario *d_book, int *d_idx, long long *d_payoff, long long *d_price)
{
	cudaGraph_t g;
	cudaGraphExec_t exec;
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	simulate_paths<<<PATHS / THREADS, THREADS, 0, s>>>(d_book, d_idx, d_payoff);
	CHECK_LAUNCH();
	reduce_payoffs<<<256, THREADS, 0, s>>>(d_payoff, d_idx, d_price);
	CHECK_LAUNCH();
	next_scenario<<<1, 32, 0, s>>>(d_idx);
	CHECK_LAUNCH();
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(&exec, g, 0));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaGraphUpload(exec, s));
	return exec;
}

int main(void)
{
	const char *name = "c66_clean_graph_scenario_pricer";
	cudaStream_t s;
	struct scenario *h_book, *d_book;
	long long *d_payoff, *d_price, *h_price;
	int *d_idx;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMallocHost(&h_book, SCENARIOS * sizeof(struct scenario))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMallocHost(&h_price, SCENARIOS * sizeof(long long))); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaMalloc(&d_book, SCENARIOS * sizeof(struct scenario))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_payoff, PATHS * sizeof(long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_price, SCENARIOS * sizeof(long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_idx, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < SCENARIOS; k++)
		h_book[k] = make_scenario(k);
	CHECK(cudaMemcpyAsync(d_book, h_book, SCENARIOS * sizeof(struct scenario), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload of the scenario table, pinned
	CHECK(cudaMemsetAsync(d_price, 0, SCENARIOS * sizeof(long long), s));
	CHECK(cudaMemsetAsync(d_idx, 0, sizeof(int), s));
	cudaGraphExec_t exec = build_scenario_graph(s, d_book, d_idx, d_payoff, d_price);

	for (int k = 0; k < SCENARIOS; k++)
		CHECK(cudaGraphLaunch(exec, s));

	CHECK(cudaMemcpyAsync(h_price, d_price, SCENARIOS * sizeof(long long), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read of the prices
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: the one wait, after all the scenarios

	unsigned long long checksum = 0;
	for (int k = 0; k < SCENARIOS; k++) {
		if (k % 21 == 0) {
			long long want = 0;
			for (int p = 0; p < PATHS; p++)
				want += path_payoff(h_book[k], p, k);
			corpus_expect(name, "scenario price", h_price[k], want);
		}
		checksum = checksum * 1000003u + (unsigned long long)h_price[k];
	}

	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaFree(d_book)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_payoff)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_price)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_idx)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_book)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_price)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result(name, SCENARIOS, checksum);
	return 0;
}
