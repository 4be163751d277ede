/*
 * examples/corpus/d23_invariant_lut_upload.c: corpus workload (CUDA driver API). A colour
 * grading pass over a video stream: each 1920x1080 frame is uploaded from pinned staging with
 * cuMemcpyHtoDAsync on the grading stream, and a kernel maps every channel through the grade's
 * lookup tables (three 256-entry curves), adding the graded frame's channel sum into the frame's
 * slot. The curves are built once, when the grade is loaded, into malloc'd memory, and never
 * change; but the pass's helper apply_grade() uploads them again with cuMemcpyHtoD before every
 * frame. A host-to-device cuMemcpyHtoD from pageable memory is synchronous (driver API docs,
 * "API synchronization behavior": it returns once the pageable buffer has been staged, after a
 * stream sync), and on the legacy NULL stream it waits for the blocking grading stream's
 * previous frame: the host can never queue a frame ahead, for a table already on the device.
 * Planted: the cuMemcpyHtoD of the unchanged curves in apply_grade(), every frame.
 * Clean: the per-frame cuMemcpyHtoDAsync from pinned staging, the setup allocations, the final
 * reads, teardown.
 *   d23_invariant_lut_upload driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 48, W = 1920, H = 1080, NPIX = W * H, SOURCES = 3, THREADS = 256, LUT = 3 * 256 };

struct grade {
	uint32_t *curves; /* malloc'd, LUT entries: red, green, blue */
	CUdeviceptr d_curves;
	CUfunction apply;
};

static uint32_t source_pixel(int src, int i)
{
	uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)src * 0x9e3779b9u;
	return ((h ^ (h >> 15)) * 0x2c1b3c6du) & 0x00ffffffu;
}

static void grade_load(struct grade *g)
{
	g->curves = (uint32_t *)malloc(LUT * sizeof(uint32_t));
	for (int c = 0; c < 3; c++)
		for (int v = 0; v < 256; v++) {
			int lifted = v + (c == 2 ? 12 : 4) - (v * v) / (c == 0 ? 1024 : 2048);
			g->curves[c * 256 + v] = (uint32_t)(lifted < 0 ? 0 : lifted > 255 ? 255 : lifted);
		}
}

/* --- the grading pass ---------------------------------------------------------------------- */

static void apply_grade(struct grade *g, CUdeviceptr in, CUdeviceptr out, CUdeviceptr sum_slot, CUstream s)
{
	int n = NPIX;
	DCHECK(cuMemcpyHtoD(g->d_curves, g->curves, LUT * sizeof(uint32_t))); // SYNCSPY-PROBLEM: the unchanged curves uploaded again, blocking, every frame
	void *args[] = {&in, &out, &g->d_curves, &n, &sum_slot};
	DCHECK(cuLaunchKernel(g->apply, NPIX / THREADS, 1, 1, THREADS, 1, 1, 0, s, args, NULL));
}

static unsigned long long reference_sum(const struct grade *g, int src)
{
	unsigned long long s = 0;
	for (int i = 0; i < NPIX; i++) {
		uint32_t p = source_pixel(src, i);
		s += g->curves[p & 255u] + g->curves[256 + ((p >> 8) & 255u)] + g->curves[512 + ((p >> 16) & 255u)];
	}
	return s;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct grade g;
	CUstream s;
	CUdeviceptr d_in, d_out, d_sums;
	uint32_t *h_frames, *h_last = (uint32_t *)malloc((size_t)NPIX * sizeof(uint32_t));
	unsigned long long h_sums[FRAMES];

	grade_load(&g);
	DCHECK(cuModuleGetFunction(&g.apply, module, "apply_lut_rgb"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
	DCHECK(cuMemAllocHost((void **)&h_frames, (size_t)SOURCES * NPIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAlloc(&g.d_curves, LUT * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_in, (size_t)NPIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_out, (size_t)NPIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_sums, sizeof h_sums)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(d_sums, 0u, 2 * FRAMES, s));
	for (int src = 0; src < SOURCES; src++)
		for (int i = 0; i < NPIX; i++)
			h_frames[(size_t)src * NPIX + i] = source_pixel(src, i);

	for (int frame = 0; frame < FRAMES; frame++) {
		const uint32_t *h_src = h_frames + (size_t)(frame % SOURCES) * NPIX;
		DCHECK(cuMemcpyHtoDAsync(d_in, h_src, (size_t)NPIX * sizeof(uint32_t), s)); // SYNCSPY-CLEAN: async upload of the frame from pinned staging
		apply_grade(&g, d_in, d_out, d_sums + (size_t)frame * sizeof(unsigned long long), s);
	}

	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: once, after the last frame
	DCHECK(cuMemcpyDtoH(h_sums, d_sums, sizeof h_sums)); // SYNCSPY-CLEAN: final read of the frame sums
	DCHECK(cuMemcpyDtoH(h_last, d_out, (size_t)NPIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: final read of the last graded frame

	unsigned long long want[SOURCES], checksum = 0;
	for (int src = 0; src < SOURCES; src++)
		want[src] = reference_sum(&g, src);
	for (int frame = 0; frame < FRAMES; frame++) {
		if (h_sums[frame] != want[frame % SOURCES]) {
			fprintf(stderr, "d23: frame %d sum = %llu, want %llu\n", frame, h_sums[frame], want[frame % SOURCES]);
			return 1;
		}
		checksum = checksum * 1000003u + h_sums[frame];
	}
	for (int i = 0; i < NPIX; i++) {
		uint32_t p = source_pixel((FRAMES - 1) % SOURCES, i);
		uint32_t v = g.curves[p & 255u] | (g.curves[256 + ((p >> 8) & 255u)] << 8) | (g.curves[512 + ((p >> 16) & 255u)] << 16);
		if (h_last[i] != v) {
			fprintf(stderr, "d23: pixel %d = %u, want %u\n", i, h_last[i], v);
			return 1;
		}
	}

	DCHECK(cuMemFree(g.d_curves)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_in)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_out)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_frames)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(g.curves);
	free(h_last);
	printf("d23_invariant_lut_upload: steps=%d checksum=%llu result=OK\n", FRAMES, checksum);
	return 0;
}
