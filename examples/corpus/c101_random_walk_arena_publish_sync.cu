/*
 * examples/corpus/c101_random_walk_arena_publish_sync.cu: corpus workload (CUDA C++, RAII,
 * stream-ordered allocation). The walk sampler of a graph-embedding pipeline (DeepWalk-style):
 * a 1M-vertex graph (16M edges, CSR) sits on the GPU, and every batch four lanes, each on its
 * own non-blocking stream, take a variable number of seed vertices (64K-96K, picked by the host
 * with degree-biased rejection sampling into a pinned double buffer), walk 80 steps from each and
 * count the walks' co-occurring vertex pairs (window 8) into a shared hashed table; each lane's
 * report (walked steps, its first walks) leaves through a pinned ring, read a batch behind.
 * Each lane's walk buffer is sized by its seed count, so it comes from DeviceArena, a shared
 * stream-ordered arena: cudaMallocAsync on the arena's own stream from the default pool (release
 * threshold raised, so blocks are reused), and release() orders a cudaFreeAsync on that stream
 * after the lane's work with an event. DeviceArena::allocate() then calls cudaStreamSynchronize
 * on the arena stream "so the block may be used on any stream": cudaMallocAsync's note says
 * "stream query, stream synchronize, and CUDA events can be used to guarantee that the
 * allocation operation completes before work submitted in a separate stream runs". But the arena
 * stream also holds the frees queued behind every lane's previous work, and "cudaStreamSynchronize
 * blocks until stream has completed all operations" (runtime API): each allocate() waits for the
 * lane queued just before it, so the four lanes, sized to share the GPU, run one after the other,
 * and the host picks each lane's seeds while at most one lane runs. An event recorded after the
 * cudaMallocAsync and waited on by the lane's stream (cudaStreamWaitEvent) publishes the block
 * without a host wait.
 * Planted: the cudaStreamSynchronize in DeviceArena::allocate(), four times a batch (one line).
 * Clean: the pool's threshold set once, the graph's allocations and one upload, the arena's
 * cudaMallocAsync and its stream-ordered cudaFreeAsync, the seeds' pinned double buffer and async
 * upload, the reports downloaded into the pinned ring on the copy stream and read one batch behind,
 * the final read of the co-occurrence table, teardown.
 * Checks: every lane's first walks against a CPU walk, its step count, and the table's total.
 */
#include "corpus.h"

#include <stdint.h>
#include <vector>

enum { BATCHES = 30, V = 1 << 20, LANES = 4, MIN_SEEDS = 64 << 10, MAX_SEEDS = 96 << 10, WALK_LEN = 80, WINDOW = 8, TABLE = 1 << 23, KEPT = 4, THREADS = 256, SLOTS = 2 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline uint32_t next_vertex(const uint32_t *row, const uint32_t *col, uint32_t v, uint32_t salt, int step)
{
	uint32_t deg = row[v + 1] - row[v];
	return col[row[v] + mix32(salt * 0x9e3779b1u + (uint32_t)step * 0x85ebca77u + v) % deg];
}

struct lane_report {
	unsigned long long steps;
	uint32_t first[KEPT][WALK_LEN];
};

__global__ void walk(const uint32_t *row, const uint32_t *col, const uint32_t *seeds, int n, uint32_t salt, uint32_t *walks, struct lane_report *rep)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = seeds[i];
	for (int k = 0; k < WALK_LEN; k++) {
		walks[(size_t)i * WALK_LEN + k] = v;
		if (i < KEPT)
			rep->first[i][k] = v;
		v = next_vertex(row, col, v, salt + (uint32_t)i, k);
	}
	atomicAdd(&rep->steps, (unsigned long long)WALK_LEN);
}

__global__ void cooccur(const uint32_t *walks, int n, unsigned int *table)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= n * WALK_LEN)
		return;
	int pos = t % WALK_LEN;
	uint32_t u = walks[t];
	for (int d = 1; d <= WINDOW && pos + d < WALK_LEN; d++)
		atomicAdd(&table[mix32(u * 0x27d4eb2fu ^ walks[t + d]) % TABLE], 1u);
}

/* --- the shared stream-ordered arena ----------------------------------------------------------------- */

class DeviceArena {
public:
	DeviceArena()
	{
		CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
		CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
	}
	~DeviceArena()
	{
		CHECK(cudaStreamSynchronize(stream_)); // SYNCSPY-CLEAN: teardown, the last frees
		CHECK(cudaEventDestroy(done_));
		CHECK(cudaStreamDestroy(stream_));
	}
	/* a block valid on every stream */
	void *allocate(size_t bytes)
	{
		void *p;
		CHECK(cudaMallocAsync(&p, bytes, stream_)); // SYNCSPY-CLEAN: stream-ordered, from the default pool (it grows in the first batches, then reuses its blocks)
		CHECK(cudaStreamSynchronize(stream_)); // SYNCSPY-PROBLEM: publishes the block by a host wait on the arena stream, which also holds the frees queued behind the previous lane's work: the lanes run one at a time
		return p;
	}
	/* freed once the work queued so far on the user's stream is done */
	void release(void *p, cudaStream_t user)
	{
		CHECK(cudaEventRecord(done_, user));
		CHECK(cudaStreamWaitEvent(stream_, done_, 0));
		CHECK(cudaFreeAsync(p, stream_)); // SYNCSPY-CLEAN: stream-ordered free back to the pool, no sync
	}

private:
	cudaStream_t stream_;
	cudaEvent_t done_;
};

/* --- the host: seeds and the CPU reference ------------------------------------------------------------ */

static void build_graph(std::vector<uint32_t> &row, std::vector<uint32_t> &col)
{
	row.assign(V + 1, 0);
	for (uint32_t v = 0; v < V; v++)
		row[v + 1] = row[v] + 4 + mix32(v + 0x3c6ef372u) % 25u;
	col.resize(row[V]);
	for (uint32_t v = 0; v < V; v++)
		for (uint32_t j = row[v]; j < row[v + 1]; j++)
			col[j] = mix32(v * 31u + j * 0x9e3779b1u) % V;
}

static int seed_count(int batch, int lane) { return MIN_SEEDS + (int)(mix32((uint32_t)(batch * LANES + lane) + 77u) % (MAX_SEEDS - MIN_SEEDS + 1)); }
static uint32_t lane_salt(int batch, int lane) { return mix32((uint32_t)(batch * LANES + lane) * 0x632be5abu); }

/* degree-biased seeds: a vertex is kept with probability deg / 28 */
static void pick_seeds(const std::vector<uint32_t> &row, int batch, int lane, uint32_t *out, int n)
{
	uint32_t h = lane_salt(batch, lane);
	for (int i = 0; i < n;) {
		h = mix32(h + 0x6d2b79f5u);
		uint32_t v = h % V;
		if (mix32(h ^ 0xa511e9b3u) % 28u < row[v + 1] - row[v])
			out[i++] = v;
	}
}

int main(void)
{
	const char *name = "c101_random_walk_arena_publish_sync";
	std::vector<uint32_t> row, col;
	build_graph(row, col);

	cudaMemPool_t pool;
	uint64_t keep_all = UINT64_MAX;
	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
	cudaStream_t lane_stream[LANES], copy;
	uint32_t *d_row, *d_col, *h_seeds[LANES][SLOTS];
	unsigned int *d_table;
	struct lane_report *d_rep, *h_rep;
	cudaEvent_t seeded[LANES][SLOTS], walked[LANES], reported[LANES][SLOTS];
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_row, row.size() * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation, the graph's rows
	CHECK(cudaMalloc(&d_col, col.size() * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation, the graph's edges
	CHECK(cudaMalloc(&d_table, TABLE * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation, the co-occurrence table
	CHECK(cudaMalloc(&d_rep, LANES * SLOTS * sizeof(struct lane_report))); // SYNCSPY-CLEAN: setup allocation, the reports
	CHECK(cudaMallocHost(&h_rep, LANES * SLOTS * sizeof(struct lane_report))); // SYNCSPY-CLEAN: setup pinned allocation, the report ring
	CHECK(cudaMemcpy(d_row, row.data(), row.size() * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the graph once
	CHECK(cudaMemcpy(d_col, col.data(), col.size() * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the graph once
	CHECK(cudaMemset(d_table, 0, TABLE * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup, the table zeroed once
	for (int l = 0; l < LANES; l++) {
		CHECK(cudaStreamCreateWithFlags(&lane_stream[l], cudaStreamNonBlocking));
		CHECK(cudaEventCreateWithFlags(&walked[l], cudaEventDisableTiming));
		for (int s = 0; s < SLOTS; s++) {
			CHECK(cudaMallocHost(&h_seeds[l][s], MAX_SEEDS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation, a seed slot
			CHECK(cudaEventCreateWithFlags(&seeded[l][s], cudaEventDisableTiming));
			CHECK(cudaEventCreateWithFlags(&reported[l][s], cudaEventDisableTiming));
		}
	}
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, once: the table is zeroed before the lanes start

	unsigned long long checksum = 0, walked_total = 0;
	{
		DeviceArena arena;
		for (int batch = 0; batch <= BATCHES; batch++) {
			int s = batch % SLOTS;
			for (int l = 0; l < LANES && batch < BATCHES; l++) {
				int n = seed_count(batch, l);
				struct lane_report *rep = d_rep + l * SLOTS + s;
				if (batch >= SLOTS)
					CHECK(cudaEventSynchronize(seeded[l][s])); // SYNCSPY-CLEAN: the seeds' double buffer: this slot's upload two batches back
				pick_seeds(row, batch, l, h_seeds[l][s], n);
				uint32_t *block = (uint32_t *)arena.allocate((size_t)n * (WALK_LEN + 1) * sizeof(uint32_t));
				uint32_t *seeds = block, *walks = block + n;
				CHECK(cudaMemcpyAsync(seeds, h_seeds[l][s], n * sizeof(uint32_t), cudaMemcpyHostToDevice, lane_stream[l])); // SYNCSPY-CLEAN: async from the pinned seed slot on the lane's stream
				CHECK(cudaEventRecord(seeded[l][s], lane_stream[l]));
				CHECK(cudaStreamWaitEvent(lane_stream[l], reported[l][s], 0));
				CHECK(cudaMemsetAsync(rep, 0, sizeof(struct lane_report), lane_stream[l]));
				walk<<<(n + THREADS - 1) / THREADS, THREADS, 0, lane_stream[l]>>>(d_row, d_col, seeds, n, lane_salt(batch, l), walks, rep);
				CHECK_LAUNCH();
				cooccur<<<(n * WALK_LEN + THREADS - 1) / THREADS, THREADS, 0, lane_stream[l]>>>(walks, n, d_table);
				CHECK_LAUNCH();
				CHECK(cudaEventRecord(walked[l], lane_stream[l]));
				CHECK(cudaStreamWaitEvent(copy, walked[l], 0));
				CHECK(cudaMemcpyAsync(h_rep + l * SLOTS + s, rep, sizeof(struct lane_report), cudaMemcpyDeviceToHost, copy)); // SYNCSPY-CLEAN: the lane's report, async into the pinned ring on the copy stream
				CHECK(cudaEventRecord(reported[l][s], copy));
				arena.release(block, lane_stream[l]);
			}
			if (batch >= 1) /* the previous batch's reports, while this batch runs */
				for (int l = 0; l < LANES; l++) {
					int prev = batch - 1, ps = prev % SLOTS, n = seed_count(prev, l);
					CHECK(cudaEventSynchronize(reported[l][ps])); // SYNCSPY-CLEAN: one batch behind: batch b-1's reports while batch b runs (the last ones after the loop)
					const struct lane_report *r = h_rep + l * SLOTS + ps;
					corpus_expect(name, "walked steps", (long long)r->steps, (long long)n * WALK_LEN);
					walked_total += r->steps;
					std::vector<uint32_t> seeds(KEPT);
					pick_seeds(row, prev, l, seeds.data(), KEPT);
					for (int w = 0; w < KEPT; w++) {
						uint32_t v = seeds[w];
						for (int k = 0; k < WALK_LEN; k++) {
							corpus_expect(name, "walk vertex", r->first[w][k], v);
							checksum = checksum * 1000003u + v;
							v = next_vertex(row.data(), col.data(), v, lane_salt(prev, l) + (uint32_t)w, k);
						}
					}
				}
		}
	}

	std::vector<unsigned int> table(TABLE);
	CHECK(cudaMemcpy(table.data(), d_table, TABLE * sizeof(unsigned int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the co-occurrence table
	unsigned long long pairs = 0;
	for (int i = 0; i < TABLE; i++) {
		pairs += table[i];
		checksum = checksum * 31u + table[i];
	}
	corpus_expect(name, "co-occurring pairs", (long long)pairs, (long long)(walked_total / WALK_LEN) * (WINDOW * WALK_LEN - WINDOW * (WINDOW + 1) / 2));

	for (int l = 0; l < LANES; l++) {
		for (int s = 0; s < SLOTS; s++) {
			CHECK(cudaFreeHost(h_seeds[l][s])); // SYNCSPY-CLEAN: teardown
			CHECK(cudaEventDestroy(seeded[l][s]));
			CHECK(cudaEventDestroy(reported[l][s]));
		}
		CHECK(cudaEventDestroy(walked[l]));
		CHECK(cudaStreamDestroy(lane_stream[l]));
	}
	CHECK(cudaFree(d_row)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_col)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_table)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_rep)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_rep)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(copy));
	corpus_result(name, BATCHES, checksum);
	return 0;
}
