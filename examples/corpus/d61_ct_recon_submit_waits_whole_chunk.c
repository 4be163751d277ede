/*
 * examples/corpus/d61_ct_recon_submit_waits_whole_chunk.c: corpus workload (CUDA driver API).
 * The reconstruction service of a CT scanner (parallel-beam filtered backprojection): the gantry
 * delivers 1440 projections over 180 degrees, each 32 detector rows (slices) of 1024 channels of
 * raw 16-bit counts, and the service reconstructs a 512 x 512 x 32 volume while the scan runs.
 * Every chunk of 32 projections the host does the acquisition's preprocessing (dark-current
 * subtraction and the -log of the flat-field ratio, through a lookup table, about 1M samples)
 * into one pinned staging buffer, and submit_chunk() uploads it, runs the ramp filter (a spatial
 * Ram-Lak kernel over the whole detector row) and backprojects the chunk into the int32 volume
 * on the device. The volume is read once after the last chunk and checked against the phantom.
 * What is wrong: submit_chunk() ends with cuStreamSynchronize, so that the caller may refill the
 * one staging buffer. cuStreamSynchronize "waits until the device has completed all operations in
 * the stream" (driver API reference): the upload, and also the filter and the backprojection
 * queued behind it. The host preprocesses chunk b + 1 only after chunk b is reconstructed, and the
 * GPU idles while the host preprocesses: host and GPU take turns every chunk, about 1 ms + 0.5 ms
 * where the longer of the two would do. The staging buffer is free as soon as the upload is done:
 * an event recorded after the copy and waited on before the refill (or two staging buffers, each
 * with its event) lets chunk b's reconstruction overlap chunk b + 1's preprocessing.
 * Planted: the cuStreamSynchronize at the end of submit_chunk(), every chunk (one line).
 * Clean: the setup allocations, the uploads of the filter taps and the angle table, the setup
 * sync, the per-chunk async upload from the pinned staging buffer, the volume's async download
 * into pinned memory and the final stream sync, teardown.
 * Sizes (estimates, H100): a 2 MB upload, 1M filtered samples (512 taps each) and 268M
 * interpolated detector reads in the backprojection a chunk (0.3-0.6 ms); the host's
 * preprocessing about 1 ms a chunk; 45 chunks.
 * Everything on the device is integer (the lookup tables and the raw data are made once on the
 * host): the volume's hash is the same on every run.
 *   d61_ct_recon_submit_waits_whole_chunk driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { DET = 1024, SLICES = 32, NVOX = 512, ANGLES = 1440, CHUNK = 32, CHUNKS = ANGLES / CHUNK };
enum { HALF = DET - 1, THREADS = 256, I0 = 60000, LUT = 65536, ELLIPSES = 6 };

#define CHUNK_SAMPLES ((size_t)CHUNK * SLICES * DET)
#define CHUNK_BYTES (CHUNK_SAMPLES * sizeof(short))
#define FILT_BYTES (CHUNK_SAMPLES * sizeof(int))
#define VOL_WORDS ((size_t)NVOX * NVOX * SLICES)

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the phantom: ellipses in pixels from the volume's centre (x0, y0, semi-axes a, b, rotation,
 * attenuation a pixel, added), a Shepp-Logan-like head */
static const double phantom[ELLIPSES][6] = {
	{0, 0, 236, 176, 0, 0.0090},     {0, -4, 224, 166, 0, -0.0070}, {56, 0, 28, 80, -0.31, -0.0015},
	{-56, 0, 40, 104, 0.31, -0.0015}, {0, 90, 54, 64, 0, 0.0030},   {0, -60, 20, 20, 0, 0.0080},
};

/* the line integral of the phantom along the ray at angle th (its cosine and sine), detector
 * offset u pixels */
static double line_integral(double ct, double st, double u)
{
	double sum = 0;
	for (int e = 0; e < ELLIPSES; e++) {
		const double *p = phantom[e];
		double cp = cos(p[4]), sp = sin(p[4]);
		double c = ct * cp + st * sp, s = st * cp - ct * sp; /* cos, sin of th - p[4] */
		double u0 = u - (p[0] * ct + p[1] * st);
		double a2 = p[2] * p[2] * c * c + p[3] * p[3] * s * s;
		if (u0 * u0 < a2)
			sum += p[5] * 2.0 * p[2] * p[3] * sqrt(a2 - u0 * u0) / a2;
	}
	return sum;
}

/* --- the scanner's side: raw counts made once (the gantry's stream), the calibration -------- */

struct scan {
	unsigned short *raw; /* [ANGLES][SLICES][DET] counts */
	unsigned short dark[DET];
	short log_lut[LUT]; /* -ln(v / flat) in Q11 */
};

static void scan_init(struct scan *sc)
{
	static unsigned short exp_lut[16384];
	sc->raw = (unsigned short *)malloc((size_t)ANGLES * SLICES * DET * sizeof(unsigned short));
	for (int c = 0; c < DET; c++)
		sc->dark[c] = (unsigned short)(200 + c * 7 % 50);
	for (int q = 0; q < 16384; q++) /* line integral q / 1024 -> counts above dark */
		exp_lut[q] = (unsigned short)lround((I0 - 260) * exp(-q / 1024.0));
	sc->log_lut[0] = 32767;
	for (int v = 1; v < LUT; v++) {
		double l = -log(v / (double)(I0 - 260)) * 2048.0;
		sc->log_lut[v] = (short)(l > 32767 ? 32767 : l < -32768 ? -32768 : lround(l));
	}
	for (int a = 0; a < ANGLES; a++) {
		double ct = cos(M_PI * a / ANGLES), st = sin(M_PI * a / ANGLES);
		for (int c = 0; c < DET; c++) {
			int q0 = (int)lround(line_integral(ct, st, c + 0.5 - DET / 2.0) * 1024.0);
			for (int s = 0; s < SLICES; s++) {
				int q = q0 * (48 + s) / 64; /* the head narrows towards the top */
				uint32_t h = mix32((uint32_t)((a * SLICES + s) * DET + c));
				int v = exp_lut[q < 16383 ? q : 16383] + (int)(h & 15) - 8 + sc->dark[c];
				sc->raw[((size_t)a * SLICES + s) * DET + c] = (unsigned short)(v < 0 ? 0 : v > 65535 ? 65535 : v);
			}
		}
	}
}

/* chunk b's preprocessing into the staging buffer: dark subtraction, -log through the table */
static void preprocess(const struct scan *sc, int b, short *staging)
{
	const unsigned short *raw = sc->raw + (size_t)b * CHUNK_SAMPLES;
	for (size_t i = 0; i < CHUNK_SAMPLES; i++) {
		int v = (int)raw[i] - sc->dark[i % DET];
		staging[i] = sc->log_lut[v < 1 ? 1 : v];
	}
}

/* --- the reconstruction ---------------------------------------------------------------------- */

struct recon {
	CUstream s;
	CUfunction filter, backproject;
	CUdeviceptr d_proj, d_filt, d_taps, d_trig, d_vol;
	short *staging; /* pinned, one chunk */
};

static void submit_chunk(struct recon *rc, int b)
{
	int rows = CHUNK * SLICES, det = DET, half = HALF, a0 = b * CHUNK, nang = CHUNK, slices = SLICES, n = NVOX;
	DCHECK(cuMemcpyHtoDAsync(rc->d_proj, rc->staging, CHUNK_BYTES, rc->s)); // SYNCSPY-CLEAN: pinned staging buffer
	void *fargs[] = {&rc->d_proj, &rows, &det, &rc->d_taps, &half, &rc->d_filt};
	DCHECK(cuLaunchKernel(rc->filter, (unsigned int)(CHUNK_SAMPLES / THREADS), 1, 1, THREADS, 1, 1, 0, rc->s,
			      fargs, NULL));
	void *bargs[] = {&rc->d_filt, &a0, &nang, &rc->d_trig, &det, &slices, &n, &rc->d_vol};
	DCHECK(cuLaunchKernel(rc->backproject, NVOX * NVOX / THREADS, 1, 1, THREADS, 1, 1, 0, rc->s, bargs, NULL));
	DCHECK(cuStreamSynchronize(rc->s)); // SYNCSPY-PROBLEM: waits for the chunk's filter and backprojection too, only to free the staging buffer
}

/* the mean of the volume's slice s over a disc (pixels from the centre) */
static double disc_mean(const int *vol, int s, int cx, int cy, int r)
{
	long long sum = 0, cnt = 0;
	for (int y = -r; y <= r; y++)
		for (int x = -r; x <= r; x++)
			if (x * x + y * y <= r * r) {
				sum += vol[((size_t)s * NVOX + (NVOX / 2 + cy + y)) * NVOX + NVOX / 2 + cx + x];
				cnt++;
			}
	return (double)sum / (double)cnt;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct recon rc;
	struct scan *sc = (struct scan *)calloc(1, sizeof *sc);
	int taps[HALF + 1], trig[2 * ANGLES], *vol = NULL;
	int ok = 1;

	scan_init(sc);
	for (int k = 0; k <= HALF; k++) /* Ram-Lak: 1/4 at the centre, -1/(pi k)^2 at odd k, Q24 */
		taps[k] = k == 0 ? 1 << 22 : k % 2 ? (int)lround(-16777216.0 / (M_PI * M_PI * k * k)) : 0;
	for (int a = 0; a < ANGLES; a++) {
		trig[2 * a] = (int)lround(16384.0 * cos(M_PI * a / ANGLES));
		trig[2 * a + 1] = (int)lround(16384.0 * sin(M_PI * a / ANGLES));
	}
	DCHECK(cuModuleGetFunction(&rc.filter, module, "ct_ramp_filter"));
	DCHECK(cuModuleGetFunction(&rc.backproject, module, "ct_backproject"));
	DCHECK(cuStreamCreate(&rc.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&rc.d_proj, CHUNK_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&rc.d_filt, FILT_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&rc.d_taps, sizeof taps)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&rc.d_trig, sizeof trig)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&rc.d_vol, VOL_WORDS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemHostAlloc((void **)&rc.staging, CHUNK_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
	DCHECK(cuMemHostAlloc((void **)&vol, VOL_WORDS * sizeof(int), 0)); // SYNCSPY-CLEAN: setup, pinned
	DCHECK(cuMemcpyHtoD(rc.d_taps, taps, sizeof taps)); // SYNCSPY-CLEAN: setup upload of the filter
	DCHECK(cuMemcpyHtoD(rc.d_trig, trig, sizeof trig)); // SYNCSPY-CLEAN: setup upload of the angle table
	DCHECK(cuMemsetD32Async(rc.d_vol, 0, VOL_WORDS, rc.s));
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done (the NULL stream's uploads too) before the scan starts

	for (int b = 0; b < CHUNKS; b++) {
		preprocess(sc, b, rc.staging);
		submit_chunk(&rc, b);
	}
	DCHECK(cuMemcpyDtoHAsync(vol, rc.d_vol, VOL_WORDS * sizeof(int), rc.s)); // SYNCSPY-CLEAN: the final read, pinned
	DCHECK(cuStreamSynchronize(rc.s)); // SYNCSPY-CLEAN: the final wait for the volume

	/* the reconstruction resembles the phantom in every slice: the insert above the brain, the
	 * brain above the ventricles and the air outside the skull */
	unsigned long long h = 14695981039346656037ull;
	for (size_t i = 0; i < VOL_WORDS; i++)
		h = (h ^ (uint32_t)vol[i]) * 1099511628211ull;
	for (int s = 0; s < SLICES; s++) {
		double insert = disc_mean(vol, s, 0, -60, 12), brain = disc_mean(vol, s, -120, 0, 12);
		double vent = disc_mean(vol, s, 56, 0, 12), air = disc_mean(vol, s, 0, 250, 3);
		ok &= insert > brain && brain > vent && vent > air && brain > 4 * fabs(air);
	}
	long long centre = vol[((size_t)(SLICES / 2) * NVOX + NVOX / 2 - 60) * NVOX + NVOX / 2];
	if (!ok) {
		fprintf(stderr, "d61: the volume does not resemble the phantom\n");
		return 1;
	}
	DCHECK(cuMemFreeHost(rc.staging)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(vol)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(rc.d_proj)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(rc.d_filt)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(rc.d_taps)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(rc.d_trig)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(rc.d_vol)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(rc.s));
	free(sc->raw);
	free(sc);
	driver_teardown(module);
	printf("d61_ct_recon_submit_waits_whole_chunk: chunks=%d insert=%lld volume=%016llx result=OK\n", CHUNKS,
	       centre, h);
	return 0;
}
