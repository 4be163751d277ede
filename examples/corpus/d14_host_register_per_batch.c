/*
 * examples/corpus/d14_host_register_per_batch.c: corpus workload (CUDA driver API). A
 * driver-API plugin for a host application that hands it a fresh buffer for every batch (a
 * decoded image block, malloc'd by the application): to get an asynchronous, full-bandwidth
 * upload the plugin page-locks the buffer with cuMemHostRegister, queues cuMemcpyHtoDAsync and
 * the batch's kernels, and unregisters it with cuMemHostUnregister once the upload has been
 * consumed. Registering and unregistering pin and unpin every page of the buffer and
 * synchronize (driver API docs: cuMemHostRegister "page-locks the memory range"; the CUDA
 * programming guide counts page-locking among the implicit synchronizations), every batch: far
 * more than the copy it was meant to speed up. The fix: register the application's buffers
 * once (they come from a pool), or copy each block into a pinned staging ring allocated once.
 * Planted: the per-batch cuMemHostRegister and cuMemHostUnregister.
 * Clean: setup allocations, the per-batch cuMemcpyHtoDAsync from the (registered) buffer,
 * the final read, teardown.
 *   d14_host_register_per_batch driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <stdlib.h>

enum { STEPS = 40, N = 1 << 21, THREADS = 256, ROUNDS = 256, POOL = 4 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix_rounds, sum_into;
	CUstream s;
	CUdeviceptr d_in, d_acc;
	unsigned long long acc = 0;
	int n = N, rounds = ROUNDS;
	const size_t bytes = (size_t)N * sizeof(uint32_t);
	uint32_t *app_blocks[POOL]; /* the application's buffers, page-aligned */

	for (int k = 0; k < POOL; k++) {
		app_blocks[k] = (uint32_t *)aligned_alloc(4096, bytes);
		if (!app_blocks[k]) {
			fprintf(stderr, "d14: out of memory\n");
			return 1;
		}
	}
	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_in, bytes)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));

	for (int step = 0; step < STEPS; step++) {
		uint32_t *block = app_blocks[step % POOL];
		for (int i = 0; i < N; i++) /* the application decodes the block */
			block[i] = (uint32_t)i * 747796405u + (uint32_t)step * 2891336453u;
		DCHECK(cuMemHostRegister(block, bytes, 0)); // SYNCSPY-PROBLEM: page-locks the block every batch
		DCHECK(cuMemcpyHtoDAsync(d_in, block, bytes, s)); // SYNCSPY-CLEAN: async upload from the registered block
		void *mix_args[] = {&d_in, &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
		void *sum_args[] = {&d_in, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		DCHECK(cuMemHostUnregister(block)); // SYNCSPY-PROBLEM: unpins the block every batch
	}

	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_in)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	for (int k = 0; k < POOL; k++)
		free(app_blocks[k]);
	printf("d14_host_register_per_batch: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
