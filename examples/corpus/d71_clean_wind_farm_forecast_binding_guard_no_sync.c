/*
 * examples/corpus/d71_clean_wind_farm_forecast_binding_guard_no_sync.c: corpus workload (CUDA
 * driver API), clean. d68 with the binding's context guard fixed (the fix of d68): guard_leave()
 * only pops the context, so wake.upload, wake.run and wake.fetch return as soon as their work is
 * queued, and an asynchronous fault surfaces at the next wake.wait, whose cuEventSynchronize
 * returns it ("may also return error codes from previous, asynchronous launches", driver API
 * reference). The script reads hour h-1's results while hour h's wake model runs, then decodes
 * hour h+1 into the other half of the pinned staging double buffer: host and GPU overlap. The
 * same computation and the same output line as d68.
 * Clean: the setup allocations, uploads and sync, the inflow's async upload from the pinned
 * staging double buffer, the results' async downloads into the pinned ring, wake.wait's
 * cuEventSynchronize one hour behind (the ring's and the staging buffer's wait), teardown.
 * cuCtxPushCurrent and cuCtxPopCurrent neither sync nor copy (unmarked).
 * Per hour (estimates, H100): the wake model about 400M turbine pairs, 0.4-0.8 ms, beside the
 * script's 0.5-1 ms of post-processing and decoding. The checks as in d68.
 *   d71_clean_wind_farm_forecast_binding_guard_no_sync driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { NT = 1024, MEMBERS = 64, SUB = 6, NSCEN = MEMBERS * SUB, HOURS = 48, NCURVE = 121, THREADS = 256, SAMPLED = 32 };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the ensemble's wind for hour h, member m, ten-minute step q: direction (degrees), speed (mm/s) */
static void ensemble_wind(int h, int m, int q, int *dir, int *speed)
{
	int base = 230 + (h * 7) % 60 + (int)(mix32((uint32_t)h * 977u) % 21u) - 10;
	int spread = (int)(mix32((uint32_t)(h * MEMBERS + m) ^ 0x9e3779b9u) % 31u) - 15;
	*dir = ((base + spread + 2 * q) % 360 + 360) % 360;
	*speed = 6000 + (int)(mix32((uint32_t)((h * MEMBERS + m) * SUB + q) ^ 0x85ebca6bu) % 9000u);
}

static unsigned long long isqrt64(unsigned long long v)
{
	unsigned long long r = 0, bit = 1ull << 62;
	while (bit > v)
		bit >>= 2;
	while (bit) {
		if (v >= r + bit) {
			v -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

/* the host's wake model for one turbine (the mirror of wf_wake); *waked: it stands in a wake */
static int turbine_power(const int *txy, const int *trig, const int *curve, int dir, int speed, int j, int *waked)
{
	int c = trig[2 * dir], sn = trig[2 * dir + 1];
	unsigned long long acc = 0;
	for (int i = 0; i < NT; i++) {
		int ex = txy[2 * j] - txy[2 * i], ey = txy[2 * j + 1] - txy[2 * i + 1];
		int dx = (ex * c + ey * sn) >> 14;
		if (dx <= 0)
			continue;
		int dy = (ey * c - ex * sn) >> 14, rw = 63 + dx / 20;
		if (abs(dy) >= rw)
			continue;
		unsigned long long def = 43690ull * 3969ull / ((unsigned long long)rw * rw);
		acc += def * def;
	}
	unsigned long long tot = isqrt64(acc);
	tot = tot > 65536 ? 65536 : tot;
	*waked = acc != 0;
	int u = (int)(((long long)speed * (long long)(65536 - tot)) >> 16), k = u / 250, f = u % 250;
	return k >= NCURVE - 1 ? curve[NCURVE - 1] : curve[k] + (curve[k + 1] - curve[k]) * f / 250;
}

/* the binding's state: one context, one stream, the farm's tables on the device */
struct wf_binding {
	CUcontext ctx;
	CUstream s;
	CUfunction wake, farm;
	CUdeviceptr d_txy, d_trig, d_curve, d_inflow, d_power, d_farm;
	CUevent done[2];
};

/* every entry point runs between these two: the script's thread holds no context of its own */
static void guard_enter(struct wf_binding *b)
{
	DCHECK(cuCtxPushCurrent(b->ctx));
}

static void guard_leave(struct wf_binding *b)
{
	CUcontext popped;
	(void)b;
	DCHECK(cuCtxPopCurrent(&popped)); /* faults surface at the next wake.wait */
}

/* wake.upload(inflow): the hour's 384 scenarios, from the script's pinned staging */
static void wf_upload(struct wf_binding *b, const int *staging)
{
	guard_enter(b);
	DCHECK(cuMemcpyHtoDAsync(b->d_inflow, staging, 2 * NSCEN * sizeof(int), b->s)); // SYNCSPY-CLEAN: from pinned staging
	guard_leave(b);
}

/* wake.run(): the wake model and the farm sums */
static void wf_run(struct wf_binding *b)
{
	int nscen = NSCEN, nt = NT, ncurve = NCURVE;
	guard_enter(b);
	void *wa[] = {&b->d_inflow, &nscen, &nt, &b->d_txy, &b->d_trig, &b->d_curve, &ncurve, &b->d_power};
	DCHECK(cuLaunchKernel(b->wake, NSCEN * NT / THREADS, 1, 1, THREADS, 1, 1, 0, b->s, wa, NULL));
	void *fa[] = {&b->d_power, &nscen, &nt, &b->d_farm};
	DCHECK(cuLaunchKernel(b->farm, (NSCEN + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, b->s, fa, NULL));
	guard_leave(b);
}

/* wake.fetch(slot): the results into the script's pinned ring, slot's event behind them */
static void wf_fetch(struct wf_binding *b, int slot, int *power, long long *farm)
{
	guard_enter(b);
	DCHECK(cuMemcpyDtoHAsync(power, b->d_power, NSCEN * NT * sizeof(int), b->s)); // SYNCSPY-CLEAN: into the pinned result ring
	DCHECK(cuMemcpyDtoHAsync(farm, b->d_farm, NSCEN * sizeof(long long), b->s)); // SYNCSPY-CLEAN: into the pinned result ring
	DCHECK(cuEventRecord(b->done[slot], b->s));
	guard_leave(b);
}

/* wake.wait(slot): the results of the hour that used slot are on the host */
static void wf_wait(struct wf_binding *b, int slot)
{
	guard_enter(b);
	DCHECK(cuEventSynchronize(b->done[slot])); // SYNCSPY-CLEAN: the hour one behind, the ring's wait
	guard_leave(b);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *name = "d71_clean_wind_farm_forecast_binding_guard_no_sync";
	struct wf_binding b;
	CUmodule module = driver_setup(argc, argv, &b.ctx);
	static int txy[2 * NT], trig[720], curve[NCURVE], hour_dir[HOURS][NSCEN], hour_speed[HOURS][NSCEN];
	static long long turbine_sum[NT], sorted[NSCEN];
	int *staging[2], *power[2];
	long long *farm[2];

	static const int farm_at[4][2] = {{0, 0}, {16000, 2000}, {3000, 17000}, {19000, 18500}};
	for (int j = 0; j < NT; j++) {
		int f = j / 256, r = j % 256 / 16, col = j % 16;
		txy[2 * j] = farm_at[f][0] + col * 882 + (int)(mix32((uint32_t)j * 2u) % 121u) - 60;
		txy[2 * j + 1] = farm_at[f][1] + r * 882 + (int)(mix32((uint32_t)j * 2u + 1u) % 121u) - 60;
	}
	for (int d = 0; d < 360; d++) {
		trig[2 * d] = (int)lround(cos(d * M_PI / 180.0) * 16384.0);
		trig[2 * d + 1] = (int)lround(sin(d * M_PI / 180.0) * 16384.0);
	}
	for (int k = 0; k < NCURVE; k++) { /* a 5 MW turbine: cut-in 3 m/s, rated 11.5 m/s, cut-out 25 m/s */
		long long u = 250LL * k, lo = 3000, hi = 11500;
		curve[k] = u < lo || u > 25000 ? 0 : u >= hi ? 5000 : (int)(5000 * (u * u * u - lo * lo * lo) / (hi * hi * hi - lo * lo * lo));
	}

	DCHECK(cuModuleGetFunction(&b.wake, module, "wf_wake"));
	DCHECK(cuModuleGetFunction(&b.farm, module, "wf_farm"));
	DCHECK(cuStreamCreate(&b.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&b.d_txy, sizeof txy)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b.d_trig, sizeof trig)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b.d_curve, sizeof curve)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b.d_inflow, 2 * NSCEN * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b.d_power, NSCEN * NT * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b.d_farm, NSCEN * sizeof(long long))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAllocHost((void **)&staging[k], 2 * NSCEN * sizeof(int))); // SYNCSPY-CLEAN: setup, pinned staging
		DCHECK(cuMemAllocHost((void **)&power[k], NSCEN * NT * sizeof(int))); // SYNCSPY-CLEAN: setup, the pinned result ring
		DCHECK(cuMemAllocHost((void **)&farm[k], NSCEN * sizeof(long long))); // SYNCSPY-CLEAN: setup, the pinned result ring
		DCHECK(cuEventCreate(&b.done[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemcpyHtoD(b.d_txy, txy, sizeof txy)); // SYNCSPY-CLEAN: setup upload of the turbine positions
	DCHECK(cuMemcpyHtoD(b.d_trig, trig, sizeof trig)); // SYNCSPY-CLEAN: setup upload of the direction table
	DCHECK(cuMemcpyHtoD(b.d_curve, curve, sizeof curve)); // SYNCSPY-CLEAN: setup upload of the power curve
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the script starts
	DCHECK(cuCtxPopCurrent(&b.ctx)); /* the interpreter's thread holds no context between calls */

	unsigned long long checksum = 14695981039346656037ull;
	long long energy_kwh = 0, p10_sum = 0, p90_sum = 0;
	int waked = 0;
	for (int h = 0; h <= HOURS; h++) {
		if (h < HOURS) { /* decode hour h's ensemble into staging, queue it */
			int *st = staging[h % 2];
			for (int s = 0; s < NSCEN; s++) {
				ensemble_wind(h, s / SUB, s % SUB, &st[2 * s], &st[2 * s + 1]);
				hour_dir[h][s] = st[2 * s], hour_speed[h][s] = st[2 * s + 1];
			}
			wf_upload(&b, st);
			wf_run(&b);
			wf_fetch(&b, h % 2, power[h % 2], farm[h % 2]);
		}
		if (h == 0)
			continue;
		int g = h - 1; /* hour g's results, one hour behind */
		wf_wait(&b, g % 2);
		const int *pw = power[g % 2];
		const long long *fm = farm[g % 2];
		long long mean = 0;
		for (int s = 0; s < NSCEN; s++) {
			long long sum = 0;
			for (int j = 0; j < NT; j++) {
				sum += pw[s * NT + j];
				turbine_sum[j] += pw[s * NT + j];
			}
			if (sum != fm[s]) {
				fprintf(stderr, "%s: hour %d scenario %d: farm power %lld, turbines sum to %lld\n", name, g, s, fm[s], sum);
				return 1;
			}
			mean += fm[s];
			sorted[s] = fm[s];
		}
		int s = (int)(mix32((uint32_t)g ^ 0x3c6ef372u) % NSCEN);
		for (int k = 0; k < SAMPLED; k++) {
			int j = (int)(mix32((uint32_t)(g * SAMPLED + k) ^ 0xa54ff53au) % NT), w;
			int want = turbine_power(txy, trig, curve, hour_dir[g][s], hour_speed[g][s], j, &w);
			if (pw[s * NT + j] != want) {
				fprintf(stderr, "%s: hour %d scenario %d turbine %d: %d kW, want %d\n", name, g, s, j, pw[s * NT + j], want);
				return 1;
			}
			waked += w;
		}
		qsort(sorted, NSCEN, sizeof sorted[0], cmp_ll);
		energy_kwh += mean / NSCEN;
		p10_sum += sorted[NSCEN / 10];
		p90_sum += sorted[NSCEN * 9 / 10];
		checksum = (checksum ^ (unsigned long long)(mean / NSCEN) ^ ((unsigned long long)sorted[NSCEN / 2] << 20)) *
			   1099511628211ull;
	}
	if (waked == 0) {
		fprintf(stderr, "%s: no sampled turbine stands in a wake\n", name);
		return 1;
	}
	for (int j = 0; j < NT; j++)
		checksum = (checksum ^ (unsigned long long)turbine_sum[j]) * 1099511628211ull;

	DCHECK(cuCtxPushCurrent(b.ctx));
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(power[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(farm[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(b.done[k]));
	}
	DCHECK(cuMemFree(b.d_txy)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b.d_trig)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b.d_curve)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b.d_inflow)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b.d_power)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b.d_farm)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(b.s));
	driver_teardown(module);
	printf("%s: hours=%d scenarios=%d energy_mwh=%lld p10_mwh=%lld p90_mwh=%lld waked=%d checksum=%016llx result=OK\n", name,
	       HOURS, NSCEN, energy_kwh / 1000, p10_sum / 1000, p90_sum / 1000, waked, checksum);
	return 0;
}
