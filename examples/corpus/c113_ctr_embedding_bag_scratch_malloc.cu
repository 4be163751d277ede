/*
 * examples/corpus/c113_ctr_embedding_bag_scratch_malloc.cu: corpus workload (CUDA C). The GPU
 * stage of a click-through-rate model server: 2 traffic windows of 32 batches, each batch 4096
 * ad requests with 26 categorical fields. Every field is a bag of 1 to 6 hashed ids (the pages,
 * the user's recent categories, ...), sent as a length per (request, field) and one packed id
 * list. The host decodes a batch into a pinned staging slot and uploads it on the serving stream;
 * the GPU pools each bag's int8 embedding rows into the request's 416-wide feature vector (26
 * fields x 16), runs a two-layer integer MLP (416 -> 512 -> 1) and writes each request's logit,
 * downloaded into a pinned ring and consumed by the host one batch later (calibration counts and
 * a spot check). Between the two windows the model's first layer is refreshed.
 * embedding_bag_sum() finds where each bag starts in the packed list with three small kernels, and
 * takes the offsets' scratch from cudaMalloc and gives it back with cudaFree, every batch. The
 * programming guide: "managing memory allocations using cudaMalloc and cudaFree causes the GPU to
 * synchronize across all executing CUDA streams" (stream-ordered memory allocator), and cudaFree
 * of memory a kernel still uses must wait for it. So every batch the host stops in the helper
 * until the GPU has pooled the batch, and decodes the next batch only then: the decode and the
 * GPU's pooling and MLP run one after the other instead of side by side. The scratch has the same
 * size every batch: allocated once in setup (or cudaMallocAsync from a pool) it would cost nothing.
 * Planted: the cudaMalloc and the cudaFree of the offsets' scratch in embedding_bag_sum(), every
 * batch (one problem, two lines).
 * Clean: the setup allocations and uploads of the embedding table and the MLP, the one setup
 * cudaDeviceSynchronize, the model refresh between the two windows (a blocking upload and a
 * cudaDeviceSynchronize outside the step loop), the batch's upload from the pinned staging slot,
 * the host's cudaEventSynchronize on the upload two batches back before decoding into that slot,
 * the logits' download into the pinned ring and the cudaEventSynchronize one batch behind, the
 * final wait, teardown.
 * Embeddings, weights and sums are integers, so the host recomputes 8 requests of every batch
 * exactly.
 */
#include "corpus.h"

#include <vector>

enum { WINDOWS = 2, BATCHES = 32, BATCH = 4096, FIELDS = 26, MAX_BAG = 6, DIM = 16 };
enum { XDIM = FIELDS * DIM, HIDDEN = 512, ROWS = 1 << 20, THREADS = 256, SLOTS = 2, SPOT = 8 };

#define BATCH_BYTES sizeof(struct batch)
#define LOGIT_BYTES (BATCH * sizeof(int))

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

/* one batch as the host decodes and uploads it */
struct batch {
	unsigned char len[BATCH * FIELDS];
	uint32_t ids[BATCH * FIELDS * MAX_BAG]; /* packed: the bags one after the other */
};

/* the MLP: W1 transposed (XDIM x HIDDEN), so a warp's threads read consecutive weights */
struct mlp {
	int8_t w1t[XDIM * HIDDEN];
	int b1[HIDDEN];
	int8_t w2[HIDDEN];
};

__host__ __device__ static inline int hidden_unit(int acc)
{
	return acc > 0 ? acc >> 4 : 0;
}

/* offs[r][f] = where bag f starts inside request r; start[r] = the request's bag total */
__global__ void bag_offsets(const unsigned char *len, int *offs, int *start)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= BATCH)
		return;
	int sum = 0;
	for (int f = 0; f < FIELDS; f++) {
		offs[r * FIELDS + f] = sum;
		sum += len[r * FIELDS + f];
	}
	start[r] = sum;
}

/* start[r] becomes where request r starts in the packed list (one thread: 4096 adds) */
__global__ void scan_requests(int *start)
{
	int sum = 0;
	for (int r = 0; r < BATCH; r++) {
		int n = start[r];
		start[r] = sum;
		sum += n;
	}
}

/* one thread per (request, field): the bag's rows summed into x[r][f * DIM ...] */
__global__ void bag_pool(const struct batch *b, const int *offs, const int *start,
			 const int8_t *table, int *x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= BATCH * FIELDS)
		return;
	int r = i / FIELDS, f = i % FIELDS, first = start[r] + offs[i];
	int acc[DIM] = {0};
	for (int k = 0; k < b->len[i]; k++) {
		const int8_t *row = table + (size_t)(b->ids[first + k] % ROWS) * DIM;
		for (int d = 0; d < DIM; d++)
			acc[d] += row[d];
	}
	for (int d = 0; d < DIM; d++)
		x[r * XDIM + f * DIM + d] = acc[d];
}

__global__ void mlp_hidden(const int *x, const struct mlp *m, int *hidden)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int r = i / HIDDEN, h = i % HIDDEN;
	if (r >= BATCH)
		return;
	int acc = m->b1[h];
	for (int j = 0; j < XDIM; j++)
		acc += x[r * XDIM + j] * m->w1t[j * HIDDEN + h];
	hidden[i] = hidden_unit(acc);
}

__global__ void mlp_logit(const int *hidden, const struct mlp *m, int *logit)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= BATCH)
		return;
	int acc = 0;
	for (int h = 0; h < HIDDEN; h++)
		acc += hidden[r * HIDDEN + h] * m->w2[h];
	logit[r] = acc;
}

/* --- the server ---------------------------------------------------------------------------- */

/* pools every bag of the batch into x (the bags' offsets need a scratch) */
static void embedding_bag_sum(const struct batch *d_batch, const int8_t *d_table, int *d_x,
			      cudaStream_t s)
{
	int *d_offs;
	size_t bytes = (BATCH * FIELDS + BATCH) * sizeof(int);
	CHECK(cudaMalloc(&d_offs, bytes)); // SYNCSPY-PROBLEM: scratch allocated every batch
	int *d_start = d_offs + BATCH * FIELDS;
	bag_offsets<<<BATCH / THREADS, THREADS, 0, s>>>(d_batch->len, d_offs, d_start);
	CHECK_LAUNCH();
	scan_requests<<<1, 1, 0, s>>>(d_start);
	CHECK_LAUNCH();
	bag_pool<<<BATCH * FIELDS / THREADS, THREADS, 0, s>>>(d_batch, d_offs, d_start, d_table, d_x);
	CHECK_LAUNCH();
	CHECK(cudaFree(d_offs)); // SYNCSPY-PROBLEM: frees it, waiting for the pooling
}

static void decode_batch(int g, struct batch *b)
{
	int n = 0;
	for (int i = 0; i < BATCH * FIELDS; i++) {
		uint32_t h = mix32((uint32_t)g * 2654435761u + (uint32_t)i);
		int len = 1 + (int)(h % MAX_BAG);
		b->len[i] = (unsigned char)len;
		for (int k = 0; k < len; k++)
			b->ids[n++] = mix32(h + (uint32_t)k * 0x9e3779b9u) ^ (uint32_t)(i % FIELDS) << 24;
	}
}

static void make_model(int window, struct mlp *m)
{
	for (int i = 0; i < XDIM * HIDDEN; i++)
		m->w1t[i] = (int8_t)((int)(mix32((uint32_t)i * 3u + (uint32_t)window) % 16u) - 8);
	for (int h = 0; h < HIDDEN; h++) {
		m->b1[h] = (int)(mix32((uint32_t)h + 11u) % 4001u) - 2000;
		m->w2[h] = (int8_t)((int)(mix32((uint32_t)h + 0xc0ffeeu) % 16u) - 8);
	}
}

/* request r's logit, on the host */
static int host_logit(const struct batch *b, const int8_t *table, const struct mlp *m, int r)
{
	static int x[XDIM];
	int first = 0;
	for (int i = 0; i < r * FIELDS; i++)
		first += b->len[i];
	for (int f = 0; f < FIELDS; f++) {
		int len = b->len[r * FIELDS + f];
		for (int d = 0; d < DIM; d++) {
			int acc = 0;
			for (int k = 0; k < len; k++)
				acc += table[(size_t)(b->ids[first + k] % ROWS) * DIM + d];
			x[f * DIM + d] = acc;
		}
		first += len;
	}
	int logit = 0;
	for (int h = 0; h < HIDDEN; h++) {
		int acc = m->b1[h];
		for (int j = 0; j < XDIM; j++)
			acc += x[j] * m->w1t[j * HIDDEN + h];
		logit += hidden_unit(acc) * m->w2[h];
	}
	return logit;
}

/* batch g's logits: clicks predicted, and SPOT requests checked against the host */
static unsigned long long consume_logits(int g, const int *logit, const struct batch *b,
					 const int8_t *table, const struct mlp *m)
{
	unsigned long long positive = 0, h = 0;
	for (int r = 0; r < BATCH; r++) {
		positive += logit[r] > 0;
		h = h * 1000003u + (uint32_t)logit[r];
	}
	for (int k = 0; k < SPOT; k++) {
		int r = (int)(mix32((uint32_t)(g * SPOT + k) + 99u) % BATCH);
		if (logit[r] != host_logit(b, table, m, r)) {
			fprintf(stderr, "c113: batch %d request %d: logit %d, want %d\n", g, r,
				logit[r], host_logit(b, table, m, r));
			exit(1);
		}
	}
	return h ^ positive << 48;
}

int main(void)
{
	const char *name = "c113_ctr_embedding_bag_scratch_malloc";
	std::vector<int8_t> table((size_t)ROWS * DIM);
	for (size_t i = 0; i < table.size(); i++)
		table[i] = (int8_t)((int)(mix32((uint32_t)i + 0x51ed27u) % 15u) - 7);
	struct mlp *model = new struct mlp;
	make_model(0, model);

	int8_t *d_table;
	struct mlp *d_model;
	int *d_x, *d_hidden, *d_logit;
	struct batch *d_batch[SLOTS], *staging[SLOTS];
	int *h_logit[SLOTS];
	CHECK(cudaMalloc(&d_table, table.size())); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_model, sizeof *model)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_x, (size_t)BATCH * XDIM * sizeof(int))); // SYNCSPY-CLEAN: setup
	CHECK(cudaMalloc(&d_hidden, (size_t)BATCH * HIDDEN * sizeof(int))); // SYNCSPY-CLEAN: setup
	CHECK(cudaMalloc(&d_logit, BATCH * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&d_batch[s], sizeof(struct batch))); // SYNCSPY-CLEAN: setup
		CHECK(cudaMallocHost(&staging[s], sizeof(struct batch))); // SYNCSPY-CLEAN: pinned
		CHECK(cudaMallocHost(&h_logit[s], BATCH * sizeof(int))); // SYNCSPY-CLEAN: pinned ring
	}
	CHECK(cudaMemcpy(d_table, table.data(), table.size(), H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(d_model, model, sizeof *model, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, the model is in place

	cudaStream_t serve;
	CHECK(cudaStreamCreateWithFlags(&serve, cudaStreamNonBlocking));
	cudaEvent_t uploaded[SLOTS], replied[SLOTS];
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventCreateWithFlags(&uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&replied[s], cudaEventDisableTiming));
	}

	unsigned long long checksum = 0;
	for (int w = 0; w < WINDOWS; w++) {
		if (w > 0) {
			/* the model refresh between traffic windows, outside the step loop */
			make_model(w, model);
			CHECK(cudaMemcpy(d_model, model, sizeof *model, H2D)); // SYNCSPY-CLEAN: refresh
			CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: once per window
		}
		for (int i = 0; i < BATCHES; i++) {
			int g = w * BATCHES + i, s = g % SLOTS;
			if (g >= SLOTS)
				CHECK(cudaEventSynchronize(uploaded[s])); // SYNCSPY-CLEAN: 2 batches back
			decode_batch(g, staging[s]);
			CHECK(cudaMemcpyAsync(d_batch[s], staging[s], BATCH_BYTES, H2D, serve)); // SYNCSPY-CLEAN: pinned
			CHECK(cudaEventRecord(uploaded[s], serve));
			embedding_bag_sum(d_batch[s], d_table, d_x, serve);
			mlp_hidden<<<BATCH * HIDDEN / THREADS, THREADS, 0, serve>>>(d_x, d_model, d_hidden);
			CHECK_LAUNCH();
			mlp_logit<<<BATCH / THREADS, THREADS, 0, serve>>>(d_hidden, d_model, d_logit);
			CHECK_LAUNCH();
			CHECK(cudaMemcpyAsync(h_logit[s], d_logit, LOGIT_BYTES, D2H, serve)); // SYNCSPY-CLEAN: pinned
			CHECK(cudaEventRecord(replied[s], serve));
			if (i > 0) {
				int p = (g - 1) % SLOTS;
				CHECK(cudaEventSynchronize(replied[p])); // SYNCSPY-CLEAN: one batch behind
				checksum = checksum * 31u +
					   consume_logits(g - 1, h_logit[p], staging[p], table.data(), model);
			}
		}
		int last = (w * BATCHES + BATCHES - 1) % SLOTS;
		CHECK(cudaEventSynchronize(replied[last])); // SYNCSPY-CLEAN: the window's last reply
		checksum = checksum * 31u + consume_logits(w * BATCHES + BATCHES - 1, h_logit[last],
							   staging[last], table.data(), model);
	}

	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventDestroy(uploaded[s]));
		CHECK(cudaEventDestroy(replied[s]));
		CHECK(cudaFree(d_batch[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(staging[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_logit[s])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaStreamDestroy(serve));
	CHECK(cudaFree(d_table)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_model)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_hidden)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_logit)); // SYNCSPY-CLEAN: teardown
	delete model;
	corpus_result(name, WINDOWS * BATCHES, checksum);
	return 0;
}
