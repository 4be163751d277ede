/*
 * examples/corpus/d10_phase_timer_ctx_sync.c: corpus workload (CUDA driver API). A lattice-gas
 * solver with a host-side phase profiler: after each phase of the step (streaming, then
 * collision and the reduction) the code calls a small helper, phase_done(), that adds the wall
 * time since the previous mark to the phase's total. To make the host clock measure GPU time,
 * the helper first calls cuCtxSynchronize: hidden in the helper, the program waits for the
 * whole context twice per step, and the GPU idles while the host queues each phase. Timing
 * events (cuEventRecord, read after the loop) would measure the phases without a wait.
 * Planted: the cuCtxSynchronize inside phase_done(), reached twice every step.
 * Clean: setup allocations and upload, the final read, teardown.
 *   d10_phase_timer_ctx_sync driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <time.h>

enum { STEPS = 50, N = 1 << 21, THREADS = 256, ROUNDS = 160, PHASES = 2 };

struct phase_clock {
	struct timespec last;
	double seconds[PHASES];
	int marks[PHASES];
};

static double elapsed(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

/* The profiler's mark: wait for the device so that the host clock covers the phase's kernels. */
static void phase_done(struct phase_clock *pc, int phase)
{
	struct timespec now;
	DCHECK(cuCtxSynchronize()); // SYNCSPY-PROBLEM: the phase timer waits for the whole context, twice per step
	clock_gettime(CLOCK_MONOTONIC, &now);
	pc->seconds[phase] += elapsed(&pc->last, &now);
	pc->marks[phase]++;
	pc->last = now;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction stream_shift, collide, sum_into;
	CUstream s;
	CUdeviceptr d_f[2], d_acc;
	uint32_t *host = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	unsigned long long acc = 0;
	struct phase_clock pc = {{0, 0}, {0, 0}, {0, 0}};
	int n = N, rounds = ROUNDS;

	DCHECK(cuModuleGetFunction(&stream_shift, module, "stream_shift"));
	DCHECK(cuModuleGetFunction(&collide, module, "collide"));
	DCHECK(cuModuleGetFunction(&sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < N; i++)
		host[i] = (uint32_t)i * 2246822519u ^ 0xa5a5a5a5u;
	DCHECK(cuMemAlloc(&d_f[0], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_f[1], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_acc, sizeof acc)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoDAsync(d_f[0], host, (size_t)N * sizeof(uint32_t), s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	DCHECK(cuMemsetD8Async(d_acc, 0, sizeof acc, s));
	clock_gettime(CLOCK_MONOTONIC, &pc.last);

	for (int step = 0; step < STEPS; step++) {
		CUdeviceptr src = d_f[step & 1], dst = d_f[(step & 1) ^ 1];
		int shift = 1 + (step * 7919) % 1024;
		void *stream_args[] = {&dst, &src, &n, &shift};
		DCHECK(cuLaunchKernel(stream_shift, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, stream_args, NULL));
		phase_done(&pc, 0);
		void *collide_args[] = {&dst, &n, &rounds};
		DCHECK(cuLaunchKernel(collide, N / THREADS, 1, 1, THREADS, 1, 1, 0, s, collide_args, NULL));
		void *sum_args[] = {&dst, &n, &d_acc};
		DCHECK(cuLaunchKernel(sum_into, 128, 1, 1, THREADS, 1, 1, 0, s, sum_args, NULL));
		phase_done(&pc, 1);
	}

	if (pc.marks[0] != STEPS || pc.marks[1] != STEPS || !(pc.seconds[0] >= 0 && pc.seconds[1] >= 0)) {
		fprintf(stderr, "d10_phase_timer_ctx_sync: bad phase marks\n");
		return 1;
	}
	DCHECK(cuMemcpyDtoHAsync(&acc, d_acc, sizeof acc, s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuMemFree(d_f[0])); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_f[1])); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_acc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(host);
	printf("d10_phase_timer_ctx_sync: steps=%d checksum=%llu result=OK\n", STEPS, acc);
	return 0;
}
