/*
 * examples/corpus/d37_video_denoise_pacer_waits_newest_frame.c: corpus workload (CUDA driver
 * API). The denoising stage of a video transcoder for 10-bit 720p luma: the host decodes each
 * frame into one of two pinned staging slots, the frame is uploaded asynchronously, a
 * non-local-means kernel (15x15 search window, 3x3 patches) denoises it, and the result is
 * downloaded asynchronously into one of two pinned output slots; the host's scopes (a luma
 * histogram and mean on every second row) run one frame behind. A frame pacer keeps at most two
 * frames in flight: before the host decodes frame f+1 into a slot and reads frame f-1's output
 * out of it, it must wait for the frame that last used that slot, frame f-1. pacer_wait() is
 * handed the slot of the frame just submitted (f % DEPTH) instead of the slot the next frame
 * reuses ((f + 1) % DEPTH), so it waits on the event recorded a few microseconds earlier, behind
 * the newest frame's upload, denoise and download. The driver API reference (cuEventSynchronize):
 * "Waits until the completion of all work currently captured in hEvent". Every frame the GPU
 * drains, and it idles while the host runs the scopes and decodes the next frame (about half a
 * frame's GPU time); the one-behind wait of d38 overlaps the two.
 * Planted: the cuEventSynchronize in pacer_wait(), every frame, on the newest frame's event.
 * Clean: the setup allocations, the per-frame pinned async upload and download, the final wait,
 * teardown.
 *   d37_video_denoise_pacer_waits_newest_frame driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 90, W = 1280, H = 720, PIX = W * H, RADIUS = 7, DEPTH = 2, CLIP = 8, BURN_W = 192, BURN_H = 24, BX = 32, BY = 8, LEVELS = 1024, CHECKED = 384 };

struct scopes {
	unsigned long long luma_sum;
	int median, used;
};

struct transcoder {
	CUfunction nlm;
	CUstream s;
	CUdeviceptr d_in, d_out;
	unsigned short *staging; /* pinned, DEPTH decoded frames */
	unsigned short *output;  /* pinned, DEPTH denoised frames */
	CUevent done[DEPTH];
	unsigned short *gop; /* the decoder's reference frames, CLIP of them */
	struct scopes scopes[FRAMES];
};

/* --- the decoder (a looping group of pictures, the frame number burnt in) ------------------ */

static unsigned short scene_pixel(int k, int x, int y)
{
	int v = 200 + ((x + 3 * k) & 255) + ((y >> 2) & 127);
	if (((x - 64 * k) & 511) < 96 && (y & 255) < 128)
		v += 300;
	uint32_t h = ((uint32_t)(x + 1) * 2654435761u) ^ ((uint32_t)(y + 7) * 40503u) ^ ((uint32_t)k * 0x9e3779b9u);
	h ^= h >> 13;
	h *= 0x5bd1e995u;
	h ^= h >> 15;
	v += (int)(h & 63u) - 32;
	return (unsigned short)v;
}

static void decode_frame(const struct transcoder *t, int f, unsigned short *dst)
{
	memcpy(dst, t->gop + (size_t)(f % CLIP) * PIX, PIX * sizeof(unsigned short));
	for (int y = 0; y < BURN_H; y++)
		for (int x = 0; x < BURN_W; x++)
			dst[y * W + x] = (unsigned short)((f * 37 + x * 5 + y * 11) & 1023);
}

/* --- the denoiser on the host, for the self-check ------------------------------------------- */

static int clampi(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

static unsigned short nlm_host(const unsigned short *in, int x, int y)
{
	int c[9];
	for (int py = -1; py <= 1; py++)
		for (int px = -1; px <= 1; px++)
			c[(py + 1) * 3 + px + 1] = in[clampi(y + py, H - 1) * W + clampi(x + px, W - 1)];
	unsigned int num = 0, den = 0;
	for (int dy = -RADIUS; dy <= RADIUS; dy++)
		for (int dx = -RADIUS; dx <= RADIUS; dx++) {
			unsigned int ssd = 0;
			for (int py = -1; py <= 1; py++)
				for (int px = -1; px <= 1; px++) {
					int d = c[(py + 1) * 3 + px + 1] - (int)in[clampi(y + dy + py, H - 1) * W + clampi(x + dx + px, W - 1)];
					ssd += (unsigned int)(d * d);
				}
			unsigned int s = ssd >> 10, wgt = s < 10u ? 1024u >> s : 1u;
			num += wgt * in[clampi(y + dy, H - 1) * W + clampi(x + dx, W - 1)];
			den += wgt;
		}
	return (unsigned short)(num / den);
}

/* --- the host's scopes: histogram and mean of every second row ------------------------------ */

static struct scopes run_scopes(const unsigned short *frame)
{
	static unsigned int hist[LEVELS];
	struct scopes sc = {0, 0, 0};
	memset(hist, 0, sizeof hist);
	for (int y = 0; y < H; y += 2)
		for (int x = 0; x < W; x++) {
			hist[frame[y * W + x] & (LEVELS - 1)]++;
			sc.luma_sum += frame[y * W + x];
		}
	unsigned int seen = 0, half = (unsigned int)(W * (H / 2)) / 2;
	sc.median = -1;
	for (int v = 0; v < LEVELS; v++) {
		sc.used += hist[v] != 0;
		seen += hist[v];
		if (sc.median < 0 && seen > half)
			sc.median = v;
	}
	return sc;
}

/* --- the pipeline ---------------------------------------------------------------------------- */

static void submit_frame(struct transcoder *t, int f)
{
	int slot = f % DEPTH, w = W, h = H, r = RADIUS;
	void *args[] = {&t->d_in, &t->d_out, &w, &h, &r};
	DCHECK(cuMemcpyHtoDAsync(t->d_in, t->staging + (size_t)slot * PIX, PIX * sizeof(unsigned short), t->s)); // SYNCSPY-CLEAN: async upload from the pinned staging slot
	DCHECK(cuLaunchKernel(t->nlm, W / BX, H / BY, 1, BX, BY, 1, 0, t->s, args, NULL));
	DCHECK(cuMemcpyDtoHAsync(t->output + (size_t)slot * PIX, t->d_out, PIX * sizeof(unsigned short), t->s)); // SYNCSPY-CLEAN: async download into the pinned output slot
	DCHECK(cuEventRecord(t->done[slot], t->s));
}

/* frame pacing: at most DEPTH frames in flight. Before the host decodes into a slot and reads the
 * slot's output, wait for the frame that last used it. */
static void pacer_wait(struct transcoder *t, int slot)
{
	DCHECK(cuEventSynchronize(t->done[slot])); // SYNCSPY-PROBLEM: handed the slot just submitted: waits for the newest frame, the GPU drains every frame
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	static struct transcoder t;
	unsigned short *frame = (unsigned short *)malloc(PIX * sizeof(unsigned short));

	t.gop = (unsigned short *)malloc((size_t)CLIP * PIX * sizeof(unsigned short));
	for (int k = 0; k < CLIP; k++)
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				t.gop[(size_t)k * PIX + y * W + x] = scene_pixel(k, x, y);
	DCHECK(cuModuleGetFunction(&t.nlm, module, "nlm_denoise_luma"));
	DCHECK(cuStreamCreate(&t.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&t.d_in, PIX * sizeof(unsigned short))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&t.d_out, PIX * sizeof(unsigned short))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&t.staging, (size_t)DEPTH * PIX * sizeof(unsigned short))); // SYNCSPY-CLEAN: setup pinned staging
	DCHECK(cuMemAllocHost((void **)&t.output, (size_t)DEPTH * PIX * sizeof(unsigned short))); // SYNCSPY-CLEAN: setup pinned output slots
	for (int k = 0; k < DEPTH; k++)
		DCHECK(cuEventCreate(&t.done[k], CU_EVENT_DISABLE_TIMING));

	decode_frame(&t, 0, t.staging);
	for (int f = 0; f < FRAMES; f++) {
		submit_frame(&t, f);
		pacer_wait(&t, f % DEPTH);
		if (f + 1 >= DEPTH) /* the scopes, one frame behind */
			t.scopes[f + 1 - DEPTH] = run_scopes(t.output + (size_t)((f + 1) % DEPTH) * PIX);
		if (f + 1 < FRAMES)
			decode_frame(&t, f + 1, t.staging + (size_t)((f + 1) % DEPTH) * PIX);
	}
	DCHECK(cuStreamSynchronize(t.s)); // SYNCSPY-CLEAN: the final wait, after the last frame
	for (int g = FRAMES + 1 - DEPTH; g < FRAMES; g++)
		t.scopes[g] = run_scopes(t.output + (size_t)(g % DEPTH) * PIX);

	/* self-check: sampled pixels of the last DEPTH frames against the host denoiser */
	for (int g = FRAMES - DEPTH; g < FRAMES; g++) {
		const unsigned short *out = t.output + (size_t)(g % DEPTH) * PIX;
		decode_frame(&t, g, frame);
		for (int k = 0; k < CHECKED; k++) {
			uint32_t hk = (uint32_t)(k + 1) * 2654435761u;
			int x = k < 8 ? (k & 1) * (W - 1) : (int)(hk % W), y = k < 8 ? (k >> 1 & 1) * (H - 1) : (int)((hk >> 11) % H);
			unsigned short want = nlm_host(frame, x, y);
			if (out[y * W + x] != want) {
				fprintf(stderr, "d37: frame %d pixel (%d,%d) = %u, want %u\n", g, x, y, out[y * W + x], want);
				return 1;
			}
		}
	}
	unsigned long long checksum = 0;
	for (int g = 0; g < FRAMES; g++)
		checksum = checksum * 1000003u + t.scopes[g].luma_sum * 31u + (unsigned long long)t.scopes[g].median * 7u + (unsigned long long)t.scopes[g].used;
	free(frame);
	free(t.gop);

	for (int k = 0; k < DEPTH; k++)
		DCHECK(cuEventDestroy(t.done[k]));
	DCHECK(cuMemFree(t.d_in)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(t.d_out)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(t.staging)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(t.output)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(t.s));
	driver_teardown(module);
	printf("d37_video_denoise_pacer_waits_newest_frame: steps=%d checksum=%llu result=OK\n", FRAMES, checksum);
	return 0;
}
