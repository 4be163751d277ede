/*
 * examples/corpus/d75_clean_smart_meter_nilm_cached_result_ring.c: corpus workload (CUDA driver
 * API). Clean: d72's load-monitoring back end (16,384 households of 256 one-minute readings a
 * batch, eight appliance signatures, 40 batches) with the result ring allocated as ordinary,
 * cacheable page-locked memory, cuMemHostAlloc(..., 0), the fix of d72. The two staging buffers
 * stay write-combined, which the driver API reference recommends "for buffers that will be
 * written by the CPU and read by the GPU via [...] host->device transfers": the host decodes into
 * them with sequential stores, and the upload reads them. The host's read of every batch's 512 KB
 * of results now goes through the cache.
 * Planted: nothing.
 * Clean: the setup allocations and uploads (templates, thresholds) and the setup sync, the
 * write-combined staging buffers, the cacheable pinned result ring, the staging's
 * cuEventSynchronize two batches back, the async uploads from the staging on the upload stream,
 * the results' async download into the ring, the cuEventSynchronize on the batch one behind (the
 * host reads its results), teardown.
 * Per batch (estimates, H100): as d72, an 8 MB upload (0.2-0.35 ms) and 0.4-0.8 ms of matching
 * beside the host's 1 ms of decoding; the 512 KB read of the results about 0.1 ms. The same
 * checks and the same output line as d72.
 *   d75_clean_smart_meter_nilm_cached_result_ring driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { NH = 16384, NS = 256, NA = 8, TLEN = 32, POOL = 4, BATCHES = 40, THREADS = 256, SAMPLED = 2 };

#define LOAD_BYTES ((size_t)NH * NS * sizeof(short))
#define OUT_BYTES ((size_t)NH * NA * sizeof(unsigned int))

/* the appliances: step size (W) and typical on-time (minutes, below TLEN) */
static const int appl_watts[NA] = {120, 2200, 1100, 1900, 1800, 2400, 7000, 3000};
static const int appl_minutes[NA] = {12, 3, 4, 20, 25, 30, 31, 18};

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* household h of pool batch b: a base load, noise, and each appliance's events */
static void make_household(int b, int h, short *p)
{
	uint32_t id = (uint32_t)(b * NH + h);
	int base = 150 + (int)(mix32(id ^ 0x243f6a88u) % 250u);
	for (int t = 0; t < NS; t++)
		p[t] = (short)(base + (int)(mix32(id * NS + (uint32_t)t) % 41u) - 20);
	for (int a = 0; a < NA; a++) {
		uint32_t e = mix32((id * NA + (uint32_t)a) ^ 0x85a308d3u);
		int n = a == 0 ? 6 + (int)(e % 5u) : a == 6 ? (e % 4u == 0) : (int)(e % 3u);
		for (int k = 0; k < n; k++) {
			int t0 = (int)(mix32(e + (uint32_t)k) % (uint32_t)(NS - appl_minutes[a] - 1));
			for (int t = t0; t < t0 + appl_minutes[a]; t++)
				p[t] = (short)(p[t] + appl_watts[a]);
		}
	}
}

/* batch b: the pool batch with the meters' calibration gain (1 + 2^-s) */
static void decode_household(int b, const short *src, short *dst)
{
	int s = 4 + b % 4;
	for (int t = 0; t < NS; t++)
		dst[t] = (short)(src[t] + (src[t] >> s));
}

/* the host's nilm_match for one household and appliance */
static unsigned int host_match(const short *p, const signed char *tp, int th)
{
	int last = -NS;
	unsigned int count = 0;
	unsigned long long ssum = 0;
	for (int t = 0; t + TLEN < NS; t++) {
		int s = 0;
		for (int k = 0; k < TLEN; k++)
			s += (p[t + k + 1] - p[t + k]) * tp[k];
		if (s >= th && t - last >= TLEN) {
			count++;
			ssum += (unsigned long long)s;
			last = t;
		}
	}
	unsigned long long e = ssum >> 8;
	return (count > 255 ? 255u : count) << 24 | (unsigned int)(e > 0xffffff ? 0xffffff : e);
}

int main(int argc, char **argv)
{
	const char *name = "d75_clean_smart_meter_nilm_cached_result_ring";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction match;
	CUstream up, cs;
	CUdeviceptr d_load[2], d_tmpl, d_thresh, d_out;
	CUevent uploaded[2], consumed[2], fetched[2];
	short *staging[2], *pool = (short *)malloc(LOAD_BYTES * POOL);
	unsigned int *ring[2];
	static signed char tmpl[NA * TLEN];
	static int thresh[NA];

	for (int a = 0; a < NA; a++) { /* the switch-on edge, the switch-off edge */
		tmpl[a * TLEN] = 8;
		tmpl[a * TLEN + appl_minutes[a]] = -8;
		thresh[a] = 16 * appl_watts[a] * 3 / 4;
	}
	for (int b = 0; b < POOL; b++)
		for (int h = 0; h < NH; h++)
			make_household(b, h, pool + ((size_t)b * NH + h) * NS);

	DCHECK(cuModuleGetFunction(&match, module, "nilm_match"));
	DCHECK(cuStreamCreate(&up, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_tmpl, sizeof tmpl)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_thresh, sizeof thresh)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_out, OUT_BYTES)); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAlloc(&d_load[k], LOAD_BYTES)); // SYNCSPY-CLEAN: setup allocation, the batch slot
		DCHECK(cuMemHostAlloc((void **)&staging[k], LOAD_BYTES, CU_MEMHOSTALLOC_WRITECOMBINED)); // SYNCSPY-CLEAN: setup, write-combined staging: the host only writes it
		DCHECK(cuMemHostAlloc((void **)&ring[k], OUT_BYTES, 0)); // SYNCSPY-CLEAN: setup, the pinned result ring, cacheable: the host reads it
		DCHECK(cuEventCreate(&uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&consumed[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&fetched[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventRecord(consumed[k], cs)); /* no batch has read the slot yet */
	}
	DCHECK(cuMemcpyHtoD(d_tmpl, tmpl, sizeof tmpl)); // SYNCSPY-CLEAN: setup upload of the signatures
	DCHECK(cuMemcpyHtoD(d_thresh, thresh, sizeof thresh)); // SYNCSPY-CLEAN: setup upload of the thresholds
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the batches

	static short check_load[2][SAMPLED][NS];
	static unsigned long long appl_count[NA];
	unsigned long long checksum = 14695981039346656037ull, energy = 0;
	long long ev_homes = 0, hp_homes = 0;
	unsigned int top = 0;
	for (int b = 0; b <= BATCHES; b++) {
		if (b < BATCHES) {
			int k = b % 2, nh = NH, ns = NS, na = NA, tlen = TLEN;
			if (b >= 2)
				DCHECK(cuEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: the staging slot's upload two batches back, before the host decodes into it
			const short *src = pool + (size_t)(b % POOL) * NH * NS;
			for (int h = 0; h < NH; h++)
				decode_household(b, src + (size_t)h * NS, staging[k] + (size_t)h * NS);
			for (int s = 0; s < SAMPLED; s++) { /* the households the host checks, decoded again for it */
				int h = (int)(mix32((uint32_t)(b * SAMPLED + s) ^ 0x13198a2eu) % NH);
				decode_household(b, src + (size_t)h * NS, check_load[k][s]);
			}
			DCHECK(cuStreamWaitEvent(up, consumed[k], 0));
			DCHECK(cuMemcpyHtoDAsync(d_load[k], staging[k], LOAD_BYTES, up)); // SYNCSPY-CLEAN: async from pinned staging, on the upload stream
			DCHECK(cuEventRecord(uploaded[k], up));
			DCHECK(cuStreamWaitEvent(cs, uploaded[k], 0));
			void *args[] = {&d_load[k], &nh, &ns, &d_tmpl, &na, &tlen, &d_thresh, &d_out};
			DCHECK(cuLaunchKernel(match, NH * NA / THREADS, 1, 1, THREADS, 1, 1, 0, cs, args, NULL));
			DCHECK(cuEventRecord(consumed[k], cs));
			DCHECK(cuMemcpyDtoHAsync(ring[k], d_out, OUT_BYTES, cs)); // SYNCSPY-CLEAN: into the result ring
			DCHECK(cuEventRecord(fetched[k], cs));
		}
		if (b == 0)
			continue;
		int g = b - 1; /* batch g's results, one batch behind */
		DCHECK(cuEventSynchronize(fetched[g % 2])); // SYNCSPY-CLEAN: the batch one behind, the host reads its results
		const unsigned int *res = ring[g % 2];
		for (int h = 0; h < NH; h++) {
			unsigned long long home = 0;
			for (int a = 0; a < NA; a++) {
				unsigned int v = res[h * NA + a];
				appl_count[a] += v >> 24;
				home += v & 0xffffff;
				checksum = (checksum ^ v) * 1099511628211ull;
			}
			ev_homes += res[h * NA + 6] >> 24 != 0;
			hp_homes += res[h * NA + 7] >> 24 != 0;
			energy += home;
			top = home > top ? (unsigned int)home : top;
		}
		for (int s = 0; s < SAMPLED; s++) {
			int h = (int)(mix32((uint32_t)(g * SAMPLED + s) ^ 0x13198a2eu) % NH);
			for (int a = 0; a < NA; a++) {
				unsigned int want = host_match(check_load[g % 2][s], tmpl + a * TLEN, thresh[a]);
				if (res[h * NA + a] != want) {
					printf("%s: batch %d household %d appliance %d: %08x, want %08x result=FAIL\n", name, g, h, a,
					       res[h * NA + a], want);
					return 1;
				}
			}
		}
	}
	for (int a = 0; a < NA; a++)
		if (appl_count[a] == 0) {
			printf("%s: appliance %d never detected result=FAIL\n", name, a);
			return 1;
		}
	if (ev_homes == 0) {
		printf("%s: no EV household found result=FAIL\n", name);
		return 1;
	}

	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFree(d_load[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(ring[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(uploaded[k]));
		DCHECK(cuEventDestroy(consumed[k]));
		DCHECK(cuEventDestroy(fetched[k]));
	}
	DCHECK(cuMemFree(d_tmpl)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_thresh)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_out)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(up));
	DCHECK(cuStreamDestroy(cs));
	driver_teardown(module);
	printf("%s: batches=%d households=%d detections=%llu/%llu/%llu/%llu/%llu/%llu/%llu/%llu ev_homes=%lld heat_pump_homes=%lld score_sum=%llu top=%u checksum=%016llx result=OK\n",
	       name, BATCHES, NH, appl_count[0], appl_count[1], appl_count[2], appl_count[3], appl_count[4], appl_count[5],
	       appl_count[6], appl_count[7], ev_homes, hp_homes, energy, top, checksum);
	free(pool);
	return 0;
}
