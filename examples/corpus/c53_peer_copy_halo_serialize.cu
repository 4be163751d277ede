/*
 * examples/corpus/c53_peer_copy_halo_serialize.cu: corpus workload (CUDA C). A domain-decomposed
 * 1D diffusion written for two GPUs: the rod is split into two halves, each with one ghost cell
 * on the inner side, each half stepped on its own stream (on one GPU, as here, both halves live
 * on device 0 and the code passes the same device id twice). After every step the halo helper
 * exchange_halo() moves one cell each way with cudaMemcpyPeer. cudaMemcpyPeer "is asynchronous
 * with respect to the host, but serialized with respect to all pending and future asynchronous
 * work in the current context, srcDevice, and dstDevice (use cudaMemcpyPeerAsync to avoid this
 * synchronization)" (CUDA runtime API reference): each halo copy drains both halves' streams and
 * holds back everything queued after it, so the two streams never overlap across steps. The two
 * copies, made cudaMemcpyPeerAsync on the streams and ordered with events, would keep them apart.
 * Planted: the two cudaMemcpyPeer calls in exchange_halo(), every step.
 * Clean: the setup allocations and uploads, the final reads, teardown.
 */
#include "corpus.h"

enum { STEPS = 70, HALF = 1 << 18, N = 2 * HALF, THREADS = 256, ROUNDS = 8 };

__host__ __device__ static inline uint32_t heat_source(int gi, int step)
{
	uint32_t s = (uint32_t)gi ^ ((uint32_t)step * 0x9e3779b9u);
	for (int k = 0; k < ROUNDS; k++)
		s = (s ^ (s >> 15)) * 2246822519u;
	return s & 63u;
}

__host__ __device__ static inline uint32_t diffuse(uint32_t l, uint32_t c, uint32_t r, uint32_t src)
{
	return (l >> 2) + (c >> 1) + (r >> 2) + src;
}

/* a half with ghosts at index 0 and HALF+1; gi0 is the global index of its first interior cell */
__global__ void diffuse_half(uint32_t *next, const uint32_t *cur, int gi0, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
	if (i > HALF)
		return;
	next[i] = diffuse(cur[i - 1], cur[i], cur[i + 1], heat_source(gi0 + i - 1, step));
}

struct half {
	uint32_t *d_cur, *d_next;
	cudaStream_t stream;
	int device;
};

/* --- halo exchange between the two halves -------------------------------------------------- */

static void exchange_halo(struct half *left, struct half *right)
{
	/* the left half's last interior cell into the right half's left ghost, and back */
	CHECK(cudaMemcpyPeer(right->d_cur, right->device, left->d_cur + HALF, left->device, sizeof(uint32_t))); // SYNCSPY-PROBLEM: cudaMemcpyPeer serializes with all work on the device, every step
	CHECK(cudaMemcpyPeer(left->d_cur + HALF + 1, left->device, right->d_cur + 1, right->device, sizeof(uint32_t))); // SYNCSPY-PROBLEM: the other direction, every step
}

static void step_half(struct half *h, int gi0, int step)
{
	diffuse_half<<<HALF / THREADS, THREADS, 0, h->stream>>>(h->d_next, h->d_cur, gi0, step);
	CHECK_LAUNCH();
	uint32_t *t = h->d_cur;
	h->d_cur = h->d_next;
	h->d_next = t;
}

int main(void)
{
	const char *name = "c53_peer_copy_halo_serialize";
	const size_t bytes = (size_t)(HALF + 2) * sizeof(uint32_t);
	uint32_t *h_rod = (uint32_t *)calloc(N + 2, sizeof(uint32_t));
	uint32_t *ref_next = (uint32_t *)calloc(N + 2, sizeof(uint32_t));
	uint32_t *h_half = (uint32_t *)malloc(bytes);
	struct half halves[2];

	for (int i = 1; i <= N; i++)
		h_rod[i] = (uint32_t)i * 2654435761u >> 8;
	for (int k = 0; k < 2; k++) {
		struct half *h = &halves[k];
		h->device = 0;
		CHECK(cudaStreamCreate(&h->stream));
		CHECK(cudaMalloc(&h->d_cur, bytes)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&h->d_next, bytes)); // SYNCSPY-CLEAN: setup allocation
		/* the half with its two neighbours (the rod's ends are fixed at zero) */
		CHECK(cudaMemcpy(h->d_cur, h_rod + (size_t)k * HALF, bytes, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
		CHECK(cudaMemcpy(h->d_next, h_rod + (size_t)k * HALF, bytes, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload (the ghosts of the second buffer)
	}

	for (int step = 0; step < STEPS; step++) {
		step_half(&halves[0], 0, step);
		step_half(&halves[1], HALF, step);
		exchange_halo(&halves[0], &halves[1]);
	}

	unsigned long long checksum = 0;
	for (int step = 0; step < STEPS; step++) {
		for (int i = 1; i <= N; i++)
			ref_next[i] = diffuse(h_rod[i - 1], h_rod[i], h_rod[i + 1], heat_source(i - 1, step));
		uint32_t *t = h_rod;
		h_rod = ref_next;
		ref_next = t;
	}
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMemcpy(h_half, halves[k].d_cur, bytes, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of each half
		for (int i = 1; i <= HALF; i++) {
			uint32_t want = h_rod[(size_t)k * HALF + i];
			if (h_half[i] != want)
				corpus_expect(name, "cell", h_half[i], want);
			checksum = checksum * 1000003u + h_half[i];
		}
		CHECK(cudaFree(halves[k].d_cur)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(halves[k].d_next)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(halves[k].stream));
	}
	free(h_rod);
	free(ref_next);
	free(h_half);
	corpus_result(name, STEPS, checksum);
	return 0;
}
