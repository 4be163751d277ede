/*
 * examples/corpus/c59_clean_async_halo_events.cu: corpus workload (CUDA C), clean. A 2D heat
 * plate decomposed into two row blocks, written the multi-GPU way on one device: each block has
 * its own non-blocking stream and one ghost row on its inner side. After each step the boundary
 * rows are exchanged with cudaMemcpyPeerAsync on the blocks' own streams, and events order
 * everything on the device: each stream waits for the other block's step before copying out of
 * it, and for the other's halo copy before its next step. The host only queues work; the two
 * streams overlap; one synchronize per stream at the end.
 * Clean: the per-step halo copies (asynchronous device-to-device, on the streams, ordered by
 * events), the setup allocations and uploads, the final syncs and reads, teardown.
 */
#include "corpus.h"

#include <string.h>

enum { STEPS = 60, W = 1024, ROWS = 256, H = 2 * ROWS, THREADS = 256 };

__host__ __device__ static inline uint32_t plate_source(int gx, int gy, int step)
{
	uint32_t s = (uint32_t)(gy * W + gx) * 2654435761u ^ (uint32_t)step * 0x9e3779b9u;
	s = (s ^ (s >> 15)) * 2246822519u;
	return (s >> 27);
}

__host__ __device__ static inline uint32_t heat(uint32_t c, uint32_t u, uint32_t d, uint32_t l, uint32_t r, uint32_t src)
{
	return ((u + d + l + r) >> 3) + (c >> 1) + src;
}

/* a block of ROWS rows plus a ghost row above (row 0) and below (row ROWS+1); gy0: global row
 * of its first interior row */
__global__ void heat_block(uint32_t *next, const uint32_t *cur, int gy0, int step)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y + 1;
	const uint32_t *row = cur + (size_t)y * W;
	uint32_t l = x > 0 ? row[x - 1] : 0u, r = x < W - 1 ? row[x + 1] : 0u;
	next[(size_t)y * W + x] = heat(row[x], row[x - W], row[x + W], l, r, plate_source(x, gy0 + y - 1, step));
}

struct block {
	uint32_t *cur, *next;
	cudaStream_t s;
	cudaEvent_t stepped, halo_done;
	int gy0;
};

static void step_block(struct block *b, int step)
{
	dim3 grid(W / THREADS, ROWS);
	heat_block<<<grid, THREADS, 0, b->s>>>(b->next, b->cur, b->gy0, step);
	CHECK_LAUNCH();
	uint32_t *t = b->cur;
	b->cur = b->next;
	b->next = t;
	CHECK(cudaEventRecord(b->stepped, b->s));
}

/* --- the halo exchange: asynchronous, on the blocks' streams, ordered by events ------------ */

static void exchange_halo(struct block *top, struct block *bot)
{
	CHECK(cudaStreamWaitEvent(top->s, bot->stepped, 0));
	CHECK(cudaMemcpyPeerAsync(bot->cur, 0, top->cur + (size_t)ROWS * W, 0, W * sizeof(uint32_t), top->s)); // SYNCSPY-CLEAN: async halo row on the stream, ordered by events
	CHECK(cudaEventRecord(top->halo_done, top->s));
	CHECK(cudaStreamWaitEvent(bot->s, top->stepped, 0));
	CHECK(cudaMemcpyPeerAsync(top->cur + (size_t)(ROWS + 1) * W, 0, bot->cur + W, 0, W * sizeof(uint32_t), bot->s)); // SYNCSPY-CLEAN: async halo row on the stream, ordered by events
	CHECK(cudaEventRecord(bot->halo_done, bot->s));
	CHECK(cudaStreamWaitEvent(top->s, bot->halo_done, 0));
	CHECK(cudaStreamWaitEvent(bot->s, top->halo_done, 0));
}

int main(void)
{
	const char *name = "c59_clean_async_halo_events";
	const size_t plate = (size_t)(H + 2) * W, bytes = (size_t)(ROWS + 2) * W * sizeof(uint32_t);
	uint32_t *ref = (uint32_t *)calloc(plate, sizeof(uint32_t)), *ref_next = (uint32_t *)calloc(plate, sizeof(uint32_t));
	uint32_t *h_block;
	struct block blocks[2];

	for (int y = 1; y <= H; y++)
		for (int x = 0; x < W; x++)
			ref[(size_t)y * W + x] = ((uint32_t)(y * W + x) * 40503u) >> 20;
	memcpy(ref_next, ref, plate * sizeof(uint32_t));
	CHECK(cudaMallocHost(&h_block, bytes)); // SYNCSPY-CLEAN: setup pinned allocation
	for (int k = 0; k < 2; k++) {
		struct block *b = &blocks[k];
		b->gy0 = k * ROWS;
		CHECK(cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
		CHECK(cudaEventCreateWithFlags(&b->stepped, cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&b->halo_done, cudaEventDisableTiming));
		CHECK(cudaMalloc(&b->cur, bytes)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&b->next, bytes)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMemcpy(b->cur, ref + (size_t)k * ROWS * W, bytes, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload (with the neighbour row and the fixed edge)
		CHECK(cudaMemcpy(b->next, ref + (size_t)k * ROWS * W, bytes, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload (the second buffer's fixed edge)
	}

	for (int step = 0; step < STEPS; step++) {
		step_block(&blocks[0], step);
		step_block(&blocks[1], step);
		exchange_halo(&blocks[0], &blocks[1]);
	}

	for (int step = 0; step < STEPS; step++) {
		for (int y = 1; y <= H; y++)
			for (int x = 0; x < W; x++) {
				const uint32_t *row = ref + (size_t)y * W;
				ref_next[(size_t)y * W + x] = heat(row[x], row[x - W], row[x + W], x > 0 ? row[x - 1] : 0u,
								   x < W - 1 ? row[x + 1] : 0u, plate_source(x, y - 1, step));
			}
		uint32_t *t = ref;
		ref = ref_next;
		ref_next = t;
	}
	unsigned long long checksum = 0;
	for (int k = 0; k < 2; k++) {
		struct block *b = &blocks[k];
		CHECK(cudaStreamSynchronize(b->s)); // SYNCSPY-CLEAN: after the loop, once per stream
		CHECK(cudaMemcpy(h_block, b->cur, bytes, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the block
		for (size_t i = W; i < (size_t)(ROWS + 1) * W; i++) {
			uint32_t want = ref[(size_t)k * ROWS * W + i];
			if (h_block[i] != want)
				corpus_expect(name, "cell", h_block[i], want);
			checksum = checksum * 1000003u + h_block[i];
		}
		CHECK(cudaEventDestroy(b->stepped));
		CHECK(cudaEventDestroy(b->halo_done));
		CHECK(cudaFree(b->cur)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(b->next)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(b->s));
	}
	CHECK(cudaFreeHost(h_block)); // SYNCSPY-CLEAN: teardown
	free(ref);
	free(ref_next);
	corpus_result(name, STEPS, checksum);
	return 0;
}
