/*
 * examples/cuda/01_memcpy_in_loop.cu: reference workload (1), a synchronous cudaMemcpy in the
 * step loop (rule sync-copy, class S4).
 *
 * Each of ITERATIONS steps computes a result on the GPU and reads it back.
 *   bad   : cudaMemcpy D2H right after the kernel: the host waits for the kernel and the copy,
 *           every step, and the GPU idles until the host queues the next step.
 *   --fixed: cudaMemcpyAsync D2H into its own slice of a pinned buffer on a non-blocking stream;
 *           the host queues all steps and synchronizes once, when it needs the results.
 * Both check every element of every step on the host. 01_memcpy_in_loop.expect says what the
 * report must find. Build: nvcc -O2 -arch=sm_90 -cudart shared 01_memcpy_in_loop.cu
 */
#include "workload.h"

enum { ITERATIONS = 20, ELEMENTS = 1 << 20, THREADS = 256 };

__global__ void step_kernel(int32_t *out, int n, int iteration)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = (i % 1000) * 3 + iteration * 7;
}

static void check_step(const int32_t *host, int iteration, uint64_t *checksum)
{
	for (int i = 0; i < ELEMENTS; i++) {
		expect_equal("out", (long long)iteration * ELEMENTS + i, host[i],
			     (i % 1000) * 3 + iteration * 7);
		*checksum += (uint64_t)(uint32_t)host[i] * (uint64_t)(i % 13 + 1);
	}
}

int main(int argc, char **argv)
{
	int fixed = parse_variant("01_memcpy_in_loop", argc, argv);
	const size_t bytes = (size_t)ELEMENTS * sizeof(int32_t);
	const int blocks = (ELEMENTS + THREADS - 1) / THREADS;
	uint64_t checksum = 0;
	int32_t *dev_out = NULL;

	CHECK(cudaMalloc((void **)&dev_out, bytes));
	if (!fixed) {
		int32_t *host = (int32_t *)malloc(bytes);
		if (!host)
			return 1;
		for (int it = 0; it < ITERATIONS; it++) {
			/* Legacy default stream: the only stream this variant uses. */
			step_kernel<<<blocks, THREADS>>>(dev_out, ELEMENTS, it);
			CHECK_LAUNCH();
			CHECK(cudaMemcpy(host, dev_out, bytes, cudaMemcpyDeviceToHost)); // @site memcpy
			check_step(host, it, &checksum);
		}
		free(host);
	} else {
		int32_t *pinned = NULL;
		cudaStream_t stream;
		/* One slice per step: no slice is overwritten before the host has read it. */
		CHECK(cudaHostAlloc((void **)&pinned, bytes * ITERATIONS, cudaHostAllocDefault));
		CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
		for (int it = 0; it < ITERATIONS; it++) {
			/* The next kernel waits for this copy in stream order: dev_out can be reused. */
			step_kernel<<<blocks, THREADS, 0, stream>>>(dev_out, ELEMENTS, it);
			CHECK_LAUNCH();
			CHECK(cudaMemcpyAsync(pinned + (size_t)it * ELEMENTS, dev_out, bytes,
					      cudaMemcpyDeviceToHost, stream));
		}
		CHECK(cudaStreamSynchronize(stream)); // @site final-sync
		for (int it = 0; it < ITERATIONS; it++)
			check_step(pinned + (size_t)it * ELEMENTS, it, &checksum);
		CHECK(cudaStreamDestroy(stream));
		CHECK(cudaFreeHost(pinned));
	}
	CHECK(cudaFree(dev_out));
	print_result(fixed, "iterations=%lld checksum=%lld", ITERATIONS, (long long)checksum);
	return 0;
}
