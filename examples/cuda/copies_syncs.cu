/*
 * examples/cuda/copies_syncs.cu: the first reference workload of syncspy.
 *
 * A fixed, small program whose every CUDA runtime call is known in advance, so that a database
 * recorded under libsyncspy.so can be checked call by call (copies_syncs.expect beside this
 * file lists the exact count and class of each API). Each iteration walks the whole host/device
 * model once:
 *
 *   stream A: H2D copy from pageable memory   (cudaMemcpyAsync, degraded: S5)
 *             H2D copy from pinned memory     (cudaMemcpyAsync, true async: E1)
 *             combine kernel                  (<<<>>>, __cudaLaunchKernel: E1)
 *             event record                    (cudaEventRecord: E2)
 *   stream B: wait for that event             (cudaStreamWaitEvent: E3)
 *             finish kernel                   (<<<>>>: E1)
 *   host:     cudaStreamSynchronize(B)        (S2)
 *             cudaEventSynchronize(event)     (S3, already complete, still a sync point)
 *             cudaMemcpy D2H, blocking        (S4)
 *
 * then one cudaDeviceSynchronize (S1) at the end. Setup and teardown add the implicit syncs of
 * allocation (S6) and the stream/event lifecycle calls (X1).
 *
 * The data are integers, so the result is exact: every element of every iteration is checked
 * on the host and the program prints one deterministic line, identical with and without the
 * shim. Any CUDA error or wrong value exits with status 1.
 *
 * Build (shared cudart, so that LD_PRELOAD sees the runtime calls):
 *   nvcc -O2 -arch=sm_90 -cudart shared -o copies_syncs copies_syncs.cu
 * Run under syncspy:
 *   LD_PRELOAD=/path/libsyncspy.so SYNCSPY_OUTPUT=out ./copies_syncs
 *
 * Keep ITERATIONS, the number of buffers and the call sequence in step with copies_syncs.expect.
 */
#include <cuda_runtime.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum {
	ITERATIONS = 20,
	/* 1 Mi int32 = 4 MiB per copy: large enough that the pageable copy is staged through the
	 * driver's bounce buffer and visibly blocks the host (small copies may not). */
	ELEMENTS = 1 << 20,
	THREADS_PER_BLOCK = 256,
};

/* Abort on any CUDA error, naming the call: the workload is a test, a silent failure would make
 * its database meaningless. */
#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t check_err_ = (call);                                                   \
		if (check_err_ != cudaSuccess) {                                                   \
			fprintf(stderr, "copies_syncs: %s failed at line %d: %s (%d)\n", #call,     \
				__LINE__, cudaGetErrorString(check_err_), (int)check_err_);       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Stream A's work: out = from_pageable + 2 * from_pinned + iteration. */
__global__ void combine(const int32_t *from_pageable, const int32_t *from_pinned, int32_t *out,
			int n, int iteration)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = from_pageable[i] + 2 * from_pinned[i] + iteration;
}

/* Stream B's work, ordered after stream A's by the event: out = 3 * out + 1. */
__global__ void finish(int32_t *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = 3 * out[i] + 1;
}

/* Input patterns, small enough that no intermediate overflows int32. */
static int32_t pageable_value(int iteration, int i) { return (i * 7 + iteration * 13) % 1000; }
static int32_t pinned_value(int iteration, int i) { return (i * 11 + iteration * 5) % 997; }

int main(void)
{
	const size_t bytes = (size_t)ELEMENTS * sizeof(int32_t);
	const int blocks = (ELEMENTS + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;

	/* Host buffers: two plain mallocs (pageable) and one cudaHostAlloc (pinned). */
	int32_t *host_pageable = (int32_t *)malloc(bytes);
	int32_t *host_result = (int32_t *)malloc(bytes);
	if (!host_pageable || !host_result) {
		fprintf(stderr, "copies_syncs: out of host memory\n");
		return 1;
	}
	int32_t *host_pinned = NULL;
	CHECK(cudaHostAlloc((void **)&host_pinned, bytes, cudaHostAllocDefault));

	int32_t *dev_from_pageable = NULL, *dev_from_pinned = NULL, *dev_out = NULL;
	CHECK(cudaMalloc((void **)&dev_from_pageable, bytes));
	CHECK(cudaMalloc((void **)&dev_from_pinned, bytes));
	CHECK(cudaMalloc((void **)&dev_out, bytes));

	cudaStream_t stream_a, stream_b;
	CHECK(cudaStreamCreate(&stream_a));
	CHECK(cudaStreamCreate(&stream_b));
	cudaEvent_t a_done;
	CHECK(cudaEventCreate(&a_done));

	uint64_t checksum = 0;
	for (int it = 0; it < ITERATIONS; it++) {
		for (int i = 0; i < ELEMENTS; i++) {
			host_pageable[i] = pageable_value(it, i);
			host_pinned[i] = pinned_value(it, i);
		}
		CHECK(cudaMemcpyAsync(dev_from_pageable, host_pageable, bytes, cudaMemcpyHostToDevice,
				      stream_a));
		CHECK(cudaMemcpyAsync(dev_from_pinned, host_pinned, bytes, cudaMemcpyHostToDevice,
				      stream_a));
		combine<<<blocks, THREADS_PER_BLOCK, 0, stream_a>>>(dev_from_pageable, dev_from_pinned,
								     dev_out, ELEMENTS, it);
		CHECK(cudaGetLastError()); /* <<<>>> returns nothing: read its launch error */
		CHECK(cudaEventRecord(a_done, stream_a));

		CHECK(cudaStreamWaitEvent(stream_b, a_done, 0));
		finish<<<blocks, THREADS_PER_BLOCK, 0, stream_b>>>(dev_out, ELEMENTS);
		CHECK(cudaGetLastError());

		CHECK(cudaStreamSynchronize(stream_b));
		CHECK(cudaEventSynchronize(a_done));
		/* Legacy default stream, blocking D2H: returns after the copy. */
		CHECK(cudaMemcpy(host_result, dev_out, bytes, cudaMemcpyDeviceToHost));

		for (int i = 0; i < ELEMENTS; i++) {
			int32_t want = 3 * (pageable_value(it, i) + 2 * pinned_value(it, i) + it) + 1;
			if (host_result[i] != want) {
				fprintf(stderr,
					"copies_syncs: iteration %d element %d: got %" PRId32
					", want %" PRId32 "\n",
					it, i, host_result[i], want);
				return 1;
			}
			checksum += (uint64_t)(uint32_t)host_result[i] * (uint64_t)(i % 31 + 1);
		}
	}
	CHECK(cudaDeviceSynchronize());

	CHECK(cudaEventDestroy(a_done));
	CHECK(cudaStreamDestroy(stream_b));
	CHECK(cudaStreamDestroy(stream_a));
	CHECK(cudaFree(dev_out));
	CHECK(cudaFree(dev_from_pinned));
	CHECK(cudaFree(dev_from_pageable));
	CHECK(cudaFreeHost(host_pinned));
	free(host_result);
	free(host_pageable);

	printf("copies_syncs: iterations=%d elements=%d checksum=%" PRIu64 " result=OK\n", ITERATIONS,
	       ELEMENTS, checksum);
	return 0;
}
