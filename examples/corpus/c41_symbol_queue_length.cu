/*
 * examples/corpus/c41_symbol_queue_length.cu: corpus workload (CUDA C). An active-set relaxation,
 * the shape of narrow-band level sets and sparse cellular solvers: every step a flagging kernel
 * appends the cells that need work to a device queue (a __device__ counter bumped with
 * atomicAdd), and a relax kernel updates only the queued cells. The host sizes the relax launch
 * from the queue length, which the active-set helper active_set_length() reads with
 * cudaMemcpyFromSymbol: a synchronous device-to-host copy on the legacy default stream (CUDA
 * runtime docs, "API synchronization behavior": a copy from device memory to host memory returns
 * only once it has completed), so every step the host waits for the flagging kernel and can
 * never queue the next step ahead. A relax kernel launched with a fixed grid that reads the
 * length on the device (grid-stride over the queue) would need no read at all.
 * Planted: the cudaMemcpyFromSymbol of the queue length in active_set_length(), every step.
 * Clean: the rule table's cudaMemcpyToSymbol and the field upload in setup, the setup
 * allocations, the final read of the field, teardown.
 */
#include "corpus.h"

enum { STEPS = 60, N = 1 << 18, THREADS = 256, ROUNDS = 64, RULES = 4 };

/* the relaxation's multipliers, one per round modulo RULES */
static const uint32_t rule_table[RULES] = {1664525u, 22695477u, 1103515245u, 134775813u};

__constant__ uint32_t c_rule[RULES];
__device__ unsigned int g_queue_len = 0;

__host__ __device__ static inline int needs_work(uint32_t v, int step)
{
	uint32_t h = (v ^ ((uint32_t)step * 0x9e3779b9u)) * 0x85ebca6bu;
	h ^= h >> 13;
	return (h & 7u) < 3u;
}

__global__ void flag_cells(const uint32_t *cells, int n, int step, unsigned int *queue)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n || !needs_work(cells[i], step))
		return;
	unsigned int slot = atomicAdd(&g_queue_len, 1u);
	queue[slot] = (unsigned int)i;
}

__global__ void relax_queued(const unsigned int *queue, unsigned int len, uint32_t *cells, int step)
{
	unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= len)
		return;
	unsigned int i = queue[j];
	uint32_t v = cells[i];
	for (int r = 0; r < ROUNDS; r++)
		v = v * c_rule[r & (RULES - 1)] + (uint32_t)step;
	cells[i] = v;
}

__global__ void reset_queue(void)
{
	g_queue_len = 0;
}

/* --- the active set: a device queue of cell indices and its length ------------------------ */

struct active_set {
	unsigned int *d_queue;
	unsigned long long total_queued;
};

static void active_set_init(struct active_set *as, int capacity)
{
	CHECK(cudaMalloc(&as->d_queue, (size_t)capacity * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	as->total_queued = 0;
	reset_queue<<<1, 1>>>();
	CHECK_LAUNCH();
}

/* how many cells the flagging pass queued: the relax launch's grid is sized from it */
static unsigned int active_set_length(struct active_set *as)
{
	unsigned int len = 0;
	CHECK(cudaMemcpyFromSymbol(&len, g_queue_len, sizeof len)); // SYNCSPY-PROBLEM: blocking read of the device counter every step, only to size a launch
	as->total_queued += len;
	return len;
}

static void active_set_teardown(struct active_set *as)
{
	CHECK(cudaFree(as->d_queue)); // SYNCSPY-CLEAN: teardown
}

/* --- one solver step --------------------------------------------------------------------- */

static void relax_step(struct active_set *as, uint32_t *d_cells, int step)
{
	flag_cells<<<N / THREADS, THREADS>>>(d_cells, N, step, as->d_queue);
	CHECK_LAUNCH();
	unsigned int len = active_set_length(as);
	if (len > 0) {
		relax_queued<<<(len + THREADS - 1) / THREADS, THREADS>>>(as->d_queue, len, d_cells, step);
		CHECK_LAUNCH();
	}
	reset_queue<<<1, 1>>>();
	CHECK_LAUNCH();
}

/* the same steps on the host, to check the device's result */
static unsigned long long reference(uint32_t *cells)
{
	unsigned long long queued = 0;
	for (int step = 0; step < STEPS; step++)
		for (int i = 0; i < N; i++) {
			if (!needs_work(cells[i], step))
				continue;
			uint32_t v = cells[i];
			for (int r = 0; r < ROUNDS; r++)
				v = v * rule_table[r & (RULES - 1)] + (uint32_t)step;
			cells[i] = v;
			queued++;
		}
	return queued;
}

int main(void)
{
	const char *name = "c41_symbol_queue_length";
	uint32_t *h_cells = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	uint32_t *ref = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	uint32_t *d_cells;
	struct active_set as;

	for (int i = 0; i < N; i++)
		h_cells[i] = ref[i] = (uint32_t)i * 2654435761u + 12345u;
	CHECK(cudaMemcpyToSymbol(c_rule, rule_table, sizeof rule_table)); // SYNCSPY-CLEAN: setup, the rule table uploaded once
	CHECK(cudaMalloc(&d_cells, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_cells, h_cells, (size_t)N * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	active_set_init(&as, N);

	for (int step = 0; step < STEPS; step++)
		relax_step(&as, d_cells, step);

	CHECK(cudaMemcpy(h_cells, d_cells, (size_t)N * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	active_set_teardown(&as);
	CHECK(cudaFree(d_cells)); // SYNCSPY-CLEAN: teardown

	unsigned long long want_queued = reference(ref);
	corpus_expect(name, "queued cells", (long long)as.total_queued, (long long)want_queued);
	unsigned long long checksum = as.total_queued;
	for (int i = 0; i < N; i++) {
		if (h_cells[i] != ref[i])
			corpus_expect(name, "cell", h_cells[i], ref[i]);
		checksum = checksum * 1000003u + h_cells[i];
	}
	free(h_cells);
	free(ref);
	corpus_result(name, STEPS, checksum);
	return 0;
}
