/*
 * examples/corpus/c91_dust_cloud_cell_list_thrust_sort.cu: corpus workload (CUDA C++ + Thrust).
 * Contact statistics of a dust cloud in a periodic box: 2M grains drift on fixed-point
 * trajectories (21-bit coordinates, integer velocities), and every step a cell list (64^3 cells,
 * one cell per interaction radius) is rebuilt so that each grain can count the grains within one
 * radius in its 27 neighbouring cells. The step: a kernel computes every grain's position and cell
 * key, CellGrid::rebuild() sorts the (cell, grain) pairs and finds each cell's range, the sorted
 * positions are gathered, and the contact kernel writes each grain's contact count and adds the
 * step's total and maximum into a stats slot that the copy stream downloads into a pinned ring;
 * the host logs step s-1's stats while step s runs. After every epoch of 20 steps the grains'
 * contact counts are copied out once (the epoch checkpoint, outside the step loop).
 * The sort is the templated helper sort_pairs(), which calls thrust::sort_by_key with
 * thrust::cuda::par.on(stream) "so that it runs on the simulation stream". Thrust's documentation
 * of thrust::cuda::par_nosync describes what par does: par_nosync "indicates that an algorithm is
 * free to avoid any synchronization of the associated stream that is not strictly required for
 * correctness", where with par the algorithm synchronizes the stream before it returns (CCCL's
 * sort ends with synchronize_optional(policy), a cudaStreamSynchronize for par). And par takes
 * its temporary storage (the radix sort's second key and value buffers and CUB's scratch, about
 * 17 MB here) from cudaMalloc and gives it back with cudaFree on every call: "Managing memory
 * allocations using cudaMalloc and cudaFree causes the GPU to synchronize across all executing
 * CUDA streams" (CUDA programming guide, stream-ordered memory allocator). So every step the host
 * waits in the sort for the key kernel and the sort, allocates and frees 17 MB, and only then
 * queues the rest of the step: the GPU idles between the sort and the range kernel, and the
 * stats ring that was meant to let the host run a step ahead never holds more than one step.
 * par_nosync with stream-ordered temporaries from a pool that keeps its memory fixes it (c96 is
 * that fix).
 * Planted: the thrust::sort_by_key(thrust::cuda::par.on(stream), ...) line in sort_pairs(),
 * every step (temporary cudaMalloc and cudaFree and a stream sync inside the library call).
 * Clean: the setup allocations, the stats downloaded async into the pinned ring on the copy
 * stream and read one step behind, the per-epoch checkpoint (an async download into pinned memory
 * and a stream sync, outside the step loop), the last step's wait, teardown.
 */
#include "corpus.h"

#include <string.h>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

enum {
	EPOCHS = 3,
	STEPS_PER_EPOCH = 20,
	STEPS = EPOCHS * STEPS_PER_EPOCH,
	N = 1 << 21,
	BOX_BITS = 21,
	CELL_BITS = 6,
	CELLS_PER_AXIS = 1 << CELL_BITS,
	CELLS = CELLS_PER_AXIS * CELLS_PER_AXIS * CELLS_PER_AXIS,
	THREADS = 256,
	RING = 2,
	CHECKED = 2048
};

#define BOX_MASK ((1u << BOX_BITS) - 1u)
#define RADIUS_SQ ((long long)1 << (2 * (BOX_BITS - CELL_BITS))) /* the radius is one cell */

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* grain i's coordinate on axis a at step s: a fixed start and an integer velocity, periodic */
__host__ __device__ static inline uint32_t coord(uint32_t i, int a, int s)
{
	uint32_t start = mix32(i * 3u + (uint32_t)a + 0x1234567u) & BOX_MASK;
	int vel = (int)(mix32(i * 3u + (uint32_t)a + 0x89abcdefu) % 8192u) - 4096;
	return (uint32_t)((int64_t)start + (int64_t)vel * s) & BOX_MASK;
}

__host__ __device__ static inline uint32_t cell_of(uint32_t x, uint32_t y, uint32_t z)
{
	const int sh = BOX_BITS - CELL_BITS;
	return ((z >> sh) * CELLS_PER_AXIS + (y >> sh)) * CELLS_PER_AXIS + (x >> sh);
}

/* minimum-image squared distance in the periodic box */
__host__ __device__ static inline long long dist_sq(uint32_t ax, uint32_t ay, uint32_t az, uint32_t bx, uint32_t by, uint32_t bz)
{
	const int half = 1 << (BOX_BITS - 1);
	long long dx = (long long)(((ax - bx + (uint32_t)half) & BOX_MASK)) - half;
	long long dy = (long long)(((ay - by + (uint32_t)half) & BOX_MASK)) - half;
	long long dz = (long long)(((az - bz + (uint32_t)half) & BOX_MASK)) - half;
	return dx * dx + dy * dy + dz * dz;
}

struct step_stats {
	unsigned long long contacts;
	unsigned int max_contacts;
	unsigned int pad;
};

__global__ void drift_and_key(int step, uint32_t *keys, uint32_t *ids)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N) {
		keys[i] = cell_of(coord(i, 0, step), coord(i, 1, step), coord(i, 2, step));
		ids[i] = i;
	}
}

__global__ void cell_ranges(const uint32_t *keys, int *start, int *end)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	uint32_t k = keys[i];
	if (i == 0 || keys[i - 1] != k)
		start[k] = i;
	if (i == N - 1 || keys[i + 1] != k)
		end[k] = i + 1;
}

__global__ void gather_positions(int step, const uint32_t *ids, uint4 *pos)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N) {
		uint32_t g = ids[i];
		pos[i] = make_uint4(coord(g, 0, step), coord(g, 1, step), coord(g, 2, step), g);
	}
}

/* thread i: the i-th grain in cell order */
__global__ void count_contacts(const uint32_t *keys, const int *start, const int *end, const uint4 *pos, uint32_t *contacts, struct step_stats *stats)
{
	__shared__ unsigned long long s_sum;
	__shared__ unsigned int s_max;
	if (threadIdx.x == 0) {
		s_sum = 0;
		s_max = 0;
	}
	__syncthreads();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N) {
		uint4 me = pos[i];
		uint32_t k = keys[i];
		int cx = (int)(k % CELLS_PER_AXIS), cy = (int)((k / CELLS_PER_AXIS) % CELLS_PER_AXIS), cz = (int)(k / (CELLS_PER_AXIS * CELLS_PER_AXIS));
		unsigned int n = 0;
		for (int dz = -1; dz <= 1; dz++)
			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++) {
					int c = ((((cz + dz) & (CELLS_PER_AXIS - 1)) * CELLS_PER_AXIS) + ((cy + dy) & (CELLS_PER_AXIS - 1))) * CELLS_PER_AXIS + ((cx + dx) & (CELLS_PER_AXIS - 1));
					int b = start[c], e = end[c];
					for (int j = b; j < e; j++) {
						uint4 o = pos[j];
						if (j != i && dist_sq(me.x, me.y, me.z, o.x, o.y, o.z) < RADIUS_SQ)
							n++;
					}
				}
		contacts[me.w] = n;
		atomicAdd(&s_sum, (unsigned long long)n);
		atomicMax(&s_max, n);
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		atomicAdd(&stats->contacts, s_sum);
		atomicMax(&stats->max_contacts, s_max);
	}
}

/* --- the cell list ----------------------------------------------------------------------------- */

/* sorts (key, value) pairs by key on the given stream */
template <class Key, class Value>
static void sort_pairs(cudaStream_t stream, Key *keys, Value *values, size_t n)
{
	thrust::sort_by_key(thrust::cuda::par.on(stream), keys, keys + n, values); // SYNCSPY-PROBLEM: par: cudaMalloc of the radix sort's temporary storage, a stream sync and cudaFree inside the call, every step
}

class CellGrid {
public:
	explicit CellGrid(cudaStream_t stream) : stream_(stream)
	{
		CHECK(cudaMalloc(&keys_, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&ids_, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&start_, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&end_, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&pos_, N * sizeof(uint4))); // SYNCSPY-CLEAN: setup allocation
	}
	~CellGrid()
	{
		CHECK(cudaFree(keys_)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(ids_)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(start_)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(end_)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(pos_)); // SYNCSPY-CLEAN: teardown
	}
	CellGrid(const CellGrid &) = delete;
	CellGrid &operator=(const CellGrid &) = delete;

	void rebuild(int step)
	{
		drift_and_key<<<N / THREADS, THREADS, 0, stream_>>>(step, keys_, ids_);
		CHECK_LAUNCH();
		sort_pairs(stream_, keys_, ids_, N);
		CHECK(cudaMemsetAsync(start_, 0, CELLS * sizeof(int), stream_));
		CHECK(cudaMemsetAsync(end_, 0, CELLS * sizeof(int), stream_));
		cell_ranges<<<N / THREADS, THREADS, 0, stream_>>>(keys_, start_, end_);
		CHECK_LAUNCH();
		gather_positions<<<N / THREADS, THREADS, 0, stream_>>>(step, ids_, pos_);
		CHECK_LAUNCH();
	}
	void count(uint32_t *contacts, struct step_stats *stats)
	{
		count_contacts<<<N / THREADS, THREADS, 0, stream_>>>(keys_, start_, end_, pos_, contacts, stats);
		CHECK_LAUNCH();
	}

private:
	cudaStream_t stream_;
	uint32_t *keys_, *ids_;
	int *start_, *end_;
	uint4 *pos_;
};

/* --- the CPU's check: a cell list built by counting sort, at sampled grains ---------------------- */

static void check_epoch(const char *name, int step, const uint32_t *contacts)
{
	uint32_t *x = (uint32_t *)malloc((size_t)N * 3 * sizeof(uint32_t)), *order = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	int *first = (int *)calloc(CELLS + 1, sizeof(int));
	for (uint32_t i = 0; i < N; i++) {
		for (int a = 0; a < 3; a++)
			x[3 * i + a] = coord(i, a, step);
		first[cell_of(x[3 * i], x[3 * i + 1], x[3 * i + 2]) + 1]++;
	}
	for (int c = 0; c < CELLS; c++)
		first[c + 1] += first[c];
	int *fill = (int *)malloc(CELLS * sizeof(int));
	memcpy(fill, first, CELLS * sizeof(int));
	for (uint32_t i = 0; i < N; i++)
		order[fill[cell_of(x[3 * i], x[3 * i + 1], x[3 * i + 2])]++] = i;
	for (int k = 0; k < CHECKED; k++) {
		uint32_t g = mix32((uint32_t)(k + step * CHECKED)) % N;
		uint32_t key = cell_of(x[3 * g], x[3 * g + 1], x[3 * g + 2]);
		int cx = (int)(key % CELLS_PER_AXIS), cy = (int)((key / CELLS_PER_AXIS) % CELLS_PER_AXIS), cz = (int)(key / (CELLS_PER_AXIS * CELLS_PER_AXIS));
		long long want = 0;
		for (int dz = -1; dz <= 1; dz++)
			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++) {
					int c = ((((cz + dz) & (CELLS_PER_AXIS - 1)) * CELLS_PER_AXIS) + ((cy + dy) & (CELLS_PER_AXIS - 1))) * CELLS_PER_AXIS + ((cx + dx) & (CELLS_PER_AXIS - 1));
					for (int j = first[c]; j < first[c + 1]; j++) {
						uint32_t o = order[j];
						if (o != g && dist_sq(x[3 * g], x[3 * g + 1], x[3 * g + 2], x[3 * o], x[3 * o + 1], x[3 * o + 2]) < RADIUS_SQ)
							want++;
					}
				}
		corpus_expect(name, "contacts of a sampled grain", contacts[g], want);
	}
	free(x);
	free(order);
	free(first);
	free(fill);
}

int main(void)
{
	const char *name = "c91_dust_cloud_cell_list_thrust_sort";
	cudaStream_t sim, copy;
	uint32_t *d_contacts, *h_contacts;
	struct step_stats *d_stats, *h_stats;
	cudaEvent_t counted[RING], logged[RING];
	unsigned long long checksum = 0, step_contacts[STEPS];

	CHECK(cudaStreamCreateWithFlags(&sim, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_contacts, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_stats, RING * sizeof(struct step_stats))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_contacts, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation, the checkpoint buffer
	CHECK(cudaMallocHost(&h_stats, RING * sizeof(struct step_stats))); // SYNCSPY-CLEAN: setup pinned allocation, the stats ring
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventCreateWithFlags(&counted[r], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&logged[r], cudaEventDisableTiming));
	}
	uint32_t *epoch_contacts = (uint32_t *)malloc((size_t)EPOCHS * N * sizeof(uint32_t));

	{
		CellGrid grid(sim);
		for (int epoch = 0; epoch < EPOCHS; epoch++) {
			for (int k = 0; k < STEPS_PER_EPOCH; k++) {
				int step = epoch * STEPS_PER_EPOCH + k, r = step % RING;
				grid.rebuild(step);
				if (step >= RING)
					CHECK(cudaStreamWaitEvent(sim, logged[r], 0));
				CHECK(cudaMemsetAsync(d_stats + r, 0, sizeof(struct step_stats), sim));
				grid.count(d_contacts, d_stats + r);
				CHECK(cudaEventRecord(counted[r], sim));
				CHECK(cudaStreamWaitEvent(copy, counted[r], 0));
				CHECK(cudaMemcpyAsync(h_stats + r, d_stats + r, sizeof(struct step_stats), cudaMemcpyDeviceToHost, copy)); // SYNCSPY-CLEAN: the step's stats, async into the pinned ring on the copy stream
				CHECK(cudaEventRecord(logged[r], copy));
				if (step >= 1) {
					int q = (step - 1) % RING;
					CHECK(cudaEventSynchronize(logged[q])); // SYNCSPY-CLEAN: one step behind: step s-1's stats while step s runs
					checksum = checksum * 1000003u + h_stats[q].contacts * 131u + h_stats[q].max_contacts;
					step_contacts[step - 1] = h_stats[q].contacts;
				}
			}
			/* the epoch's checkpoint: every grain's contact count at its last step */
			CHECK(cudaMemcpyAsync(h_contacts, d_contacts, N * sizeof(uint32_t), cudaMemcpyDeviceToHost, sim)); // SYNCSPY-CLEAN: per-epoch checkpoint into pinned memory, outside the step loop
			CHECK(cudaStreamSynchronize(sim)); // SYNCSPY-CLEAN: per-epoch checkpoint, outside the step loop
			memcpy(epoch_contacts + (size_t)epoch * N, h_contacts, N * sizeof(uint32_t));
		}
		int q = (STEPS - 1) % RING;
		CHECK(cudaEventSynchronize(logged[q])); // SYNCSPY-CLEAN: the last step's stats, after the loop
		checksum = checksum * 1000003u + h_stats[q].contacts * 131u + h_stats[q].max_contacts;
		step_contacts[STEPS - 1] = h_stats[q].contacts;
	}

	for (int epoch = 0; epoch < EPOCHS; epoch++) {
		int last = epoch * STEPS_PER_EPOCH + STEPS_PER_EPOCH - 1;
		const uint32_t *contacts = epoch_contacts + (size_t)epoch * N;
		check_epoch(name, last, contacts);
		long long sum = 0;
		for (int i = 0; i < N; i++)
			sum += contacts[i];
		corpus_expect(name, "checkpoint against the step's stats", sum, (long long)step_contacts[last]);
	}
	for (int step = 0; step < STEPS; step++)
		corpus_expect(name, "each contact counted from both grains", (long long)(step_contacts[step] % 2), 0);

	CHECK(cudaFree(d_contacts)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_stats)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_contacts)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_stats)); // SYNCSPY-CLEAN: teardown
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventDestroy(counted[r]));
		CHECK(cudaEventDestroy(logged[r]));
	}
	CHECK(cudaStreamDestroy(sim));
	CHECK(cudaStreamDestroy(copy));
	free(epoch_contacts);
	corpus_result(name, STEPS, checksum);
	return 0;
}
