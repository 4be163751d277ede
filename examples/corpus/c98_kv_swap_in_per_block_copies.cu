/*
 * examples/corpus/c98_kv_swap_in_per_block_copies.cu: corpus workload (CUDA C++, lambdas). The
 * decode loop of an LLM serving engine with a paged KV cache (128 resident sessions, 32 layers,
 * 8 KV heads of 128 int8 dimensions, 512 tokens each in 16-token pages, 4 GB) and a pinned host
 * swap space of evicted sessions. Every step the scheduler brings two sessions back for the next
 * step: KvSwapper::swap_in() copies the session's image from the swap space into the pages its
 * block table gives the slot, on the swap stream, while the decode kernel (grouped-query attention,
 * four query heads per KV head, integer scores) runs the current step over the other sessions on
 * the compute stream; the per-session outputs leave through a pinned ring read a step behind.
 * swap_in() walks the block table with a for_each_block() lambda and issues one cudaMemcpyAsync
 * per (layer, K or V, page): 2048 copies of 16 KB per session, 4096 a step. Each is a correct
 * asynchronous copy from pinned memory, but each costs the host a runtime call and the copy
 * engine a small transfer; the CUDA C++ Best Practices Guide (data transfer between host and
 * device): "because of the overhead associated with each transfer, batching many small transfers
 * into one larger transfer performs significantly better than making each transfer separately,
 * even if doing so requires packing non-contiguous regions of host memory into a contiguous
 * buffer and then unpacking after the transfer". The host spends the step issuing copies, so the
 * decode of the next step is queued late and the GPU idles. The session's image is contiguous in
 * the swap space: one copy into a staging buffer and a scatter kernel into the pages fix it (c103).
 * Planted: the per-page cudaMemcpyAsync in KvSwapper::swap_in(), 4096 calls every step (one line).
 * Clean: the setup allocations (the 4 GB page pool, the block table and its one upload, the pinned
 * swap space and output ring), the output download into the pinned ring on the copy stream, the
 * ring's cudaEventSynchronize one step behind, the last step's wait, teardown.
 * Scores are integer dot products (dp4a): the CPU reference recomputes four sessions' outputs.
 */
#include "corpus.h"

#include <vector>

enum { STEPS = 40, SESSIONS = 128, LAYERS = 32, KV_HEADS = 8, Q_PER_KV = 4, HEAD_DIM = 128, PAGE_TOKENS = 16, PAGES_PER_SEQ = 32, IMAGES = 8, SWAPS_PER_STEP = 2, THREADS = 128, RING = 2 };
enum { PAGE_BYTES = PAGE_TOKENS * KV_HEADS * HEAD_DIM, PAGE_WORDS = PAGE_BYTES / 4, SESSION_PAGES = LAYERS * 2 * PAGES_PER_SEQ, POOL_PAGES = SESSIONS * SESSION_PAGES };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* four int8 products summed into c: dp4a on the device */
__host__ __device__ static inline int dot4(int a, int b, int c)
{
#ifdef __CUDA_ARCH__
	return __dp4a(a, b, c);
#else
	for (int i = 0; i < 4; i++)
		c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
	return c;
#endif
}

/* a session's logical page (layer, K or V, page in sequence) and its KV words */
__host__ __device__ static inline int logical_page(int layer, int kv, int p) { return (layer * 2 + kv) * PAGES_PER_SEQ + p; }
__host__ __device__ static inline uint32_t kv_word(uint32_t content, uint32_t word) { return mix32(content * 0x9e3779b1u ^ word * 0x85ebca77u ^ 0x1234567u); }
__host__ __device__ static inline uint32_t q_word(int step, int slot, int layer, int qh, int w) { return mix32((uint32_t)(((step * SESSIONS + slot) * LAYERS + layer) * KV_HEADS * Q_PER_KV + qh) * 32u + (uint32_t)w); }
__host__ __device__ static inline bool restoring(int slot, int step) { return slot / SWAPS_PER_STEP == step % (SESSIONS / SWAPS_PER_STEP); }
static inline int restored_slot(int step, int j) { return (step * SWAPS_PER_STEP + j) % SESSIONS; }
static inline int restored_image(int step, int j) { return (step * SWAPS_PER_STEP + j) % IMAGES; }

__global__ void init_pool(int8_t *pool, const int *table)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; /* one word of a resident session */
	int slot = (int)(i / ((size_t)SESSION_PAGES * PAGE_WORDS)), lp = (int)(i / PAGE_WORDS % SESSION_PAGES), w = (int)(i % PAGE_WORDS);
	((uint32_t *)(pool + (size_t)table[slot * SESSION_PAGES + lp] * PAGE_BYTES))[w] = kv_word((uint32_t)slot, (uint32_t)(lp * PAGE_WORDS + w));
}

/* one thread per (session, layer, KV head, query head): relu(q.k) weights the row sum of v */
__global__ void decode(const int8_t *pool, const int *table, int step, unsigned long long *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int qsub = t % Q_PER_KV, h = t / Q_PER_KV % KV_HEADS, layer = t / (Q_PER_KV * KV_HEADS) % LAYERS, slot = t / (Q_PER_KV * KV_HEADS * LAYERS);
	if (restoring(slot, step + 1)) /* its pages are being refilled for the next step */
		return;
	int q[HEAD_DIM / 4];
	for (int w = 0; w < HEAD_DIM / 4; w++)
		q[w] = (int)q_word(step, slot, layer, h * Q_PER_KV + qsub, w);
	long long acc = 0;
	for (int p = 0; p < PAGES_PER_SEQ; p++) {
		const int8_t *kp = pool + (size_t)table[slot * SESSION_PAGES + logical_page(layer, 0, p)] * PAGE_BYTES;
		const int8_t *vp = pool + (size_t)table[slot * SESSION_PAGES + logical_page(layer, 1, p)] * PAGE_BYTES;
		for (int tok = 0; tok < PAGE_TOKENS; tok++) {
			const int *kr = (const int *)(kp + (tok * KV_HEADS + h) * HEAD_DIM), *vr = (const int *)(vp + (tok * KV_HEADS + h) * HEAD_DIM);
			int s = 0, vs = 0;
			for (int w = 0; w < HEAD_DIM / 4; w++) {
				s = dot4(q[w], kr[w], s);
				vs = dot4(vr[w], 0x01010101, vs);
			}
			acc += (long long)(s > 0 ? s >> 6 : 0) * vs;
		}
	}
	atomicAdd(&out[slot], (unsigned long long)acc);
}

/* --- the swapper ---------------------------------------------------------------------------------- */

template <typename F>
static void for_each_block(F visit)
{
	for (int layer = 0; layer < LAYERS; layer++)
		for (int kv = 0; kv < 2; kv++)
			for (int p = 0; p < PAGES_PER_SEQ; p++)
				visit(logical_page(layer, kv, p));
}

class KvSwapper {
public:
	KvSwapper(cudaStream_t stream, int8_t *pool, const std::vector<int> &table) : stream_(stream), pool_(pool), table_(table) {}

	/* the session image (logical pages in order) into the slot's pages */
	void swap_in(const int8_t *image, int slot)
	{
		for_each_block([&](int lp) {
			size_t page = (size_t)table_[(size_t)slot * SESSION_PAGES + lp];
			CHECK(cudaMemcpyAsync(pool_ + page * PAGE_BYTES, image + (size_t)lp * PAGE_BYTES, PAGE_BYTES, cudaMemcpyHostToDevice, stream_)); // SYNCSPY-PROBLEM: one 16 KB copy per page, 4096 calls every step: the host spends the step issuing copies
		});
	}

private:
	cudaStream_t stream_;
	int8_t *pool_;
	const std::vector<int> &table_;
};

/* --- the CPU reference ------------------------------------------------------------------------------ */

static unsigned long long reference_output(int content, int step, int slot)
{
	unsigned long long total = 0;
	for (int layer = 0; layer < LAYERS; layer++)
		for (int h = 0; h < KV_HEADS; h++) {
			long long acc[Q_PER_KV] = {0};
			for (int p = 0; p < PAGES_PER_SEQ; p++)
				for (int tok = 0; tok < PAGE_TOKENS; tok++) {
					int s[Q_PER_KV] = {0}, vs = 0;
					for (int w = 0; w < HEAD_DIM / 4; w++) {
						uint32_t off = (uint32_t)((tok * KV_HEADS + h) * HEAD_DIM / 4 + w);
						uint32_t kw = kv_word((uint32_t)content, (uint32_t)(logical_page(layer, 0, p) * PAGE_WORDS) + off);
						vs = dot4((int)kv_word((uint32_t)content, (uint32_t)(logical_page(layer, 1, p) * PAGE_WORDS) + off), 0x01010101, vs);
						for (int qs = 0; qs < Q_PER_KV; qs++)
							s[qs] = dot4((int)q_word(step, slot, layer, h * Q_PER_KV + qs, w), (int)kw, s[qs]);
					}
					for (int qs = 0; qs < Q_PER_KV; qs++)
						acc[qs] += (long long)(s[qs] > 0 ? s[qs] >> 6 : 0) * vs;
				}
			for (int qs = 0; qs < Q_PER_KV; qs++)
				total += (unsigned long long)acc[qs];
		}
	return total;
}

int main(void)
{
	const char *name = "c98_kv_swap_in_per_block_copies";
	const int checked[2] = {STEPS / 4, STEPS - 3};
	std::vector<int> table((size_t)POOL_PAGES), content(SESSIONS);
	for (size_t i = 0; i < table.size(); i++)
		table[i] = (int)((i * 40503u) % POOL_PAGES); /* pages scattered over the pool */
	for (int s = 0; s < SESSIONS; s++)
		content[s] = s;

	cudaStream_t compute, swap, copy;
	int8_t *d_pool, *h_swap;
	int *d_table;
	unsigned long long *d_out, *h_out;
	cudaEvent_t swapped[RING], decoded[RING], downloaded[RING];
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&swap, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_pool, (size_t)POOL_PAGES * PAGE_BYTES)); // SYNCSPY-CLEAN: setup allocation, the page pool
	CHECK(cudaMalloc(&d_table, table.size() * sizeof(int))); // SYNCSPY-CLEAN: setup allocation, the block table
	CHECK(cudaMalloc(&d_out, RING * SESSIONS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation, the outputs
	CHECK(cudaMallocHost(&h_swap, (size_t)IMAGES * SESSION_PAGES * PAGE_BYTES)); // SYNCSPY-CLEAN: setup pinned allocation, the swap space
	CHECK(cudaMallocHost(&h_out, RING * SESSIONS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation, the output ring
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventCreateWithFlags(&swapped[r], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&decoded[r], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&downloaded[r], cudaEventDisableTiming));
	}
	for (size_t i = 0; i < (size_t)IMAGES * SESSION_PAGES * PAGE_WORDS; i++)
		((uint32_t *)h_swap)[i] = kv_word((uint32_t)(SESSIONS + i / ((size_t)SESSION_PAGES * PAGE_WORDS)), (uint32_t)(i % ((size_t)SESSION_PAGES * PAGE_WORDS)));
	CHECK(cudaMemcpy(d_table, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the block table once
	init_pool<<<(unsigned)((size_t)POOL_PAGES * PAGE_WORDS / 256), 256, 0, compute>>>(d_pool, d_table);
	CHECK_LAUNCH();
	for (int r = 0; r < RING; r++)
		CHECK(cudaEventRecord(decoded[r], compute)); /* the pool is initialized: the first swap-ins wait for it */

	KvSwapper swapper(swap, d_pool, table);
	/* the sessions of step n go into slots that step n - 1 skips and step n - 2 was the last to read */
	auto bring_back = [&](int n) {
		CHECK(cudaStreamWaitEvent(swap, decoded[n % RING], 0));
		for (int j = 0; j < SWAPS_PER_STEP; j++) {
			swapper.swap_in(h_swap + (size_t)restored_image(n, j) * SESSION_PAGES * PAGE_BYTES, restored_slot(n, j));
			content[restored_slot(n, j)] = SESSIONS + restored_image(n, j);
		}
		CHECK(cudaEventRecord(swapped[n % RING], swap));
	};
	unsigned long long checksum = 0, kept[2][2] = {{0, 0}, {0, 0}};
	int kept_slot[2][2], kept_content[2][2];
	bring_back(0);
	for (int step = 0; step <= STEPS; step++) {
		int r = step % RING;
		if (step < STEPS) {
			for (int c = 0; c < 2; c++)
				if (step == checked[c]) { /* a session just restored, and one half the pool away */
					kept_slot[c][0] = restored_slot(step, 0);
					kept_slot[c][1] = (restored_slot(step, 0) + SESSIONS / 2) % SESSIONS;
					for (int k = 0; k < 2; k++)
						kept_content[c][k] = content[kept_slot[c][k]];
				}
			if (step + 1 < STEPS)
				bring_back(step + 1);
			CHECK(cudaStreamWaitEvent(compute, swapped[r], 0));
			CHECK(cudaStreamWaitEvent(compute, downloaded[r], 0));
			CHECK(cudaMemsetAsync(d_out + r * SESSIONS, 0, SESSIONS * sizeof(unsigned long long), compute));
			decode<<<SESSIONS * LAYERS * KV_HEADS * Q_PER_KV / THREADS, THREADS, 0, compute>>>(d_pool, d_table, step, d_out + r * SESSIONS);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(decoded[r], compute));
			CHECK(cudaStreamWaitEvent(copy, decoded[r], 0));
			CHECK(cudaMemcpyAsync(h_out + r * SESSIONS, d_out + r * SESSIONS, SESSIONS * sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy)); // SYNCSPY-CLEAN: the step's outputs, async into the pinned ring on the copy stream
			CHECK(cudaEventRecord(downloaded[r], copy));
		}
		if (step >= 1) { /* the replies of step - 1, while this step runs */
			int prev = step - 1, pr = prev % RING;
			CHECK(cudaEventSynchronize(downloaded[pr])); // SYNCSPY-CLEAN: one step behind: step s-1's outputs while step s runs (the last one after the loop)
			for (int s = 0; s < SESSIONS; s++) {
				corpus_expect(name, "skipped session output", restoring(s, prev + 1) && h_out[pr * SESSIONS + s] != 0, 0);
				checksum = checksum * 1000003u + h_out[pr * SESSIONS + s];
			}
			for (int c = 0; c < 2; c++)
				if (prev == checked[c])
					for (int k = 0; k < 2; k++)
						kept[c][k] = h_out[pr * SESSIONS + kept_slot[c][k]];
		}
	}
	for (int c = 0; c < 2; c++)
		for (int k = 0; k < 2; k++)
			corpus_expect(name, "session output", (long long)kept[c][k], (long long)reference_output(kept_content[c][k], checked[c], kept_slot[c][k]));

	CHECK(cudaFree(d_pool)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_table)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_swap)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_out)); // SYNCSPY-CLEAN: teardown
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventDestroy(swapped[r]));
		CHECK(cudaEventDestroy(decoded[r]));
		CHECK(cudaEventDestroy(downloaded[r]));
	}
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaStreamDestroy(swap));
	CHECK(cudaStreamDestroy(copy));
	corpus_result(name, STEPS, checksum);
	return 0;
}
