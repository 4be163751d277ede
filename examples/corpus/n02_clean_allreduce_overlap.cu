/*
 * examples/corpus/n02_clean_allreduce_overlap.cu: corpus workload (CUDA C + NCCL, one rank),
 * CLEAN. Gradient buckets: each step computes two gradient buckets on the compute stream; each
 * bucket is all-reduced on a communication stream as soon as its event fires, overlapping the
 * next bucket's compute; the update waits for the all-reduces with events. The host waits only
 * once, for the final read.
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

enum { STEPS = 50, BUCKET = 1 << 19, BUCKETS = 2, THREADS = 256 };

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
	cudaStream_t compute, comm_stream;
	cudaEvent_t computed[BUCKETS], reduced[BUCKETS];
	float *d_w, *d_g, *w;
	const size_t total = (size_t)BUCKET * BUCKETS;

	CHECK(cudaSetDevice(0));
	NCHECK(ncclGetUniqueId(&id));
	NCHECK(ncclCommInitRank(&comm, 1, id, 0)); // SYNCSPY-CLEAN: setup, the communicator
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
	for (int b = 0; b < BUCKETS; b++) {
		CHECK(cudaEventCreateWithFlags(&computed[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&reduced[b], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_w, total * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_g, total * sizeof(float))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&w, total * sizeof(float))); // SYNCSPY-CLEAN: setup pinned buffer
	for (size_t i = 0; i < total; i++)
		w[i] = (float)(i % 4096);
	CHECK(cudaMemcpyAsync(d_w, w, total * sizeof(float), cudaMemcpyHostToDevice, compute)); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		for (int b = 0; b < BUCKETS; b++) {
			float *wb = d_w + (size_t)b * BUCKET, *gb = d_g + (size_t)b * BUCKET;
			grads<<<BUCKET / THREADS, THREADS, 0, compute>>>(wb, gb, BUCKET, step);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(computed[b], compute));
			CHECK(cudaStreamWaitEvent(comm_stream, computed[b], 0));
			NCHECK(ncclAllReduce(gb, gb, BUCKET, ncclFloat, ncclSum, comm, comm_stream));
			CHECK(cudaEventRecord(reduced[b], comm_stream));
		}
		for (int b = 0; b < BUCKETS; b++) {
			CHECK(cudaStreamWaitEvent(compute, reduced[b], 0));
			apply<<<BUCKET / THREADS, THREADS, 0, compute>>>(d_w + (size_t)b * BUCKET, d_g + (size_t)b * BUCKET, BUCKET);
			CHECK_LAUNCH();
		}
	}

	CHECK(cudaMemcpyAsync(w, d_w, total * sizeof(float), cudaMemcpyDeviceToHost, compute)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(compute)); // SYNCSPY-CLEAN: final read
	unsigned long long checksum = 0;
	for (size_t i = 0; i < total; i++)
		checksum = checksum * 31 + (unsigned)w[i];
	NCHECK(ncclCommDestroy(comm)); // SYNCSPY-CLEAN: teardown
	for (int b = 0; b < BUCKETS; b++) {
		CHECK(cudaEventDestroy(computed[b]));
		CHECK(cudaEventDestroy(reduced[b]));
	}
	CHECK(cudaFree(d_w)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_g)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(w)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaStreamDestroy(comm_stream));
	corpus_result("n02_clean_allreduce_overlap", STEPS, checksum);
	return 0;
}
