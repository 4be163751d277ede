/*
 * examples/corpus/c57_clean_device_scalar_cg.cu: corpus workload (CUDA C), clean. A conjugate
 * gradient solve of a shifted 2D Laplacian (5-point stencil, diagonal 6: well conditioned) with
 * every scalar kept on the device: the dot products reduce into device scalars (block partials,
 * then one block in a fixed order, so the result is deterministic), and the update kernels read
 * alpha = rr / pAp and beta = rr_new / rr from device memory themselves. The iteration count is
 * fixed in advance (enough for this conditioning), so the host never reads a residual inside the
 * loop: it only queues launches, and reads the solution once at the end.
 * Clean: the setup allocations and uploads, the final read, teardown. No sync, allocation or
 * copy in the loop.
 */
#include "corpus.h"

#include <math.h>

enum { ITERS = 30, NX = 512, NY = 512, N = NX * NY, THREADS = 256, BLOCKS = N / THREADS };

__global__ void laplace_apply(const double *p, double *ap)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	int x = i % NX, y = i / NX;
	double s = 6.0 * p[i];
	if (x > 0)
		s -= p[i - 1];
	if (x < NX - 1)
		s -= p[i + 1];
	if (y > 0)
		s -= p[i - NX];
	if (y < NY - 1)
		s -= p[i + NX];
	ap[i] = s;
}

__global__ void dot_partial(const double *a, const double *b, double *partial)
{
	__shared__ double sh[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	sh[threadIdx.x] = a[i] * b[i];
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partial[blockIdx.x] = sh[0];
}

/* one block: the partials summed in a fixed order into *out */
__global__ void dot_final(const double *partial, double *out)
{
	__shared__ double sh[THREADS];
	double s = 0.0;
	for (int k = threadIdx.x; k < BLOCKS; k += THREADS)
		s += partial[k];
	sh[threadIdx.x] = s;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*out = sh[0];
}

__global__ void update_xr(double *x, double *r, const double *p, const double *ap, const double *rr, const double *pap)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	double alpha = *rr / *pap;
	x[i] += alpha * p[i];
	r[i] -= alpha * ap[i];
}

__global__ void update_p(double *p, const double *r, const double *rr_new, const double *rr_old)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	p[i] = r[i] + (*rr_new / *rr_old) * p[i];
}

struct cg {
	double *x, *r, *p, *ap, *partial, *scal; /* scal: rr (two, ping-pong), pAp */
	cudaStream_t s;
};

static void dot(struct cg *c, const double *a, const double *b, double *out)
{
	dot_partial<<<BLOCKS, THREADS, 0, c->s>>>(a, b, c->partial);
	CHECK_LAUNCH();
	dot_final<<<1, THREADS, 0, c->s>>>(c->partial, out);
	CHECK_LAUNCH();
}

static void cg_iteration(struct cg *c, int it)
{
	double *rr_old = c->scal + (it & 1), *rr_new = c->scal + ((it + 1) & 1), *pap = c->scal + 2;
	laplace_apply<<<BLOCKS, THREADS, 0, c->s>>>(c->p, c->ap);
	CHECK_LAUNCH();
	dot(c, c->p, c->ap, pap);
	update_xr<<<BLOCKS, THREADS, 0, c->s>>>(c->x, c->r, c->p, c->ap, rr_old, pap);
	CHECK_LAUNCH();
	dot(c, c->r, c->r, rr_new);
	update_p<<<BLOCKS, THREADS, 0, c->s>>>(c->p, c->r, rr_new, rr_old);
	CHECK_LAUNCH();
}

int main(void)
{
	const char *name = "c57_clean_device_scalar_cg";
	const size_t bytes = (size_t)N * sizeof(double);
	double *h_b = (double *)malloc(bytes), *h_x = (double *)malloc(bytes);
	struct cg c;

	for (int i = 0; i < N; i++) {
		uint32_t h = (uint32_t)i * 2654435761u;
		h_b[i] = (double)((h ^ (h >> 16)) & 1023u) / 1024.0 - 0.5;
	}
	CHECK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&c.x, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&c.r, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&c.p, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&c.ap, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&c.partial, BLOCKS * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&c.scal, 3 * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(c.x, 0, bytes, c.s));
	CHECK(cudaMemcpyAsync(c.r, h_b, bytes, cudaMemcpyHostToDevice, c.s)); // SYNCSPY-CLEAN: setup upload of the right-hand side
	CHECK(cudaMemcpyAsync(c.p, c.r, bytes, cudaMemcpyDeviceToDevice, c.s)); // SYNCSPY-CLEAN: setup, p = r on the device
	dot(&c, c.r, c.r, c.scal);

	for (int it = 0; it < ITERS; it++)
		cg_iteration(&c, it);

	CHECK(cudaMemcpyAsync(h_x, c.x, bytes, cudaMemcpyDeviceToHost, c.s)); // SYNCSPY-CLEAN: final read of the solution
	CHECK(cudaStreamSynchronize(c.s)); // SYNCSPY-CLEAN: the one wait, after the solve
	CHECK(cudaFree(c.x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(c.r)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(c.p)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(c.ap)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(c.partial)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(c.scal)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(c.s));

	double res2 = 0.0, b2 = 0.0;
	unsigned long long checksum = 0;
	for (int i = 0; i < N; i++) {
		int x = i % NX, y = i / NX;
		double ax = 6.0 * h_x[i];
		if (x > 0)
			ax -= h_x[i - 1];
		if (x < NX - 1)
			ax -= h_x[i + 1];
		if (y > 0)
			ax -= h_x[i - NX];
		if (y < NY - 1)
			ax -= h_x[i + NX];
		res2 += (h_b[i] - ax) * (h_b[i] - ax);
		b2 += h_b[i] * h_b[i];
		checksum = checksum * 1000003u + (unsigned long long)llround(h_x[i] * 1e6);
	}
	corpus_expect(name, "converged (relative residual below 1e-8)", sqrt(res2 / b2) < 1e-8, 1);
	free(h_b);
	free(h_x);
	corpus_result(name, ITERS, checksum);
	return 0;
}
