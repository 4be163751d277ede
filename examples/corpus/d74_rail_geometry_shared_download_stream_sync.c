/*
 * examples/corpus/d74_rail_geometry_shared_download_stream_sync.c: corpus workload (CUDA driver
 * API). A track-recording car's rail-profile stage: two laser profilometers measure the heads of
 * both rails every 25 cm, 8192 profiles of 256 points (0.5 mm apart, heights in 0.01 mm) a rail
 * per tick (2 km of track), and rail_register fits each measured head to the nominal head
 * (lateral offset by exhaustive search, vertical offset by the mean difference, the residual and
 * the deepest wear). The host computes track gauge, cross level and wear exceedances from the fits
 * one tick late. The pipeline has three streams: uploads from two pinned staging buffers on an
 * upload stream, the fits on a compute stream, and the downloads of the fits into a pinned ring
 * on the car's download stream, each ordered by events.
 * What is wrong: the host takes tick t-1's fits with cuStreamSynchronize on the download stream,
 * "because that stream carries the downloads". It is called after tick t is queued, and the
 * download stream already holds tick t's download too, queued behind tick t's fits (a
 * cuStreamWaitEvent): cuStreamSynchronize "waits until the device has completed all operations
 * in the stream", so the host waits for tick t's fits and download, not for tick t-1's download
 * alone. The one-tick-late reading degenerates into a wait for the tick just queued: the host's
 * reporting of tick t-1 and decoding of tick t+1 never overlap the GPU's fits of tick t. An event
 * recorded after each tick's download, and cuEventSynchronize on tick t-1's, would do.
 * Planted: the cuStreamSynchronize on the download stream before the host reads tick t-1's fits,
 * every tick (one line).
 * Clean: the setup allocations, the nominal head's upload and the setup sync, the pinned
 * staging and result ring, the staging's cuEventSynchronize two ticks back, the async uploads
 * from pinned staging on the upload stream, the fits' async downloads into the pinned ring on the
 * download stream, the final wait, teardown.
 * Per tick (estimates, H100): an 8 MB upload (0.2-0.35 ms), about 0.8G operations of fitting in
 * 16,384 threads (0.4-0.8 ms), a 256 KB download; on the host about 1.5 ms of decoding and 0.3 ms
 * of reporting and checks, which the wait puts after the fits instead of beside them. Checks: 2
 * fits a tick recomputed on the host (exact), and the fitted lateral offset equal to the
 * simulated one for at least 95% of the profiles.
 *   d74_rail_geometry_shared_download_stream_sync driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { NPROF = 8192, RAILS = 2, NRAIL = NPROF * RAILS, NP = 256, NN = 192, POOL = 4, TICKS = 48, THREADS = 64, SAMPLED = 2 };
enum { GAUGE = 143500 /* 0.01 mm */, GAUGE_TOL = 1000, WEAR_LIMIT = 300 };

#define PROF_BYTES ((size_t)NRAIL * NP * sizeof(short))
#define FIT_BYTES ((size_t)NRAIL * 4 * sizeof(int))

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the nominal rail head: the crown and the rounded gauge corner, 0.01 mm */
static int nominal_at(int k)
{
	int v = 3000 - (k - 96) * (k - 96) * 3000 / 9216;
	return k < 16 ? v - (16 - k) * (16 - k) * 10 : v;
}

/* profile j of rail r in pool tick b: its lateral offset, and the heights */
static int make_profile(int b, int j, int r, short *z)
{
	uint32_t id = (uint32_t)((b * NPROF + j) * RAILS + r);
	int along = b * NPROF + j, wave = (along / 64) % 40;
	int dx = 32 + (wave < 20 ? wave : 40 - wave) - 10 + (int)(mix32(id) % 7u) - 3;
	int dz = 2000 + (int)(mix32(id ^ 0x9c30d539u) % 400u);
	int crown = (along / 512) % 3 == 0 ? 3000 - (int)(mix32((uint32_t)(along / 512)) % 600u) : 3000; /* worn sections */
	for (int i = 0; i < NP; i++) {
		int k = i - dx, noise = (int)(mix32(id * NP + (uint32_t)i) % 41u) - 20;
		int h = k >= 0 && k < NN ? (nominal_at(k) < crown ? nominal_at(k) : crown) : -4000;
		z[i] = (short)(h + dz + noise);
	}
	return dx;
}

/* tick t: the pool tick with the sensors' height drift */
static void decode_tick(int t, const short *src, short *dst)
{
	short drift = (short)((t % 7 - 3) * 5);
	for (size_t i = 0; i < (size_t)NRAIL * NP; i++)
		dst[i] = (short)(src[i] + drift);
}

/* the host's rail_register for one rail's profile */
static void host_fit(const short *z, const short *nominal, int *fit)
{
	int best = 0x7fffffff, bdx = 0, bdz = 0, wear = 0;
	for (int dx = 0; dx + NN <= NP; dx++) {
		int s = 0, sad = 0;
		for (int k = 0; k < NN; k++)
			s += z[dx + k] - nominal[k];
		int dz = s / NN;
		for (int k = 0; k < NN; k++)
			sad += abs(z[dx + k] - nominal[k] - dz);
		if (sad < best) {
			best = sad;
			bdx = dx;
			bdz = dz;
		}
	}
	for (int k = 0; k < NN; k++) {
		int r = nominal[k] + bdz - z[bdx + k];
		wear = r > wear ? r : wear;
	}
	fit[0] = bdx, fit[1] = bdz, fit[2] = best, fit[3] = wear;
}

int main(int argc, char **argv)
{
	const char *name = "d74_rail_geometry_shared_download_stream_sync";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction reg;
	CUstream up, cs, dn;
	CUdeviceptr d_prof[2], d_fit[2], d_nominal;
	CUevent uploaded[2], fitted[2];
	short *staging[2], *pool = (short *)malloc(PROF_BYTES * POOL), nominal[NN];
	unsigned char *truth = (unsigned char *)malloc((size_t)POOL * NRAIL);
	int *ring[2];

	for (int k = 0; k < NN; k++)
		nominal[k] = (short)nominal_at(k);
	for (int b = 0; b < POOL; b++)
		for (int j = 0; j < NPROF; j++)
			for (int r = 0; r < RAILS; r++) {
				size_t g = (size_t)b * NRAIL + (size_t)j * RAILS + r;
				truth[g] = (unsigned char)make_profile(b, j, r, pool + g * NP);
			}

	DCHECK(cuModuleGetFunction(&reg, module, "rail_register"));
	DCHECK(cuStreamCreate(&up, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&dn, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_nominal, sizeof nominal)); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAlloc(&d_prof[k], PROF_BYTES)); // SYNCSPY-CLEAN: setup allocation, the tick slot
		DCHECK(cuMemAlloc(&d_fit[k], FIT_BYTES)); // SYNCSPY-CLEAN: setup allocation, the tick slot
		DCHECK(cuMemAllocHost((void **)&staging[k], PROF_BYTES)); // SYNCSPY-CLEAN: setup, pinned staging
		DCHECK(cuMemAllocHost((void **)&ring[k], FIT_BYTES)); // SYNCSPY-CLEAN: setup, the pinned result ring
		DCHECK(cuEventCreate(&uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&fitted[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventRecord(fitted[k], cs)); /* no fit has read the slot yet */
	}
	DCHECK(cuMemcpyHtoD(d_nominal, nominal, sizeof nominal)); // SYNCSPY-CLEAN: setup upload of the nominal head
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the run

	static short check_prof[2][SAMPLED][NP];
	unsigned long long checksum = 14695981039346656037ull;
	long long gauge_exceed = 0, wear_exceed = 0, recovered = 0, max_cross = 0;
	for (int t = 0; t <= TICKS; t++) {
		if (t < TICKS) {
			int k = t % 2, nrail = NRAIL, np = NP, nn = NN;
			if (t >= 2)
				DCHECK(cuEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: the staging slot's upload two ticks back, before the host decodes into it
			const short *src = pool + (size_t)(t % POOL) * NRAIL * NP;
			decode_tick(t, src, staging[k]);
			for (int s = 0; s < SAMPLED; s++) { /* the fits the host checks */
				int g = (int)(mix32((uint32_t)(t * SAMPLED + s) ^ 0xa4093822u) % NRAIL);
				memcpy(check_prof[k][s], staging[k] + (size_t)g * NP, NP * sizeof(short));
			}
			DCHECK(cuStreamWaitEvent(up, fitted[k], 0));
			DCHECK(cuMemcpyHtoDAsync(d_prof[k], staging[k], PROF_BYTES, up)); // SYNCSPY-CLEAN: async from pinned staging, on the upload stream
			DCHECK(cuEventRecord(uploaded[k], up));
			DCHECK(cuStreamWaitEvent(cs, uploaded[k], 0));
			void *args[] = {&d_prof[k], &nrail, &np, &d_nominal, &nn, &d_fit[k]};
			DCHECK(cuLaunchKernel(reg, NRAIL / THREADS, 1, 1, THREADS, 1, 1, 0, cs, args, NULL));
			DCHECK(cuEventRecord(fitted[k], cs));
			DCHECK(cuStreamWaitEvent(dn, fitted[k], 0));
			DCHECK(cuMemcpyDtoHAsync(ring[k], d_fit[k], FIT_BYTES, dn)); // SYNCSPY-CLEAN: the fits into the pinned ring, on the download stream
		}
		if (t == 0)
			continue;
		int g0 = t - 1; /* tick g0's fits, one tick behind */
		DCHECK(cuStreamSynchronize(dn)); // SYNCSPY-PROBLEM: meant for tick t-1's download, but the stream also holds tick t's, queued behind tick t's fits
		const int *fit = ring[g0 % 2];
		const unsigned char *tr = truth + (size_t)(g0 % POOL) * NRAIL;
		for (int j = 0; j < NPROF; j++) {
			const int *l = fit + (size_t)j * RAILS * 4, *r = l + 4;
			int gauge = GAUGE + (l[0] - 32 + r[0] - 32) * 50, cross = l[1] - r[1];
			gauge_exceed += abs(gauge - GAUGE) > GAUGE_TOL;
			wear_exceed += l[3] > WEAR_LIMIT || r[3] > WEAR_LIMIT;
			recovered += (l[0] == tr[j * RAILS]) + (r[0] == tr[j * RAILS + 1]);
			max_cross = abs(cross) > max_cross ? abs(cross) : max_cross;
			checksum = (checksum ^ (unsigned)gauge ^ (unsigned long long)(unsigned)cross << 32) * 1099511628211ull;
			checksum = (checksum ^ (unsigned)l[2] ^ (unsigned long long)(unsigned)r[3] << 32) * 1099511628211ull;
		}
		for (int s = 0; s < SAMPLED; s++) {
			int g = (int)(mix32((uint32_t)(g0 * SAMPLED + s) ^ 0xa4093822u) % NRAIL), want[4];
			host_fit(check_prof[g0 % 2][s], nominal, want);
			if (memcmp(want, fit + (size_t)g * 4, sizeof want)) {
				printf("%s: tick %d rail profile %d: fit %d %d %d %d, want %d %d %d %d result=FAIL\n", name, g0, g, fit[g * 4],
				       fit[g * 4 + 1], fit[g * 4 + 2], fit[g * 4 + 3], want[0], want[1], want[2], want[3]);
				return 1;
			}
		}
	}
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: the final wait
	if (recovered * 100 < (long long)TICKS * NRAIL * 95) {
		printf("%s: lateral offset recovered for %lld of %d rail profiles result=FAIL\n", name, recovered, TICKS * NRAIL);
		return 1;
	}

	DCHECK(cuMemFree(d_nominal)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFree(d_prof[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(d_fit[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(ring[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(uploaded[k]));
		DCHECK(cuEventDestroy(fitted[k]));
	}
	DCHECK(cuStreamDestroy(up));
	DCHECK(cuStreamDestroy(cs));
	DCHECK(cuStreamDestroy(dn));
	driver_teardown(module);
	printf("%s: ticks=%d profiles=%d gauge_exceedances=%lld wear_exceedances=%lld max_cross_level=%lld recovered=%lld checksum=%016llx result=OK\n",
	       name, TICKS, TICKS * NPROF, gauge_exceed, wear_exceed, max_cross, recovered, checksum);
	free(pool);
	free(truth);
	return 0;
}
