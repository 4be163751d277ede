/*
 * examples/corpus/d58_sdr_channelizer_launcher_checks_each_launch.c: corpus workload (CUDA
 * driver API). A software-defined-radio channelizer run by a small kernel launcher: the launcher
 * resolves a pipeline's stages by name from the loaded module (cuModuleGetFunction on first use,
 * cached), and launches them on its stream through rt_launch(). Every block of 2M complex int16
 * samples from the receiver's capture ring is copied into one of two pinned slots, uploaded,
 * mixed to baseband by an NCO (sig_mix_nco), low-pass filtered and decimated by 8 with a 128-tap
 * FIR (sig_fir_decim; the last 127 mixed samples are carried to the next block by a
 * device-to-device copy), and scanned for bursts (sig_power_detect). The channel's output and
 * the burst statistics are downloaded into pinned memory, and the host demodulator consumes
 * block b - 1 (power log, burst edges, sampled checks against a host filter) while block b runs.
 * What is wrong: the launcher's check_launches option, on by default so that "a fault is
 * reported against the stage that launched it", follows every cuLaunchKernel with
 * cuStreamSynchronize, which "waits until the device has completed all operations in the stream"
 * (driver API reference): three waits a block. The host waits for the upload and the mix, then
 * the filter, then the detector, and fills the next block's slot only after all of them: the
 * copy into the slot, the demodulator and the GPU's work take turns instead of overlapping, and
 * the one-behind consumer overlaps nothing. Launch errors are returned by cuLaunchKernel itself,
 * and a fault in a kernel is reported by the next wait anyway (the consumer's event wait).
 * Planted: the cuStreamSynchronize in rt_launch(), after every launch (one line, three calls a
 * block).
 * Clean: the stage lookups (first use only), the setup allocations and uploads of the cosine
 * table and the taps, the synchronous zeroing of the filter history and the setup sync, the
 * per-block async upload from a pinned slot and the wait on that slot's upload two blocks back,
 * the history's device-to-device async copy, the async downloads into pinned memory and the
 * demodulator's cuEventSynchronize one block behind, the final wait, teardown.
 * Everything is integer: the power log's hash and the counts are the same on every run.
 *   d58_sdr_channelizer_launcher_checks_each_launch driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { BLOCKS = 40, N = 1 << 21, POOL = 3 << 20, DECIM = 8, NTAPS = 128, NOUT = N / DECIM };
enum { SLOTS = 2, THREADS = 256, PER = 16, SEG = 1024, CHECKS = 8, THRESH = 20000 };
enum { S_TAG, S_HITS, S_SUM, S_TOP, STAT_WORDS };
static const uint32_t FREQ = 0x0c000000u; /* the channel's offset, 3/64 of the sample rate */

#define IQ_BYTES ((size_t)N * 2 * sizeof(short))
#define MIX_BYTES ((size_t)(NTAPS - 1 + N) * 2 * sizeof(int))
#define HIST_BYTES ((size_t)(NTAPS - 1) * 2 * sizeof(int))
#define OUT_BYTES ((size_t)NOUT * 2 * sizeof(int))
#define STAT_BYTES (STAT_WORDS * sizeof(unsigned long long))

/* --- the launcher ---------------------------------------------------------------------------- */

struct rt {
	CUmodule module;
	CUstream s;
	int check_launches; /* on by default: report a fault at the stage that caused it */
	int nfuncs;
	const char *names[8];
	CUfunction funcs[8];
};

static CUfunction rt_kernel(struct rt *rt, const char *name)
{
	for (int i = 0; i < rt->nfuncs; i++)
		if (!strcmp(rt->names[i], name))
			return rt->funcs[i];
	DCHECK(cuModuleGetFunction(&rt->funcs[rt->nfuncs], rt->module, name)); // SYNCSPY-CLEAN: first use only, cached
	rt->names[rt->nfuncs] = name;
	return rt->funcs[rt->nfuncs++];
}

static void rt_launch(struct rt *rt, const char *name, unsigned int blocks, void **args)
{
	DCHECK(cuLaunchKernel(rt_kernel(rt, name), blocks, 1, 1, THREADS, 1, 1, 0, rt->s, args, NULL));
	if (rt->check_launches)
		DCHECK(cuStreamSynchronize(rt->s)); // SYNCSPY-PROBLEM: waits for the whole stream after every launch
}

/* --- the receiver's capture ring and the channel's filter ------------------------------------ */

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* a carrier at FREQ keyed on and off in bursts, under noise, and a strong neighbour channel */
static short *make_capture(void)
{
	short *iq = (short *)malloc((size_t)POOL * 2 * sizeof(short));
	const double pi = 3.14159265358979323846;
	uint32_t x = 0x2545f491u;
	for (int g = 0; g < POOL; g++) {
		int on = mix32((uint32_t)(g / 20000)) % 3 == 0;
		double ph = 2 * pi * (FREQ / 4294967296.0) * g, ph2 = 2 * pi * 0.21 * g;
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		iq[2 * g] = (short)(lrint((on ? 4000.0 : 0.0) * cos(ph) + 3000.0 * cos(ph2)) +
				    (int)(x & 2047) - 1024);
		iq[2 * g + 1] = (short)(lrint((on ? 4000.0 : 0.0) * sin(ph) + 3000.0 * sin(ph2)) +
					(int)(x >> 21) - 1024);
	}
	return iq;
}

static void make_tables(short *costab, short *taps)
{
	const double pi = 3.14159265358979323846;
	for (int i = 0; i < 4096; i++)
		costab[i] = (short)lrint(32767.0 * cos(2 * pi * i / 4096.0));
	for (int t = 0; t < NTAPS; t++) { /* windowed sinc, cutoff at the decimated Nyquist */
		double m = t - (NTAPS - 1) / 2.0, h = m == 0 ? 1.0 : sin(pi * m / DECIM) / (pi * m / DECIM);
		taps[t] = (short)lrint(32767.0 / DECIM * h * (0.54 - 0.46 * cos(2 * pi * t / (NTAPS - 1))));
	}
}

/* the host filter of output j of block b, for the sampled checks */
static void reference_output(const short *cap, const short *costab, const short *taps, int b, int j,
			     int *out)
{
	long long ar = 0, ai = 0;
	for (int t = 0; t < NTAPS; t++) {
		long long g = (long long)b * N + (long long)j * DECIM - t;
		if (g < 0)
			continue;
		unsigned int ph = ((uint32_t)g * FREQ) >> 20;
		int c = costab[ph], s = costab[(ph - 1024u) & 4095u];
		int xr = cap[2 * (g % POOL)], xi = cap[2 * (g % POOL) + 1];
		ar += (long long)taps[t] * ((xr * c + xi * s) >> 15);
		ai += (long long)taps[t] * ((xi * c - xr * s) >> 15);
	}
	out[0] = (int)(ar >> 15);
	out[1] = (int)(ai >> 15);
}

struct channel {
	CUdeviceptr d_iq, d_mix, d_out, d_stats, d_costab, d_taps;
	short *in[SLOTS];               /* pinned capture slots */
	int *out[SLOTS];                /* pinned channel output */
	unsigned long long *stats[SLOTS]; /* pinned burst statistics */
	CUevent uploaded[SLOTS], done[SLOTS];
};

/* block b: upload, mix, filter, carry the history, detect, download; the block's event */
static void submit_block(struct rt *rt, struct channel *ch, int b)
{
	int k = b % SLOTS, n = N, nout = NOUT, decim = DECIM, ntaps = NTAPS, per = PER;
	unsigned int phase0 = (uint32_t)((uint32_t)b * (uint32_t)N * FREQ), freq = FREQ;
	long long thresh = THRESH;
	CUdeviceptr mixed = ch->d_mix + HIST_BYTES;
	DCHECK(cuMemcpyHtoDAsync(ch->d_iq, ch->in[k], IQ_BYTES, rt->s)); // SYNCSPY-CLEAN: pinned capture slot
	DCHECK(cuEventRecord(ch->uploaded[k], rt->s));
	DCHECK(cuMemsetD32Async(ch->d_stats, 0, STAT_WORDS * 2, rt->s));
	void *margs[] = {&ch->d_iq, &n, &phase0, &freq, &ch->d_costab, &mixed};
	rt_launch(rt, "sig_mix_nco", N / THREADS, margs);
	void *fargs[] = {&ch->d_mix, &nout, &decim, &ch->d_taps, &ntaps, &ch->d_out};
	rt_launch(rt, "sig_fir_decim", NOUT / THREADS, fargs);
	DCHECK(cuMemcpyDtoDAsync(ch->d_mix, ch->d_mix + (size_t)N * 2 * sizeof(int), HIST_BYTES, rt->s)); // SYNCSPY-CLEAN: async, the filter's history for the next block
	void *pargs[] = {&ch->d_out, &nout, &per, &thresh, &b, &ch->d_stats};
	rt_launch(rt, "sig_power_detect", NOUT / PER / THREADS, pargs);
	DCHECK(cuMemcpyDtoHAsync(ch->out[k], ch->d_out, OUT_BYTES, rt->s)); // SYNCSPY-CLEAN: pinned output
	DCHECK(cuMemcpyDtoHAsync(ch->stats[k], ch->d_stats, STAT_BYTES, rt->s)); // SYNCSPY-CLEAN: pinned output
	DCHECK(cuEventRecord(ch->done[k], rt->s));
}

/* the demodulator's look at block b (one behind): power log, burst edges, sampled checks */
static int consume_block(struct channel *ch, int b, const short *cap, const short *costab,
			 const short *taps, unsigned long long *log_hash, long long *edges, int *on)
{
	int k = b % SLOTS, ok = 1, ref[2];
	DCHECK(cuEventSynchronize(ch->done[k])); // SYNCSPY-CLEAN: the block one behind
	const int *y = ch->out[k];
	const unsigned long long *st = ch->stats[k];
	unsigned long long hits = 0, sum = 0;
	for (int s0 = 0; s0 < NOUT; s0 += SEG) {
		unsigned long long seg = 0;
		for (int j = s0; j < s0 + SEG; j++) {
			long long p = ((long long)y[2 * j] * y[2 * j] + (long long)y[2 * j + 1] * y[2 * j + 1]) >> 8;
			hits += p >= THRESH;
			seg += (unsigned long long)p;
		}
		sum += seg;
		int now = seg / SEG >= THRESH;
		*edges += now && !*on;
		*on = now;
		*log_hash = (*log_hash ^ (seg / SEG)) * 1099511628211ull;
	}
	for (int c = 0; c < CHECKS; c++) {
		int j = (int)(mix32((uint32_t)(b * CHECKS + c)) % NOUT);
		reference_output(cap, costab, taps, b, j, ref);
		ok &= ref[0] == y[2 * j] && ref[1] == y[2 * j + 1];
	}
	return ok && st[S_TAG] == (unsigned long long)b && st[S_HITS] == hits && st[S_SUM] == sum;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	static struct rt rt;
	static struct channel ch;
	static short costab[4096], taps[NTAPS];
	unsigned long long log_hash = 14695981039346656037ull;
	long long edges = 0;
	int on = 0, ok = 1;

	rt.module = driver_setup(argc, argv, &ctx);
	rt.check_launches = 1;
	short *cap = make_capture();
	make_tables(costab, taps);
	DCHECK(cuStreamCreate(&rt.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&ch.d_iq, IQ_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&ch.d_mix, MIX_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&ch.d_out, OUT_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&ch.d_stats, STAT_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&ch.d_costab, sizeof costab)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&ch.d_taps, sizeof taps)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(ch.d_costab, costab, sizeof costab)); // SYNCSPY-CLEAN: setup upload, once
	DCHECK(cuMemcpyHtoD(ch.d_taps, taps, sizeof taps)); // SYNCSPY-CLEAN: setup upload, once
	DCHECK(cuMemsetD32(ch.d_mix, 0, HIST_BYTES / 4)); // SYNCSPY-CLEAN: setup, the filter starts from silence
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemHostAlloc((void **)&ch.in[k], IQ_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuMemHostAlloc((void **)&ch.out[k], OUT_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuMemHostAlloc((void **)&ch.stats[k], STAT_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuEventCreate(&ch.uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&ch.done[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the stream starts

	for (int b = 0; b < BLOCKS; b++) {
		int k = b % SLOTS;
		size_t g0 = (size_t)b * N % POOL, first = POOL - g0 < (size_t)N ? POOL - g0 : (size_t)N;
		DCHECK(cuEventSynchronize(ch.uploaded[k])); // SYNCSPY-CLEAN: the slot's upload two blocks back
		memcpy(ch.in[k], cap + 2 * g0, first * 2 * sizeof(short));
		memcpy(ch.in[k] + 2 * first, cap, (N - first) * 2 * sizeof(short));
		submit_block(&rt, &ch, b);
		if (b >= 1)
			ok &= consume_block(&ch, b - 1, cap, costab, taps, &log_hash, &edges, &on);
	}
	ok &= consume_block(&ch, BLOCKS - 1, cap, costab, taps, &log_hash, &edges, &on);
	DCHECK(cuStreamSynchronize(rt.s)); // SYNCSPY-CLEAN: the final wait (all consumed already)

	if (!ok || edges == 0) {
		fprintf(stderr, "d58: a block's output is stale or differs from the host filter\n");
		return 1;
	}
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(ch.in[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(ch.out[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(ch.stats[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(ch.uploaded[k]));
		DCHECK(cuEventDestroy(ch.done[k]));
	}
	DCHECK(cuMemFree(ch.d_iq)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(ch.d_mix)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(ch.d_out)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(ch.d_stats)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(ch.d_costab)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(ch.d_taps)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(rt.s));
	free(cap);
	driver_teardown(rt.module);
	printf("d58_sdr_channelizer_launcher_checks_each_launch: blocks=%d edges=%lld power=%016llx "
	       "result=OK\n", BLOCKS, edges, log_hash);
	return 0;
}
