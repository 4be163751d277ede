/*
 * examples/corpus/d18_pitch_alloc_per_frame.c: corpus workload (CUDA driver API). A broadcast
 * frame analyser: every 1920x1080 frame is uploaded into a pitched device surface with
 * cuMemcpy2DAsync from pinned memory, a blur-and-sum kernel measures it, and the operator's
 * region of interest (a 256x128 window) is copied back into a pinned preview ring with
 * cuMemcpy2DAsync; the host shows the preview of the frame two behind the newest after waiting
 * on that frame's event (the ring's wait). The surface is a per-frame object:
 * surface_acquire() allocates it with cuMemAllocPitch for every frame and surface_release()
 * frees it with cuMemFree once the frame's event has been waited on. An allocation and a free
 * of an 8 MB surface every frame (driver API docs: cuMemFree may synchronize; the programming
 * guide lists a device memory allocation among the implicit synchronization points), where two
 * surfaces allocated once, reused in turn, would do.
 * Planted: the cuMemAllocPitch in surface_acquire() and the cuMemFree in surface_release(),
 * every frame.
 * Clean: the per-frame cuMemcpy2DAsync upload from pinned memory and ROI download into pinned
 * memory, the preview ring's cuEventSynchronize on the frame two behind, the setup
 * allocations, the final synchronize and read, teardown.
 *   d18_pitch_alloc_per_frame driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 48, W = 1920, H = 1080, SOURCES = 4, THREADS = 256, RING = 2 };
enum { ROI_X = 480, ROI_Y = 270, ROI_W = 256, ROI_H = 128 };

struct surface {
	CUdeviceptr ptr;
	size_t pitch;
};

static uint32_t source_pixel(int src, int x, int y)
{
	uint32_t h = ((uint32_t)x * 73856093u) ^ ((uint32_t)y * 19349663u) ^ ((uint32_t)src * 83492791u);
	return (h ^ (h >> 13)) * 0x5bd1e995u;
}

/* --- the per-frame surface --------------------------------------------------------------- */

static void surface_acquire(struct surface *sf)
{
	DCHECK(cuMemAllocPitch(&sf->ptr, &sf->pitch, W * sizeof(uint32_t), H, sizeof(uint32_t))); // SYNCSPY-PROBLEM: a new pitched surface every frame
}

static void surface_upload(struct surface *sf, const uint32_t *h_frame, CUstream s)
{
	CUDA_MEMCPY2D cp;
	memset(&cp, 0, sizeof cp);
	cp.srcMemoryType = CU_MEMORYTYPE_HOST;
	cp.srcHost = h_frame;
	cp.srcPitch = W * sizeof(uint32_t);
	cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.dstDevice = sf->ptr;
	cp.dstPitch = sf->pitch;
	cp.WidthInBytes = W * sizeof(uint32_t);
	cp.Height = H;
	DCHECK(cuMemcpy2DAsync(&cp, s)); // SYNCSPY-CLEAN: async 2D upload from pinned memory
}

static void surface_download_roi(struct surface *sf, uint32_t *h_roi, CUstream s)
{
	CUDA_MEMCPY2D cp;
	memset(&cp, 0, sizeof cp);
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = sf->ptr;
	cp.srcPitch = sf->pitch;
	cp.srcXInBytes = ROI_X * sizeof(uint32_t);
	cp.srcY = ROI_Y;
	cp.dstMemoryType = CU_MEMORYTYPE_HOST;
	cp.dstHost = h_roi;
	cp.dstPitch = ROI_W * sizeof(uint32_t);
	cp.WidthInBytes = ROI_W * sizeof(uint32_t);
	cp.Height = ROI_H;
	DCHECK(cuMemcpy2DAsync(&cp, s)); // SYNCSPY-CLEAN: async 2D download into the pinned preview ring
}

static void surface_release(struct surface *sf)
{
	DCHECK(cuMemFree(sf->ptr)); // SYNCSPY-PROBLEM: the frame's surface freed every frame
}

/* --- the operator preview ---------------------------------------------------------------- */

static unsigned long long preview_show(const uint32_t *roi, int frame)
{
	const int src = frame % SOURCES;
	unsigned long long digest = 0;
	for (int y = 0; y < ROI_H; y++)
		for (int x = 0; x < ROI_W; x++) {
			uint32_t want = source_pixel(src, ROI_X + x, ROI_Y + y);
			if (roi[y * ROI_W + x] != want) {
				fprintf(stderr, "d18: frame %d preview (%d,%d) = %u, want %u\n", frame, x, y, roi[y * ROI_W + x], want);
				exit(1);
			}
			digest = digest * 31u + roi[y * ROI_W + x];
		}
	return digest;
}

static unsigned long long reference_sum(const uint32_t *img)
{
	unsigned long long sum = 0;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			const uint32_t *row = img + (size_t)y * W;
			uint32_t l = row[x > 0 ? x - 1 : 0], c = row[x], r = row[x < W - 1 ? x + 1 : W - 1];
			sum += ((l >> 2) + (c >> 1) + (r >> 2)) >> 4;
		}
	return sum;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction blur_sum;
	CUstream s;
	CUevent shown[RING];
	CUdeviceptr d_sums;
	uint32_t *h_sources, *h_roi;
	unsigned long long *h_sums, preview_digest = 0;
	struct surface surf[RING];
	const size_t frame_px = (size_t)W * H;
	int width = W, height = H;

	DCHECK(cuModuleGetFunction(&blur_sum, module, "blur_sum_pitched"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < RING; k++)
		DCHECK(cuEventCreate(&shown[k], CU_EVENT_DISABLE_TIMING));
	DCHECK(cuMemAllocHost((void **)&h_sources, SOURCES * frame_px * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAllocHost((void **)&h_roi, RING * ROI_W * ROI_H * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAllocHost((void **)&h_sums, FRAMES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAlloc(&d_sums, FRAMES * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(d_sums, 0, FRAMES * 2, s));
	for (int src = 0; src < SOURCES; src++)
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				h_sources[src * frame_px + (size_t)y * W + x] = source_pixel(src, x, y);

	for (int frame = 0; frame < FRAMES; frame++) {
		int slot = frame % RING;
		struct surface *sf = &surf[slot];
		CUdeviceptr sum_slot = d_sums + (size_t)frame * sizeof(unsigned long long);
		if (frame >= RING) {
			DCHECK(cuEventSynchronize(shown[slot])); // SYNCSPY-CLEAN: the preview ring's wait, on the frame two behind
			preview_digest = preview_digest * 1000003u + preview_show(h_roi + slot * ROI_W * ROI_H, frame - RING);
			surface_release(sf);
		}
		surface_acquire(sf);
		surface_upload(sf, h_sources + (frame % SOURCES) * frame_px, s);
		void *args[] = {&sf->ptr, &sf->pitch, &width, &height, &sum_slot};
		DCHECK(cuLaunchKernel(blur_sum, (W + THREADS - 1) / THREADS, H, 1, THREADS, 1, 1, 0, s, args, NULL));
		surface_download_roi(sf, h_roi + slot * ROI_W * ROI_H, s);
		DCHECK(cuEventRecord(shown[slot], s));
	}

	DCHECK(cuMemcpyDtoHAsync(h_sums, d_sums, FRAMES * sizeof(unsigned long long), s)); // SYNCSPY-CLEAN: final read
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	for (int frame = FRAMES - RING; frame < FRAMES; frame++) {
		preview_digest = preview_digest * 1000003u + preview_show(h_roi + (frame % RING) * ROI_W * ROI_H, frame);
		surface_release(&surf[frame % RING]);
	}

	unsigned long long want[SOURCES], checksum = preview_digest;
	for (int src = 0; src < SOURCES; src++)
		want[src] = reference_sum(h_sources + src * frame_px);
	for (int frame = 0; frame < FRAMES; frame++) {
		if (h_sums[frame] != want[frame % SOURCES]) {
			fprintf(stderr, "d18: frame %d sum = %llu, want %llu\n", frame, h_sums[frame], want[frame % SOURCES]);
			return 1;
		}
		checksum = checksum * 1000003u + h_sums[frame];
	}
	for (int k = 0; k < RING; k++)
		DCHECK(cuEventDestroy(shown[k]));
	DCHECK(cuMemFree(d_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_sources)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_roi)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	printf("d18_pitch_alloc_per_frame: steps=%d checksum=%llu result=OK\n", FRAMES, checksum);
	return 0;
}
