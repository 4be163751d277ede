/*
 * examples/corpus/d27_event_sync_shot_handoff.c: corpus workload (CUDA driver API). A seismic
 * imaging job in a driver-API backend: every shot gather is synthesized and migrated on a
 * migration stream into one of two device buffers, and a stacking stream adds the migrated
 * shot into the image (here: its sum into the shot's slot). The migration stream already waits
 * on the device (cuStreamWaitEvent) for the stacking that last read a buffer, but the other
 * direction is done on the host: handoff_to_stack() calls cuEventSynchronize on the shot's
 * "migrated" event before it queues the stacking launch. cuEventSynchronize blocks the calling
 * thread until the event's work is done (driver API reference), so every shot the host stops
 * until the migration has run and cannot queue the next shot under it; cuStreamWaitEvent on the
 * stacking stream (the guide's inter-stream dependency) gives the same order on the device.
 * Planted: the cuEventSynchronize in handoff_to_stack(), every shot.
 * Clean: the setup allocations, the final read of the stacked sums, teardown.
 *   d27_event_sync_shot_handoff driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { SHOTS = 64, N = 1 << 20, THREADS = 256, ROUNDS = 24, SUM_BLOCKS = 128 };

struct imager {
	CUfunction fill_hash, mix_rounds, sum_into;
	CUstream migrate, stack;
	CUdeviceptr d_shot[2], d_sums;
	CUevent migrated[2], stacked[2];
};

static uint32_t migrate_host(int shot, int i)
{
	uint32_t v = ((uint32_t)i * 2654435761u) ^ ((uint32_t)shot * 40503u);
	v ^= (uint32_t)shot * 0x9e3779b9u;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- the stages --------------------------------------------------------------------------- */

static void migrate_shot(struct imager *im, int shot)
{
	int b = shot % 2, n = N, rounds = ROUNDS;
	void *fill_args[] = {&im->d_shot[b], &n, &shot};
	void *mix_args[] = {&im->d_shot[b], &n, &shot, &rounds};
	DCHECK(cuStreamWaitEvent(im->migrate, im->stacked[b], 0));
	DCHECK(cuLaunchKernel(im->fill_hash, N / THREADS, 1, 1, THREADS, 1, 1, 0, im->migrate, fill_args, NULL));
	DCHECK(cuLaunchKernel(im->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, im->migrate, mix_args, NULL));
	DCHECK(cuEventRecord(im->migrated[b], im->migrate));
}

static void handoff_to_stack(struct imager *im, int shot)
{
	DCHECK(cuEventSynchronize(im->migrated[shot % 2])); // SYNCSPY-PROBLEM: the host waits for every shot's migration to order two streams; cuStreamWaitEvent would do
}

static void stack_shot(struct imager *im, int shot)
{
	int b = shot % 2, n = N;
	CUdeviceptr slot = im->d_sums + (size_t)shot * sizeof(unsigned long long);
	void *sum_args[] = {&im->d_shot[b], &n, &slot};
	DCHECK(cuLaunchKernel(im->sum_into, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, im->stack, sum_args, NULL));
	DCHECK(cuEventRecord(im->stacked[b], im->stack));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct imager im;
	unsigned long long h_sums[SHOTS];

	DCHECK(cuModuleGetFunction(&im.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&im.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&im.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&im.migrate, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&im.stack, CU_STREAM_NON_BLOCKING));
	for (int b = 0; b < 2; b++) {
		DCHECK(cuMemAlloc(&im.d_shot[b], (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuEventCreate(&im.migrated[b], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&im.stacked[b], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemAlloc(&im.d_sums, sizeof h_sums)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(im.d_sums, 0u, 2 * SHOTS, im.stack));

	for (int shot = 0; shot < SHOTS; shot++) {
		migrate_shot(&im, shot);
		handoff_to_stack(&im, shot);
		stack_shot(&im, shot);
	}

	DCHECK(cuMemcpyDtoHAsync(h_sums, im.d_sums, sizeof h_sums, im.stack)); // SYNCSPY-CLEAN: final read of the stacked sums
	DCHECK(cuStreamSynchronize(im.stack)); // SYNCSPY-CLEAN: the one wait for the results, after the loop

	unsigned long long checksum = 0;
	for (int shot = 0; shot < SHOTS; shot++) {
		if (shot % 15 == 0) {
			unsigned long long want = 0;
			for (int i = 0; i < N; i++)
				want += migrate_host(shot, i) >> 8;
			if (h_sums[shot] != want) {
				fprintf(stderr, "d27: shot %d sum = %llu, want %llu\n", shot, h_sums[shot], want);
				return 1;
			}
		}
		checksum = checksum * 1000003u + h_sums[shot];
	}

	for (int b = 0; b < 2; b++) {
		DCHECK(cuMemFree(im.d_shot[b])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(im.migrated[b]));
		DCHECK(cuEventDestroy(im.stacked[b]));
	}
	DCHECK(cuMemFree(im.d_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(im.migrate));
	DCHECK(cuStreamDestroy(im.stack));
	driver_teardown(module);
	printf("d27_event_sync_shot_handoff: steps=%d checksum=%llu result=OK\n", SHOTS, checksum);
	return 0;
}
