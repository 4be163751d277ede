/*
 * examples/cuda/06_legacy_stream.cu: reference workload (6), the legacy default stream
 * serializing two streams (rule legacy-stream).
 *
 * Each step runs independent work on two streams A and B, which could overlap, plus a small
 * bookkeeping kernel (a step counter).
 *   bad   : A and B are created with cudaStreamCreate (blocking streams) and the counter kernel
 *           is launched with <<<grid, block>>> and no stream: on the legacy default stream. It
 *           waits for all work queued on A and B, and their later work waits for it, so every
 *           step is serialized at that point.
 *   --fixed: A, B and a third stream C for the counter are created cudaStreamNonBlocking; the
 *           legacy stream is never used.
 * Results are read with cudaMemcpyAsync on A (not cudaMemcpy, which would use the legacy
 * stream too) after B's work is joined into A with an event.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared 06_legacy_stream.cu
 */
#include "workload.h"

enum { ITERATIONS = 20, ELEMENTS = 1 << 20, THREADS = 256 };

__global__ void add(int32_t *v, int n, int32_t amount)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] += amount + (i % 7);
}

__global__ void count_step(int32_t *counter) { counter[0] += 1; }

int main(int argc, char **argv)
{
	int fixed = parse_variant("06_legacy_stream", argc, argv);
	const size_t bytes = (size_t)ELEMENTS * sizeof(int32_t);
	const int blocks = (ELEMENTS + THREADS - 1) / THREADS;
	const unsigned flags = fixed ? cudaStreamNonBlocking : cudaStreamDefault;
	int32_t *va = NULL, *vb = NULL, *counter = NULL, *result = NULL;
	cudaStream_t a, b, c = NULL;
	cudaEvent_t b_done, c_done;

	/* result holds va, then vb, then the counter. */
	CHECK(cudaHostAlloc((void **)&result, 2 * bytes + sizeof(int32_t), cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&va, bytes));
	CHECK(cudaMalloc((void **)&vb, bytes));
	CHECK(cudaMalloc((void **)&counter, sizeof(int32_t)));
	CHECK(cudaStreamCreateWithFlags(&a, flags));
	CHECK(cudaStreamCreateWithFlags(&b, flags));
	if (fixed)
		CHECK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&b_done, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&c_done, cudaEventDisableTiming));
	CHECK(cudaMemsetAsync(va, 0, bytes, a));
	CHECK(cudaMemsetAsync(vb, 0, bytes, b));
	CHECK(cudaMemsetAsync(counter, 0, sizeof(int32_t), fixed ? c : a));
	/* Bad variant: the counter's memset is on A; the legacy-stream kernel waits for A anyway. */

	for (int it = 0; it < ITERATIONS; it++) {
		add<<<blocks, THREADS, 0, a>>>(va, ELEMENTS, it);
		CHECK_LAUNCH();
		add<<<blocks, THREADS, 0, b>>>(vb, ELEMENTS, 2 * it);
		CHECK_LAUNCH();
		if (!fixed)
			count_step<<<1, 1>>>(counter); // @site legacy-launch
		else
			count_step<<<1, 1, 0, c>>>(counter);
		CHECK_LAUNCH();
	}
	CHECK(cudaEventRecord(b_done, b));
	CHECK(cudaStreamWaitEvent(a, b_done, 0));
	if (fixed) {
		CHECK(cudaEventRecord(c_done, c));
		CHECK(cudaStreamWaitEvent(a, c_done, 0));
	}
	CHECK(cudaMemcpyAsync(result, va, bytes, cudaMemcpyDeviceToHost, a));
	CHECK(cudaMemcpyAsync(result + ELEMENTS, vb, bytes, cudaMemcpyDeviceToHost, a));
	CHECK(cudaMemcpyAsync(result + 2 * ELEMENTS, counter, sizeof(int32_t),
			      cudaMemcpyDeviceToHost, a));
	CHECK(cudaStreamSynchronize(a)); // @site final-sync

	uint64_t checksum = 0;
	for (int i = 0; i < ELEMENTS; i++) {
		long long want_a = 0, want_b = 0;
		for (int it = 0; it < ITERATIONS; it++) {
			want_a += it + (i % 7);
			want_b += 2 * it + (i % 7);
		}
		expect_equal("va", i, result[i], want_a);
		expect_equal("vb", i, result[ELEMENTS + i], want_b);
		checksum += (uint64_t)result[i] + 3u * (uint64_t)result[ELEMENTS + i];
	}
	expect_equal("counter", 0, result[2 * ELEMENTS], ITERATIONS);
	CHECK(cudaEventDestroy(c_done));
	CHECK(cudaEventDestroy(b_done));
	if (fixed)
		CHECK(cudaStreamDestroy(c));
	CHECK(cudaStreamDestroy(b));
	CHECK(cudaStreamDestroy(a));
	CHECK(cudaFree(counter));
	CHECK(cudaFree(vb));
	CHECK(cudaFree(va));
	CHECK(cudaFreeHost(result));
	print_result(fixed, "iterations=%lld checksum=%lld", ITERATIONS, (long long)checksum);
	return 0;
}
