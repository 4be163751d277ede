/*
 * examples/cuda/04_stream_sync_vs_wait_event.cu: reference workload (4), cudaStreamSynchronize
 * used only to order two streams, where cudaStreamWaitEvent would do (rule host-sync, S2).
 *
 * Each step, a producer kernel on stream A writes a buffer that a consumer kernel on stream B
 * reads.
 *   bad   : the host calls cudaStreamSynchronize(A) between them: it stops queuing until A has
 *           drained, and both streams idle while it queues B's kernel.
 *   --fixed: cudaEventRecord on A and cudaStreamWaitEvent of B on it: the GPU orders the
 *           streams and the host runs ahead. A second event keeps the next producer from
 *           overwriting the buffer before the consumer has read it.
 * Both end with one cudaStreamSynchronize(B) before reading the result.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared 04_stream_sync_vs_wait_event.cu
 */
#include "workload.h"

enum { ITERATIONS = 20, ELEMENTS = 1 << 20, THREADS = 256 };

__global__ void produce(int32_t *buf, int n, int it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		buf[i] = (i % 501) + it;
}

__global__ void consume(int32_t *acc, const int32_t *buf, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		acc[i] += 2 * buf[i];
}

int main(int argc, char **argv)
{
	int fixed = parse_variant("04_stream_sync_vs_wait_event", argc, argv);
	const size_t bytes = (size_t)ELEMENTS * sizeof(int32_t);
	const int blocks = (ELEMENTS + THREADS - 1) / THREADS;
	int32_t *buf = NULL, *acc = NULL, *result = NULL;
	cudaStream_t a, b;
	cudaEvent_t produced, consumed;

	CHECK(cudaHostAlloc((void **)&result, bytes, cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&buf, bytes));
	CHECK(cudaMalloc((void **)&acc, bytes));
	CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
	CHECK(cudaMemsetAsync(acc, 0, bytes, b));
	CHECK(cudaEventRecord(consumed, b)); /* the first producer waits on nothing real */

	for (int it = 0; it < ITERATIONS; it++) {
		if (fixed)
			CHECK(cudaStreamWaitEvent(a, consumed, 0));
		produce<<<blocks, THREADS, 0, a>>>(buf, ELEMENTS, it);
		CHECK_LAUNCH();
		if (!fixed) {
			CHECK(cudaStreamSynchronize(a)); // @site stream-sync
		} else {
			CHECK(cudaEventRecord(produced, a));
			CHECK(cudaStreamWaitEvent(b, produced, 0));
		}
		consume<<<blocks, THREADS, 0, b>>>(acc, buf, ELEMENTS);
		CHECK_LAUNCH();
		if (fixed)
			CHECK(cudaEventRecord(consumed, b));
		else /* the next producer must not overwrite buf before B has read it */
			CHECK(cudaStreamSynchronize(b)); // @site stream-sync-b
	}
	CHECK(cudaMemcpyAsync(result, acc, bytes, cudaMemcpyDeviceToHost, b));
	CHECK(cudaStreamSynchronize(b)); // @site final-sync

	uint64_t checksum = 0;
	for (int i = 0; i < ELEMENTS; i++) {
		long long want = 0;
		for (int it = 0; it < ITERATIONS; it++)
			want += 2 * ((i % 501) + it);
		expect_equal("acc", i, result[i], want);
		checksum += (uint64_t)result[i] * (uint64_t)(i % 11 + 1);
	}
	CHECK(cudaEventDestroy(consumed));
	CHECK(cudaEventDestroy(produced));
	CHECK(cudaStreamDestroy(b));
	CHECK(cudaStreamDestroy(a));
	CHECK(cudaFree(acc));
	CHECK(cudaFree(buf));
	CHECK(cudaFreeHost(result));
	print_result(fixed, "iterations=%lld checksum=%lld", ITERATIONS, (long long)checksum);
	return 0;
}
