/*
 * examples/corpus/d21_clean_telemetry_ring.c: corpus workload (CUDA driver API), CLEAN. A
 * simulation that publishes telemetry every step without stalling: the compute stream advances
 * the field, reduces it into the step's slot of a three-slot device ring and snapshots the
 * field's head into the same slot with cuMemcpyDtoDAsync; a copy stream waits on the step's
 * event and downloads the slot into a pinned host ring with cuMemcpyDtoHAsync. The host
 * consumes the telemetry of the step two behind the newest: it waits on that step's download
 * event with cuEventSynchronize (by then the download is long done, so the wait is short) and
 * folds it into its digest. A device slot is reused only after the compute stream has waited
 * (cuStreamWaitEvent) on its previous download, and a host slot only after the host consumed
 * it. Both streams are non-blocking; nothing runs on the legacy stream.
 *   d21_clean_telemetry_ring driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 60, N = 1 << 18, THREADS = 256, ROUNDS = 8, RING = 3, LAG = 2, SNAP = 4096 };

/* --- the telemetry ring ------------------------------------------------------------------ */

struct telemetry {
	CUstream copy;
	CUevent computed[RING], downloaded[RING];
	CUdeviceptr d_stats, d_snap;  /* RING slots each */
	unsigned long long *h_stats;  /* pinned, RING */
	uint32_t *h_snap;             /* pinned, RING * SNAP */
	unsigned long long digest;
	int consumed;
};

static void telemetry_init(struct telemetry *tm)
{
	DCHECK(cuStreamCreate(&tm->copy, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < RING; k++) {
		DCHECK(cuEventCreate(&tm->computed[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&tm->downloaded[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemAlloc(&tm->d_stats, RING * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&tm->d_snap, RING * SNAP * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&tm->h_stats, RING * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAllocHost((void **)&tm->h_snap, RING * SNAP * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	tm->digest = 0;
	tm->consumed = 0;
}

static CUdeviceptr stats_slot(const struct telemetry *tm, int slot)
{
	return tm->d_stats + (size_t)slot * sizeof(unsigned long long);
}

static CUdeviceptr snap_slot(const struct telemetry *tm, int slot)
{
	return tm->d_snap + (size_t)slot * SNAP * sizeof(uint32_t);
}

/* the step's slot is computed (event on the compute stream): download it on the copy stream */
static void telemetry_publish(struct telemetry *tm, int step)
{
	int slot = step % RING;
	DCHECK(cuStreamWaitEvent(tm->copy, tm->computed[slot], 0));
	DCHECK(cuMemcpyDtoHAsync(&tm->h_stats[slot], stats_slot(tm, slot), sizeof(unsigned long long), tm->copy)); // SYNCSPY-CLEAN: async download into the pinned ring
	DCHECK(cuMemcpyDtoHAsync(tm->h_snap + (size_t)slot * SNAP, snap_slot(tm, slot), SNAP * sizeof(uint32_t), tm->copy)); // SYNCSPY-CLEAN: async download into the pinned ring
	DCHECK(cuEventRecord(tm->downloaded[slot], tm->copy));
}

/* fold the telemetry of `step` (LAG steps behind the newest) into the digest */
static void telemetry_consume(struct telemetry *tm, int step)
{
	int slot = step % RING;
	DCHECK(cuEventSynchronize(tm->downloaded[slot])); // SYNCSPY-CLEAN: the ring's wait, on the step two behind the newest
	unsigned long long d = tm->h_stats[slot];
	for (int i = 0; i < SNAP; i++)
		d = d * 31u + tm->h_snap[(size_t)slot * SNAP + i];
	tm->digest = tm->digest * 1000003u + d;
	tm->consumed++;
}

static void telemetry_teardown(struct telemetry *tm)
{
	for (int k = 0; k < RING; k++) {
		DCHECK(cuEventDestroy(tm->computed[k]));
		DCHECK(cuEventDestroy(tm->downloaded[k]));
	}
	DCHECK(cuMemFree(tm->d_stats)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(tm->d_snap)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(tm->h_stats)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(tm->h_snap)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(tm->copy));
}

/* --- the simulation ---------------------------------------------------------------------- */

struct sim {
	CUstream compute;
	CUfunction fill_hash, mix_rounds, sum_into;
	CUdeviceptr d_x;
};

static void sim_step(struct sim *sm, struct telemetry *tm, int step)
{
	int slot = step % RING, n = N, rounds = ROUNDS;
	CUdeviceptr stats = stats_slot(tm, slot);
	void *mix_args[] = {&sm->d_x, &n, &step, &rounds};
	void *sum_args[] = {&sm->d_x, &n, &stats};
	if (step >= RING)
		DCHECK(cuStreamWaitEvent(sm->compute, tm->downloaded[slot], 0));
	DCHECK(cuMemsetD32Async(stats, 0, 2, sm->compute));
	DCHECK(cuLaunchKernel(sm->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, sm->compute, mix_args, NULL));
	DCHECK(cuLaunchKernel(sm->sum_into, 128, 1, 1, THREADS, 1, 1, 0, sm->compute, sum_args, NULL));
	DCHECK(cuMemcpyDtoDAsync(snap_slot(tm, slot), sm->d_x, SNAP * sizeof(uint32_t), sm->compute)); // SYNCSPY-CLEAN: stream-ordered device-to-device snapshot
	DCHECK(cuEventRecord(tm->computed[slot], sm->compute));
}

/* the same run on the host */
static unsigned long long reference_digest(void)
{
	uint32_t *x = (uint32_t *)malloc(N * sizeof(uint32_t));
	unsigned long long digest = 0;
	for (int i = 0; i < N; i++)
		x[i] = ((uint32_t)i * 2654435761u) ^ ((uint32_t)7 * 40503u);
	for (int step = 0; step < STEPS; step++) {
		unsigned long long sum = 0;
		for (int i = 0; i < N; i++) {
			uint32_t v = x[i] ^ ((uint32_t)step * 0x9e3779b9u);
			for (int r = 0; r < ROUNDS; r++)
				v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
			x[i] = v;
			sum += v >> 8;
		}
		unsigned long long d = sum;
		for (int i = 0; i < SNAP; i++)
			d = d * 31u + x[i];
		digest = digest * 1000003u + d;
	}
	free(x);
	return digest;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct sim sm;
	struct telemetry tm;
	int n = N, seed = 7;

	DCHECK(cuModuleGetFunction(&sm.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&sm.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&sm.sum_into, module, "sum_into"));
	DCHECK(cuStreamCreate(&sm.compute, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&sm.d_x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	void *fill_args[] = {&sm.d_x, &n, &seed};
	DCHECK(cuLaunchKernel(sm.fill_hash, N / THREADS, 1, 1, THREADS, 1, 1, 0, sm.compute, fill_args, NULL));
	telemetry_init(&tm);

	for (int step = 0; step < STEPS; step++) {
		sim_step(&sm, &tm, step);
		telemetry_publish(&tm, step);
		if (step >= LAG)
			telemetry_consume(&tm, step - LAG);
	}
	for (int step = STEPS - LAG; step < STEPS; step++)
		telemetry_consume(&tm, step);

	unsigned long long want = reference_digest();
	if (tm.consumed != STEPS || tm.digest != want) {
		fprintf(stderr, "d21: %d steps consumed, digest = %llu, want %d and %llu\n", tm.consumed, tm.digest, STEPS, want);
		return 1;
	}
	DCHECK(cuStreamSynchronize(sm.compute)); // SYNCSPY-CLEAN: teardown, before the frees
	telemetry_teardown(&tm);
	DCHECK(cuMemFree(sm.d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(sm.compute));
	driver_teardown(module);
	printf("d21_clean_telemetry_ring: steps=%d checksum=%llu result=OK\n", STEPS, tm.digest);
	return 0;
}
