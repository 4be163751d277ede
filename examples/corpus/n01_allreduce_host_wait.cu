/*
 * examples/corpus/n01_allreduce_host_wait.cu: corpus workload (CUDA C + NCCL, one rank). A
 * data-parallel training step written for N ranks and run with one: compute gradients, sum them
 * with ncclAllReduce, apply them. After every all-reduce the host calls cudaStreamSynchronize
 * "to make sure the gradients arrived" before it queues the update: the stream order already
 * guarantees that.
 * Planted: cudaStreamSynchronize after the all-reduce every step.
 * Clean: setup allocations and communicator, the final read.
 */
#include "corpus.h"

#include <nccl.h>

#define NCHECK(call)                                                                               \
	do {                                                                                       \
		ncclResult_t nr_ = (call);                                                         \
		if (nr_ != ncclSuccess) {                                                          \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,      \
				ncclGetErrorString(nr_));                                          \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

enum { STEPS = 50, PARAMS = 1 << 20, THREADS = 256 };

__global__ void grads(const float *w, float *g, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] = (float)(((int)w[i] + i + step) % 16 - 8);
}

__global__ void apply(float *w, const float *g, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] = (float)(((int)w[i] + (int)g[i] + 4096) % 4096);
}

int main(void)
{
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	float *d_w, *d_g, *w;

	CHECK(cudaSetDevice(0));
	NCHECK(ncclGetUniqueId(&id));
	NCHECK(ncclCommInitRank(&comm, 1, id, 0)); // SYNCSPY-CLEAN: setup, the communicator
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_w, PARAMS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_g, PARAMS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&w, PARAMS * sizeof(float))); // SYNCSPY-CLEAN: setup pinned buffer
	for (int i = 0; i < PARAMS; i++)
		w[i] = (float)(i % 4096);
	CHECK(cudaMemcpyAsync(d_w, w, PARAMS * sizeof(float), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		grads<<<PARAMS / THREADS, THREADS, 0, s>>>(d_w, d_g, PARAMS, step);
		CHECK_LAUNCH();
		NCHECK(ncclAllReduce(d_g, d_g, PARAMS, ncclFloat, ncclSum, comm, s));
		CHECK(cudaStreamSynchronize(s)); // SYNCSPY-PROBLEM: host waits for the all-reduce every step
		apply<<<PARAMS / THREADS, THREADS, 0, s>>>(d_w, d_g, PARAMS);
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpyAsync(w, d_w, PARAMS * sizeof(float), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0;
	for (int i = 0; i < PARAMS; i++)
		checksum = checksum * 31 + (unsigned)w[i];
	NCHECK(ncclCommDestroy(comm)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_w)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_g)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(w)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("n01_allreduce_host_wait", STEPS, checksum);
	return 0;
}
