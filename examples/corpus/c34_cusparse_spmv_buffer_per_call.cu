/*
 * examples/corpus/c34_cusparse_spmv_buffer_per_call.cu: corpus workload (CUDA C + cuSPARSE).
 * Diffusion on a road-network-like graph (a ring with shortcut edges, row-stochastic weights
 * 1/2, 1/4, 1/8, 1/8 in CSR) by repeated sparse matrix-vector products y = A^T x with the
 * generic cusparseSpMV API. The program's spmv() helper does what the cuSPARSE samples do once
 * in setup, on every call: it asks cusparseSpMV_bufferSize for the workspace size (a host-side
 * query, cheap), cudaMalloc's the workspace, runs cusparseSpMV and cudaFree's it. cudaMalloc
 * and cudaFree synchronize the device (the CUDA programming guide's implicit synchronization),
 * so every product waits for the previous one and the host can never queue ahead. The fix:
 * query the size and allocate the buffer once (the size does not change for the same matrix
 * and algorithm), or take it from cudaMallocAsync's pool.
 * Planted: the cudaMalloc and the cudaFree of the SpMV workspace inside the helper, every call.
 * Clean: cusparseCreate, the descriptors and setup allocations and uploads, the final read,
 * teardown. The diffusion conserves mass: the final sum equals the initial one (to 1e-6).
 */
// CORPUS-LDLIBS: -lcusparse
#include "corpus.h"

#include <cusparse.h>

enum { ITERS = 80, N = 1 << 20, DEG = 4, THREADS = 256 };

#define CHECK_SPARSE(call)                                                                         \
	do {                                                                                       \
		cusparseStatus_t check_sparse_ = (call);                                           \
		if (check_sparse_ != CUSPARSE_STATUS_SUCCESS) {                                    \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_sparse_);                                               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct spmv_ctx {
	cusparseHandle_t handle;
	cusparseSpMatDescr_t a;
	cusparseDnVecDescr_t x, y;
};

/* y = A^T x: A row-stochastic, so A^T moves mass without creating or losing any */
static void spmv(struct spmv_ctx *c)
{
	const double one = 1.0, zero = 0.0;
	size_t bytes = 0;
	void *buf = NULL;
	CHECK_SPARSE(cusparseSpMV_bufferSize(c->handle, CUSPARSE_OPERATION_TRANSPOSE, &one, c->a, c->x, &zero, c->y, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes));
	CHECK(cudaMalloc(&buf, bytes > 0 ? bytes : 256)); // SYNCSPY-PROBLEM: workspace allocated on every product
	CHECK_SPARSE(cusparseSpMV(c->handle, CUSPARSE_OPERATION_TRANSPOSE, &one, c->a, c->x, &zero, c->y, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT, buf));
	CHECK(cudaFree(buf)); // SYNCSPY-PROBLEM: workspace freed on every product
}

int main(void)
{
	int *rows = (int *)malloc((N + 1) * sizeof(int));
	int *cols = (int *)malloc((size_t)N * DEG * sizeof(int));
	double *vals = (double *)malloc((size_t)N * DEG * sizeof(double));
	double *x0 = (double *)malloc(N * sizeof(double));
	const double w[DEG] = {0.5, 0.25, 0.125, 0.125};
	int *d_rows, *d_cols;
	double *d_vals, *d_x, *d_y;
	cudaStream_t s;
	struct spmv_ctx c;
	double sum0 = 0.0, sum = 0.0;

	for (int i = 0; i < N; i++) {
		rows[i] = i * DEG;
		/* self, next, previous, a shortcut; column indices sorted within the row */
		int sc = (int)(((long long)i * 7919 + 13) % N);
		if (sc == i || sc == (i + 1) % N || sc == (i + N - 1) % N)
			sc = (i + N / 2) % N; /* no duplicate column in a row */
		int nb[DEG] = {i, (i + 1) % N, (i + N - 1) % N, sc};
		for (int k = 0; k < DEG; k++) {
			cols[i * DEG + k] = nb[k];
			vals[i * DEG + k] = w[k];
		}
		for (int a = 1; a < DEG; a++)
			for (int b = a; b > 0 && cols[i * DEG + b - 1] > cols[i * DEG + b]; b--) {
				int tc = cols[i * DEG + b];
				double tv = vals[i * DEG + b];
				cols[i * DEG + b] = cols[i * DEG + b - 1];
				vals[i * DEG + b] = vals[i * DEG + b - 1];
				cols[i * DEG + b - 1] = tc;
				vals[i * DEG + b - 1] = tv;
			}
		x0[i] = (double)((i * 7919u) % 1000u);
		sum0 += x0[i];
	}
	rows[N] = N * DEG;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK_SPARSE(cusparseCreate(&c.handle)); // SYNCSPY-CLEAN: setup, the library handle
	CHECK_SPARSE(cusparseSetStream(c.handle, s));
	CHECK(cudaMalloc(&d_rows, (N + 1) * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_cols, (size_t)N * DEG * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_vals, (size_t)N * DEG * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_x, N * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_y, N * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(d_rows, rows, (N + 1) * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(d_cols, cols, (size_t)N * DEG * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(d_vals, vals, (size_t)N * DEG * sizeof(double), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(d_x, x0, N * sizeof(double), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload
	CHECK_SPARSE(cusparseCreateCsr(&c.a, N, N, (int64_t)N * DEG, d_rows, d_cols, d_vals, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
	CHECK_SPARSE(cusparseCreateDnVec(&c.x, N, d_x, CUDA_R_64F));
	CHECK_SPARSE(cusparseCreateDnVec(&c.y, N, d_y, CUDA_R_64F));

	for (int it = 0; it < ITERS; it++) {
		spmv(&c);
		/* ping-pong: the output becomes the next input */
		cusparseDnVecDescr_t t = c.x;
		c.x = c.y;
		c.y = t;
	}

	double *d_final = (ITERS % 2 == 0) ? d_x : d_y;
	CHECK(cudaMemcpyAsync(x0, d_final, N * sizeof(double), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read (pageable, once)
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	for (int i = 0; i < N; i++)
		sum += x0[i];
	corpus_expect("c34_cusparse_spmv_buffer_per_call", "mass conserved", fabs(sum - sum0) < 1e-6 * sum0, 1);
	CHECK_SPARSE(cusparseDestroySpMat(c.a));
	CHECK_SPARSE(cusparseDestroyDnVec(c.x));
	CHECK_SPARSE(cusparseDestroyDnVec(c.y));
	CHECK_SPARSE(cusparseDestroy(c.handle)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_rows)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cols)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_vals)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_y)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	free(rows);
	free(cols);
	free(vals);
	free(x0);
	corpus_result("c34_cusparse_spmv_buffer_per_call", ITERS, (unsigned long long)llround(sum));
	return 0;
}
