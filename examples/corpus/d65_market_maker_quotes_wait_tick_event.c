/*
 * examples/corpus/d65_market_maker_quotes_wait_tick_event.c: corpus workload (CUDA driver API).
 * An electronic market maker's quoting engine over 4096 instruments. Every tick the gateway
 * delivers each instrument's mid price and order-book imbalance, the engine adds its positions
 * and, on the GPU: mm_fair_value updates each instrument's imbalance signal (an EMA kept on the
 * device) and quotes a bid and an ask around the fair value, skewed against the position; the
 * quotes come back into a pinned ring; then the risk pass revalues the whole book under 4096
 * factor scenarios (16 factors, delta and gamma terms, one block a scenario, about 270M
 * multiply-adds) and keeps the tick's worst scenario in a risk log on the device, read at the end
 * of the session. The host needs only the quotes: it sends them to the exchange, which fills
 * those the next price move crosses (the positions change), and builds the next tick.
 * What is wrong: submit_tick() records one event, tick_done, after the last kernel of the tick,
 * and wait_quotes() waits for it. cuEventSynchronize "waits until the completion of all work
 * currently captured in hEvent" (driver API reference), and that is the risk pass too: every
 * tick the host waits for the 4096-scenario revaluation before it can send the quotes and handle
 * the fills, and the GPU waits for the host's next tick meanwhile; the quotes reach the exchange
 * a risk pass late, and the host's tick handling never overlaps the risk pass. An event recorded
 * right after the quotes' download, and waited on instead, is the fix (d67).
 * Planted: the cuEventSynchronize on tick_done in wait_quotes(), every tick (one line).
 * Clean: the setup allocations, uploads and sync, the per-tick upload of the market data from a
 * pinned staging double buffer, the quotes' async download into the pinned ring, the final wait
 * and the final reads of the risk log and the last tick's P&L vector, teardown.
 * Per tick (estimates, H100): the quotes about 0.02 ms, the risk pass about 0.3-0.5 ms; the
 * host's fills, gateway messages and next tick about 0.1-0.3 ms. The checks: every tick's quotes
 * equal the host's mirror of the fair-value model; every tick's worst scenario is recomputed on
 * the host and is no higher than 16 sampled scenarios; the last tick's 4096 P&Ls all equal the
 * host's.
 *   d65_market_maker_quotes_wait_tick_event driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { NI = 4096, NS = 4096, NF = 16, TICKS = 60, THREADS = 256, SAMPLED = 16 };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the exchange: instrument i's order-book imbalance at tick t, and the mid's next move */
static int imbalance(int i, int t)
{
	return (int)(mix32((uint32_t)(i * 7919 + t * 104729) ^ 0x1b873593u) % 2001u) - 1000;
}

static int mid_move(int i, int t, int imb)
{
	uint32_t h = mix32((uint32_t)(i * 31337 + t * 1009) ^ 0x85ebca6bu);
	return (int)(h % 5u) - 2 + (imb > 500) - (imb < -500);
}

/* the host's mirror of mm_fair_value */
static void quote(int mid, int imb, int pos, int *ema, int *bid, int *ask)
{
	int e = *ema + ((imb - *ema) >> 2);
	*ema = e;
	int fair4 = 4 * mid + e / 64 - pos * 12 / 10, half4 = 8 + abs(e) / 128;
	*bid = (fair4 - half4) >> 2;
	*ask = (fair4 + half4 + 3) >> 2;
}

/* the host's mirror of mm_risk, one scenario */
static long long scenario_pnl(const int *mid, const int *pos, const signed char *load, const int *factors,
			      const signed char *gamma, int s)
{
	long long acc = 0;
	for (int i = 0; i < NI; i++) {
		int shock = 0;
		for (int k = 0; k < NF; k++)
			shock += load[NF * i + k] * factors[NF * s + k];
		acc += (long long)pos[i] * (((long long)mid[i] * shock) >> 10) +
		       (long long)pos[i] * gamma[i] * (((long long)shock * shock) >> 22);
	}
	return acc;
}

struct engine {
	CUstream s;
	CUfunction fair_value, risk, risk_worst;
	CUdeviceptr d_md, d_ema, d_quotes, d_load, d_factors, d_gamma, d_pnl, d_risk_log;
	int *staging[2], *ring[2];
	CUevent tick_done[2];
};

/* queues tick t: market data in, quotes out, then the risk pass */
static void submit_tick(struct engine *e, int t)
{
	int k = t % 2, n = NI, ns = NS, tick = t;
	DCHECK(cuMemcpyHtoDAsync(e->d_md, e->staging[k], 3 * NI * sizeof(int), e->s)); // SYNCSPY-CLEAN: from the pinned staging double buffer
	void *qa[] = {&e->d_md, &n, &e->d_ema, &e->d_quotes};
	DCHECK(cuLaunchKernel(e->fair_value, NI / THREADS, 1, 1, THREADS, 1, 1, 0, e->s, qa, NULL));
	DCHECK(cuMemcpyDtoHAsync(e->ring[k], e->d_quotes, 2 * NI * sizeof(int), e->s)); // SYNCSPY-CLEAN: into the pinned quote ring
	void *ra[] = {&e->d_md, &n, &e->d_load, &e->d_factors, &e->d_gamma, &e->d_pnl};
	DCHECK(cuLaunchKernel(e->risk, NS, 1, 1, THREADS, 1, 1, 0, e->s, ra, NULL));
	void *wa[] = {&e->d_pnl, &ns, &tick, &e->d_risk_log};
	DCHECK(cuLaunchKernel(e->risk_worst, 1, 1, 1, 1024, 1, 1, 0, e->s, wa, NULL));
	DCHECK(cuEventRecord(e->tick_done[k], e->s));
}

/* the quotes of tick t, once they are on the host */
static const int *wait_quotes(struct engine *e, int t)
{
	DCHECK(cuEventSynchronize(e->tick_done[t % 2])); // SYNCSPY-PROBLEM: the tick's last event: waits for the risk pass too, every tick
	return e->ring[t % 2];
}

int main(int argc, char **argv)
{
	const char *name = "d65_market_maker_quotes_wait_tick_event";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct engine e;
	static int mid[NI], pos[NI], ema[NI], mid_hist[TICKS][NI], pos_hist[TICKS][NI], factors[NS * NF];
	static signed char load[NI * NF], gamma[NI];
	static long long risk_log[2 * TICKS], pnl[NS];

	for (int i = 0; i < NI; i++) {
		mid[i] = 5000 + (int)(mix32((uint32_t)i + 17u) % 20000u);
		pos[i] = 0;
		ema[i] = 0;
		gamma[i] = (signed char)((int)(mix32((uint32_t)i * 3u + 5u) % 7u) - 3);
		for (int k = 0; k < NF; k++)
			load[NF * i + k] = (signed char)((int)(mix32((uint32_t)(NF * i + k) ^ 0x3c6ef372u) % 128u) - 64);
	}
	for (int j = 0; j < NS * NF; j++)
		factors[j] = (int)(mix32((uint32_t)j ^ 0xa54ff53au) % 1024u) - 512;

	DCHECK(cuModuleGetFunction(&e.fair_value, module, "mm_fair_value"));
	DCHECK(cuModuleGetFunction(&e.risk, module, "mm_risk"));
	DCHECK(cuModuleGetFunction(&e.risk_worst, module, "mm_risk_worst"));
	DCHECK(cuStreamCreate(&e.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&e.d_md, 3 * NI * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_ema, NI * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_quotes, 2 * NI * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_load, sizeof load)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_factors, sizeof factors)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_gamma, sizeof gamma)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_pnl, sizeof pnl)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&e.d_risk_log, sizeof risk_log)); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAllocHost((void **)&e.staging[k], 3 * NI * sizeof(int))); // SYNCSPY-CLEAN: setup, pinned staging
		DCHECK(cuMemAllocHost((void **)&e.ring[k], 2 * NI * sizeof(int))); // SYNCSPY-CLEAN: setup, the pinned quote ring
		DCHECK(cuEventCreate(&e.tick_done[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemcpyHtoD(e.d_load, load, sizeof load)); // SYNCSPY-CLEAN: setup upload of the factor loadings
	DCHECK(cuMemcpyHtoD(e.d_factors, factors, sizeof factors)); // SYNCSPY-CLEAN: setup upload of the scenarios
	DCHECK(cuMemcpyHtoD(e.d_gamma, gamma, sizeof gamma)); // SYNCSPY-CLEAN: setup upload of the gammas
	DCHECK(cuMemsetD32(e.d_ema, 0, NI)); // SYNCSPY-CLEAN: setup, the signal starts at zero
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the engine's stream starts

	unsigned long long checksum = 14695981039346656037ull;
	long long fills = 0;
	for (int t = 0; t < TICKS; t++) {
		int *md = e.staging[t % 2];
		for (int i = 0; i < NI; i++) {
			md[3 * i] = mid[i], md[3 * i + 1] = imbalance(i, t), md[3 * i + 2] = pos[i];
			mid_hist[t][i] = mid[i], pos_hist[t][i] = pos[i];
		}
		submit_tick(&e, t);
		const int *q = wait_quotes(&e, t);
		for (int i = 0; i < NI; i++) { /* check the quotes, send them, take the fills */
			int imb = imbalance(i, t), bid, ask;
			quote(mid[i], imb, pos[i], &ema[i], &bid, &ask);
			if (q[2 * i] != bid || q[2 * i + 1] != ask) {
				fprintf(stderr, "%s: tick %d instrument %d quotes %d/%d, want %d/%d\n", name, t, i, q[2 * i],
					q[2 * i + 1], bid, ask);
				return 1;
			}
			checksum = (checksum ^ (uint32_t)bid ^ ((unsigned long long)(uint32_t)ask << 32)) * 1099511628211ull;
			int next = mid[i] + mid_move(i, t, imb);
			next = next < 100 ? 100 : next;
			if (next <= bid)
				pos[i]++, fills++;
			if (next >= ask)
				pos[i]--, fills++;
			mid[i] = next;
		}
	}
	DCHECK(cuStreamSynchronize(e.s)); // SYNCSPY-CLEAN: the final wait, before the final reads
	DCHECK(cuMemcpyDtoH(risk_log, e.d_risk_log, sizeof risk_log)); // SYNCSPY-CLEAN: the final read of the risk log
	DCHECK(cuMemcpyDtoH(pnl, e.d_pnl, sizeof pnl)); // SYNCSPY-CLEAN: the final read of the last tick's P&Ls

	/* the risk checks: each tick's worst scenario, the last tick's P&L vector */
	long long worst = 0;
	for (int t = 0; t < TICKS; t++) {
		int w = (int)risk_log[2 * t + 1];
		if (w < 0 || w >= NS || scenario_pnl(mid_hist[t], pos_hist[t], load, factors, gamma, w) != risk_log[2 * t]) {
			fprintf(stderr, "%s: tick %d: worst scenario %d does not reprice to %lld\n", name, t, w, risk_log[2 * t]);
			return 1;
		}
		for (int j = 0; j < SAMPLED; j++) {
			int s = (int)(mix32((uint32_t)(t * SAMPLED + j) ^ 0x510e527fu) % NS);
			long long v = scenario_pnl(mid_hist[t], pos_hist[t], load, factors, gamma, s);
			if (v < risk_log[2 * t] || (v == risk_log[2 * t] && s < w)) {
				fprintf(stderr, "%s: tick %d: scenario %d (%lld) is worse than the reported worst\n", name, t, s, v);
				return 1;
			}
		}
		worst = risk_log[2 * t] < worst ? risk_log[2 * t] : worst;
		checksum = (checksum ^ (unsigned long long)risk_log[2 * t] ^ (unsigned long long)w) * 1099511628211ull;
	}
	for (int s = 0; s < NS; s++)
		if (pnl[s] != scenario_pnl(mid_hist[TICKS - 1], pos_hist[TICKS - 1], load, factors, gamma, s)) {
			fprintf(stderr, "%s: last tick's scenario %d P&L %lld is wrong\n", name, s, pnl[s]);
			return 1;
		}

	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFreeHost(e.staging[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(e.ring[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(e.tick_done[k]));
	}
	DCHECK(cuMemFree(e.d_md)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_ema)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_quotes)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_load)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_factors)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_gamma)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_pnl)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(e.d_risk_log)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(e.s));
	driver_teardown(module);
	printf("%s: ticks=%d fills=%lld worst=%lld checksum=%016llx result=OK\n", name, TICKS, fills, worst, checksum);
	return 0;
}
