/*
 * examples/corpus/d50_clean_stereo_depth_grabber_2d_copies.c: corpus workload (CUDA driver API).
 * The depth stage of a bin-picking cell, d47 with its grabber glue fixed: a rectified pair of
 * 1936x1216 mono cameras is read through a frame grabber whose pinned DMA ring (three slots)
 * stores every line behind a 64-byte line header, a block-matching kernel computes each left
 * pixel's disparity (48 candidates, 7x7 sums of absolute differences), and the disparity map goes
 * into a pinned depth ring whose lines carry a 32-byte header for the robot controller; uploads,
 * matching and downloads run on three streams ordered by events, the images and maps
 * double-buffered on the device, and the host publishes each depth map one frame behind.
 * upload_camera() and download_depth() now move a whole image with one cuMemcpy2DAsync each: the
 * driver API's 2D copy takes the host side's line stride (srcPitch / dstPitch, srcXInBytes /
 * dstXInBytes past the header) and the device image's pitch, so the lines never need copying one
 * by one (the CUDA C++ Best Practices Guide: "batching many small transfers into one larger
 * transfer performs significantly better than making each transfer separately"). Three copies a
 * frame from pinned memory on copy streams, overlapping the matching kernel of the frame before
 * (about 3 ms a frame on an H100): the fix of d47.
 * Clean: the pitched device images and the pinned rings allocated at setup, the per-frame
 * cuMemcpy2DAsync uploads and download, the publisher's cuEventSynchronize on the frame one
 * behind, the final wait, teardown.
 *   d50_clean_stereo_depth_grabber_2d_copies driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { FRAMES = 32, W = 1936, H = 1216, LINE_HDR = 64, STRIDE = LINE_HDR + W, OUT_HDR = 32, OUT_STRIDE = OUT_HDR + W };
enum { MAX_DISP = 48, RADIUS = 3, THREADS = 128, GRAB_SLOTS = 3, DEPTH_SLOTS = 3, SETS = 2, BLOCK = 64, TEX_W = W + 112, SAMPLES = 16, CHECK_EVERY = 16 };
#define LINE_MAGIC 0x454e494cu /* "LINE" */
#define DEPTH_MAGIC 0x48545044u /* "DPTH" */

struct line_header { uint32_t magic, frame, line, camera; };
struct grab_frame { unsigned char cam[2][H][STRIDE]; }; /* left, right: one slot of the grabber's ring */
struct depth_frame { unsigned char line[H][OUT_STRIDE]; };
struct pitched { CUdeviceptr ptr; size_t pitch; };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* --- the scene: a random texture seen by both cameras, the left shifted by a blockwise disparity */

static int frame_offset(int f) { return MAX_DISP + (f * 13) % 64; }

static int true_disparity(int f, int x, int y)
{
	return 4 + (int)(mix32((uint32_t)(x / BLOCK) * 73856093u ^ (uint32_t)(y / BLOCK) * 19349663u ^ (uint32_t)(f / 8) * 83492791u) % 40u);
}

static void grab(const unsigned char *tex, int f, struct grab_frame *g)
{
	int off = frame_offset(f);
	for (int c = 0; c < 2; c++)
		for (int y = 0; y < H; y++) {
			struct line_header hdr = {LINE_MAGIC, (uint32_t)f, (uint32_t)y, (uint32_t)c};
			memset(g->cam[c][y], 0, LINE_HDR);
			memcpy(g->cam[c][y], &hdr, sizeof hdr);
			if (c == 1) {
				memcpy(g->cam[1][y] + LINE_HDR, tex + (size_t)y * TEX_W + off, W);
				continue;
			}
			for (int x = 0; x < W; x += BLOCK) {
				int n = W - x < BLOCK ? W - x : BLOCK;
				memcpy(g->cam[0][y] + LINE_HDR + x, tex + (size_t)y * TEX_W + off + x - true_disparity(f, x, y), (size_t)n);
			}
		}
}

/* --- the grabber glue: lines with headers to and from the pitched device images ---------------- */

static void upload_camera(unsigned char (*lines)[STRIDE], struct pitched img, CUstream s)
{
	CUDA_MEMCPY2D cp;
	memset(&cp, 0, sizeof cp);
	cp.srcMemoryType = CU_MEMORYTYPE_HOST;
	cp.srcHost = lines;
	cp.srcXInBytes = LINE_HDR; /* the pixels sit behind each line's header */
	cp.srcPitch = STRIDE;
	cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.dstDevice = img.ptr;
	cp.dstPitch = img.pitch;
	cp.WidthInBytes = W;
	cp.Height = H;
	DCHECK(cuMemcpy2DAsync(&cp, s)); // SYNCSPY-CLEAN: the camera's image in one async 2D copy from the pinned grabber slot
}

static void download_depth(struct pitched disp, struct depth_frame *out, CUstream s)
{
	CUDA_MEMCPY2D cp;
	memset(&cp, 0, sizeof cp);
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = disp.ptr;
	cp.srcPitch = disp.pitch;
	cp.dstMemoryType = CU_MEMORYTYPE_HOST;
	cp.dstHost = out;
	cp.dstXInBytes = OUT_HDR; /* behind the controller's line header */
	cp.dstPitch = OUT_STRIDE;
	cp.WidthInBytes = W;
	cp.Height = H;
	DCHECK(cuMemcpy2DAsync(&cp, s)); // SYNCSPY-CLEAN: the disparity map in one async 2D copy into the pinned depth ring
}

/* --- the publisher: the controller's checks, one frame behind ---------------------------------- */

struct publish_stats { unsigned long long matched, checked, digest; };

static int reference_disparity(const struct grab_frame *g, int x, int y)
{
	unsigned int best = 0xffffffffu;
	int best_d = 0;
	for (int d = 0; d < MAX_DISP; d++) {
		unsigned int cost = 0;
		for (int dy = -RADIUS; dy <= RADIUS; dy++) {
			int yy = y + dy < 0 ? 0 : (y + dy > H - 1 ? H - 1 : y + dy);
			for (int dx = -RADIUS; dx <= RADIUS; dx++) {
				int xl = x + dx < 0 ? 0 : (x + dx > W - 1 ? W - 1 : x + dx), xr = x + dx - d;
				xr = xr < 0 ? 0 : (xr > W - 1 ? W - 1 : xr);
				int diff = (int)g->cam[0][yy][LINE_HDR + xl] - (int)g->cam[1][yy][LINE_HDR + xr];
				cost += (unsigned int)(diff < 0 ? -diff : diff);
			}
		}
		if (cost < best) {
			best = cost;
			best_d = d;
		}
	}
	return best_d;
}

static void write_depth_headers(struct depth_frame *ring)
{
	for (int k = 0; k < DEPTH_SLOTS; k++)
		for (int y = 0; y < H; y++) {
			uint32_t hdr[OUT_HDR / 4] = {DEPTH_MAGIC, (uint32_t)k, (uint32_t)y};
			memcpy(ring[k].line[y], hdr, OUT_HDR);
		}
}

static void publish(struct publish_stats *st, int f, const struct grab_frame *g, const struct depth_frame *out, int slot)
{
	for (int y = 0; y < H; y++) {
		uint32_t hdr[OUT_HDR / 4] = {DEPTH_MAGIC, (uint32_t)slot, (uint32_t)y};
		if (memcmp(out->line[y], hdr, OUT_HDR) != 0) {
			fprintf(stderr, "d50: frame %d line %d: the controller's line header was overwritten\n", f, y);
			exit(1);
		}
	}
	for (int k = 0; k < SAMPLES; k++) {
		uint32_t h = mix32((uint32_t)f * 0x632be5abu + (uint32_t)k);
		int x = (int)(h % W), y = (int)((h >> 12) % H), want = reference_disparity(g, x, y);
		if (out->line[y][OUT_HDR + x] != want) {
			fprintf(stderr, "d50: frame %d pixel (%d,%d) disparity %d, want %d\n", f, x, y, out->line[y][OUT_HDR + x], want);
			exit(1);
		}
	}
	for (int y = CHECK_EVERY / 2; y < H; y += CHECK_EVERY)
		for (int x = 0; x < W; x++) {
			int d = out->line[y][OUT_HDR + x];
			st->matched += d == true_disparity(f, x, y);
			st->checked++;
			st->digest = st->digest * 31u + (unsigned long long)d;
		}
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction match;
	CUstream up, comp, down;
	CUevent uploaded[GRAB_SLOTS], matched[SETS], downloaded[DEPTH_SLOTS];
	struct pitched left[SETS], right[SETS], disp[SETS];
	struct grab_frame *grab_ring;
	struct depth_frame *depth_ring;
	struct publish_stats st = {0, 0, 0};
	unsigned char *tex = (unsigned char *)malloc((size_t)H * TEX_W);
	int w = W, h = H, max_disp = MAX_DISP, radius = RADIUS;

	DCHECK(cuModuleGetFunction(&match, module, "stereo_sad_disparity"));
	DCHECK(cuStreamCreate(&up, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&comp, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&down, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < GRAB_SLOTS; k++)
		DCHECK(cuEventCreate(&uploaded[k], CU_EVENT_DISABLE_TIMING));
	for (int k = 0; k < DEPTH_SLOTS; k++)
		DCHECK(cuEventCreate(&downloaded[k], CU_EVENT_DISABLE_TIMING));
	for (int k = 0; k < SETS; k++) {
		DCHECK(cuEventCreate(&matched[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuMemAllocPitch(&left[k].ptr, &left[k].pitch, W, H, 4)); // SYNCSPY-CLEAN: setup, the pitched left image of set k
		DCHECK(cuMemAllocPitch(&right[k].ptr, &right[k].pitch, W, H, 4)); // SYNCSPY-CLEAN: setup, the pitched right image of set k
		DCHECK(cuMemAllocPitch(&disp[k].ptr, &disp[k].pitch, W, H, 4)); // SYNCSPY-CLEAN: setup, the pitched disparity map of set k
	}
	DCHECK(cuMemAllocHost((void **)&grab_ring, GRAB_SLOTS * sizeof(struct grab_frame))); // SYNCSPY-CLEAN: setup, the grabber's pinned DMA ring
	DCHECK(cuMemAllocHost((void **)&depth_ring, DEPTH_SLOTS * sizeof(struct depth_frame))); // SYNCSPY-CLEAN: setup, the controller's pinned depth ring
	for (int y = 0; y < H; y++)
		for (int x = 0; x < TEX_W; x++)
			tex[(size_t)y * TEX_W + x] = (unsigned char)(mix32((uint32_t)y * 0x9e3779b9u ^ (uint32_t)x * 0x85ebca6bu) >> 24);
	write_depth_headers(depth_ring);

	for (int f = 0; f < FRAMES; f++) {
		int gs = f % GRAB_SLOTS, k = f % SETS;
		size_t pitch = left[k].pitch;
		/* grabber slot gs last held frame f - 3, published (after its download) two frames ago */
		grab(tex, f, &grab_ring[gs]);
		if (f >= SETS)
			DCHECK(cuStreamWaitEvent(up, matched[k], 0));
		upload_camera(grab_ring[gs].cam[0], left[k], up);
		upload_camera(grab_ring[gs].cam[1], right[k], up);
		DCHECK(cuEventRecord(uploaded[gs], up));
		DCHECK(cuStreamWaitEvent(comp, uploaded[gs], 0));
		if (f >= SETS)
			DCHECK(cuStreamWaitEvent(comp, downloaded[(f - SETS) % DEPTH_SLOTS], 0));
		void *args[] = {&left[k].ptr, &right[k].ptr, &pitch, &w, &h, &max_disp, &radius, &disp[k].ptr, &disp[k].pitch};
		DCHECK(cuLaunchKernel(match, (W + THREADS - 1) / THREADS, H, 1, THREADS, 1, 1, 0, comp, args, NULL));
		DCHECK(cuEventRecord(matched[k], comp));
		DCHECK(cuStreamWaitEvent(down, matched[k], 0));
		download_depth(disp[k], &depth_ring[f % DEPTH_SLOTS], down);
		DCHECK(cuEventRecord(downloaded[f % DEPTH_SLOTS], down));
		if (f >= 1) {
			DCHECK(cuEventSynchronize(downloaded[(f - 1) % DEPTH_SLOTS])); // SYNCSPY-CLEAN: the publisher's wait, on the frame one behind
			publish(&st, f - 1, &grab_ring[(f - 1) % GRAB_SLOTS], &depth_ring[(f - 1) % DEPTH_SLOTS], (f - 1) % DEPTH_SLOTS);
		}
	}
	DCHECK(cuStreamSynchronize(down)); // SYNCSPY-CLEAN: the final wait, after the last frame
	publish(&st, FRAMES - 1, &grab_ring[(FRAMES - 1) % GRAB_SLOTS], &depth_ring[(FRAMES - 1) % DEPTH_SLOTS], (FRAMES - 1) % DEPTH_SLOTS);

	/* self-check beyond the sampled pixels: inside the disparity blocks the true disparity matches
	 * exactly, so most checked pixels must find it */
	if (st.matched * 10 < st.checked * 8) {
		fprintf(stderr, "d50: only %llu of %llu checked pixels at the true disparity\n", st.matched, st.checked);
		return 1;
	}
	free(tex);
	for (int k = 0; k < SETS; k++) {
		DCHECK(cuMemFree(left[k].ptr)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(right[k].ptr)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(disp[k].ptr)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(matched[k]));
	}
	for (int k = 0; k < GRAB_SLOTS; k++)
		DCHECK(cuEventDestroy(uploaded[k]));
	for (int k = 0; k < DEPTH_SLOTS; k++)
		DCHECK(cuEventDestroy(downloaded[k]));
	DCHECK(cuMemFreeHost(grab_ring)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(depth_ring)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(up));
	DCHECK(cuStreamDestroy(comp));
	DCHECK(cuStreamDestroy(down));
	driver_teardown(module);
	printf("d50_clean_stereo_depth_grabber_2d_copies: frames=%d matched=%llu/%llu digest=%llu result=OK\n", FRAMES, st.matched, st.checked, st.digest);
	return 0;
}
