/*
 * examples/corpus/c93_vector_search_thread_local_scratch.cu: corpus workload (CUDA C++, std::thread).
 * The coarse quantizer of a vector-search service: every batch, four lanes (one non-blocking
 * stream each) each take 16384 queries, which a worker decodes into compact descriptors (two
 * centroid ids and a noise seed per query) in a pinned staging slot and uploads; the GPU expands
 * the descriptors into 64-dimensional int8 vectors and assigns each to the nearest of 4096
 * centroids (dp4a dot products against shared-memory tiles), and the answers come back into a
 * pinned slot. The main thread reads batch b-1's answers while batch b runs (one-behind
 * cudaEventSynchronize) and tallies the centroids' hits.
 * The lanes' work runs on a TaskRunner, and each task keeps its device scratch (expanded queries,
 * descriptors, answers) in a function-local `thread_local LaneScratch`, "allocated once per
 * worker". But runner_config leaves reuse_threads at its default, false ("a thread per task until
 * the pool's shutdown path is reviewed"): run_on() starts a new std::thread for every task and
 * wait_all() joins it. An object with thread storage duration is constructed on its thread's
 * first pass through the declaration and destroyed when the thread exits (C++ standard,
 * [basic.stc.thread], [basic.start.term]), so every task's thread runs LaneScratch's constructor
 * (cudaMalloc) and, on exit, its destructor (cudaFree), four times a batch. "Managing memory
 * allocations using cudaMalloc and cudaFree causes the GPU to synchronize across all executing
 * CUDA streams" (CUDA programming guide, stream-ordered memory allocator): each exiting thread's
 * cudaFree waits for all four lanes' queued work, and std::thread::join "blocks the current thread
 * until the thread identified by *this finishes its execution", so the main thread waits in
 * wait_all() for the whole batch on the GPU before it reads the previous answers and decodes the
 * next batch: the GPU idles while the host spawns, decodes and uploads, and the one-behind read
 * always finds the answers done. reuse_threads = true (persistent workers, one per lane) keeps
 * each scratch for the run.
 * Planted: cudaMalloc in LaneScratch's constructor and cudaFree in its destructor, run on every
 * task's new thread (one problem, two lines).
 * Clean: the setup allocations and the centroid table's one upload, the descriptors uploaded
 * async from the pinned staging slot (reused after a cudaEventSynchronize on its upload two
 * batches back), the answers downloaded async into a pinned slot and read one batch behind, the
 * last batch's waits after the loop, teardown.
 * Distances are integers (int8 dot products): the CPU's brute force gives the same answers.
 */
#include "corpus.h"

#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string.h>
#include <thread>
#include <vector>

enum { LANES = 4, BATCHES = 40, QUERIES = 16384, DIM = 64, WORDS = DIM / 16, CENTROIDS = 4096, TILE = 256, ASSIGN_THREADS = 64, THREADS = 256, SLOTS = 2, CHECKED_QUERIES = 64 };

static const int checked_batches[2] = {5, 33};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline int centroid_value(int k, int d) { return (int)(mix32((uint32_t)k * 131u + (uint32_t)d * 7u + 3u) % 201u) - 100; }

struct query_desc {
	uint32_t a, b, seed; /* the query lies between centroids a and b, plus noise */
};

/* the query's coordinate d: the midpoint of its two centroids and a bounded perturbation */
__host__ __device__ static inline int query_value(const int8_t *centroids, struct query_desc q, int d)
{
	int v = (centroids[q.a * DIM + d] + centroids[q.b * DIM + d]) / 2 + (int)(mix32(q.seed ^ ((uint32_t)d * 0x9e3779b1u)) % 81u) - 40;
	return v < -127 ? -127 : (v > 127 ? 127 : v);
}

static struct query_desc decode_query(int lane, int batch, int i)
{
	uint32_t h = mix32((uint32_t)((batch * LANES + lane) * QUERIES + i) + 0x2545f491u);
	struct query_desc q = {h % CENTROIDS, mix32(h) % CENTROIDS, mix32(h + 1u)};
	return q;
}

__global__ void expand_queries(const struct query_desc *desc, const int8_t *centroids, int8_t *queries)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < QUERIES * DIM)
		queries[i] = (int8_t)query_value(centroids, desc[i / DIM], i % DIM);
}

/* thread per query: nearest centroid by |c|^2 - 2 q.c (|q|^2 is the same for all), lowest id on ties */
__global__ void assign(const int4 *queries, const int4 *centroids, const int *norms, int *best)
{
	__shared__ int4 s_c[TILE * WORDS];
	__shared__ int s_n[TILE];
	int q = blockIdx.x * blockDim.x + threadIdx.x;
	int4 qw[WORDS];
	for (int w = 0; w < WORDS; w++)
		qw[w] = queries[q * WORDS + w];
	int best_d = INT_MAX, best_k = 0;
	for (int t0 = 0; t0 < CENTROIDS; t0 += TILE) {
		__syncthreads();
		for (int i = threadIdx.x; i < TILE * WORDS; i += blockDim.x)
			s_c[i] = centroids[t0 * WORDS + i];
		for (int i = threadIdx.x; i < TILE; i += blockDim.x)
			s_n[i] = norms[t0 + i];
		__syncthreads();
		for (int k = 0; k < TILE; k++) {
			int dot = 0;
			for (int w = 0; w < WORDS; w++) {
				int4 c = s_c[k * WORDS + w];
				dot = __dp4a(qw[w].x, c.x, dot);
				dot = __dp4a(qw[w].y, c.y, dot);
				dot = __dp4a(qw[w].z, c.z, dot);
				dot = __dp4a(qw[w].w, c.w, dot);
			}
			int dist = s_n[k] - 2 * dot;
			if (dist < best_d) {
				best_d = dist;
				best_k = t0 + k;
			}
		}
	}
	best[q] = best_k;
}

/* --- the task runner --------------------------------------------------------------------------- */

struct runner_config {
	int workers = LANES;
	bool reuse_threads = false; /* a thread per task until the pool's shutdown path is reviewed */
};

class TaskRunner {
public:
	explicit TaskRunner(const runner_config &cfg) : cfg_(cfg), slots_(cfg.workers)
	{
		if (cfg_.reuse_threads)
			for (int w = 0; w < cfg_.workers; w++)
				slots_[w].thread = std::thread(&TaskRunner::worker_loop, this, w);
	}
	~TaskRunner()
	{
		wait_all();
		if (cfg_.reuse_threads) {
			{
				std::lock_guard<std::mutex> lk(mu_);
				stopping_ = true;
			}
			work_.notify_all();
			for (auto &s : slots_)
				s.thread.join();
		}
	}
	TaskRunner(const TaskRunner &) = delete;
	TaskRunner &operator=(const TaskRunner &) = delete;

	/* the task runs on worker w: a lane always goes to the same worker */
	void run_on(int w, std::function<void()> task)
	{
		if (!cfg_.reuse_threads) {
			slots_[w].thread = std::thread(std::move(task));
			return;
		}
		{
			std::lock_guard<std::mutex> lk(mu_);
			slots_[w].queue.push_back(std::move(task));
			pending_++;
		}
		work_.notify_all();
	}

	/* returns when every task handed out so far has returned */
	void wait_all()
	{
		if (!cfg_.reuse_threads) {
			for (auto &s : slots_)
				if (s.thread.joinable())
					s.thread.join();
			return;
		}
		std::unique_lock<std::mutex> lk(mu_);
		idle_.wait(lk, [this] { return pending_ == 0; });
	}

private:
	struct worker_slot {
		std::thread thread;
		std::deque<std::function<void()>> queue;
	};

	void worker_loop(int w)
	{
		std::unique_lock<std::mutex> lk(mu_);
		for (;;) {
			work_.wait(lk, [&] { return stopping_ || !slots_[w].queue.empty(); });
			if (slots_[w].queue.empty())
				return;
			std::function<void()> task = std::move(slots_[w].queue.front());
			slots_[w].queue.pop_front();
			lk.unlock();
			task();
			lk.lock();
			if (--pending_ == 0)
				idle_.notify_all();
		}
	}

	runner_config cfg_;
	std::vector<worker_slot> slots_;
	std::mutex mu_;
	std::condition_variable work_, idle_;
	int pending_ = 0;
	bool stopping_ = false;
};

/* --- the lanes ----------------------------------------------------------------------------------- */

/* a worker's device scratch: kept per thread, so that a worker allocates it once */
struct LaneScratch {
	int8_t *queries;
	struct query_desc *desc;
	int *best;
	void *block;

	LaneScratch()
	{
		const size_t q_bytes = (size_t)QUERIES * DIM, d_bytes = QUERIES * sizeof(struct query_desc), b_bytes = QUERIES * sizeof(int);
		CHECK(cudaMalloc(&block, q_bytes + d_bytes + b_bytes)); // SYNCSPY-PROBLEM: runs on every task's new thread: the lane's scratch allocated again, four times a batch
		queries = (int8_t *)block;
		desc = (struct query_desc *)((char *)block + q_bytes);
		best = (int *)((char *)block + q_bytes + d_bytes);
	}
	~LaneScratch()
	{
		CHECK(cudaFree(block)); // SYNCSPY-PROBLEM: at every task thread's exit: cudaFree waits for all four lanes' work, and wait_all() joins the thread
	}
	LaneScratch(const LaneScratch &) = delete;
	LaneScratch &operator=(const LaneScratch &) = delete;
};

struct lane {
	int id;
	cudaStream_t stream;
	struct query_desc *h_desc[SLOTS];
	int *h_best[SLOTS];
	cudaEvent_t uploaded[SLOTS], answered[SLOTS];
};

struct quantizer {
	struct lane lanes[LANES];
	int8_t *d_centroids;
	int *d_norms;
};

static void serve_lane(struct quantizer *qz, struct lane *ln, int batch)
{
	thread_local LaneScratch scratch; /* allocated once per worker */
	int s = batch % SLOTS;
	if (batch >= SLOTS)
		CHECK(cudaEventSynchronize(ln->uploaded[s])); // SYNCSPY-CLEAN: the staging double buffer: the upload from this slot two batches back
	for (int i = 0; i < QUERIES; i++)
		ln->h_desc[s][i] = decode_query(ln->id, batch, i);
	CHECK(cudaMemcpyAsync(scratch.desc, ln->h_desc[s], QUERIES * sizeof(struct query_desc), cudaMemcpyHostToDevice, ln->stream)); // SYNCSPY-CLEAN: async from the pinned staging slot on the lane's stream
	CHECK(cudaEventRecord(ln->uploaded[s], ln->stream));
	expand_queries<<<QUERIES * DIM / THREADS, THREADS, 0, ln->stream>>>(scratch.desc, qz->d_centroids, scratch.queries);
	CHECK_LAUNCH();
	assign<<<QUERIES / ASSIGN_THREADS, ASSIGN_THREADS, 0, ln->stream>>>((const int4 *)scratch.queries, (const int4 *)qz->d_centroids, qz->d_norms, scratch.best);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(ln->h_best[s], scratch.best, QUERIES * sizeof(int), cudaMemcpyDeviceToHost, ln->stream)); // SYNCSPY-CLEAN: the answers, async into the lane's pinned slot
	CHECK(cudaEventRecord(ln->answered[s], ln->stream));
}

/* the main thread: a batch's answers per lane, one batch behind */
struct tally {
	unsigned long long checksum;
	int *hits;                  /* per centroid */
	int *kept[2][LANES];        /* the checked batches' answers */
};

static void read_answers(struct quantizer *qz, int batch, struct tally *t)
{
	for (int l = 0; l < LANES; l++) {
		struct lane *ln = &qz->lanes[l];
		int s = batch % SLOTS;
		CHECK(cudaEventSynchronize(ln->answered[s])); // SYNCSPY-CLEAN: one batch behind: batch b-1's answers while batch b runs (the last batch's after the loop)
		unsigned long long h = 0;
		for (int i = 0; i < QUERIES; i++) {
			t->hits[ln->h_best[s][i]]++;
			h = h * 31u + (unsigned long long)ln->h_best[s][i];
		}
		t->checksum = t->checksum * 1000003u + h;
		for (int k = 0; k < 2; k++)
			if (batch == checked_batches[k])
				memcpy(t->kept[k][l], ln->h_best[s], QUERIES * sizeof(int));
	}
}

static int reference_assign(const int8_t *centroids, const int *norms, struct query_desc q)
{
	int v[DIM], best_d = INT_MAX, best_k = 0;
	for (int d = 0; d < DIM; d++)
		v[d] = query_value(centroids, q, d);
	for (int k = 0; k < CENTROIDS; k++) {
		int dot = 0;
		for (int d = 0; d < DIM; d++)
			dot += v[d] * centroids[k * DIM + d];
		int dist = norms[k] - 2 * dot;
		if (dist < best_d) {
			best_d = dist;
			best_k = k;
		}
	}
	return best_k;
}

int main(void)
{
	const char *name = "c93_vector_search_thread_local_scratch";
	struct quantizer qz;
	struct tally t;
	static int8_t h_centroids[CENTROIDS * DIM];
	static int h_norms[CENTROIDS];

	for (int k = 0; k < CENTROIDS; k++) {
		h_norms[k] = 0;
		for (int d = 0; d < DIM; d++) {
			h_centroids[k * DIM + d] = (int8_t)centroid_value(k, d);
			h_norms[k] += centroid_value(k, d) * centroid_value(k, d);
		}
	}
	t.checksum = 0;
	t.hits = (int *)calloc(CENTROIDS, sizeof(int));
	for (int k = 0; k < 2; k++)
		for (int l = 0; l < LANES; l++)
			t.kept[k][l] = (int *)malloc(QUERIES * sizeof(int));

	CHECK(cudaMalloc(&qz.d_centroids, sizeof h_centroids)); // SYNCSPY-CLEAN: setup allocation, the centroid table
	CHECK(cudaMalloc(&qz.d_norms, sizeof h_norms)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(qz.d_centroids, h_centroids, sizeof h_centroids, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the centroids once
	CHECK(cudaMemcpy(qz.d_norms, h_norms, sizeof h_norms, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the norms once
	for (int l = 0; l < LANES; l++) {
		struct lane *ln = &qz.lanes[l];
		ln->id = l;
		CHECK(cudaStreamCreateWithFlags(&ln->stream, cudaStreamNonBlocking));
		for (int s = 0; s < SLOTS; s++) {
			CHECK(cudaMallocHost(&ln->h_desc[s], QUERIES * sizeof(struct query_desc))); // SYNCSPY-CLEAN: setup pinned allocation, a staging slot
			CHECK(cudaMallocHost(&ln->h_best[s], QUERIES * sizeof(int))); // SYNCSPY-CLEAN: setup pinned allocation, an answer slot
			CHECK(cudaEventCreateWithFlags(&ln->uploaded[s], cudaEventDisableTiming));
			CHECK(cudaEventCreateWithFlags(&ln->answered[s], cudaEventDisableTiming));
		}
	}

	{
		runner_config cfg; /* the service's settings: four workers, threads not reused */
		TaskRunner runner(cfg);
		for (int batch = 0; batch < BATCHES; batch++) {
			for (int l = 0; l < LANES; l++) {
				struct lane *ln = &qz.lanes[l];
				runner.run_on(l, [&qz, ln, batch] { serve_lane(&qz, ln, batch); });
			}
			runner.wait_all();
			if (batch >= 1)
				read_answers(&qz, batch - 1, &t);
		}
		read_answers(&qz, BATCHES - 1, &t);
	}

	long long assigned = 0;
	for (int k = 0; k < CENTROIDS; k++)
		assigned += t.hits[k];
	corpus_expect(name, "queries assigned", assigned, (long long)BATCHES * LANES * QUERIES);
	for (int k = 0; k < 2; k++)
		for (int l = 0; l < LANES; l++)
			for (int j = 0; j < CHECKED_QUERIES; j++) {
				int i = (int)(mix32((uint32_t)(k * 1000 + l * 100 + j)) % QUERIES);
				struct query_desc q = decode_query(l, checked_batches[k], i);
				corpus_expect(name, "nearest centroid", t.kept[k][l][i], reference_assign(h_centroids, h_norms, q));
			}

	for (int l = 0; l < LANES; l++) {
		struct lane *ln = &qz.lanes[l];
		for (int s = 0; s < SLOTS; s++) {
			CHECK(cudaFreeHost(ln->h_desc[s])); // SYNCSPY-CLEAN: teardown
			CHECK(cudaFreeHost(ln->h_best[s])); // SYNCSPY-CLEAN: teardown
			CHECK(cudaEventDestroy(ln->uploaded[s]));
			CHECK(cudaEventDestroy(ln->answered[s]));
		}
		CHECK(cudaStreamDestroy(ln->stream));
	}
	CHECK(cudaFree(qz.d_centroids)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(qz.d_norms)); // SYNCSPY-CLEAN: teardown
	free(t.hits);
	for (int k = 0; k < 2; k++)
		for (int l = 0; l < LANES; l++)
			free(t.kept[k][l]);
	corpus_result(name, BATCHES, t.checksum);
	return 0;
}
