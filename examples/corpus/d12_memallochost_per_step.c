/*
 * examples/corpus/d12_memallochost_per_step.c: corpus workload (CUDA driver API). The upload
 * side of a driver-API inference backend: every step the host encodes a request batch into a
 * page-locked buffer it gets from cuMemAllocHost, queues cuMemcpyHtoDAsync on the compute
 * stream and the batch's kernels, and returns the buffer with cuMemFreeHost. Page-locking and
 * unlocking host memory are expensive driver operations that synchronize (the CUDA programming
 * guide lists page-locked host allocation among the implicit synchronizations; cuMemFreeHost
 * cannot release a buffer an asynchronous copy may still read), so the host waits for the GPU
 * twice a step and the upload never overlaps the previous batch's kernels. The fix: a ring of
 * pinned buffers allocated once, reused after an event says their copy is done (d03).
 * Planted: the per-step cuMemAllocHost and cuMemFreeHost.
 * Clean: setup allocations, the per-step cuMemcpyHtoDAsync from pinned memory, the final read,
 * teardown.
 *   d12_memallochost_per_step driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 50, N = 1 << 20, THREADS = 256, ROUNDS = 512 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix_rounds, sum_into;
	CUstream s;
	CUdeviceptr d_in, d_acc;
	unsigned long long acc = 0;
	int n = N, rounds = ROUNDS;

	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_in, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));

	for (int step = 0; step < STEPS; step++) {
		uint32_t *batch;
		DCHECK(cuMemAllocHost((void **)&batch, (size_t)N * sizeof(uint32_t))); // SYNCSPY-PROBLEM: pinned buffer allocated every step
		for (int i = 0; i < N; i++)
			batch[i] = (uint32_t)i * 2654435761u + (uint32_t)step * 40503u;
		DCHECK(cuMemcpyHtoDAsync(d_in, batch, (size_t)N * sizeof(uint32_t), s)); // SYNCSPY-CLEAN: async upload from pinned memory
		void *mix_args[] = {&d_in, &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
		void *sum_args[] = {&d_in, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		DCHECK(cuMemFreeHost(batch)); // SYNCSPY-PROBLEM: pinned buffer freed every step
	}

	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_in)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	printf("d12_memallochost_per_step: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
