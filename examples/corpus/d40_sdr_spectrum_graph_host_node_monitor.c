/*
 * examples/corpus/d40_sdr_spectrum_graph_host_node_monitor.c: corpus workload (CUDA driver API).
 * The spectrum monitor of a software-defined radio receiver: every frame, the front end
 * synthesizes 16 sub-blocks of 16384 samples (two carriers, a bursty interferer, noise), a
 * direct-DFT kernel integrates their power into 2048 bins, and an interference (RFI) detector on
 * the host flags the bins above the median plus six median absolute deviations and keeps a
 * per-bin occupancy count. To save launch overhead the whole frame was captured once into a CUDA
 * graph (the frame index lives on the device and a tick kernel advances it) and is replayed with
 * cuGraphLaunch every frame; the spectrum's download into pinned memory and the detector were
 * captured with it, the detector by a cuLaunchHostFunc on the capture stream, which becomes a
 * host node of the graph. The driver API reference (cuLaunchHostFunc): "The function will
 * be called after currently enqueued work and will block work added after it"; a graph launch
 * runs after the previous launch on its stream has completed, host node included. So every
 * frame's replay waits for the previous frame's detector (two sorts of 2048 bins on the host,
 * plus the host callback's wake-up) and the GPU idles that long every frame. Recording an event
 * after the replay and running the download and the detector on a monitor stream with
 * cuLaunchHostFunc, over a ring of pinned spectra, would keep the replays back to back.
 * Planted: the cuLaunchHostFunc of the detector captured into the frame graph, in
 * capture_frame_graph() (it runs on every replay).
 * Clean: the setup allocations and the cosine table's upload, the captured download of the
 * spectrum into pinned memory, the one instantiation and upload of the graph, the final wait,
 * teardown.
 *   d40_sdr_spectrum_graph_host_node_monitor driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 88, N = 16384, SUBS = 16, BINS = 2048, THREADS = 256, MAD_K = 6 };

struct detection {
	int flagged, peak;
	unsigned long long median;
};

struct monitor {
	CUfunction synth, dft, tick;
	CUstream s, capture;
	CUdeviceptr d_x, d_costab, d_power, d_frame;
	CUgraphExec exec;
	unsigned long long *h_spectrum; /* pinned, BINS */
	int frames_seen;
	struct detection log[FRAMES];
	unsigned int occupancy[BINS];
};

/* --- the front end and the DFT on the host, for the self-check ------------------------------ */

/* the Q14 cosine table, cos(2 pi i / N) by its Taylor series (no libm) */
static short cos_q14(int i)
{
	double t = 6.283185307179586 * (double)i / N, term = 1.0, c = 1.0;
	if (t > 3.141592653589793)
		t -= 6.283185307179586;
	for (int k = 1; k < 30; k++) {
		term *= -t * t / (double)((2 * k - 1) * (2 * k));
		c += term;
	}
	double v = 16384.0 * c;
	return (short)(v >= 0 ? (int)(v + 0.5) : -(int)(-v + 0.5));
}

static int tri(unsigned int phase)
{
	int t = (int)(phase >> 16);
	return (t < 32768 ? t : 65535 - t) - 16384;
}

/* the kernel sdr_synth: sample i of frame f (all SUBS sub-blocks, one after the other) */
static int sample_host(int f, int i)
{
	unsigned int s = (unsigned int)f * (unsigned int)(N * SUBS) + (unsigned int)i, step = 4294967295u / (unsigned int)N + 1u;
	unsigned int h = s * 2654435761u;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return tri(s * 301u * step) / 4 + tri(s * 1210u * step) / 8 + (f % 5 == 2 ? tri(s * 777u * step) / 4 : 0) + (int)(h & 4095u) - 2048;
}

static unsigned long long power_host(int f, int k, const short *costab)
{
	unsigned long long p = 0;
	for (int sub = 0; sub < SUBS; sub++) {
		long long re = 0, im = 0;
		for (int i = 0; i < N; i++) {
			unsigned int idx = ((unsigned int)k * (unsigned int)i) & (N - 1);
			long long x = sample_host(f, sub * N + i);
			re += x * costab[idx];
			im += x * costab[(idx + N / 4 * 3) & (N - 1)];
		}
		re /= 16384;
		im /= 16384;
		p += (unsigned long long)(re * re + im * im);
	}
	return p;
}

/* --- the interference detector (a host function of the frame graph) ------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return x < y ? -1 : x > y;
}

static struct detection detect(const unsigned long long *power, unsigned int *occupancy)
{
	static unsigned long long sorted[BINS], dev[BINS];
	struct detection d = {0, 0, 0};
	memcpy(sorted, power, sizeof sorted);
	qsort(sorted, BINS, sizeof sorted[0], cmp_u64);
	d.median = sorted[BINS / 2];
	for (int k = 0; k < BINS; k++)
		dev[k] = power[k] > d.median ? power[k] - d.median : d.median - power[k];
	qsort(dev, BINS, sizeof dev[0], cmp_u64);
	unsigned long long threshold = d.median + MAD_K * dev[BINS / 2];
	for (int k = 0; k < BINS; k++) {
		if (power[k] > threshold) {
			d.flagged++;
			if (occupancy)
				occupancy[k]++;
		}
		if (power[k] > power[d.peak])
			d.peak = k;
	}
	return d;
}

static void CUDA_CB rfi_monitor(void *user)
{
	struct monitor *m = (struct monitor *)user;
	if (m->frames_seen < FRAMES)
		m->log[m->frames_seen] = detect(m->h_spectrum, m->occupancy);
	m->frames_seen++;
}

/* --- the frame graph -------------------------------------------------------------------------- */

static CUgraph capture_frame_graph(struct monitor *m)
{
	CUgraph g;
	int n = N, subs = SUBS;
	void *synth_args[] = {&m->d_x, &n, &subs, &m->d_frame};
	void *dft_args[] = {&m->d_x, &n, &m->d_costab, &m->d_power};
	void *tick_args[] = {&m->d_frame};
	DCHECK(cuStreamBeginCapture(m->capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	DCHECK(cuMemsetD32Async(m->d_power, 0u, BINS * 2, m->capture));
	DCHECK(cuLaunchKernel(m->synth, N * SUBS / THREADS, 1, 1, THREADS, 1, 1, 0, m->capture, synth_args, NULL));
	DCHECK(cuLaunchKernel(m->dft, BINS, SUBS, 1, THREADS, 1, 1, 0, m->capture, dft_args, NULL));
	DCHECK(cuLaunchKernel(m->tick, 1, 1, 1, 1, 1, 1, 0, m->capture, tick_args, NULL));
	DCHECK(cuMemcpyDtoHAsync(m->h_spectrum, m->d_power, BINS * sizeof(unsigned long long), m->capture)); // SYNCSPY-CLEAN: captured once: each replay copies the spectrum into pinned memory
	DCHECK(cuLaunchHostFunc(m->capture, rfi_monitor, m)); // SYNCSPY-PROBLEM: the detector as a host node of the frame graph: the next frame's replay waits for it
	DCHECK(cuStreamEndCapture(m->capture, &g));
	return g;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	static struct monitor m;
	static short costab[N];

	for (int i = 0; i < N; i++)
		costab[i] = cos_q14(i);
	DCHECK(cuModuleGetFunction(&m.synth, module, "sdr_synth"));
	DCHECK(cuModuleGetFunction(&m.dft, module, "sdr_dft_power"));
	DCHECK(cuModuleGetFunction(&m.tick, module, "tick"));
	DCHECK(cuStreamCreate(&m.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&m.capture, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&m.d_x, (size_t)N * SUBS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&m.d_costab, sizeof costab)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&m.d_power, BINS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&m.d_frame, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&m.h_spectrum, BINS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned spectrum
	DCHECK(cuMemcpyHtoD(m.d_costab, costab, sizeof costab)); // SYNCSPY-CLEAN: setup, the cosine table uploaded once
	DCHECK(cuMemsetD32Async(m.d_frame, 0u, 1, m.s));

	CUgraph g = capture_frame_graph(&m);
	DCHECK(cuGraphInstantiateWithFlags(&m.exec, g, 0)); // SYNCSPY-CLEAN: setup, instantiated once
	DCHECK(cuGraphDestroy(g));
	DCHECK(cuGraphUpload(m.exec, m.s)); // SYNCSPY-CLEAN: setup, uploaded once

	for (int f = 0; f < FRAMES; f++)
		DCHECK(cuGraphLaunch(m.exec, m.s));
	DCHECK(cuStreamSynchronize(m.s)); // SYNCSPY-CLEAN: the final wait, after the last frame's detector

	/* self-check: the last frame's spectrum on the tone, harmonic, interferer and sampled bins,
	 * and its detection */
	if (m.frames_seen != FRAMES) {
		fprintf(stderr, "d40: %d frames detected, want %d\n", m.frames_seen, FRAMES);
		return 1;
	}
	static const int tones[] = {301, 903, 1505, 1210, 777, 0, 1, BINS - 1};
	for (int c = 0; c < 24; c++) {
		int k = c < 8 ? tones[c] : (int)(((uint32_t)c * 2654435761u >> 7) % BINS);
		unsigned long long want = power_host(FRAMES - 1, k, costab);
		if (m.h_spectrum[k] != want) {
			fprintf(stderr, "d40: frame %d bin %d power = %llu, want %llu\n", FRAMES - 1, k, m.h_spectrum[k], want);
			return 1;
		}
	}
	struct detection again = detect(m.h_spectrum, NULL), *last = &m.log[FRAMES - 1];
	if (again.flagged != last->flagged || again.peak != last->peak || again.median != last->median || last->flagged < 4) {
		fprintf(stderr, "d40: last frame detected %d/%d/%llu, want %d/%d/%llu (at least 4 flagged)\n", last->flagged, last->peak, last->median, again.flagged, again.peak, again.median);
		return 1;
	}
	unsigned long long checksum = 0;
	for (int f = 0; f < FRAMES; f++)
		checksum = checksum * 1000003u + (unsigned long long)m.log[f].flagged * 65537u + (unsigned long long)m.log[f].peak * 31u + (m.log[f].median >> 20);
	for (int k = 0; k < BINS; k++)
		checksum = checksum * 31u + m.occupancy[k];

	DCHECK(cuGraphExecDestroy(m.exec));
	DCHECK(cuMemFree(m.d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(m.d_costab)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(m.d_power)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(m.d_frame)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(m.h_spectrum)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(m.s));
	DCHECK(cuStreamDestroy(m.capture));
	driver_teardown(module);
	printf("d40_sdr_spectrum_graph_host_node_monitor: steps=%d checksum=%llu result=OK\n", FRAMES, checksum);
	return 0;
}
