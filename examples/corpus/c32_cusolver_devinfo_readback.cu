/*
 * examples/corpus/c32_cusolver_devinfo_readback.cu: corpus workload (CUDA C + cuSOLVER). A
 * Gauss-Newton style refit loop: every iteration the normal-equations matrix of a regularized
 * least-squares problem is assembled on the GPU (symmetric positive definite, its ridge term
 * changing with the iteration), factored with cusolverDnDpotrf (Cholesky) and solved with
 * cusolverDnDpotrs. After each factorization the program copies cuSOLVER's devInfo to the host
 * with a blocking cudaMemcpy to check that the matrix was positive definite. potrf and potrs
 * are asynchronous: they only queue kernels and write devInfo on the device (cuSOLVER docs,
 * "devInfo": "if devInfo = i, the leading minor of order i is not positive definite"); the
 * blocking cudaMemcpy D2H makes the host wait for the assembly and the factorization every
 * iteration, so it can never queue the next iteration ahead. The fix: keep the infos on the
 * device (an info slot per iteration, or a flag a kernel ORs together) and read them once after
 * the loop, or check only every N iterations.
 * Planted: the per-iteration blocking cudaMemcpy of devInfo.
 * Clean: cusolverDnCreate and the workspace query and allocation in setup (once), the setup
 * allocations, the final read of the error counter and of the infos' sum, teardown.
 * The solution is compared on the GPU with the known one (|x - x_true| < 1e-8 per entry).
 */
// CORPUS-LDLIBS: -lcusolver
#include "corpus.h"

#include <cusolverDn.h>

enum { ITERS = 40, N = 768, THREADS = 256 };

#define CHECK_SOLVER(call)                                                                         \
	do {                                                                                       \
		cusolverStatus_t check_solver_ = (call);                                           \
		if (check_solver_ != CUSOLVER_STATUS_SUCCESS) {                                    \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_solver_);                                               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__device__ double entry(int i, int j, int it)
{
	if (i == j)
		return (double)N + 1.0 + (double)(it % 5);
	int d = i > j ? i - j : j - i;
	return 1.0 / (double)(1 + d);
}

__device__ double truth(int i) { return (double)(i % 7) - 3.0; }

/* column-major A (lda = N) and b = A * x_true */
__global__ void assemble(double *a, double *b, int it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	double s = 0.0;
	for (int j = 0; j < N; j++) {
		double v = entry(i, j, it);
		a[(size_t)j * N + i] = v;
		s += v * truth(j);
	}
	b[i] = s;
}

__global__ void compare(const double *x, unsigned int *bad)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N && fabs(x[i] - truth(i)) > 1e-8)
		atomicAdd(bad, 1u);
}

int main(void)
{
	cusolverDnHandle_t solver;
	cudaStream_t s;
	double *d_a, *d_b, *d_work;
	int *d_info, lwork = 0, h_info = 0;
	unsigned int *d_bad, h_bad = 0;
	long long info_sum = 0;

	CHECK(cudaStreamCreate(&s)); /* blocking: the legacy-stream cudaMemcpy below waits for it */
	CHECK_SOLVER(cusolverDnCreate(&solver)); // SYNCSPY-CLEAN: setup, the library handle (allocates once)
	CHECK_SOLVER(cusolverDnSetStream(solver, s));
	CHECK(cudaMalloc(&d_a, (size_t)N * N * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_b, N * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_info, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_bad, sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_bad, 0, sizeof(unsigned int), s));
	CHECK_SOLVER(cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, N, d_a, N, &lwork));
	CHECK(cudaMalloc(&d_work, (size_t)lwork * sizeof(double))); // SYNCSPY-CLEAN: setup, the workspace sized once

	for (int it = 0; it < ITERS; it++) {
		assemble<<<(N + THREADS - 1) / THREADS, THREADS, 0, s>>>(d_a, d_b, it);
		CHECK_LAUNCH();
		CHECK_SOLVER(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, N, d_a, N, d_work, lwork, d_info));
		CHECK(cudaMemcpy(&h_info, d_info, sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: blocking read of devInfo after every factorization
		if (h_info != 0) {
			fprintf(stderr, "c32: potrf info %d at iteration %d\n", h_info, it);
			return 1;
		}
		info_sum += h_info;
		CHECK_SOLVER(cusolverDnDpotrs(solver, CUBLAS_FILL_MODE_LOWER, N, 1, d_a, N, d_b, N, d_info));
		compare<<<(N + THREADS - 1) / THREADS, THREADS, 0, s>>>(d_b, d_bad);
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpyAsync(&h_bad, d_bad, sizeof h_bad, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpyAsync(&h_info, d_info, sizeof h_info, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read (the last potrs info)
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	corpus_expect("c32_cusolver_devinfo_readback", "entries off the known solution", h_bad, 0);
	corpus_expect("c32_cusolver_devinfo_readback", "potrs info", h_info, 0);
	CHECK_SOLVER(cusolverDnDestroy(solver)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_a)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_b)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_work)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_info)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_bad)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c32_cusolver_devinfo_readback", ITERS, (unsigned long long)(N * 1000 + info_sum));
	return 0;
}
