/*
 * examples/corpus/c49_clean_cooperative_step.cu: corpus workload (CUDA C, cooperative groups),
 * CLEAN. A ring relaxation whose step has three dependent phases (a neighbour update, a
 * neighbour mix with per-block partial sums, a global total that sets the next step's
 * coupling): instead of three launches, or a host round trip for the total, each step is one
 * cooperative launch (cudaLaunchCooperativeKernel) whose phases are separated by grid-wide
 * barriers (cooperative_groups::this_grid().sync()). The grid is sized once in setup from the
 * occupancy calculator so that every block is resident, as a cooperative launch requires. The
 * total of every step is kept in a device history array and the coupling in device memory, so
 * the host only queues launches; one final read.
 */
#include "corpus.h"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

enum { STEPS = 60, N = 1 << 20, THREADS = 256, MAX_BLOCKS_PER_SM = 4 };

__host__ __device__ static inline uint32_t phase_a(uint32_t x, uint32_t right, uint32_t coupling, int step)
{
	return (x ^ (right >> 3)) * 2654435761u + coupling + (uint32_t)step;
}

__host__ __device__ static inline uint32_t phase_b(uint32_t y, uint32_t left)
{
	return y ^ (left << 1);
}

__host__ __device__ static inline uint32_t next_coupling(unsigned long long total)
{
	return (uint32_t)(total >> 24) & 1023u;
}

__global__ void relax_step(uint32_t *x, uint32_t *y, int n, int step, unsigned long long *partial, uint32_t *coupling, unsigned long long *history)
{
	cg::grid_group grid = cg::this_grid();
	__shared__ unsigned long long sh[THREADS];
	int stride = gridDim.x * blockDim.x;
	uint32_t c = *coupling; /* written by the previous step's launch */

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		y[i] = phase_a(x[i], x[(i + 1) % n], c, step);
	grid.sync();

	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		uint32_t v = phase_b(y[i], y[(i + n - 1) % n]);
		x[i] = v;
		s += v >> 12;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		partial[blockIdx.x] = t;
	}
	grid.sync();

	if (blockIdx.x == 0 && threadIdx.x == 0) {
		unsigned long long total = 0;
		for (int b = 0; b < (int)gridDim.x; b++)
			total += partial[b];
		history[step] = total;
		*coupling = next_coupling(total);
	}
}

/* --- the solver -------------------------------------------------------------------------- */

struct ring_solver {
	cudaStream_t s;
	int blocks;
	uint32_t *d_x, *d_y, *d_coupling;
	unsigned long long *d_partial, *d_history;
};

static void solver_init(struct ring_solver *rs, const uint32_t *h_x)
{
	int dev, sms, coop, per_sm;
	CHECK(cudaGetDevice(&dev));
	CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
	if (!coop) {
		fprintf(stderr, "c49: device %d has no cooperative launch\n", dev);
		exit(1);
	}
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, relax_step, THREADS, 0));
	rs->blocks = sms * (per_sm < MAX_BLOCKS_PER_SM ? per_sm : MAX_BLOCKS_PER_SM);
	CHECK(cudaStreamCreateWithFlags(&rs->s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&rs->d_x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&rs->d_y, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&rs->d_coupling, sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&rs->d_partial, rs->blocks * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&rs->d_history, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(rs->d_coupling, 0, sizeof(uint32_t), rs->s));
	CHECK(cudaMemcpyAsync(rs->d_x, h_x, N * sizeof(uint32_t), cudaMemcpyHostToDevice, rs->s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
}

static void solver_step(struct ring_solver *rs, int step)
{
	int n = N;
	void *args[] = {&rs->d_x, &rs->d_y, &n, &step, &rs->d_partial, &rs->d_coupling, &rs->d_history};
	CHECK(cudaLaunchCooperativeKernel((void *)relax_step, dim3(rs->blocks), dim3(THREADS), args, 0, rs->s));
}

static void solver_teardown(struct ring_solver *rs)
{
	CHECK(cudaFree(rs->d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(rs->d_y)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(rs->d_coupling)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(rs->d_partial)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(rs->d_history)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(rs->s));
}

/* the same steps on the host */
static void reference(uint32_t *x, unsigned long long *history)
{
	uint32_t *y = (uint32_t *)malloc(N * sizeof(uint32_t)), c = 0;
	for (int step = 0; step < STEPS; step++) {
		for (int i = 0; i < N; i++)
			y[i] = phase_a(x[i], x[(i + 1) % N], c, step);
		unsigned long long total = 0;
		for (int i = 0; i < N; i++) {
			x[i] = phase_b(y[i], y[(i + N - 1) % N]);
			total += x[i] >> 12;
		}
		history[step] = total;
		c = next_coupling(total);
	}
	free(y);
}

int main(void)
{
	const char *name = "c49_clean_cooperative_step";
	uint32_t *h_x = (uint32_t *)malloc(N * sizeof(uint32_t)), *ref = (uint32_t *)malloc(N * sizeof(uint32_t));
	unsigned long long history[STEPS], want[STEPS];
	struct ring_solver rs;

	for (int i = 0; i < N; i++)
		h_x[i] = ref[i] = (uint32_t)i * 747796405u + 2891336453u;
	solver_init(&rs, h_x);

	for (int step = 0; step < STEPS; step++)
		solver_step(&rs, step);

	CHECK(cudaMemcpyAsync(h_x, rs.d_x, N * sizeof(uint32_t), cudaMemcpyDeviceToHost, rs.s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpyAsync(history, rs.d_history, sizeof history, cudaMemcpyDeviceToHost, rs.s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(rs.s)); // SYNCSPY-CLEAN: final read, the one wait
	solver_teardown(&rs);

	reference(ref, want);
	unsigned long long checksum = 0;
	for (int step = 0; step < STEPS; step++) {
		corpus_expect(name, "step total", (long long)history[step], (long long)want[step]);
		checksum = checksum * 1000003u + history[step];
	}
	for (int i = 0; i < N; i++)
		if (h_x[i] != ref[i])
			corpus_expect(name, "cell", h_x[i], ref[i]);
	free(h_x);
	free(ref);
	corpus_result(name, STEPS, checksum);
	return 0;
}
