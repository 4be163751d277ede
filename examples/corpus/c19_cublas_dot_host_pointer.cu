/*
 * examples/corpus/c19_cublas_dot_host_pointer.cu: corpus workload (CUDA C + cuBLAS). A
 * signal decomposition by cyclic matching pursuit: the residual is projected on one of twelve
 * +-1 atoms per iteration; cublasDdot gives the correlation, the host turns it into the atom's
 * coefficient and cublasDaxpy subtracts coefficient times atom from the residual. The handle
 * is in CUBLAS_POINTER_MODE_HOST (the default), so each cublasDdot returns its result into a
 * host double: the library copies it back and waits for the stream inside the call, every
 * iteration (a sync hidden in the library; the user's line is the cublasDdot call). In
 * CUBLAS_POINTER_MODE_DEVICE the dot would stay on the GPU and a small kernel would form the
 * coefficient. The values are integers held in doubles, so every sum is exact in any order.
 * Planted: the per-iteration cublasDdot in host pointer mode.
 * Clean: cublasCreate and the setup allocations, the cublasDdot of the initial energy (setup,
 * once) and of the final energy (final read), cublasDestroy and the frees at teardown.
 */
// CORPUS-LDLIBS: -lcublas
#include "corpus.h"

#include <cublas_v2.h>

enum { ITERS = 60, N = 1 << 20, ATOMS = 12, THREADS = 256 };

#define CHECK_BLAS(call)                                                                           \
	do {                                                                                       \
		cublasStatus_t check_blas_ = (call);                                               \
		if (check_blas_ != CUBLAS_STATUS_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_blas_);                                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__device__ double atom_value(int i, int k)
{
	uint32_t h = ((uint32_t)i * 2654435761u) ^ ((uint32_t)k * 2246822519u);
	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return (h & 1) ? 1.0 : -1.0;
}

/* The signal: a known mix of the atoms plus a small ramp, all integers. */
__global__ void make_signal(double *r, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	double v = (double)(i % 7);
	for (int k = 0; k < ATOMS; k++)
		v += (double)(40 + 9 * k) * atom_value(i, k);
	r[i] = v;
}

__global__ void make_atom(double *a, int n, int k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = atom_value(i, k);
}

int main(void)
{
	cublasHandle_t blas;
	cudaStream_t s;
	double *d_r, *d_a, energy0 = 0, energy = 0;
	unsigned long long checksum = 0;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK_BLAS(cublasCreate(&blas)); // SYNCSPY-CLEAN: setup, the library's handle and workspace
	CHECK_BLAS(cublasSetStream(blas, s));
	CHECK_BLAS(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));
	CHECK(cudaMalloc(&d_r, N * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_a, N * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
	make_signal<<<N / THREADS, THREADS, 0, s>>>(d_r, N);
	CHECK_LAUNCH();
	CHECK_BLAS(cublasDdot(blas, N, d_r, 1, d_r, 1, &energy0)); // SYNCSPY-CLEAN: setup, the initial energy once

	for (int it = 0; it < ITERS; it++) {
		int k = it % ATOMS;
		double corr;
		make_atom<<<N / THREADS, THREADS, 0, s>>>(d_a, N, k);
		CHECK_LAUNCH();
		CHECK_BLAS(cublasDdot(blas, N, d_r, 1, d_a, 1, &corr)); // SYNCSPY-PROBLEM: host-pointer-mode dot waits for the GPU every iteration
		/* the atom has N entries of +-1: its squared norm is N, a power of two (exact) */
		double coef = (double)(long long)(corr / N);
		double minus = -coef;
		CHECK_BLAS(cublasDaxpy(blas, N, &minus, d_a, 1, d_r, 1));
		checksum = checksum * 1000003 + (unsigned long long)(long long)(coef + 1000000);
	}

	CHECK_BLAS(cublasDdot(blas, N, d_r, 1, d_r, 1, &energy)); // SYNCSPY-CLEAN: final read of the residual energy
	if (!(energy < energy0)) {
		fprintf(stderr, "c19_cublas_dot_host_pointer: energy %.0f not below %.0f\n", energy, energy0);
		return 1;
	}
	checksum = checksum * 1000003 + (unsigned long long)energy;
	CHECK(cudaFree(d_r)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_a)); // SYNCSPY-CLEAN: teardown
	CHECK_BLAS(cublasDestroy(blas)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c19_cublas_dot_host_pointer", ITERS, checksum);
	return 0;
}
