/*
 * examples/corpus/d45_clean_fraud_scoring_graph_exec_per_lane.c: corpus workload (CUDA driver
 * API), CLEAN. The two-tenant card-fraud scoring service of d43 with its graph cache keyed by
 * model and lane (the fix of d43): each tenant's lane gets its own executable graph, instantiated
 * from the same model graph and uploaded once at setup, so the two tenants' forests (64 blocks
 * each, about half the GPU, latency-bound) run side by side on their non-blocking streams. The
 * driver API reference (cuGraphLaunch): "To execute a graph concurrently, it must be instantiated
 * multiple times into multiple executable graphs." Each submission still patches its executable
 * graph's kernel nodes with cuGraphExecKernelNodeSetParams (the batch's statistics slot changes),
 * which only affects later launches and does not wait ("Already enqueued or running launches of
 * hGraphExec are not affected by this call"). Per batch the host encodes 8192 transactions a lane
 * into one of two pinned staging slots, uploads them asynchronously, launches the lane's graph and
 * downloads the scores into one of two pinned reply slots; the replies are published one batch
 * behind after an event wait. The setup sync orders the zeroed statistics before both lanes.
 * Clean: the setup allocations and the model's upload, the two instantiations and uploads (one per
 * lane), the setup sync, the per-batch async upload from pinned staging and download into a
 * pinned reply slot, the publisher's cuEventSynchronize on each lane's batch one behind, the final
 * waits and the one read of the device statistics, teardown.
 *   d45_clean_fraud_scoring_graph_exec_per_lane driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { BATCHES = 60, TENANTS = 2, ROWS = 8192, FEATURES = 32, TREES = 2048, TREE_DEPTH = 8, THREADS = 128, SLOTS = 2, SAMPLES = 16, FLAG_SCORE = 2500, MODEL_ID = 3 };
enum { INTERNAL = (1 << TREE_DEPTH) - 1, LEAVES = 1 << TREE_DEPTH };

/* --- the graph cache -------------------------------------------------------------------------- */

struct cached_graph {
	int key;
	CUgraph graph; /* kept: its nodes name the executable graph's nodes */
	CUgraphExec exec;
	CUgraphNode eval, stats;
};

struct graph_cache {
	CUfunction eval_fn, stats_fn;
	CUdeviceptr d_nodes, d_leaves; /* the model */
	int (*key)(int model, int lane);
	struct cached_graph entry[8];
	int n;
};

/* one executable graph per model and lane: launches of one executable graph are ordered, so
 * lanes that run concurrently need their own */
static int key_by_model_lane(int model, int lane)
{
	return model * 16 + lane;
}

/* the kernel arguments of one submission: its rows, scores and statistics slot */
struct bind {
	CUdeviceptr rows, score, stats;
	int n, features, trees, depth, threshold;
	void *eval_args[8], *stats_args[4];
};

static void bind_args(struct graph_cache *c, struct bind *b)
{
	b->n = ROWS, b->features = FEATURES, b->trees = TREES, b->depth = TREE_DEPTH, b->threshold = FLAG_SCORE;
	b->eval_args[0] = &b->rows, b->eval_args[1] = &b->n, b->eval_args[2] = &b->features, b->eval_args[3] = &c->d_nodes;
	b->eval_args[4] = &c->d_leaves, b->eval_args[5] = &b->trees, b->eval_args[6] = &b->depth, b->eval_args[7] = &b->score;
	b->stats_args[0] = &b->score, b->stats_args[1] = &b->n, b->stats_args[2] = &b->threshold, b->stats_args[3] = &b->stats;
}

static CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction fn, unsigned grid, void **args)
{
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof p);
	p.func = fn;
	p.gridDimX = grid, p.gridDimY = 1, p.gridDimZ = 1;
	p.blockDimX = THREADS, p.blockDimY = 1, p.blockDimZ = 1;
	p.kernelParams = args;
	return p;
}

static struct cached_graph *cache_lookup(struct graph_cache *c, int model, int lane, struct bind *first, CUstream s)
{
	int key = c->key(model, lane);
	for (int i = 0; i < c->n; i++)
		if (c->entry[i].key == key)
			return &c->entry[i];
	struct cached_graph *g = &c->entry[c->n++];
	CUDA_KERNEL_NODE_PARAMS pe = kernel_params(c->eval_fn, ROWS / THREADS, first->eval_args);
	CUDA_KERNEL_NODE_PARAMS ps = kernel_params(c->stats_fn, ROWS / THREADS, first->stats_args);
	g->key = key;
	DCHECK(cuGraphCreate(&g->graph, 0));
	DCHECK(cuGraphAddKernelNode(&g->eval, g->graph, NULL, 0, &pe));
	DCHECK(cuGraphAddKernelNode(&g->stats, g->graph, &g->eval, 1, &ps));
	DCHECK(cuGraphInstantiate(&g->exec, g->graph, 0)); // SYNCSPY-CLEAN: setup, instantiated once per cache key
	DCHECK(cuGraphUpload(g->exec, s)); // SYNCSPY-CLEAN: setup, uploaded once per cache key
	return g;
}

/* --- a tenant's lane -------------------------------------------------------------------------- */

struct lane {
	int tenant;
	CUstream s;
	CUdeviceptr d_rows, d_score;
	unsigned char *h_rows[SLOTS]; /* pinned staging */
	int *h_score[SLOTS];          /* pinned replies */
	CUevent done[SLOTS];
	struct cached_graph *g;
	struct bind b;
	long long score_sum[BATCHES];
	unsigned long long flagged[BATCHES];
	int sample[BATCHES][SAMPLES];
};

static uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* the transaction encoder: 32 byte features a row; the second bank's customers skew high on the
 * first eight (amount buckets) */
static void encode_batch(int tenant, int batch, unsigned char *rows)
{
	for (int r = 0; r < ROWS; r++)
		for (int f = 0; f < FEATURES; f += 8) {
			uint64_t h = mix64(((uint64_t)tenant << 56) ^ ((uint64_t)batch << 32) ^ ((uint64_t)r << 8) ^ (uint64_t)f);
			if (tenant == 1 && f == 0)
				h |= 0x4040404040404040ull;
			memcpy(rows + (size_t)r * FEATURES + f, &h, 8);
		}
}

static void lane_submit(struct lane *ln, struct graph_cache *c, CUdeviceptr d_stats, int batch)
{
	int slot = batch % SLOTS;
	ln->b.rows = ln->d_rows;
	ln->b.score = ln->d_score;
	ln->b.stats = d_stats + ((size_t)ln->tenant * BATCHES + (size_t)batch) * 2 * sizeof(unsigned long long);
	CUDA_KERNEL_NODE_PARAMS pe = kernel_params(c->eval_fn, ROWS / THREADS, ln->b.eval_args);
	CUDA_KERNEL_NODE_PARAMS ps = kernel_params(c->stats_fn, ROWS / THREADS, ln->b.stats_args);
	DCHECK(cuMemcpyHtoDAsync(ln->d_rows, ln->h_rows[slot], (size_t)ROWS * FEATURES, ln->s)); // SYNCSPY-CLEAN: async upload from the lane's pinned staging slot
	DCHECK(cuGraphExecKernelNodeSetParams(ln->g->exec, ln->g->eval, &pe));
	DCHECK(cuGraphExecKernelNodeSetParams(ln->g->exec, ln->g->stats, &ps));
	DCHECK(cuGraphLaunch(ln->g->exec, ln->s));
	DCHECK(cuMemcpyDtoHAsync(ln->h_score[slot], ln->d_score, ROWS * sizeof(int), ln->s)); // SYNCSPY-CLEAN: async download into the lane's pinned reply slot
	DCHECK(cuEventRecord(ln->done[slot], ln->s));
}

/* the reply publisher: totals of the batch and the sampled rows kept for the self-check */
static void lane_publish(struct lane *ln, int batch)
{
	const int *score = ln->h_score[batch % SLOTS];
	long long sum = 0;
	unsigned long long flagged = 0;
	for (int r = 0; r < ROWS; r++) {
		sum += score[r];
		flagged += score[r] > FLAG_SCORE;
	}
	ln->score_sum[batch] = sum;
	ln->flagged[batch] = flagged;
	for (int k = 0; k < SAMPLES; k++)
		ln->sample[batch][k] = score[(k * 509 + batch * 13) % ROWS];
}

/* --- the model and its host evaluation -------------------------------------------------------- */

static void make_forest(unsigned int *nodes, int *leaves)
{
	for (int t = 0; t < TREES; t++) {
		for (int k = 0; k < INTERNAL; k++) {
			uint64_t h = mix64((uint64_t)t * 1000003u + (uint64_t)k);
			nodes[(size_t)t * INTERNAL + k] = (unsigned int)(h % FEATURES) | (unsigned int)(((h >> 16) & 255u) << 8);
		}
		for (int k = 0; k < LEAVES; k++)
			leaves[(size_t)t * LEAVES + k] = (int)(mix64(((uint64_t)t << 20) ^ (uint64_t)k ^ 0xabcdefull) % 129u) - 64;
	}
}

static int forest_host(const unsigned int *nodes, const int *leaves, const unsigned char *x)
{
	int s = 0;
	for (int t = 0; t < TREES; t++) {
		int k = 0;
		for (int d = 0; d < TREE_DEPTH; d++) {
			unsigned int w = nodes[(size_t)t * INTERNAL + k];
			k = 2 * k + 1 + (x[w & 255u] > ((w >> 8) & 255u));
		}
		s += leaves[(size_t)t * LEAVES + (k - INTERNAL)];
	}
	return s;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	static struct graph_cache cache;
	static struct lane lanes[TENANTS];
	static unsigned long long dev_stats[TENANTS][BATCHES][2];
	unsigned int *nodes = (unsigned int *)malloc((size_t)TREES * INTERNAL * sizeof(unsigned int));
	int *leaves = (int *)malloc((size_t)TREES * LEAVES * sizeof(int));
	unsigned char *rows = (unsigned char *)malloc((size_t)ROWS * FEATURES);
	CUdeviceptr d_stats;

	make_forest(nodes, leaves);
	cache.key = key_by_model_lane;
	DCHECK(cuModuleGetFunction(&cache.eval_fn, module, "gbdt_forest_eval"));
	DCHECK(cuModuleGetFunction(&cache.stats_fn, module, "score_flag_stats"));
	DCHECK(cuMemAlloc(&cache.d_nodes, (size_t)TREES * INTERNAL * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&cache.d_leaves, (size_t)TREES * LEAVES * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_stats, sizeof dev_stats)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(cache.d_nodes, nodes, (size_t)TREES * INTERNAL * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup, the model uploaded once
	DCHECK(cuMemcpyHtoD(cache.d_leaves, leaves, (size_t)TREES * LEAVES * sizeof(int))); // SYNCSPY-CLEAN: setup, the model uploaded once
	for (int t = 0; t < TENANTS; t++) {
		struct lane *ln = &lanes[t];
		ln->tenant = t;
		DCHECK(cuStreamCreate(&ln->s, CU_STREAM_NON_BLOCKING));
		DCHECK(cuMemAlloc(&ln->d_rows, (size_t)ROWS * FEATURES)); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuMemAlloc(&ln->d_score, ROWS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		for (int k = 0; k < SLOTS; k++) {
			DCHECK(cuMemAllocHost((void **)&ln->h_rows[k], (size_t)ROWS * FEATURES)); // SYNCSPY-CLEAN: setup pinned staging
			DCHECK(cuMemAllocHost((void **)&ln->h_score[k], ROWS * sizeof(int))); // SYNCSPY-CLEAN: setup pinned reply slots
			DCHECK(cuEventCreate(&ln->done[k], CU_EVENT_DISABLE_TIMING));
		}
		bind_args(&cache, &ln->b);
		ln->b.rows = ln->d_rows, ln->b.score = ln->d_score, ln->b.stats = d_stats;
		ln->g = cache_lookup(&cache, MODEL_ID, t, &ln->b, ln->s);
	}
	DCHECK(cuMemsetD32Async(d_stats, 0u, sizeof dev_stats / 4, lanes[0].s));
	DCHECK(cuStreamSynchronize(lanes[0].s)); // SYNCSPY-CLEAN: setup, the statistics zeroed before either lane starts

	for (int batch = 0; batch < BATCHES; batch++) {
		for (int t = 0; t < TENANTS; t++) {
			/* the slot was last used by batch - 2, published (after its wait) in the previous
			 * iteration */
			encode_batch(t, batch, lanes[t].h_rows[batch % SLOTS]);
			lane_submit(&lanes[t], &cache, d_stats, batch);
		}
		if (batch > 0)
			for (int t = 0; t < TENANTS; t++) {
				DCHECK(cuEventSynchronize(lanes[t].done[(batch - 1) % SLOTS])); // SYNCSPY-CLEAN: the reply double buffer's wait, on the lane's batch one behind
				lane_publish(&lanes[t], batch - 1);
			}
	}
	for (int t = 0; t < TENANTS; t++) {
		DCHECK(cuStreamSynchronize(lanes[t].s)); // SYNCSPY-CLEAN: the final wait for each lane, after its last batch
		lane_publish(&lanes[t], BATCHES - 1);
	}
	DCHECK(cuMemcpyDtoH(dev_stats, d_stats, sizeof dev_stats)); // SYNCSPY-CLEAN: final read of the per-batch statistics

	/* self-check: the device statistics against the published replies, sampled rows against the
	 * host forest */
	unsigned long long total_flagged = 0;
	long long total = 0;
	for (int t = 0; t < TENANTS; t++)
		for (int batch = 0; batch < BATCHES; batch++) {
			struct lane *ln = &lanes[t];
			if ((long long)dev_stats[t][batch][0] != ln->score_sum[batch] || dev_stats[t][batch][1] != ln->flagged[batch]) {
				fprintf(stderr, "d45: tenant %d batch %d statistics %lld/%llu, replies give %lld/%llu\n", t, batch, (long long)dev_stats[t][batch][0], dev_stats[t][batch][1], ln->score_sum[batch], ln->flagged[batch]);
				return 1;
			}
			encode_batch(t, batch, rows);
			for (int k = 0; k < SAMPLES; k++) {
				int r = (k * 509 + batch * 13) % ROWS, want = forest_host(nodes, leaves, rows + (size_t)r * FEATURES);
				if (ln->sample[batch][k] != want) {
					fprintf(stderr, "d45: tenant %d batch %d row %d score %d, want %d\n", t, batch, r, ln->sample[batch][k], want);
					return 1;
				}
			}
			total += ln->score_sum[batch];
			total_flagged += ln->flagged[batch];
		}
	free(nodes);
	free(leaves);
	free(rows);

	for (int i = 0; i < cache.n; i++) {
		DCHECK(cuGraphExecDestroy(cache.entry[i].exec));
		DCHECK(cuGraphDestroy(cache.entry[i].graph));
	}
	for (int t = 0; t < TENANTS; t++) {
		struct lane *ln = &lanes[t];
		for (int k = 0; k < SLOTS; k++) {
			DCHECK(cuMemFreeHost(ln->h_rows[k])); // SYNCSPY-CLEAN: teardown
			DCHECK(cuMemFreeHost(ln->h_score[k])); // SYNCSPY-CLEAN: teardown
			DCHECK(cuEventDestroy(ln->done[k]));
		}
		DCHECK(cuMemFree(ln->d_rows)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(ln->d_score)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuStreamDestroy(ln->s));
	}
	DCHECK(cuMemFree(cache.d_nodes)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(cache.d_leaves)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_stats)); // SYNCSPY-CLEAN: teardown
	driver_teardown(module);
	printf("d45_clean_fraud_scoring_graph_exec_per_lane: batches=%d graphs=%d flagged=%llu score_sum=%lld result=OK\n", BATCHES, cache.n, total_flagged, total);
	return 0;
}
