/*
 * examples/corpus/c71_drifter_hostfunc_on_compute_stream.cu: corpus workload (CUDA C). An ocean
 * drifter model: 4M Lagrangian particles advected through a gridded surface current (a steady
 * field plus a per-particle random walk for the unresolved eddies), 48 sub-steps per output
 * step. After each output step a kernel bins the particles into a 512 x 512 concentration grid
 * and publishes it into a ring of four mapped pinned frames (cudaHostAlloc with
 * cudaHostAllocMapped: the kernel writes host memory, no copy call), and the trajectory writer
 * encodes the frame on the host (zigzag deltas against the previous frame as varints, and a
 * 64-bit FNV hash for the archive index). The writer is enqueued with cudaLaunchHostFunc on the
 * compute stream itself, right behind the publishing kernel, so that it runs once the frame is
 * there. The runtime API reference (cudaLaunchHostFunc): the host function "will be called after
 * currently enqueued work and will block work added after it". The next step's advection, queued
 * long before, cannot start until the host has encoded the frame (about as long as the step's
 * own GPU work), so the GPU idles for the encoder every step. A writer stream that waits on an
 * event recorded after the publish, with an event back before a ring slot is published again,
 * would let the encoder run beside the next step's advection (as c24 and c58 do).
 * Planted: the cudaLaunchHostFunc of the trajectory writer on the compute stream in
 * queue_frame_writer(), every step.
 * Clean: the setup allocations (the mapped ring among them), the final wait, the final read of
 * the positions for the self-check, teardown.
 */
#include "corpus.h"

#include <string.h>

enum { STEPS = 60, N = 1 << 22, G = 512, SUBCELL = 256, SUB = 48, RING = 4, THREADS = 256, CHECKED = 256 };

#define WORLD ((uint32_t)G * SUBCELL)

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline void seed_position(uint32_t i, uint32_t *x, uint32_t *y)
{
	*x = mix32(i * 2u + 1u) % WORLD;
	*y = mix32(i * 2u + 2u) % WORLD;
}

/* one output step: SUB sub-steps through the steady current plus a random walk */
__host__ __device__ static inline void advect(uint32_t *x, uint32_t *y, uint32_t i, int step)
{
	uint32_t px = *x, py = *y;
	for (int s = 0; s < SUB; s++) {
		uint32_t cx = px / SUBCELL, cy = py / SUBCELL;
		uint32_t f = mix32(cx * 73856093u ^ cy * 19349663u);
		uint32_t d = mix32(i * 2654435761u ^ (uint32_t)(step * SUB + s) * 0x9e3779b9u);
		int u = (int)(f & 63u) - 32 + (int)(d & 15u) - 7;
		int v = (int)((f >> 8) & 63u) - 32 + (int)((d >> 8) & 15u) - 7;
		px = (uint32_t)((int)px + u + (int)WORLD) % WORLD;
		py = (uint32_t)((int)py + v + (int)WORLD) % WORLD;
	}
	*x = px;
	*y = py;
}

__global__ void seed(uint32_t *x, uint32_t *y)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		seed_position(i, &x[i], &y[i]);
}

__global__ void drift(uint32_t *x, uint32_t *y, uint32_t *cells, int step)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	uint32_t px = x[i], py = y[i];
	advect(&px, &py, i, step);
	x[i] = px;
	y[i] = py;
	atomicAdd(&cells[(py / SUBCELL) * G + px / SUBCELL], 1u);
}

/* the concentration grid into the mapped pinned frame (plain stores over the bus) */
__global__ void publish(const uint32_t *cells, uint32_t *frame)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c < G * G)
		frame[c] = cells[c];
}

/* --- the trajectory writer (host) ---------------------------------------------------------- */

struct frame_job {
	const uint32_t *cur, *prev;
	uint8_t *scratch;
	size_t bytes;
	uint64_t hash;
};

static size_t encode_frame(const uint32_t *cur, const uint32_t *prev, uint8_t *out)
{
	size_t n = 0;
	for (int c = 0; c < G * G; c++) {
		int32_t d = (int32_t)(cur[c] - prev[c]);
		uint32_t z = ((uint32_t)d << 1) ^ (uint32_t)(d >> 31);
		while (z >= 0x80u) {
			out[n++] = (uint8_t)(z | 0x80u);
			z >>= 7;
		}
		out[n++] = (uint8_t)z;
	}
	return n;
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t k = 0; k < n; k++)
		h = (h ^ p[k]) * 1099511628211ull;
	return h;
}

static void CUDART_CB write_frame(void *arg)
{
	struct frame_job *j = (struct frame_job *)arg;
	j->bytes = encode_frame(j->cur, j->prev, j->scratch);
	j->hash = fnv1a(j->scratch, j->bytes);
}

static void queue_frame_writer(cudaStream_t s, struct frame_job *job)
{
	CHECK(cudaLaunchHostFunc(s, write_frame, job)); // SYNCSPY-PROBLEM: the writer runs in the compute stream: the next step's advection waits for the host encoder
}

int main(void)
{
	const char *name = "c71_drifter_hostfunc_on_compute_stream";
	cudaStream_t s;
	uint32_t *d_x, *d_y, *d_cells, *h_ring, *d_ring;
	static struct frame_job jobs[STEPS];

	uint32_t *zeros = (uint32_t *)calloc((size_t)G * G, sizeof(uint32_t));
	uint8_t *scratch = (uint8_t *)malloc((size_t)G * G * 5);
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_y, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_cells, (size_t)G * G * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaHostAlloc(&h_ring, (size_t)RING * G * G * sizeof(uint32_t), cudaHostAllocMapped)); // SYNCSPY-CLEAN: setup, the mapped frame ring, once
	CHECK(cudaHostGetDevicePointer(&d_ring, h_ring, 0));
	seed<<<N / THREADS, THREADS, 0, s>>>(d_x, d_y);
	CHECK_LAUNCH();

	for (int step = 0; step < STEPS; step++) {
		int slot = step % RING;
		CHECK(cudaMemsetAsync(d_cells, 0, (size_t)G * G * sizeof(uint32_t), s));
		drift<<<N / THREADS, THREADS, 0, s>>>(d_x, d_y, d_cells, step);
		CHECK_LAUNCH();
		publish<<<G * G / THREADS, THREADS, 0, s>>>(d_cells, d_ring + (size_t)slot * G * G);
		CHECK_LAUNCH();
		jobs[step].cur = h_ring + (size_t)slot * G * G;
		jobs[step].prev = step ? h_ring + (size_t)((step - 1) % RING) * G * G : zeros;
		jobs[step].scratch = scratch;
		queue_frame_writer(s, &jobs[step]);
	}
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: the one wait, after the last frame is written

	/* self-check: the last frame against the final positions, its encoding, sampled particles */
	uint32_t *hx = (uint32_t *)malloc((size_t)N * sizeof(uint32_t)), *hy = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	CHECK(cudaMemcpy(hx, d_x, (size_t)N * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read, for the self-check
	CHECK(cudaMemcpy(hy, d_y, (size_t)N * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read, for the self-check
	uint32_t *hist = (uint32_t *)calloc((size_t)G * G, sizeof(uint32_t));
	for (int i = 0; i < N; i++)
		hist[(hy[i] / SUBCELL) * G + hx[i] / SUBCELL]++;
	const uint32_t *last = h_ring + (size_t)((STEPS - 1) % RING) * G * G;
	corpus_expect(name, "last frame matches the final positions", memcmp(hist, last, (size_t)G * G * sizeof(uint32_t)) == 0, 1);
	size_t bytes = encode_frame(last, h_ring + (size_t)((STEPS - 2) % RING) * G * G, scratch);
	corpus_expect(name, "last frame's encoded size", (long long)bytes, (long long)jobs[STEPS - 1].bytes);
	corpus_expect(name, "last frame's hash matches", fnv1a(scratch, bytes) == jobs[STEPS - 1].hash, 1);
	for (int k = 0; k < CHECKED; k++) {
		uint32_t i = (uint32_t)k * (N / CHECKED) + 7u, px, py;
		seed_position(i, &px, &py);
		for (int step = 0; step < STEPS; step++)
			advect(&px, &py, i, step);
		corpus_expect(name, "particle x", hx[i], px);
		corpus_expect(name, "particle y", hy[i], py);
	}
	unsigned long long checksum = 0;
	for (int step = 0; step < STEPS; step++)
		checksum = checksum * 1000003u + (jobs[step].hash ^ jobs[step].bytes);

	free(hx);
	free(hy);
	free(hist);
	free(zeros);
	free(scratch);
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_y)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cells)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_ring)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result(name, STEPS, checksum);
	return 0;
}
