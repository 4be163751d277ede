/*
 * examples/cuda/02_async_pageable.cu: reference workload (2), cudaMemcpyAsync from pageable
 * memory (rule pageable-async-copy, class S5) against the same copy from pinned memory.
 *
 * A two-stream pipeline that is otherwise right: batch i is copied host-to-device on a copy
 * stream, an event orders the compute stream after it, a kernel accumulates it; a second event
 * keeps the copy of batch i+2 from overwriting a device buffer the kernel still reads.
 *   bad   : the host batches live in malloc memory. The driver stages pageable memory through a
 *           bounce buffer: each "async" call blocks the host until its data is staged, and the
 *           copy runs at a fraction of pinned bandwidth.
 *   --fixed: the host batches live in cudaHostAlloc memory: each call only enqueues.
 * The copy is followed by an event record, not a kernel on its stream, so the overlap heuristic
 * (copy-on-compute-stream) stays silent in both variants: this workload isolates S5.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared 02_async_pageable.cu
 */
#include "workload.h"

enum { ITERATIONS = 20, ELEMENTS = 1 << 19 /* 2 MiB per batch */, THREADS = 256, BUFFERS = 2 };

__global__ void accumulate(int32_t *acc, const int32_t *batch, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		acc[i] += batch[i];
}

static int32_t batch_value(int it, int i) { return (i * 5 + it * 11) % 997; }

int main(int argc, char **argv)
{
	int fixed = parse_variant("02_async_pageable", argc, argv);
	const size_t bytes = (size_t)ELEMENTS * sizeof(int32_t);
	const int blocks = (ELEMENTS + THREADS - 1) / THREADS;
	int32_t *host = NULL, *result = NULL, *acc = NULL, *dev_batch[BUFFERS];
	cudaStream_t copy_stream, compute_stream;
	cudaEvent_t copied[BUFFERS], consumed[BUFFERS];

	/* Every batch has its own host slice, filled before the loop, in both variants. */
	if (!fixed) {
		host = (int32_t *)malloc(bytes * ITERATIONS);
		if (!host)
			return 1;
	} else {
		CHECK(cudaHostAlloc((void **)&host, bytes * ITERATIONS, cudaHostAllocDefault));
	}
	for (int it = 0; it < ITERATIONS; it++)
		for (int i = 0; i < ELEMENTS; i++)
			host[(size_t)it * ELEMENTS + i] = batch_value(it, i);
	CHECK(cudaHostAlloc((void **)&result, bytes, cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&acc, bytes));
	CHECK(cudaMalloc((void **)&dev_batch[0], bytes));
	CHECK(cudaMalloc((void **)&dev_batch[1], bytes));
	CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
	for (int b = 0; b < BUFFERS; b++) {
		CHECK(cudaEventCreateWithFlags(&copied[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[b], cudaEventDisableTiming));
	}
	CHECK(cudaMemsetAsync(acc, 0, bytes, compute_stream));

	for (int it = 0; it < ITERATIONS; it++) {
		int b = it % BUFFERS;
		if (it >= BUFFERS) /* the kernel of batch it-2 must be done with this buffer */
			CHECK(cudaStreamWaitEvent(copy_stream, consumed[b], 0));
		CHECK(cudaMemcpyAsync(dev_batch[b], host + (size_t)it * ELEMENTS, bytes, // @site copy
				      cudaMemcpyHostToDevice, copy_stream));
		CHECK(cudaEventRecord(copied[b], copy_stream));
		CHECK(cudaStreamWaitEvent(compute_stream, copied[b], 0));
		accumulate<<<blocks, THREADS, 0, compute_stream>>>(acc, dev_batch[b], ELEMENTS);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(consumed[b], compute_stream));
	}
	CHECK(cudaMemcpyAsync(result, acc, bytes, cudaMemcpyDeviceToHost, compute_stream));
	CHECK(cudaStreamSynchronize(compute_stream)); // @site final-sync

	uint64_t checksum = 0;
	for (int i = 0; i < ELEMENTS; i++) {
		long long want = 0;
		for (int it = 0; it < ITERATIONS; it++)
			want += batch_value(it, i);
		expect_equal("acc", i, result[i], want);
		checksum += (uint64_t)result[i] * (uint64_t)(i % 7 + 1);
	}
	for (int b = 0; b < BUFFERS; b++) {
		CHECK(cudaEventDestroy(copied[b]));
		CHECK(cudaEventDestroy(consumed[b]));
	}
	CHECK(cudaStreamDestroy(compute_stream));
	CHECK(cudaStreamDestroy(copy_stream));
	CHECK(cudaFree(dev_batch[1]));
	CHECK(cudaFree(dev_batch[0]));
	CHECK(cudaFree(acc));
	CHECK(cudaFreeHost(result));
	if (!fixed)
		free(host);
	else
		CHECK(cudaFreeHost(host));
	print_result(fixed, "iterations=%lld checksum=%lld", ITERATIONS, (long long)checksum);
	return 0;
}
