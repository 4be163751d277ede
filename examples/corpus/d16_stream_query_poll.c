/*
 * examples/corpus/d16_stream_query_poll.c: corpus workload (CUDA driver API). A low-latency
 * driver-API trading-signal engine: every tick the host queues the tick's kernels, then polls
 * cuStreamQuery in a loop until the stream reports CUDA_SUCCESS "to react as soon as the GPU is
 * done" before it queues the next tick, which depends on nothing the host computes. The loop
 * keeps a host core at 100% while it waits (cuStreamQuery returns CUDA_ERROR_NOT_READY while
 * work is pending: driver API docs), and since the next tick is only queued after the stream
 * drained, the GPU idles for the launch latency of every tick. The fix: queue the ticks back
 * to back (the stream orders them) and wait once; or, if the host must know when a tick is
 * done, record an event and query it only when the host has nothing else to do.
 * Planted: the cuStreamQuery polling loop every tick.
 * Clean: setup allocations, the final read, teardown.
 *   d16_stream_query_poll driver_kernels.cubin
 */
#include "driver.h"

#include <sched.h>
#include <stdint.h>

enum { TICKS = 80, N = 1 << 20, THREADS = 256, ROUNDS = 384 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction fill_hash, stream_shift, collide, sum_into;
	CUstream s;
	CUdeviceptr d_a, d_b, d_acc;
	unsigned long long acc = 0;
	long long polls = 0;
	int n = N, rounds = ROUNDS, seed = 17;

	DCHECK(cuModuleGetFunction(&fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&stream_shift, module, "stream_shift"));
	DCHECK(cuModuleGetFunction(&collide, module, "collide"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_a, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_b, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));
	void *fill_args[] = {&d_a, &n, &seed};
	DCHECK(cuLaunchKernel(fill_hash, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, fill_args, NULL));

	for (int tick = 0; tick < TICKS; tick++) {
		int shift = 1 + tick % 17;
		void *shift_args[] = {&d_b, &d_a, &n, &shift};
		DCHECK(cuLaunchKernel(stream_shift, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, shift_args, NULL));
		void *collide_args[] = {&d_b, &n, &rounds};
		DCHECK(cuLaunchKernel(collide, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, collide_args, NULL));
		void *sum_args[] = {&d_b, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		CUdeviceptr t = d_a;
		d_a = d_b;
		d_b = t;
		CUresult q;
		while ((q = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY) { // SYNCSPY-PROBLEM: polls until the tick is done, every tick
			polls++;
			sched_yield();
		}
		DCHECK(q);
	}

	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_a)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_b)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	if (polls < 0)
		return 1;
	printf("d16_stream_query_poll: steps=%d checksum=%llu result=OK\n", TICKS, acc);
	return 0;
}
