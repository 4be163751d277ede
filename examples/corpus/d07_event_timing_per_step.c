/*
 * examples/corpus/d07_event_timing_per_step.c: corpus workload (CUDA driver API). A solver
 * loop instrumented for a performance report: every step is bracketed by two timing events
 * and the host calls cuEventSynchronize on the stop event and cuEventElapsedTime to put the
 * step's time into a histogram of step times. Waiting for each step's stop event drains the
 * queue every step (events recorded into an array and read after the loop would measure the
 * same). The whole loop is also timed once, with one wait at the end: that one is fine.
 * Planted: the per-step cuEventSynchronize for timing.
 * Clean: setup allocation and upload, the one cuEventSynchronize after the loop, the final
 * read, teardown.
 *   d07_event_timing_per_step driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, N = 1 << 21, THREADS = 256, ROUNDS = 192, BUCKETS = 16 };

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction mix_rounds, sum_into;
	CUstream s;
	CUevent start, stop, loop_start, loop_stop;
	CUdeviceptr d_x, d_acc;
	uint32_t *host = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long acc = 0;
	int histogram[BUCKETS] = {0}, n = N, rounds = ROUNDS, timed = 0;
	float ms, total_ms;

	DCHECK(cuModuleGetFunction(&mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	DCHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
	DCHECK(cuEventCreate(&loop_start, CU_EVENT_DEFAULT));
	DCHECK(cuEventCreate(&loop_stop, CU_EVENT_DEFAULT));
	for (int i = 0; i < N; i++)
		host[i] = (uint32_t)i * 40503u;
	DCHECK(cuMemAlloc(&d_x, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoDAsync(d_x, host, (size_t)N * sizeof(uint32_t), s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));

	DCHECK(cuEventRecord(loop_start, s));
	for (int step = 0; step < STEPS; step++) {
		DCHECK(cuEventRecord(start, s));
		void *mix_args[] = {&d_x, &n, &step, &rounds};
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
		DCHECK(cuLaunchKernel(mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, mix_args, NULL));
		void *sum_args[] = {&d_x, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		DCHECK(cuEventRecord(stop, s));
		DCHECK(cuEventSynchronize(stop)); // SYNCSPY-PROBLEM: waits for every step to time it
		DCHECK(cuEventElapsedTime(&ms, start, stop));
		int bucket = ms < 0 ? 0 : (int)(ms * 10.0f);
		histogram[bucket < BUCKETS ? bucket : BUCKETS - 1]++;
	}
	DCHECK(cuEventRecord(loop_stop, s));

	DCHECK(cuEventSynchronize(loop_stop)); // SYNCSPY-CLEAN: the whole loop timed once, after it
	DCHECK(cuEventElapsedTime(&total_ms, loop_start, loop_stop));
	for (int b = 0; b < BUCKETS; b++)
		timed += histogram[b];
	if (timed != STEPS || !(total_ms >= 0.0f)) {
		fprintf(stderr, "d07_event_timing_per_step: bad timing (%d steps, %.3f ms)\n", timed, total_ms);
		return 1;
	}
	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuEventDestroy(start));
	DCHECK(cuEventDestroy(stop));
	DCHECK(cuEventDestroy(loop_start));
	DCHECK(cuEventDestroy(loop_stop));
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(host);
	printf("d07_event_timing_per_step: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
