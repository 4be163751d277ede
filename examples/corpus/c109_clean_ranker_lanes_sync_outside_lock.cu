/*
 * examples/corpus/c109_clean_ranker_lanes_sync_outside_lock.cu: corpus workload (CUDA C++,
 * std::thread, std::mutex). The learning-to-rank service of c105 with its executor fixed: four
 * request threads each serve 16 requests. A request holds 32 queries with 8192 candidate
 * documents each. The thread builds the candidate ids and the query features in its pinned lane
 * slot. The GPU scores every (query, candidate) pair with a two-layer int8 MLP (dp4a) over the
 * document's features, which sit in a feature store uploaded once, mixed with the query's. It
 * returns each query's best candidate. The thread then checks the reply against probes on the
 * host.
 * GpuExecutor::run() now queues the lane's upload, kernel and download and waits for the lane's
 * stream without the executor's mutex. It takes the mutex only for the bookkeeping (the
 * served-request count), the one state the lanes share. Each lane has its own non-blocking stream,
 * device buffers and pinned slots, and stream order protects them. While one thread waits for its
 * reply, the other three queue theirs, and up to four requests run side by side, each on 32
 * blocks, about a quarter of an H100's SMs (the fix of c105, which held the mutex across the
 * wait).
 * Clean: the per-request cudaStreamSynchronize of the thread's own lane, without the lock (the
 * reply needs the scores, and the other lanes keep the GPU busy meanwhile), the setup allocations,
 * the feature store's and weights' uploads and the one cudaDeviceSynchronize after them, the
 * per-request async copies from and to the lane's pinned slots, teardown.
 * Scores are integers (int8 products, int32 sums), so the host recomputes a query's winner and
 * 16 probes exactly. The checksum is a sum over requests, whatever order the threads finish in
 * (c105 prints the same one).
 */
#include "corpus.h"

#include <mutex>
#include <thread>
#include <vector>

enum { LANES = 4, REQUESTS = 16, QUERIES = 32, CANDS = 8192, FEATS = 128, WORDS = FEATS / 4 };
enum { HIDDEN = 256, DOCS = 1 << 18, THREADS = 256, PROBES = 16 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the model: W1 (HIDDEN x FEATS int8), b1, w2; document features are nibbles stored in bytes */
struct mlp {
	int8_t w1[HIDDEN][FEATS];
	int b1[HIDDEN];
	int8_t w2[HIDDEN];
};

/* one request as the lane uploads it */
struct request {
	uint32_t cand[QUERIES][CANDS];
	uint32_t qfeat[QUERIES][WORDS];
};

__host__ __device__ static inline int dot4(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
	return __dp4a((int)a, (int)b, 0);
#else
	int s = 0;
	for (int k = 0; k < 4; k++)
		s += (int)(int8_t)(a >> (8 * k)) * (int)(int8_t)(b >> (8 * k));
	return s;
#endif
}

/* the score of one document for one query; x is the document's features plus the query's */
__host__ __device__ static inline int mlp_score(const uint32_t *x, const uint32_t *w1,
						 const int *b1, const int8_t *w2)
{
	int score = 0;
	for (int h = 0; h < HIDDEN; h++) {
		int acc = b1[h];
		for (int w = 0; w < WORDS; w++)
			acc += dot4(x[w], w1[h * WORDS + w]);
		score += (acc > 0 ? acc >> 4 : 0) * (int)w2[h];
	}
	return score;
}

__host__ __device__ static inline unsigned long long rank_key(int score, int c)
{
	unsigned long long s = (uint32_t)(score + (1 << 24));
	return s << 32 | (0xffffffffu - (uint32_t)c);
}

/* one block per query: each thread scores CANDS / THREADS candidates, the block keeps the best */
__global__ void rank_candidates(const uint32_t *store, const struct mlp *model,
				const struct request *req, unsigned long long *best)
{
	__shared__ uint32_t w1[HIDDEN * WORDS];
	__shared__ int b1[HIDDEN];
	__shared__ int8_t w2[HIDDEN];
	__shared__ unsigned long long keys[THREADS];
	const uint32_t *mw1 = (const uint32_t *)model->w1;
	for (int i = threadIdx.x; i < HIDDEN * WORDS; i += THREADS)
		w1[i] = mw1[i];
	for (int i = threadIdx.x; i < HIDDEN; i += THREADS) {
		b1[i] = model->b1[i];
		w2[i] = model->w2[i];
	}
	__syncthreads();
	int q = blockIdx.x;
	unsigned long long mine = 0;
	for (int c = threadIdx.x; c < CANDS; c += THREADS) {
		const uint32_t *doc = store + (size_t)req->cand[q][c] * WORDS;
		uint32_t x[WORDS];
		for (int w = 0; w < WORDS; w++)
			x[w] = (doc[w] + req->qfeat[q][w]) & 0x0f0f0f0fu;
		unsigned long long key = rank_key(mlp_score(x, w1, b1, w2), c);
		mine = key > mine ? key : mine;
	}
	keys[threadIdx.x] = mine;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int t = 1; t < THREADS; t++)
			mine = keys[t] > mine ? keys[t] : mine;
		best[q] = mine;
	}
}

/* --- the executor --------------------------------------------------------------------------- */

struct lane {
	cudaStream_t stream;
	struct request *d_req;
	unsigned long long *d_best;
};

class GpuExecutor {
public:
	GpuExecutor(const uint32_t *store, const struct mlp *model) : store_(store), model_(model)
	{
		for (int l = 0; l < LANES; l++) {
			CHECK(cudaStreamCreateWithFlags(&lanes_[l].stream, cudaStreamNonBlocking));
			struct lane &ln = lanes_[l];
			CHECK(cudaMalloc(&ln.d_req, sizeof *ln.d_req)); // SYNCSPY-CLEAN: setup
			CHECK(cudaMalloc(&ln.d_best, QUERIES * 8)); // SYNCSPY-CLEAN: setup
		}
	}
	~GpuExecutor()
	{
		for (int l = 0; l < LANES; l++) {
			CHECK(cudaFree(lanes_[l].d_req)); // SYNCSPY-CLEAN: teardown
			CHECK(cudaFree(lanes_[l].d_best)); // SYNCSPY-CLEAN: teardown
			CHECK(cudaStreamDestroy(lanes_[l].stream));
		}
	}

	/* scores one request on lane l; returns when the reply is in `best` */
	void run(int l, const struct request *req, unsigned long long *best)
	{
		struct request *d_req = lanes_[l].d_req;
		unsigned long long *d_best = lanes_[l].d_best;
		cudaStream_t s = lanes_[l].stream;
		CHECK(cudaMemcpyAsync(d_req, req, sizeof *req, H2D, s)); // SYNCSPY-CLEAN: pinned
		rank_candidates<<<QUERIES, THREADS, 0, s>>>(store_, model_, d_req, d_best);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(best, d_best, QUERIES * 8, D2H, s)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: the reply, own lane, no lock held
		std::lock_guard<std::mutex> hold(mutex_); /* only the bookkeeping is shared */
		served_++;
	}

	int served() const { return served_; }

private:
	const uint32_t *store_;
	const struct mlp *model_;
	struct lane lanes_[LANES];
	std::mutex mutex_;
	int served_ = 0;
};

/* --- the request threads -------------------------------------------------------------------- */

static void build_request(int r, struct request *req)
{
	for (int q = 0; q < QUERIES; q++) {
		uint32_t base = ((uint32_t)r * QUERIES + (uint32_t)q) * CANDS;
		for (int c = 0; c < CANDS; c++)
			req->cand[q][c] = mix32(base + (uint32_t)c) % DOCS;
		for (int w = 0; w < WORDS; w++)
			req->qfeat[q][w] = mix32(base ^ 0xa5a5a5a5u ^ (uint32_t)w) & 0x0f0f0f0fu;
	}
}

static int host_score(const uint32_t *store, const struct mlp *m, const struct request *req,
		      int q, int c)
{
	uint32_t x[WORDS];
	const uint32_t *doc = store + (size_t)req->cand[q][c] * WORDS;
	for (int w = 0; w < WORDS; w++)
		x[w] = (doc[w] + req->qfeat[q][w]) & 0x0f0f0f0fu;
	return mlp_score(x, (const uint32_t *)m->w1, m->b1, m->w2);
}

/* the reply's check: query r % QUERIES's winner is what the host scores, and beats 16 probes */
static unsigned long long check_reply(int r, const uint32_t *store, const struct mlp *m,
				      const struct request *req, const unsigned long long *best)
{
	int q = r % QUERIES, c = (int)(0xffffffffu - (uint32_t)best[q]);
	int bad = c < 0 || c >= CANDS || rank_key(host_score(store, m, req, q, c), c) != best[q];
	for (int p = 0; p < PROBES && !bad; p++) {
		int pc = (int)(mix32((uint32_t)(r * PROBES + p) + 77u) % CANDS);
		bad |= rank_key(host_score(store, m, req, q, pc), pc) > best[q];
	}
	if (bad) {
		fprintf(stderr, "c109: request %d query %d: not the best candidate\n", r, q);
		exit(1);
	}
	unsigned long long h = 0;
	for (int k = 0; k < QUERIES; k++)
		h = h * 1000003u + best[k];
	return mix32((uint32_t)r) * (h | 1u);
}

int main(void)
{
	const char *name = "c109_clean_ranker_lanes_sync_outside_lock";
	std::vector<uint32_t> store((size_t)DOCS * WORDS);
	for (size_t i = 0; i < store.size(); i++)
		store[i] = mix32((uint32_t)i + 0x1234567u) & 0x0f0f0f0fu;
	struct mlp *model = new struct mlp;
	for (int h = 0; h < HIDDEN; h++) {
		for (int f = 0; f < FEATS; f++) {
			uint32_t v = mix32((uint32_t)(h * FEATS + f));
			model->w1[h][f] = (int8_t)((int)(v % 16u) - 8);
		}
		model->b1[h] = (int)(mix32((uint32_t)h + 5u) % 2001u) - 1000;
		model->w2[h] = (int8_t)((int)(mix32((uint32_t)h + 0xbeefu) % 16u) - 8);
	}

	uint32_t *d_store;
	struct mlp *d_model;
	struct request *slot[LANES];
	unsigned long long *reply[LANES];
	size_t store_bytes = store.size() * sizeof(uint32_t);
	CHECK(cudaMalloc(&d_store, store_bytes)); // SYNCSPY-CLEAN: setup, the feature store
	CHECK(cudaMalloc(&d_model, sizeof *model)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_store, store.data(), store_bytes, H2D)); // SYNCSPY-CLEAN: setup
	CHECK(cudaMemcpy(d_model, model, sizeof *model, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, the uploads land before the lanes
	for (int l = 0; l < LANES; l++) {
		CHECK(cudaMallocHost(&slot[l], sizeof *slot[l])); // SYNCSPY-CLEAN: setup, pinned
		CHECK(cudaMallocHost(&reply[l], QUERIES * 8)); // SYNCSPY-CLEAN: setup, pinned reply
	}

	unsigned long long sums[LANES] = {0};
	{
		GpuExecutor exec(d_store, d_model);
		std::vector<std::thread> threads;
		for (int l = 0; l < LANES; l++)
			threads.emplace_back([&, l] {
				for (int i = 0; i < REQUESTS; i++) {
					int r = i * LANES + l;
					build_request(r, slot[l]);
					exec.run(l, slot[l], reply[l]);
					sums[l] += check_reply(r, store.data(), model, slot[l],
							       reply[l]);
				}
			});
		for (auto &t : threads)
			t.join();
		corpus_expect(name, "requests served", exec.served(), LANES * REQUESTS);
	}

	unsigned long long checksum = 0;
	for (int l = 0; l < LANES; l++) {
		checksum += sums[l];
		CHECK(cudaFreeHost(slot[l])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(reply[l])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaFree(d_store)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_model)); // SYNCSPY-CLEAN: teardown
	delete model;
	corpus_result(name, LANES * REQUESTS, checksum);
	return 0;
}
