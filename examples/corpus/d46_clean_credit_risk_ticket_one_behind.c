/*
 * examples/corpus/d46_clean_credit_risk_ticket_one_behind.c: corpus workload (CUDA driver API),
 * CLEAN. The intraday credit-risk engine of d44 with its risk loop fixed (the fix of d44): on
 * every market tick the host turns the new credit spreads into default thresholds for 4096
 * obligors in one of two pinned market slots and submits the tick (upload, a Monte Carlo of 32768
 * scenario paths over twelve months, download of the path losses by sector into one of two
 * pinned loss slots), then waits on the ticket of the previous tick and publishes that one while
 * the GPU simulates the current one. A ticket is marked ready by a host function queued with
 * cuLaunchHostFunc on a notify stream that waits for the tick's event (cuStreamWaitEvent), so the
 * compute stream never waits for the callback, and the host's spin on the previous ticket is the
 * double buffer's wait: by the time the host has prepared and submitted tick t, tick t-1 is
 * usually done, and the slots of tick t-1 are not written again before tick t+1, after that wait.
 * Clean: the setup allocations and the sector table's upload, the per-tick async upload from the
 * pinned market slot and download into the pinned loss slot, the ticket wait one tick behind, the
 * final ticket wait and stream wait, teardown.
 *   d46_clean_credit_risk_ticket_one_behind driver_kernels.cubin
 */
#include "driver.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

enum { TICKS = 60, PATHS = 32768, OBLIGORS = 4096, SECTORS = 8, MONTHS = 12, THREADS = 128, SLOTS = 2, SAMPLES = 8 };

/* --- the portfolio and the market feed -------------------------------------------------------- */

struct portfolio {
	int sector_start[SECTORS + 1]; /* obligors sorted by sector */
	int base_threshold[OBLIGORS];  /* monthly default probability, of 65536 */
	int loading[OBLIGORS];         /* factor loading, of 256 */
	int exposure[OBLIGORS];        /* thousands */
};

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

static void make_portfolio(struct portfolio *pf)
{
	int j = 0;
	for (int s = 0; s < SECTORS; s++) {
		pf->sector_start[s] = j;
		j += OBLIGORS / SECTORS * 5 / 8 + (int)(mix32(0x5ec7u + (uint32_t)s) % (OBLIGORS / SECTORS / 2)); /* the last sector takes the rest */
	}
	pf->sector_start[SECTORS] = OBLIGORS;
	for (j = 0; j < OBLIGORS; j++) {
		uint32_t h = mix32((uint32_t)j * 0x9e3779b9u + 7u);
		pf->base_threshold[j] = 20 + (int)(h % 200u);
		pf->loading[j] = 2 + (int)((h >> 10) % 9u);
		pf->exposure[j] = 50 + (int)((h >> 16) % 951u);
	}
}

/* the tick's thresholds: the base scaled by the sector's spread move (from the feed) */
static void market_update(const struct portfolio *pf, int tick, int *market)
{
	for (int s = 0; s < SECTORS; s++) {
		int move = 48 + (int)(mix32((uint32_t)tick * 0x632be5abu ^ (uint32_t)s) % 48u); /* of 64 */
		for (int j = pf->sector_start[s]; j < pf->sector_start[s + 1]; j++) {
			market[j] = pf->base_threshold[j] * move / 64;
			market[OBLIGORS + j] = pf->loading[j];
			market[2 * OBLIGORS + j] = pf->exposure[j];
		}
	}
}

/* --- the engine and its tickets --------------------------------------------------------------- */

struct ticket {
	atomic_int ready;
	int tick;
};

struct risk_engine {
	CUfunction sim;
	CUstream compute, notify;
	CUdeviceptr d_market, d_sector_start, d_loss;
	int *h_market[SLOTS];         /* pinned */
	unsigned int *h_loss[SLOTS];  /* pinned, PATHS x SECTORS */
	CUevent computed[SLOTS];
	struct ticket tickets[SLOTS];
};

static void CUDA_CB ticket_complete(void *user)
{
	struct ticket *t = (struct ticket *)user;
	atomic_store_explicit(&t->ready, 1, memory_order_release);
}

static void ticket_wait(struct ticket *t)
{
	while (!atomic_load_explicit(&t->ready, memory_order_acquire)) // SYNCSPY-CLEAN: called on the previous tick's ticket (one behind): the current tick keeps the GPU busy meanwhile
		sched_yield();
}

static struct ticket *engine_submit(struct risk_engine *e, int tick)
{
	int slot = tick % SLOTS, obligors = OBLIGORS, sectors = SECTORS, months = MONTHS, paths = PATHS;
	struct ticket *t = &e->tickets[slot];
	void *args[] = {&e->d_market, &obligors, &e->d_sector_start, &sectors, &months, &paths, &tick, &e->d_loss};
	atomic_store_explicit(&t->ready, 0, memory_order_relaxed);
	t->tick = tick;
	DCHECK(cuMemcpyHtoDAsync(e->d_market, e->h_market[slot], 3 * OBLIGORS * sizeof(int), e->compute)); // SYNCSPY-CLEAN: async upload from the pinned market slot
	DCHECK(cuLaunchKernel(e->sim, PATHS / THREADS, 1, 1, THREADS, 1, 1, 0, e->compute, args, NULL));
	DCHECK(cuMemcpyDtoHAsync(e->h_loss[slot], e->d_loss, (size_t)PATHS * SECTORS * sizeof(unsigned int), e->compute)); // SYNCSPY-CLEAN: async download into the pinned loss slot
	DCHECK(cuEventRecord(e->computed[slot], e->compute));
	DCHECK(cuStreamWaitEvent(e->notify, e->computed[slot], 0));
	DCHECK(cuLaunchHostFunc(e->notify, ticket_complete, t));
	return t;
}

/* --- the publisher: value-at-risk and expected shortfall from sorted path losses ------------- */

struct figures {
	unsigned int var99, sector_var99[SECTORS], sector_worst[SECTORS];
	unsigned long long es99, expected, sector_expected[SECTORS];
};

enum { BUCKETS = 4096, BUCKET_SHIFT = 10 }; /* losses are below 2^22 (the exposures add up to less) */

struct desk {
	struct figures fig[TICKS];
	unsigned int bucket[SECTORS][BUCKETS];
	unsigned int sample[TICKS][SAMPLES][SECTORS];
	unsigned int scratch[PATHS], sorted[PATHS];
};

/* path losses are below 2^24 */
static void radix_sort24(unsigned int *v, unsigned int *tmp, int n)
{
	for (int shift = 0; shift < 24; shift += 8) {
		int count[257] = {0};
		for (int i = 0; i < n; i++)
			count[((v[i] >> shift) & 255u) + 1]++;
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (int i = 0; i < n; i++)
			tmp[count[(v[i] >> shift) & 255u]++] = v[i];
		memcpy(v, tmp, (size_t)n * sizeof *v);
	}
}

static void publish(struct desk *d, int tick, const unsigned int *loss)
{
	struct figures *f = &d->fig[tick];
	int q = PATHS * 99 / 100;
	memset(f, 0, sizeof *f);
	memset(d->bucket, 0, sizeof d->bucket);
	for (int p = 0; p < PATHS; p++) {
		unsigned int total = 0;
		for (int s = 0; s < SECTORS; s++) {
			unsigned int l = loss[(size_t)p * SECTORS + s];
			d->bucket[s][(l >> BUCKET_SHIFT) & (BUCKETS - 1)]++;
			f->sector_expected[s] += l;
			f->sector_worst[s] = l > f->sector_worst[s] ? l : f->sector_worst[s];
			total += l;
		}
		d->sorted[p] = total;
		f->expected += total;
	}
	radix_sort24(d->sorted, d->scratch, PATHS);
	f->var99 = d->sorted[q];
	for (int p = q; p < PATHS; p++)
		f->es99 += d->sorted[p];
	f->es99 /= (unsigned long long)(PATHS - q);
	for (int s = 0; s < SECTORS; s++) { /* each sector's 99% quantile, to a bucket of 1024 */
		int seen = 0, b = 0;
		while (b < BUCKETS - 1 && seen + (int)d->bucket[s][b] <= q)
			seen += (int)d->bucket[s][b++];
		f->sector_var99[s] = (unsigned int)b << BUCKET_SHIFT;
	}
	for (int k = 0; k < SAMPLES; k++)
		memcpy(d->sample[tick][k], loss + (size_t)((k * 4099 + tick * 31) % PATHS) * SECTORS, SECTORS * sizeof(unsigned int));
}

/* --- the simulation on the host, for the self-check ------------------------------------------- */

static uint32_t credit_hash(uint32_t a, uint32_t b, uint32_t c, uint32_t dd)
{
	uint32_t h = a * 0x9e3779b1u ^ b * 0x85ebca77u ^ c * 0xc2b2ae3du ^ dd * 0x27d4eb2fu;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static void path_host(const struct portfolio *pf, const int *market, int tick, int p, unsigned int *loss)
{
	for (int s = 0; s < SECTORS; s++) {
		int z = (int)(credit_hash((uint32_t)tick, (uint32_t)p, 0x5ec70000u + (uint32_t)s, 0u) >> 16) - 32768;
		unsigned int l = 0;
		for (int j = pf->sector_start[s]; j < pf->sector_start[s + 1]; j++) {
			int shift = (market[OBLIGORS + j] * z) >> 8;
			for (int m = 0; m < MONTHS; m++)
				if ((int)(credit_hash((uint32_t)tick, (uint32_t)p, (uint32_t)j, (uint32_t)m + 1u) >> 16) + shift < market[j]) {
					l += (unsigned int)market[2 * OBLIGORS + j];
					break;
				}
		}
		loss[s] = l;
	}
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	static struct risk_engine e;
	static struct portfolio pf;
	static struct desk desk;
	static int market[3 * OBLIGORS];

	make_portfolio(&pf);
	DCHECK(cuModuleGetFunction(&e.sim, module, "credit_loss_paths"));
	DCHECK(cuStreamCreate(&e.compute, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&e.notify, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&e.d_market, 3 * OBLIGORS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_sector_start, sizeof pf.sector_start)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_loss, (size_t)PATHS * SECTORS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemAllocHost((void **)&e.h_market[k], 3 * OBLIGORS * sizeof(int))); // SYNCSPY-CLEAN: setup pinned market slot
		DCHECK(cuMemAllocHost((void **)&e.h_loss[k], (size_t)PATHS * SECTORS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup pinned loss slot
		DCHECK(cuEventCreate(&e.computed[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemcpyHtoD(e.d_sector_start, pf.sector_start, sizeof pf.sector_start)); // SYNCSPY-CLEAN: setup, the sector table uploaded once

	struct ticket *prev = NULL;
	for (int tick = 0; tick < TICKS; tick++) {
		/* the slots were last used by tick - 2, whose ticket was waited for in the previous
		 * iteration */
		market_update(&pf, tick, e.h_market[tick % SLOTS]);
		struct ticket *t = engine_submit(&e, tick);
		if (prev) { /* publish the previous tick while this one runs */
			ticket_wait(prev);
			publish(&desk, prev->tick, e.h_loss[prev->tick % SLOTS]);
		}
		prev = t;
	}
	ticket_wait(prev);
	publish(&desk, prev->tick, e.h_loss[prev->tick % SLOTS]);
	DCHECK(cuStreamSynchronize(e.notify)); // SYNCSPY-CLEAN: the final wait, after the last tick

	/* self-check: sampled paths of every tick against the host simulation */
	unsigned long long checksum = 0;
	for (int tick = 0; tick < TICKS; tick++) {
		unsigned int want[SECTORS];
		market_update(&pf, tick, market);
		for (int k = 0; k < SAMPLES; k++) {
			int p = (k * 4099 + tick * 31) % PATHS;
			path_host(&pf, market, tick, p, want);
			if (memcmp(want, desk.sample[tick][k], sizeof want)) {
				fprintf(stderr, "d46: tick %d path %d sector losses differ from the host simulation\n", tick, p);
				return 1;
			}
		}
		const struct figures *f = &desk.fig[tick];
		checksum = checksum * 1000003u + f->var99 * 7u + f->es99 * 3u + f->expected;
		for (int s = 0; s < SECTORS; s++)
			checksum = checksum * 31u + f->sector_expected[s] + f->sector_worst[s] * 3u + f->sector_var99[s] * 5u;
	}

	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(e.h_market[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(e.h_loss[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(e.computed[k]));
	}
	DCHECK(cuMemFree(e.d_market)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_sector_start)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_loss)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(e.compute));
	DCHECK(cuStreamDestroy(e.notify));
	driver_teardown(module);
	printf("d46_clean_credit_risk_ticket_one_behind: ticks=%d var99_last=%u es99_last=%llu checksum=%llu result=OK\n", TICKS, desk.fig[TICKS - 1].var99, desk.fig[TICKS - 1].es99, checksum);
	return 0;
}
