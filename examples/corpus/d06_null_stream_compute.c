/*
 * examples/corpus/d06_null_stream_compute.c: corpus workload (CUDA driver API). A streaming
 * job meant to overlap uploads with compute: batches come from a pinned dataset, are uploaded
 * with cuMemcpyHtoDAsync on an upload stream into two device buffers, and the compute waits on
 * each upload's event. But the upload stream was created with CU_STREAM_DEFAULT (a blocking
 * stream) and the kernels are launched on the NULL stream (hStream 0): the legacy NULL stream
 * waits for all blocking streams and they wait for it, so the next batch's upload cannot start
 * until this batch's kernels are done, and nothing overlaps.
 * Planted: the two kernel launches on the NULL stream every step (a stream of their own,
 * created CU_STREAM_NON_BLOCKING, would let the uploads overlap).
 * Clean: the pinned dataset and the device buffers in setup, the async uploads from pinned
 * memory, the final read, teardown.
 *   d06_null_stream_compute driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 64, N = 1 << 20, DEPTH = 2, SOURCES = 4, THREADS = 256, ROUNDS = 768 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix_rounds, sum_into;
	CUstream upload;
	CUevent uploaded[DEPTH], consumed[DEPTH];
	CUdeviceptr d_in[DEPTH], d_acc;
	uint32_t *h_src;
	unsigned long long acc = 0;
	const size_t bytes = (size_t)N * sizeof(uint32_t);
	int n = N, rounds = ROUNDS;

	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&upload, CU_STREAM_DEFAULT));
	for (int k = 0; k < DEPTH; k++) {
		DCHECK(cuMemAlloc(&d_in[k], bytes)); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuEventCreate(&uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&consumed[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_src, bytes * SOURCES)); // SYNCSPY-CLEAN: setup pinned dataset
	for (size_t i = 0; i < (size_t)N * SOURCES; i++)
		h_src[i] = (uint32_t)i * 2891336453u;
	DCHECK(cuMemsetD8(d_acc, 0, sizeof acc)); // SYNCSPY-CLEAN: setup

	for (int step = 0; step < STEPS; step++) {
		int k = step % DEPTH;
		if (step >= DEPTH)
			DCHECK(cuStreamWaitEvent(upload, consumed[k], 0));
		DCHECK(cuMemcpyHtoDAsync(d_in[k], h_src + (size_t)(step % SOURCES) * N, bytes, upload)); // SYNCSPY-CLEAN: async upload from pinned memory
		DCHECK(cuEventRecord(uploaded[k], upload));
		DCHECK(cuStreamWaitEvent(NULL, uploaded[k], 0));
		void *mix_args[] = {&d_in[k], &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, mix_args, NULL)); // SYNCSPY-PROBLEM: kernel on the legacy NULL stream serializes it with the upload stream
		void *sum_args[] = {&d_in[k], &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, NULL, sum_args, NULL)); // SYNCSPY-PROBLEM: kernel on the legacy NULL stream serializes it with the upload stream
		DCHECK(cuEventRecord(consumed[k], NULL));
	}

	DCHECK(cuMemcpyDtoH(&acc, d_acc, sizeof acc)); // SYNCSPY-CLEAN: final read
	for (int k = 0; k < DEPTH; k++) {
		DCHECK(cuMemFree(d_in[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(uploaded[k]));
		DCHECK(cuEventDestroy(consumed[k]));
	}
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_src)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(upload));
	driver_teardown(module);
	printf("d06_null_stream_compute: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
