/*
 * examples/corpus/c45_clean_zero_copy_convergence.cu: corpus workload (CUDA C), CLEAN.
 * Connected-component labelling of a batch of masks by min-label propagation (each on-pixel
 * takes the smallest label among itself and its 4-neighbours, until nothing changes). The
 * iteration stops early on convergence without the host ever waiting for the device: a
 * one-thread check kernel notices an iteration that changed nothing, records it in device
 * memory (so the relax kernels queued after it do nothing) and raises a done flag in a small
 * mapped pinned buffer (cudaHostAlloc with cudaHostAllocMapped, written by the device through
 * its device pointer). Before queuing each iteration the host reads that flag with a plain
 * volatile load (no CUDA call, no wait) and stops queuing once it is set; iterations queued
 * before the flag was seen are no-ops, so the result does not depend on when the host saw it.
 * One synchronize at the end, for the final read.
 */
#include "corpus.h"

#include <string.h>

enum { MAX_ITERS = 100, IMAGES = 32, W = 48, H = 32, PIX = W * H, TOTAL = IMAGES * PIX, THREADS = 256 };

/* the masks: every pixel on except an isolated hole where x % 4 == 3 and y % 4 == 3 */
__host__ __device__ static inline int pixel_on(int p)
{
	int local = p % PIX, x = local % W, y = local / W;
	return !((x & 3) == 3 && (y & 3) == 3);
}

__host__ __device__ static inline uint32_t min_label(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* one Jacobi sweep of min-label propagation; returns the pixel's new label */
__host__ __device__ static inline uint32_t relax_pixel(const uint32_t *cur, int p)
{
	uint32_t m = cur[p];
	if (!pixel_on(p))
		return m;
	int local = p % PIX, x = local % W, y = local / W;
	if (x > 0 && pixel_on(p - 1))
		m = min_label(m, cur[p - 1]);
	if (x < W - 1 && pixel_on(p + 1))
		m = min_label(m, cur[p + 1]);
	if (y > 0 && pixel_on(p - W))
		m = min_label(m, cur[p - W]);
	if (y < H - 1 && pixel_on(p + W))
		m = min_label(m, cur[p + W]);
	return m;
}

__global__ void relax_labels(const uint32_t *cur, uint32_t *next, int *changed, const int *converged_at)
{
	if (*converged_at >= 0)
		return; /* converged: an iteration queued before the host saw the flag */
	int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p >= TOTAL)
		return;
	uint32_t m = relax_pixel(cur, p);
	if (m != cur[p])
		*changed = 1;
	next[p] = m;
}

__global__ void check_converged(int *changed, int *converged_at, volatile int *host_status, int iter)
{
	if (*converged_at < 0 && *changed == 0) {
		*converged_at = iter;
		host_status[0] = iter;
		__threadfence_system();
		host_status[1] = 1;
	}
	*changed = 0;
}

/* --- the labeller ------------------------------------------------------------------------ */

struct labeller {
	cudaStream_t s;
	uint32_t *d_a, *d_b;
	int *d_changed, *d_converged_at;
	int *h_status, *d_status; /* mapped pinned: [0] the converged iteration, [1] done */
};

static void labeller_init(struct labeller *lb, const uint32_t *h_labels)
{
	CHECK(cudaStreamCreateWithFlags(&lb->s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&lb->d_a, TOTAL * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&lb->d_b, TOTAL * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&lb->d_changed, 2 * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	lb->d_converged_at = lb->d_changed + 1;
	CHECK(cudaHostAlloc(&lb->h_status, 2 * sizeof(int), cudaHostAllocMapped)); // SYNCSPY-CLEAN: setup, mapped pinned status words
	CHECK(cudaHostGetDevicePointer(&lb->d_status, lb->h_status, 0));
	lb->h_status[0] = -1;
	lb->h_status[1] = 0;
	CHECK(cudaMemsetAsync(lb->d_changed, 0, sizeof(int), lb->s));
	CHECK(cudaMemsetAsync(lb->d_converged_at, 0xff, sizeof(int), lb->s));
	CHECK(cudaMemcpyAsync(lb->d_a, h_labels, TOTAL * sizeof(uint32_t), cudaMemcpyHostToDevice, lb->s)); // SYNCSPY-CLEAN: setup upload from pinned memory
}

/* has the device reported convergence? a load from mapped host memory: no CUDA call */
static int labeller_done(const struct labeller *lb)
{
	return ((volatile const int *)lb->h_status)[1] != 0;
}

static void labeller_iterate(struct labeller *lb, int iter)
{
	relax_labels<<<(TOTAL + THREADS - 1) / THREADS, THREADS, 0, lb->s>>>(lb->d_a, lb->d_b, lb->d_changed, lb->d_converged_at);
	check_converged<<<1, 1, 0, lb->s>>>(lb->d_changed, lb->d_converged_at, lb->d_status, iter);
	CHECK_LAUNCH();
	uint32_t *t = lb->d_a;
	lb->d_a = lb->d_b;
	lb->d_b = t;
}

static void labeller_teardown(struct labeller *lb)
{
	CHECK(cudaFree(lb->d_a)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(lb->d_b)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(lb->d_changed)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(lb->h_status)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(lb->s));
}

/* the same propagation on the host; returns the first iteration that changed nothing */
static int reference(uint32_t *labels)
{
	uint32_t *next = (uint32_t *)malloc(TOTAL * sizeof(uint32_t));
	int converged_at = -1;
	for (int iter = 0; iter < MAX_ITERS && converged_at < 0; iter++) {
		int changed = 0;
		for (int p = 0; p < TOTAL; p++) {
			next[p] = relax_pixel(labels, p);
			changed |= next[p] != labels[p];
		}
		memcpy(labels, next, TOTAL * sizeof(uint32_t));
		if (!changed)
			converged_at = iter;
	}
	free(next);
	return converged_at;
}

int main(void)
{
	const char *name = "c45_clean_zero_copy_convergence";
	uint32_t *h_labels, *ref = (uint32_t *)malloc(TOTAL * sizeof(uint32_t));
	struct labeller lb;

	CHECK(cudaMallocHost(&h_labels, TOTAL * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	for (int p = 0; p < TOTAL; p++)
		h_labels[p] = ref[p] = (uint32_t)p * 2654435761u; /* unique initial labels */
	labeller_init(&lb, h_labels);

	for (int iter = 0; iter < MAX_ITERS; iter++) {
		if (labeller_done(&lb))
			break; /* the device converged: stop queuing */
		labeller_iterate(&lb, iter);
	}

	CHECK(cudaMemcpyAsync(h_labels, lb.d_a, TOTAL * sizeof(uint32_t), cudaMemcpyDeviceToHost, lb.s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(lb.s)); // SYNCSPY-CLEAN: final read, the one wait
	int converged_at = ((volatile int *)lb.h_status)[0];

	corpus_expect(name, "converged at", converged_at, reference(ref));
	unsigned long long checksum = (unsigned long long)converged_at;
	for (int p = 0; p < TOTAL; p++) {
		if (h_labels[p] != ref[p])
			corpus_expect(name, "label", h_labels[p], ref[p]);
		checksum = checksum * 1000003u + h_labels[p];
	}
	labeller_teardown(&lb);
	CHECK(cudaFreeHost(h_labels)); // SYNCSPY-CLEAN: teardown
	free(ref);
	corpus_result(name, converged_at, checksum);
	return 0;
}
