/*
 * examples/nccl/allreduce.cu: reference workload for NCCL, blocking against overlapped
 * all-reduce (rules host-sync and, with 2+ ranks, nccl-straggler/rank-imbalance).
 *
 * Each step, a kernel computes a "gradient" buffer, NCCL sums it over the ranks, and a kernel
 * adds the sum into an accumulator.
 *   bad   : everything on one stream, and cudaStreamSynchronize after every ncclAllReduce: the
 *           host waits for the compute and the communication each step.
 *   --fixed: compute on one stream, all-reduce and accumulate on a communication stream, ordered
 *           by events (two gradient buffers, so step i+1 computes while step i communicates);
 *           the host synchronizes once at the end.
 *
 *   allreduce [--fixed] [--ranks N]     N = 1 (default): this process, ncclCommInitRank with
 *                                       nranks = 1; N > 1: N forked processes, one GPU each.
 * With N > 1 the parent makes no CUDA or NCCL call (CUDA does not survive fork): rank 0 creates
 * the NCCL id and hands it to the other ranks through a pipe. The multi-GPU checks of this
 * program belong to the multi-GPU suite; here it must build and run with one rank.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared allreduce.cu -lnccl  (plus -I/-L to NCCL)
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ITERATIONS = 20, ELEMENTS = 1 << 20, THREADS = 256, BUFFERS = 2, MAX_RANKS = 64 };

static int my_rank;

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "allreduce rank %d: %s failed at line %d: %s\n", my_rank,  \
				#call, __LINE__, cudaGetErrorString(e_));                          \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define NCHECK(call)                                                                               \
	do {                                                                                       \
		ncclResult_t r_ = (call);                                                          \
		if (r_ != ncclSuccess) {                                                           \
			fprintf(stderr, "allreduce rank %d: %s failed at line %d: %s\n", my_rank,  \
				#call, __LINE__, ncclGetErrorString(r_));                          \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Small integers in floats: every sum is exact, so the check can demand equality. */
__global__ void gradient(float *g, int n, int rank, int it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] = (float)((i % 64) + rank + it);
}

__global__ void accumulate(float *acc, const float *g, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		acc[i] += g[i];
}

static int run_rank(int rank, int nranks, int fixed, ncclUniqueId id)
{
	const size_t bytes = (size_t)ELEMENTS * sizeof(float);
	const int blocks = (ELEMENTS + THREADS - 1) / THREADS;
	float *grad[BUFFERS], *acc = NULL, *result = NULL;
	cudaStream_t compute, comm_stream;
	cudaEvent_t computed[BUFFERS], reduced[BUFFERS];
	ncclComm_t comm;
	int devices = 0;

	my_rank = rank;
	CHECK(cudaGetDeviceCount(&devices));
	if (devices < nranks) {
		fprintf(stderr, "allreduce: %d ranks need %d GPUs, %d found\n", nranks, nranks, devices);
		return 1;
	}
	CHECK(cudaSetDevice(rank));
	NCHECK(ncclCommInitRank(&comm, nranks, id, rank));
	CHECK(cudaHostAlloc((void **)&result, bytes, cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&acc, bytes));
	CHECK(cudaMalloc((void **)&grad[0], bytes));
	CHECK(cudaMalloc((void **)&grad[1], bytes));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
	for (int b = 0; b < BUFFERS; b++) {
		CHECK(cudaEventCreateWithFlags(&computed[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&reduced[b], cudaEventDisableTiming));
	}
	CHECK(cudaMemsetAsync(acc, 0, bytes, fixed ? comm_stream : compute));

	for (int it = 0; it < ITERATIONS; it++) {
		int b = it % BUFFERS;
		if (!fixed) {
			gradient<<<blocks, THREADS, 0, compute>>>(grad[b], ELEMENTS, rank, it);
			CHECK(cudaGetLastError());
			NCHECK(ncclAllReduce(grad[b], grad[b], ELEMENTS, ncclFloat, ncclSum, comm,
					     compute));
			CHECK(cudaStreamSynchronize(compute)); // @site step-sync
			accumulate<<<blocks, THREADS, 0, compute>>>(acc, grad[b], ELEMENTS);
			CHECK(cudaGetLastError());
		} else {
			if (it >= BUFFERS) /* step it-2 must be done with this buffer */
				CHECK(cudaStreamWaitEvent(compute, reduced[b], 0));
			gradient<<<blocks, THREADS, 0, compute>>>(grad[b], ELEMENTS, rank, it);
			CHECK(cudaGetLastError());
			CHECK(cudaEventRecord(computed[b], compute));
			CHECK(cudaStreamWaitEvent(comm_stream, computed[b], 0));
			NCHECK(ncclAllReduce(grad[b], grad[b], ELEMENTS, ncclFloat, ncclSum, comm,
					     comm_stream));
			accumulate<<<blocks, THREADS, 0, comm_stream>>>(acc, grad[b], ELEMENTS);
			CHECK(cudaGetLastError());
			CHECK(cudaEventRecord(reduced[b], comm_stream));
		}
	}
	cudaStream_t last = fixed ? comm_stream : compute;
	CHECK(cudaMemcpyAsync(result, acc, bytes, cudaMemcpyDeviceToHost, last));
	CHECK(cudaStreamSynchronize(last)); // @site final-sync

	double checksum = 0;
	for (int i = 0; i < ELEMENTS; i++) {
		double want = 0;
		for (int it = 0; it < ITERATIONS; it++)
			for (int r = 0; r < nranks; r++)
				want += (i % 64) + r + it;
		if ((double)result[i] != want) {
			fprintf(stderr, "allreduce rank %d: acc[%d] = %.1f, want %.1f\n", rank, i,
				(double)result[i], want);
			return 1;
		}
		checksum += result[i];
	}
	for (int b = 0; b < BUFFERS; b++) {
		CHECK(cudaEventDestroy(computed[b]));
		CHECK(cudaEventDestroy(reduced[b]));
	}
	CHECK(cudaStreamDestroy(comm_stream));
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaFree(grad[1]));
	CHECK(cudaFree(grad[0]));
	CHECK(cudaFree(acc));
	CHECK(cudaFreeHost(result));
	NCHECK(ncclCommDestroy(comm));
	if (rank == 0) /* one line for the whole job, identical on every run */
		printf("allreduce: variant=%s ranks=%d iterations=%d checksum=%.0f result=OK\n",
		       fixed ? "fixed" : "bad", nranks, ITERATIONS, checksum);
	return 0;
}

int main(int argc, char **argv)
{
	int fixed = 0, nranks = 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--fixed") == 0)
			fixed = 1;
		else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
			nranks = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: allreduce [--fixed] [--ranks N]\n");
			return 2;
		}
	}
	if (nranks < 1 || nranks > MAX_RANKS) {
		fprintf(stderr, "allreduce: --ranks must be 1..%d\n", MAX_RANKS);
		return 2;
	}
	if (nranks == 1) {
		ncclUniqueId id;
		NCHECK(ncclGetUniqueId(&id));
		return run_rank(0, 1, fixed, id);
	}

	/* One pipe per non-zero rank: rank 0 writes the id into each. */
	int pipes[MAX_RANKS][2];
	pid_t pids[MAX_RANKS];
	for (int r = 1; r < nranks; r++)
		if (pipe(pipes[r]) != 0) {
			perror("allreduce: pipe");
			return 1;
		}
	fflush(stdout);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0) {
			perror("allreduce: fork");
			return 1;
		}
		if (pids[r] == 0) {
			ncclUniqueId id;
			my_rank = r;
			if (r == 0) {
				NCHECK(ncclGetUniqueId(&id));
				for (int k = 1; k < nranks; k++)
					if (write(pipes[k][1], &id, sizeof(id)) != (ssize_t)sizeof(id))
						_exit(1);
			} else if (read(pipes[r][0], &id, sizeof(id)) != (ssize_t)sizeof(id)) {
				_exit(1);
			}
			fflush(stdout);
			exit(run_rank(r, nranks, fixed, id));
		}
	}
	int status = 0;
	for (int r = 0; r < nranks; r++) {
		int ws = 0;
		if (waitpid(pids[r], &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			status = 1;
	}
	return status;
}
