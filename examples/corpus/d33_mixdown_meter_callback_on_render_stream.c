/*
 * examples/corpus/d33_mixdown_meter_callback_on_render_stream.c: corpus workload (CUDA driver
 * API). An offline mixdown renderer for a film score: every render block (131072 samples, about
 * 2.7 s at 48 kHz) a kernel sums 4096 synthesizer voices into the mix bus, the block is
 * downloaded into one of three pinned ring slots, and the loudness meter (a DC-blocking filter,
 * 100 ms mean-square windows with an absolute gate, and a 4x interpolated true peak, as the
 * delivery spec asks) measures it on the host. The meter is attached with cuStreamAddCallback to
 * the render stream, after the download, and the download is queued on the render stream too.
 * The driver API reference (cuStreamAddCallback): "The callback will block later work in the
 * stream until it is finished." The next block's synthesis, queued long before, waits for the
 * meter (about as long as the block's own GPU work) and for the download ahead of it, so the GPU
 * idles for the meter every block. A metering stream that waits on an event recorded after the
 * synthesis, takes the download and the callback (or cuLaunchHostFunc), and an event back before
 * a ring slot is reused, would keep the render stream busy.
 * Planted: the download of the block on the render stream and the cuStreamAddCallback of the
 * meter behind it, in queue_meter(), every block (one problem, two lines).
 * Clean: the setup allocations, the final wait, teardown.
 *   d33_mixdown_meter_callback_on_render_stream driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { BLOCKS = 48, FRAMES = 1 << 17, VOICES = 4096, RING = 3, THREADS = 256, WINDOW = 4800, CHECKED = 1024 };

struct meter_job {
	const int *samples;
	long long gated_ms; /* mean square of the gated windows */
	int gated, peak;
};

/* the kernel synth_voices, sample t of block b, on the host */
static int synth_host(int b, int t)
{
	unsigned int n = (unsigned int)b * FRAMES + (unsigned int)t;
	int acc = 0;
	for (int v = 0; v < VOICES; v++) {
		unsigned int phase = n * (40000u + (unsigned int)v * 9973u);
		int tri = (int)(phase >> 16);
		tri = tri < 32768 ? tri : 65535 - tri;
		acc += (tri - 16384) * (1 + (v & 7)) / 64;
	}
	return acc;
}

/* the loudness meter: one render block */
static void measure(struct meter_job *j)
{
	long long y = 0, x1 = 0, win = 0, gated_sum = 0;
	int gated = 0, peak = 0, prev = 0;
	for (int t = 0; t < FRAMES; t++) {
		long long x = j->samples[t];
		y = x - x1 + y * 255 / 256; /* DC blocker */
		x1 = x;
		win += y * y / 1024;
		if ((t + 1) % WINDOW == 0) {
			if (win / WINDOW > 4096) { /* the absolute gate */
				gated_sum += win / WINDOW;
				gated++;
			}
			win = 0;
		}
		for (int k = 0; k < 4; k++) { /* 4x linear interpolation between samples for the true peak */
			int s = prev + (j->samples[t] - prev) * k / 4;
			s = s < 0 ? -s : s;
			peak = s > peak ? s : peak;
		}
		prev = j->samples[t];
	}
	j->gated_ms = gated ? gated_sum / gated : 0;
	j->gated = gated;
	j->peak = peak;
}

static void CUDA_CB meter_callback(CUstream hStream, CUresult status, void *userData)
{
	(void)hStream;
	if (status == CUDA_SUCCESS)
		measure((struct meter_job *)userData);
}

/* --- the renderer -------------------------------------------------------------------------- */

static void queue_meter(CUstream render, int *h_slot, CUdeviceptr d_bus, struct meter_job *job)
{
	job->samples = h_slot;
	DCHECK(cuMemcpyDtoHAsync(h_slot, d_bus, FRAMES * sizeof(int), render)); // SYNCSPY-PROBLEM: the meter's download, queued on the render stream: the next block's synthesis waits for it
	DCHECK(cuStreamAddCallback(render, meter_callback, job, 0)); // SYNCSPY-PROBLEM: the meter runs in the render stream: later work waits for the callback
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction synth;
	CUstream render;
	CUdeviceptr d_bus;
	int *h_ring;
	static struct meter_job jobs[BLOCKS];

	DCHECK(cuModuleGetFunction(&synth, module, "synth_voices"));
	DCHECK(cuStreamCreate(&render, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_bus, FRAMES * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&h_ring, (size_t)RING * FRAMES * sizeof(int))); // SYNCSPY-CLEAN: setup pinned ring

	for (int b = 0; b < BLOCKS; b++) {
		int frames = FRAMES, voices = VOICES;
		void *args[] = {&d_bus, &frames, &voices, &b};
		DCHECK(cuLaunchKernel(synth, FRAMES / THREADS, 1, 1, THREADS, 1, 1, 0, render, args, NULL));
		queue_meter(render, h_ring + (size_t)(b % RING) * FRAMES, d_bus, &jobs[b]);
	}
	DCHECK(cuStreamSynchronize(render)); // SYNCSPY-CLEAN: the one wait, after the last block is metered

	/* self-check: the last blocks' samples against the host synthesizer, and their metering */
	for (int b = BLOCKS - RING; b < BLOCKS; b++) {
		const int *slot = h_ring + (size_t)(b % RING) * FRAMES;
		for (int k = 0; k < CHECKED; k++) {
			int t = (int)(((uint32_t)k * 2654435761u) % FRAMES);
			int want = synth_host(b, t);
			if (slot[t] != want) {
				fprintf(stderr, "d33: block %d sample %d = %d, want %d\n", b, t, slot[t], want);
				return 1;
			}
		}
		struct meter_job again;
		again.samples = slot;
		measure(&again);
		if (again.gated_ms != jobs[b].gated_ms || again.gated != jobs[b].gated || again.peak != jobs[b].peak) {
			fprintf(stderr, "d33: block %d metered %lld/%d/%d, want %lld/%d/%d\n", b, jobs[b].gated_ms, jobs[b].gated, jobs[b].peak, again.gated_ms, again.gated, again.peak);
			return 1;
		}
	}
	unsigned long long checksum = 0;
	for (int b = 0; b < BLOCKS; b++)
		checksum = checksum * 1000003u + (unsigned long long)jobs[b].gated_ms * 31u + (unsigned long long)jobs[b].gated * 7u + (unsigned long long)jobs[b].peak;

	DCHECK(cuMemFree(d_bus)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_ring)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(render));
	driver_teardown(module);
	printf("d33_mixdown_meter_callback_on_render_stream: steps=%d checksum=%llu result=OK\n", BLOCKS, checksum);
	return 0;
}
