/*
 * examples/corpus/d13_memset_d32_legacy_stream.c: corpus workload (CUDA driver API). A
 * driver-API particle-tracking pipeline: an upload stream copies the next batch of hits from
 * pinned memory while the compute stream mixes the current batch and reduces it into a
 * per-step accumulator; events hand the two device slots back and forth so that the upload of
 * batch k+1 overlaps the compute of batch k. Both streams are created with CU_STREAM_DEFAULT
 * (blocking streams), and the accumulator is cleared each step with cuMemsetD32, the
 * synchronous-API memset: it does not make the host wait for device memory (driver API docs,
 * "memset": asynchronous with respect to the host unless the target is pinned host memory)
 * but it is issued on the legacy NULL stream, which waits for all work in every blocking
 * stream and makes them wait for it, so every step the clear joins the upload and compute
 * streams and the overlap never happens. cuMemsetD32Async on the compute stream is the fix
 * (as setup already does for the running total).
 * Planted: the per-step cuMemsetD32 of the accumulator (legacy NULL stream).
 * Clean: setup allocations and the first upload, the per-step async upload from pinned memory
 * on the upload stream, the final read, teardown.
 *   d13_memset_d32_legacy_stream driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, N = 1 << 20, THREADS = 256, ROUNDS = 768 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix_rounds, sum_into;
	CUstream upload, compute;
	CUevent uploaded[2], consumed[2];
	CUdeviceptr d_slot[2], d_step_acc, d_total;
	uint32_t *h_hits;
	unsigned long long *h_out;
	int n = N, rounds = ROUNDS;
	const size_t bytes = (size_t)N * sizeof(uint32_t);

	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&upload, CU_STREAM_DEFAULT));
	DCHECK(cuStreamCreate(&compute, CU_STREAM_DEFAULT));
	for (int k = 0; k < 2; k++) {
		DCHECK(cuEventCreate(&uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&consumed[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuMemAlloc(&d_slot[k], bytes)); // SYNCSPY-CLEAN: setup allocation
	}
	DCHECK(cuMemAlloc(&d_step_acc, sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_total, sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_hits, (size_t)STEPS * bytes)); // SYNCSPY-CLEAN: setup, all batches in pinned memory
	DCHECK(cuMemAllocHost((void **)&h_out, sizeof *h_out)); // SYNCSPY-CLEAN: setup pinned allocation
	for (size_t i = 0; i < (size_t)STEPS * N; i++)
		h_hits[i] = (uint32_t)(i * 2246822519u) ^ (uint32_t)(i >> 9);
	DCHECK(cuMemsetD32Async(d_total, 0, 2, compute));
	DCHECK(cuMemcpyHtoDAsync(d_slot[0], h_hits, bytes, upload)); // SYNCSPY-CLEAN: setup, the first batch (pinned, async)
	DCHECK(cuEventRecord(uploaded[0], upload));

	for (int step = 0; step < STEPS; step++) {
		int cur = step & 1, next = cur ^ 1;
		DCHECK(cuStreamWaitEvent(compute, uploaded[cur], 0));
		DCHECK(cuMemsetD32(d_step_acc, 0, 2)); // SYNCSPY-PROBLEM: legacy NULL stream, joins both blocking streams every step
		void *mix_args[] = {&d_slot[cur], &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, compute, mix_args, NULL));
		void *sum_args[] = {&d_slot[cur], &n, &d_step_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, compute, sum_args, NULL));
		/* the step's sum (low 8 bits of each hit dropped) is folded into the total */
		void *fold_args[] = {&d_step_acc, &(int){2}, &d_total};
		DCHECK(cuLaunchKernel(sum_into, 1, 1, 1, THREADS, 1, 1, 0, compute, fold_args, NULL));
		DCHECK(cuEventRecord(consumed[cur], compute));
		if (step + 1 < STEPS) {
			DCHECK(cuStreamWaitEvent(upload, consumed[next], 0));
			DCHECK(cuMemcpyHtoDAsync(d_slot[next], h_hits + (size_t)(step + 1) * N, bytes, upload)); // SYNCSPY-CLEAN: the next batch, pinned, on the upload stream
			DCHECK(cuEventRecord(uploaded[next], upload));
		}
	}

	DCHECK(cuMemcpyDtoHAsync(h_out, d_total, sizeof *h_out, compute)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(compute)); // SYNCSPY-CLEAN: final read
	unsigned long long total = *h_out;
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFree(d_slot[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(uploaded[k]));
		DCHECK(cuEventDestroy(consumed[k]));
	}
	DCHECK(cuMemFree(d_step_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_total)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_hits)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_out)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(upload));
	DCHECK(cuStreamDestroy(compute));
	driver_teardown(module);
	printf("d13_memset_d32_legacy_stream: steps=%d checksum=%llu result=OK\n", STEPS, total);
	return 0;
}
