/*
 * examples/cuda/03_copy_compute_overlap.cu: reference workload (3), the classic pipeline:
 * the next batch's host-to-device copy overlapping the current batch's compute (rule
 * copy-on-compute-stream, a host-side heuristic).
 *
 * Host batches are pinned in both variants, so every copy is a true async copy (E1).
 *   bad   : each batch is copied on the compute stream and the kernel follows it there: in one
 *           stream the copy cannot run under the previous batch's kernel, so every step pays
 *           the transfer time on the GPU (missed overlap, no host wait at all).
 *   --fixed: batch i+1 is copied on a copy stream while batch i computes; events order them:
 *           `copied` makes the kernel wait for its batch, `consumed` keeps the copy from
 *           overwriting a device buffer a kernel still reads. No finding.
 * The kernel is made long enough (ROUNDS) that the overlap matters on an H200.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared 03_copy_compute_overlap.cu
 */
#include "workload.h"

enum { ITERATIONS = 20, ELEMENTS = 1 << 20, THREADS = 256, BUFFERS = 2, ROUNDS = 64 };

/* acc[i] += f(batch[i]), with ROUNDS of integer work per element so the kernel takes about as
 * long as the 4 MiB copy; unsigned arithmetic wraps, which is well defined and exact. */
__global__ void work(uint32_t *acc, const uint32_t *batch, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		uint32_t x = batch[i];
		for (int r = 0; r < ROUNDS; r++)
			x = x * LCG_A + LCG_C;
		acc[i] += x;
	}
}

static uint32_t batch_value(int it, int i) { return (uint32_t)(i * 3 + it * 17); }


int main(int argc, char **argv)
{
	int fixed = parse_variant("03_copy_compute_overlap", argc, argv);
	const size_t bytes = (size_t)ELEMENTS * sizeof(uint32_t);
	const int blocks = (ELEMENTS + THREADS - 1) / THREADS;
	uint32_t *host = NULL, *result = NULL, *acc = NULL, *dev_batch[BUFFERS];
	cudaStream_t compute_stream, copy_stream;
	cudaEvent_t copied[BUFFERS], consumed[BUFFERS];

	CHECK(cudaHostAlloc((void **)&host, bytes * ITERATIONS, cudaHostAllocDefault));
	for (int it = 0; it < ITERATIONS; it++)
		for (int i = 0; i < ELEMENTS; i++)
			host[(size_t)it * ELEMENTS + i] = batch_value(it, i);
	CHECK(cudaHostAlloc((void **)&result, bytes, cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&acc, bytes));
	CHECK(cudaMalloc((void **)&dev_batch[0], bytes));
	CHECK(cudaMalloc((void **)&dev_batch[1], bytes));
	CHECK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
	for (int b = 0; b < BUFFERS; b++) {
		CHECK(cudaEventCreateWithFlags(&copied[b], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[b], cudaEventDisableTiming));
	}
	CHECK(cudaMemsetAsync(acc, 0, bytes, compute_stream));

	for (int it = 0; it < ITERATIONS; it++) {
		int b = it % BUFFERS;
		const uint32_t *src = host + (size_t)it * ELEMENTS;
		if (!fixed) {
			CHECK(cudaMemcpyAsync(dev_batch[b], src, bytes, cudaMemcpyHostToDevice, // @site copy
					      compute_stream));
		} else {
			if (it >= BUFFERS)
				CHECK(cudaStreamWaitEvent(copy_stream, consumed[b], 0));
			CHECK(cudaMemcpyAsync(dev_batch[b], src, bytes, cudaMemcpyHostToDevice,
					      copy_stream));
			CHECK(cudaEventRecord(copied[b], copy_stream));
			CHECK(cudaStreamWaitEvent(compute_stream, copied[b], 0));
		}
		work<<<blocks, THREADS, 0, compute_stream>>>(acc, dev_batch[b], ELEMENTS);
		CHECK_LAUNCH();
		if (fixed)
			CHECK(cudaEventRecord(consumed[b], compute_stream));
	}
	CHECK(cudaMemcpyAsync(result, acc, bytes, cudaMemcpyDeviceToHost, compute_stream));
	CHECK(cudaStreamSynchronize(compute_stream)); // @site final-sync

	uint64_t checksum = 0;
	uint32_t mul, add;
	lcg_rounds(ROUNDS, &mul, &add);
	for (int i = 0; i < ELEMENTS; i++) {
		uint32_t want = 0;
		for (int it = 0; it < ITERATIONS; it++)
			want += mul * batch_value(it, i) + add;
		expect_equal("acc", i, result[i], want);
		checksum += (uint64_t)result[i] % 1000003u;
	}
	for (int b = 0; b < BUFFERS; b++) {
		CHECK(cudaEventDestroy(copied[b]));
		CHECK(cudaEventDestroy(consumed[b]));
	}
	CHECK(cudaStreamDestroy(copy_stream));
	CHECK(cudaStreamDestroy(compute_stream));
	CHECK(cudaFree(dev_batch[1]));
	CHECK(cudaFree(dev_batch[0]));
	CHECK(cudaFree(acc));
	CHECK(cudaFreeHost(result));
	CHECK(cudaFreeHost(host));
	print_result(fixed, "iterations=%lld checksum=%lld", ITERATIONS, (long long)checksum);
	return 0;
}
