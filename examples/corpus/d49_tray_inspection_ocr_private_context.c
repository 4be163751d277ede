/*
 * examples/corpus/d49_tray_inspection_ocr_private_context.c: corpus workload (CUDA driver API). A
 * tray inspection station: every frame shows a tray of 64 machined parts; the station's own
 * gauge stage fits each part's reference edge by RANSAC (1024 edge points, 12288 line hypotheses a
 * part, one block a part) on a non-blocking stream of the primary context, and a vendor OCR
 * engine (a C library: ocr_create / ocr_submit / ocr_collect / ocr_destroy) reads each part's
 * eight-character laser-marked serial by template matching, one block a part, on a stream of its
 * own. Both read the frame from a pinned, portable two-slot frame ring; the host checks frame f-1
 * while frame f runs. Each stage launches 64 blocks, about half the SMs of an H100, and is
 * latency-bound, so the two were meant to run side by side. But ocr_create() makes the engine a
 * context of its own with cuCtxCreate, "for isolation", as many codec samples and plugins do,
 * instead of retaining the device's primary context. The CUDA programming guide (concurrent kernel
 * execution): "A kernel from one CUDA context cannot execute concurrently with a kernel from
 * another CUDA context. The GPU may time slice to provide forward progress to each context." The
 * gauge fit (1-2 ms) and the OCR kernel (about 1 ms) of every frame run one after the other, with
 * context switches between them, instead of side by side: the frame's GPU time is their sum, not
 * the longer of the two. Retaining the primary context (cuDevicePrimaryCtxRetain, released with
 * cuDevicePrimaryCtxRelease) fixes it (d51).
 * Planted: the cuCtxCreate in ocr_create() and the cuCtxDestroy in ocr_destroy() (one problem,
 * two lines: the engine's private context, whose cost falls on every frame).
 * Clean: the setup allocations and the font upload, the per-frame async uploads from the pinned
 * frame ring and downloads into pinned result rings, the cuEventSynchronize of each stage on the
 * frame one behind, teardown.
 *   d49_tray_inspection_ocr_private_context driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 60, PARTS = 64, POINTS = 1024, HYPS = 48, THREADS = 256, THR2 = 4, SLOTS_RING = 2 };
#define SEED 0x00c0ffeeu
enum { CLASSES = 36, CHARS = 8, GLYPH_W = 16, GLYPH_H = 24, CHAR_PITCH = 18, SEARCH = 11 };
enum { CROP_W = (CHARS - 1) * CHAR_PITCH + GLYPH_W + SEARCH - 1, CROP_H = GLYPH_H + SEARCH - 1, NOISE = 1 << 16, CHECKS = 2, PROBES = 16 };

struct tray_frame { uint32_t points[PARTS][POINTS]; unsigned char crops[PARTS][CROP_H][CROP_W]; };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* --- the vendor OCR engine ------------------------------------------------------------------ */

struct ocr_engine {
	CUcontext ctx;
	CUmodule mod;
	CUfunction match;
	CUstream s;
	CUdeviceptr d_font, d_crops, d_best;
	unsigned long long *h_best; /* pinned, SLOTS_RING frames of PARTS * CHARS results */
	CUevent done[SLOTS_RING];
};

static struct ocr_engine *ocr_create(CUdevice dev, const char *cubin, const unsigned char *font)
{
	struct ocr_engine *o = (struct ocr_engine *)calloc(1, sizeof *o);
	DCHECK(cuCtxCreate(&o->ctx, NULL, 0, dev)); // SYNCSPY-PROBLEM: the engine's private context: its kernels cannot run beside the primary context's, every frame
	DCHECK(cuModuleLoad(&o->mod, cubin)); // SYNCSPY-CLEAN: setup, the engine's kernels
	DCHECK(cuModuleGetFunction(&o->match, o->mod, "ocr_glyph_match"));
	DCHECK(cuStreamCreate(&o->s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&o->d_font, CLASSES * GLYPH_W * GLYPH_H)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&o->d_crops, sizeof(((struct tray_frame *)0)->crops))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&o->d_best, PARTS * CHARS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&o->h_best, SLOTS_RING * PARTS * CHARS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned result ring
	DCHECK(cuMemcpyHtoD(o->d_font, font, CLASSES * GLYPH_W * GLYPH_H)); // SYNCSPY-CLEAN: setup, the font uploaded once
	for (int k = 0; k < SLOTS_RING; k++)
		DCHECK(cuEventCreate(&o->done[k], CU_EVENT_DISABLE_TIMING));
	DCHECK(cuCtxPopCurrent(NULL));
	return o;
}

static void ocr_submit(struct ocr_engine *o, int f, const unsigned char *crops)
{
	int cw = CROP_W, ch = CROP_H, gw = GLYPH_W, gh = GLYPH_H, classes = CLASSES, chars = CHARS, pitch = CHAR_PITCH, search = SEARCH;
	DCHECK(cuCtxPushCurrent(o->ctx));
	DCHECK(cuMemcpyHtoDAsync(o->d_crops, crops, sizeof(((struct tray_frame *)0)->crops), o->s)); // SYNCSPY-CLEAN: async upload of the crops from the caller's pinned frame
	DCHECK(cuMemsetD32Async(o->d_best, 0xffffffffu, PARTS * CHARS * 2, o->s));
	void *args[] = {&o->d_crops, &cw, &ch, &o->d_font, &gw, &gh, &classes, &chars, &pitch, &search, &o->d_best};
	DCHECK(cuLaunchKernel(o->match, PARTS, 1, 1, THREADS, 1, 1, 0, o->s, args, NULL));
	DCHECK(cuMemcpyDtoHAsync(o->h_best + (size_t)(f % SLOTS_RING) * PARTS * CHARS, o->d_best, PARTS * CHARS * sizeof(unsigned long long), o->s)); // SYNCSPY-CLEAN: async download into the pinned result ring
	DCHECK(cuEventRecord(o->done[f % SLOTS_RING], o->s));
	DCHECK(cuCtxPopCurrent(NULL));
}

static const unsigned long long *ocr_collect(struct ocr_engine *o, int f)
{
	DCHECK(cuCtxPushCurrent(o->ctx));
	DCHECK(cuEventSynchronize(o->done[f % SLOTS_RING])); // SYNCSPY-CLEAN: the caller collects the frame one behind
	DCHECK(cuCtxPopCurrent(NULL));
	return o->h_best + (size_t)(f % SLOTS_RING) * PARTS * CHARS;
}

static void ocr_destroy(struct ocr_engine *o)
{
	DCHECK(cuCtxPushCurrent(o->ctx));
	for (int k = 0; k < SLOTS_RING; k++)
		DCHECK(cuEventDestroy(o->done[k]));
	DCHECK(cuMemFree(o->d_font)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(o->d_crops)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(o->d_best)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(o->h_best)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(o->s));
	DCHECK(cuModuleUnload(o->mod)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuCtxDestroy(o->ctx)); // SYNCSPY-PROBLEM: the private context's other end (the fix releases the primary context instead)
	free(o);
}

/* --- the tray: edge points and laser-marked serials ------------------------------------------ */

static int part_char(int f, int part, int k) { return (int)(mix32((uint32_t)(f * PARTS + part) * 0x9e3779b9u + (uint32_t)k) % CLASSES); }
static int part_offset(int f, int part) { return (int)(mix32((uint32_t)(f * PARTS + part) * 0x85ebca6bu + 77u) % (SEARCH * SEARCH)); }

static void capture(int f, const unsigned char *font, const unsigned char *noise, struct tray_frame *t)
{
	for (int p = 0; p < PARTS; p++) {
		uint32_t h = mix32((uint32_t)(f * PARTS + p) + 0x51ed27u);
		int cx = 200 + (p % 8) * 200, cy = 200 + (p / 8) * 200, dx = (int)(h % 61u) - 30, dy = 32;
		for (int i = 0; i < POINTS; i++) {
			uint32_t r = mix32(h + (uint32_t)i * 0x27d4eb2fu);
			int tpos = i % 160 - 80, edge = r % 10u < 7u; /* 70% on the edge (+-1 pixel), the rest clutter */
			int x = edge ? cx + tpos * dx / 32 + (int)(r >> 8) % 3 - 1 : cx + (int)((r >> 8) % 161u) - 80;
			int y = edge ? cy + tpos * dy / 32 + (int)(r >> 12) % 3 - 1 : cy + (int)((r >> 20) % 161u) - 80;
			t->points[p][i] = (uint32_t)x | (uint32_t)y << 16;
		}
		int off = part_offset(f, p), ox = off % SEARCH, oy = off / SEARCH;
		for (int y = 0; y < CROP_H; y++)
			memcpy(t->crops[p][y], noise + (size_t)((f * 7919 + p * 131 + y * CROP_W) % (NOISE - CROP_W)), CROP_W);
		for (int k = 0; k < CHARS; k++)
			for (int y = 0; y < GLYPH_H; y++)
				for (int x = 0; x < GLYPH_W; x++) {
					unsigned char *px = &t->crops[p][oy + y][k * CHAR_PITCH + ox + x];
					*px = (unsigned char)(font[(part_char(f, p, k) * GLYPH_H + y) * GLYPH_W + x] + (*px & 7u));
				}
	}
}

/* --- the host's checks, one frame behind ------------------------------------------------------- */

static unsigned int gauge_score(const uint32_t *pts, int p, unsigned int h)
{
	unsigned int r = mix32(SEED * 0x9e3779b1u ^ (uint32_t)p * 0x85ebca77u ^ h * 0xc2b2ae3du); /* the kernel's ransac_hash */
	int i = (int)(r % POINTS), j = (int)((i + 1 + (r >> 16) % (POINTS - 1)) % POINTS);
	int xi = (int)(pts[i] & 0xffffu), yi = (int)(pts[i] >> 16), xj = (int)(pts[j] & 0xffffu), yj = (int)(pts[j] >> 16);
	int a = yj - yi, b = xi - xj, c = -(a * xi + b * yi);
	long long lim = (long long)THR2 * (a * a + b * b);
	unsigned int n = 0;
	for (int q = 0; q < POINTS && (a || b); q++) {
		long long e = a * (int)(pts[q] & 0xffffu) + b * (int)(pts[q] >> 16) + c;
		n += e * e <= lim;
	}
	return n;
}

static unsigned int glyph_sad(const unsigned char (*crop)[CROP_W], const unsigned char *font, int k, unsigned int u)
{
	int cls = (int)u / (SEARCH * SEARCH), off = (int)u % (SEARCH * SEARCH);
	unsigned int sad = 0;
	for (int y = 0; y < GLYPH_H; y++)
		for (int x = 0; x < GLYPH_W; x++) {
			int d = crop[off / SEARCH + y][k * CHAR_PITCH + off % SEARCH + x] - font[(cls * GLYPH_H + y) * GLYPH_W + x];
			sad += (unsigned int)(d < 0 ? -d : d);
		}
	return sad;
}

static void check_frame(int f, const struct tray_frame *t, const unsigned char *font, const unsigned long long *gauges, const unsigned long long *reads, unsigned long long *found, unsigned long long *read_ok)
{
	for (int p = 0; p < PARTS; p++) {
		*found += (gauges[p] >> 32) >= POINTS * 2 / 5;
		for (int k = 0; k < CHARS; k++)
			*read_ok += (int)(reads[p * CHARS + k] & 0xffffffffu) == part_char(f, p, k) * SEARCH * SEARCH + part_offset(f, p);
	}
	for (int n = 0; n < CHECKS; n++) {
		int p = (f * 5 + n * 29) % PARTS;
		unsigned int h = 0xffffffffu - (unsigned int)(gauges[p] & 0xffffffffu);
		int bad = gauge_score(t->points[p], p, h) != (unsigned int)(gauges[p] >> 32);
		for (int q = 0; q < PROBES; q++) {
			unsigned int h2 = mix32((uint32_t)(f * 64 + q)) % (HYPS * THREADS);
			bad |= ((unsigned long long)gauge_score(t->points[p], p, h2) << 32 | (0xffffffffu - h2)) > gauges[p];
		}
		for (int k = 0; k < CHARS; k++) {
			unsigned long long best = reads[p * CHARS + k];
			bad |= glyph_sad(t->crops[p], font, k, (unsigned int)best) != (unsigned int)(best >> 32);
			for (int q = 0; q < PROBES; q++) {
				unsigned int u = mix32((uint32_t)(f * 977 + k * 31 + q)) % (CLASSES * SEARCH * SEARCH);
				bad |= ((unsigned long long)glyph_sad(t->crops[p], font, k, u) << 32 | u) < best;
			}
		}
		if (bad) {
			fprintf(stderr, "d49: frame %d part %d: a result is not the best of its hypotheses\n", f, p);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUdevice dev;
	CUfunction fit;
	CUstream s;
	CUevent fitted[SLOTS_RING];
	CUdeviceptr d_points, d_best;
	struct tray_frame *ring;
	unsigned long long *h_best, found = 0, read_ok = 0;
	unsigned char *font = (unsigned char *)malloc(CLASSES * GLYPH_W * GLYPH_H), *noise = (unsigned char *)malloc(NOISE);
	int npts = POINTS, hyps = HYPS, thr2 = THR2;
	unsigned int seed = SEED;

	DCHECK(cuCtxGetDevice(&dev));
	DCHECK(cuModuleGetFunction(&fit, module, "ransac_line_gauge"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&d_points, sizeof ring->points)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_best, PARTS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemHostAlloc((void **)&ring, SLOTS_RING * sizeof *ring, CU_MEMHOSTALLOC_PORTABLE)); // SYNCSPY-CLEAN: setup, the pinned frame ring, portable so that the OCR engine may copy from it
	DCHECK(cuMemAllocHost((void **)&h_best, SLOTS_RING * PARTS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned result ring
	for (int k = 0; k < SLOTS_RING; k++)
		DCHECK(cuEventCreate(&fitted[k], CU_EVENT_DISABLE_TIMING));
	for (int i = 0; i < CLASSES * GLYPH_W * GLYPH_H; i++) /* the engine's font: 4x6-cell bitmaps scaled to 16x24 */
		font[i] = mix32((uint32_t)(i / (GLYPH_W * GLYPH_H)) * 977u + (uint32_t)(i / GLYPH_W % GLYPH_H / 4) * 31u + (uint32_t)(i % GLYPH_W / 4)) & 1u ? 220 : 30;
	for (int i = 0; i < NOISE; i++)
		noise[i] = (unsigned char)(mix32((uint32_t)i) & 31u);
	struct ocr_engine *ocr = ocr_create(dev, argv[1], font);

	for (int f = 0; f < FRAMES; f++) {
		struct tray_frame *t = &ring[f % SLOTS_RING]; /* last held frame f - 2, collected and checked last iteration */
		capture(f, font, noise, t);
		DCHECK(cuMemcpyHtoDAsync(d_points, t->points, sizeof t->points, s)); // SYNCSPY-CLEAN: async upload of the edge points from the pinned frame
		DCHECK(cuMemsetD32Async(d_best, 0u, PARTS * 2, s));
		void *args[] = {&d_points, &npts, &hyps, &seed, &thr2, &d_best};
		DCHECK(cuLaunchKernel(fit, PARTS, 1, 1, THREADS, 1, 1, 0, s, args, NULL));
		DCHECK(cuMemcpyDtoHAsync(h_best + (f % SLOTS_RING) * PARTS, d_best, PARTS * sizeof(unsigned long long), s)); // SYNCSPY-CLEAN: async download into the pinned result ring
		DCHECK(cuEventRecord(fitted[f % SLOTS_RING], s));
		ocr_submit(ocr, f, &t->crops[0][0][0]);
		if (f >= 1) {
			int m = f - 1;
			DCHECK(cuEventSynchronize(fitted[m % SLOTS_RING])); // SYNCSPY-CLEAN: the gauge results of the frame one behind
			check_frame(m, &ring[m % SLOTS_RING], font, h_best + (m % SLOTS_RING) * PARTS, ocr_collect(ocr, m), &found, &read_ok);
		}
	}
	DCHECK(cuEventSynchronize(fitted[(FRAMES - 1) % SLOTS_RING])); // SYNCSPY-CLEAN: the final wait
	check_frame(FRAMES - 1, &ring[(FRAMES - 1) % SLOTS_RING], font, h_best + ((FRAMES - 1) % SLOTS_RING) * PARTS, ocr_collect(ocr, FRAMES - 1), &found, &read_ok);
	if (found * 100 < (unsigned long long)FRAMES * PARTS * 95 || read_ok * 100 < (unsigned long long)FRAMES * PARTS * CHARS * 99) {
		fprintf(stderr, "d49: %llu edges found, %llu characters read\n", found, read_ok);
		return 1;
	}

	ocr_destroy(ocr);
	for (int k = 0; k < SLOTS_RING; k++)
		DCHECK(cuEventDestroy(fitted[k]));
	DCHECK(cuMemFree(d_points)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_best)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(ring)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_best)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	free(font);
	free(noise);
	driver_teardown(module);
	printf("d49_tray_inspection_ocr_private_context: frames=%d edges=%llu chars=%llu result=OK\n", FRAMES, found, read_ok);
	return 0;
}
