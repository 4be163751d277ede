/*
 * examples/corpus/c36_pinned_staging_query_spin.cu: corpus workload (CUDA C). The export
 * stage of a tile encoder: every frame a kernel quantizes a 4 MiB tile into coefficients, the
 * program allocates a pinned staging buffer with cudaMallocHost, queues a cudaMemcpyAsync of
 * the coefficients into it, and waits for the stream by spinning on cudaStreamQuery until it
 * stops returning cudaErrorNotReady, then packs the coefficients into its bitstream on the host
 * and frees the staging buffer with cudaFreeHost. Two costs every frame: cudaMallocHost and
 * cudaFreeHost are page-locking allocations that synchronize the device (CUDA programming
 * guide, implicit synchronization: "page-locked host memory allocation"), and the
 * cudaStreamQuery loop burns a host core while it waits (cudaStreamSynchronize with
 * cudaDeviceScheduleBlockingSync, or an event one frame behind, would let the host do the
 * packing of the previous frame meanwhile). The fix: a ring of two pinned buffers allocated
 * once, and an event per slot waited on one frame later.
 * Planted: the per-frame cudaMallocHost and cudaFreeHost of the staging buffer, and the
 * cudaStreamQuery spin loop.
 * Clean: setup allocations, the per-frame cudaMemcpyAsync into pinned memory, teardown.
 */
#include "corpus.h"

enum { FRAMES = 50, N = 1 << 20, THREADS = 256, ROUNDS = 256 };

__global__ void quantize(const uint32_t *tile, uint16_t *coef, int n, int frame)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = tile[i] ^ ((uint32_t)frame * 0x9e3779b9u);
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 13)) * 1274126177u + (uint32_t)r;
	coef[i] = (uint16_t)(v >> 20);
}

__global__ void seed(uint32_t *tile, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		tile[i] = (uint32_t)i * 2654435761u;
}

int main(void)
{
	uint32_t *d_tile;
	uint16_t *d_coef;
	cudaStream_t s;
	unsigned long long bits = 0, digest = 0;
	long long polls = 0;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_tile, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_coef, N * sizeof(uint16_t))); // SYNCSPY-CLEAN: setup allocation
	seed<<<N / THREADS, THREADS, 0, s>>>(d_tile, N);
	CHECK_LAUNCH();

	for (int frame = 0; frame < FRAMES; frame++) {
		uint16_t *staging;
		quantize<<<N / THREADS, THREADS, 0, s>>>(d_tile, d_coef, N, frame);
		CHECK_LAUNCH();
		CHECK(cudaMallocHost(&staging, N * sizeof(uint16_t))); // SYNCSPY-PROBLEM: pinned staging allocated every frame
		CHECK(cudaMemcpyAsync(staging, d_coef, N * sizeof(uint16_t), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: async copy into pinned memory
		cudaError_t q;
		while ((q = cudaStreamQuery(s)) == cudaErrorNotReady) // SYNCSPY-PROBLEM: spins a host core until the frame is done
			polls++;
		CHECK(q);
		/* pack: a variable-length code, 1 bit for a zero nibble, 5 bits otherwise */
		for (int i = 0; i < N; i++) {
			unsigned c = staging[i] & 15u;
			bits += c ? 5 : 1;
			if ((i & 4095) == 0)
				digest = digest * 1000003u + staging[i];
		}
		CHECK(cudaFreeHost(staging)); // SYNCSPY-PROBLEM: pinned staging freed every frame
	}

	CHECK(cudaFree(d_tile)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_coef)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_expect("c36_pinned_staging_query_spin", "polls non-negative", polls >= 0, 1);
	corpus_result("c36_pinned_staging_query_spin", FRAMES, digest ^ bits);
	return 0;
}
