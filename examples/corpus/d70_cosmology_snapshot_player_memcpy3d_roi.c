/*
 * examples/corpus/d70_cosmology_snapshot_player_memcpy3d_roi.c: corpus workload (CUDA driver
 * API). An interactive player for a cosmological simulation's density snapshots: eight snapshots
 * of a 256 x 256 x 128 box (uint8 density, 64 MB, loaded into host memory at start), shown one
 * after another while the view turns about the box's vertical axis and follows the most massive
 * halo. Every frame the player cuts a 192 x 192 x 96 region of interest around the halo out of the
 * current snapshot, uploads it into the device's ROI buffer, and vr_render casts 1024 x 512
 * orthographic rays through it (trilinear samples one voxel apart, the maximum and the column
 * density); the image comes back into a pinned ring, and the display shows frame f-1 (tone mapping,
 * a histogram, sampled pixels checked) while frame f renders.
 * What is wrong: upload_roi() copies the region with cuMemcpy3D from the malloc'd (pageable)
 * snapshot, a synchronous copy on the legacy NULL stream beside the player's blocking render
 * stream. "For transfers from pageable host memory to device memory, a stream sync is performed
 * before the copy is initiated" (API synchronization behavior), and the legacy stream waits for the
 * render stream anyway: every frame the copy waits for the previous frame's raycast, the host is
 * held while the 3.5 MB are staged through the driver's pinned buffers, and the raycast waits for
 * the copy; copy engine and SMs take turns (one line; cuMemcpy3DAsync from registered snapshots
 * on a copy stream into two ROI buffers ordered by events would overlap them).
 * Planted: the cuMemcpy3D in upload_roi(), every frame (one line).
 * Clean: the setup allocations and sync, the image's async download into the pinned ring, the
 * display's cuEventSynchronize one frame behind, the final wait, teardown.
 * Per frame (estimates, H100): the raycast about 140M trilinear samples (0.4-0.7 ms); the ROI
 * copy 3.5 MB from pageable memory (0.4-0.8 ms); the display's tone mapping and checks about
 * 1 ms. The checks: 32 pixels a frame equal the host's ray through the same region of the same
 * snapshot; the brightest pixel of every frame lies on a halo (its maximum at least 96).
 *   d70_cosmology_snapshot_player_memcpy3d_roi driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { VX = 256, VY = 256, VZ = 128, SNAPS = 8, RX = 192, RY = 192, RZ = 96, IW = 1024, IH = 512, NSTEPS = 272 };
enum { FRAMES = 64, HALOS = 24, THREADS = 256, SAMPLED = 32 };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* halo k's centre, radius and peak in snapshot sn (halos drift and grow; halo 0 is the largest) */
static void halo(int k, int sn, int *cx, int *cy, int *cz, int *r, int *amp)
{
	uint32_t h = mix32((uint32_t)k * 0x9e3779b9u);
	*cx = 40 + (int)(h % 176u) + ((int)((h >> 8) % 5u) - 2) * sn;
	*cy = 40 + (int)((h >> 4) % 176u) + ((int)((h >> 12) % 5u) - 2) * sn;
	*cz = 30 + (int)((h >> 16) % 68u);
	*r = k == 0 ? 14 + sn : 6 + (int)((h >> 20) % 8u) + sn / 2;
	*amp = k == 0 ? 200 : 90 + (int)((h >> 24) % 100u);
	if (k == 0)
		*cx = 128 + 4 * sn, *cy = 120 + 2 * sn, *cz = 64;
}

static void make_snapshot(int sn, unsigned char *v)
{
	for (int z = 0; z < VZ; z++)
		for (int y = 0; y < VY; y++)
			for (int x = 0; x < VX; x++)
				v[((size_t)z * VY + y) * VX + x] = (unsigned char)(mix32((uint32_t)(((z * VY + y) * VX + x) ^ (sn << 24))) & 15u);
	for (int k = 0; k < HALOS; k++) {
		int cx, cy, cz, r, amp;
		halo(k, sn, &cx, &cy, &cz, &r, &amp);
		for (int z = cz - r; z <= cz + r; z++)
			for (int y = cy - r; y <= cy + r; y++)
				for (int x = cx - r; x <= cx + r; x++) {
					int d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz);
					if (x < 0 || y < 0 || z < 0 || x >= VX || y >= VY || z >= VZ || d2 >= r * r)
						continue;
					unsigned char *p = &v[((size_t)z * VY + y) * VX + x];
					int val = *p + amp * (r * r - d2) / (r * r);
					*p = (unsigned char)(val > 255 ? 255 : val);
				}
	}
}

/* the host's ray for pixel p (the mirror of vr_render) through the region at (ox, oy, oz) */
static unsigned int host_pixel(const unsigned char *snap, int ox, int oy, int oz, int c, int sn, int p)
{
	int px = p % IW, py = p / IW;
	int z = py * ((RZ - 1) * 256) / IH, z0 = z >> 8, fz = z & 255;
	int u = (px - IW / 2) * (NSTEPS * 256 / IW);
	unsigned int vmax = 0, vsum = 0;
	for (int k = 0; k < NSTEPS; k++) {
		int t = (k - NSTEPS / 2) * 256;
		int x = RX * 128 + ((t * c - u * sn) >> 14), y = RY * 128 + ((t * sn + u * c) >> 14);
		int x0 = x >> 8, y0 = y >> 8;
		if (x < 0 || y < 0 || x0 >= RX - 1 || y0 >= RY - 1)
			continue;
		int fx = x & 255, fy = y & 255, s[2];
		for (int dz = 0; dz < 2; dz++) {
			const unsigned char *v = snap + ((size_t)(oz + z0 + dz) * VY + oy + y0) * VX + ox + x0;
			int a = v[0] * (256 - fx) + v[1] * fx, b = v[VX] * (256 - fx) + v[VX + 1] * fx;
			s[dz] = (a * (256 - fy) + b * fy) >> 8;
		}
		unsigned int val = (unsigned int)((s[0] * (256 - fz) + s[1] * fz) >> 8);
		vmax = val > vmax ? val : vmax;
		vsum += val;
	}
	return (vmax >> 8) << 24 | (vsum >> 8 < 0xffffffu ? vsum >> 8 : 0xffffffu);
}

struct player {
	CUstream render;
	CUfunction raycast;
	CUdeviceptr d_roi, d_img;
	unsigned int *ring[2];
	CUevent shown[2];
	unsigned char *snaps; /* SNAPS x VZ x VY x VX, malloc'd */
};

/* the region of interest of snapshot sn at (ox, oy, oz) into the device's ROI buffer */
static void upload_roi(struct player *pl, int sn, int ox, int oy, int oz)
{
	CUDA_MEMCPY3D cp;
	memset(&cp, 0, sizeof cp);
	cp.srcMemoryType = CU_MEMORYTYPE_HOST;
	cp.srcHost = pl->snaps + (size_t)sn * VZ * VY * VX;
	cp.srcXInBytes = (size_t)ox;
	cp.srcY = (size_t)oy;
	cp.srcZ = (size_t)oz;
	cp.srcPitch = VX;
	cp.srcHeight = VY;
	cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.dstDevice = pl->d_roi;
	cp.dstPitch = RX;
	cp.dstHeight = RY;
	cp.WidthInBytes = RX;
	cp.Height = RY;
	cp.Depth = RZ;
	DCHECK(cuMemcpy3D(&cp)); // SYNCSPY-PROBLEM: synchronous 3D copy from pageable memory: waits for the previous frame's raycast, every frame
}

static void render_frame(struct player *pl, int f, int c, int s)
{
	int nx = RX, ny = RY, nz = RZ, iw = IW, ih = IH, steps = NSTEPS;
	void *args[] = {&pl->d_roi, &nx, &ny, &nz, &iw, &ih, &c, &s, &steps, &pl->d_img};
	DCHECK(cuLaunchKernel(pl->raycast, IW * IH / THREADS, 1, 1, THREADS, 1, 1, 0, pl->render, args, NULL));
	DCHECK(cuMemcpyDtoHAsync(pl->ring[f % 2], pl->d_img, IW * IH * sizeof(unsigned int), pl->render)); // SYNCSPY-CLEAN: into the pinned image ring
	DCHECK(cuEventRecord(pl->shown[f % 2], pl->render));
}

/* where frame f looks: its snapshot, the region's origin around halo 0, the turntable angle */
static void frame_view(int f, int *sn, int *ox, int *oy, int *oz, int *c, int *s)
{
	int cx, cy, cz, r, amp;
	*sn = f * SNAPS / FRAMES;
	halo(0, *sn, &cx, &cy, &cz, &r, &amp);
	*ox = cx - RX / 2 < 0 ? 0 : cx - RX / 2 > VX - RX ? VX - RX : cx - RX / 2;
	*oy = cy - RY / 2 < 0 ? 0 : cy - RY / 2 > VY - RY ? VY - RY : cy - RY / 2;
	*oz = cz - RZ / 2 < 0 ? 0 : cz - RZ / 2 > VZ - RZ ? VZ - RZ : cz - RZ / 2;
	double a = f * 6.0 * M_PI / 180.0;
	*c = (int)lround(cos(a) * 16384.0);
	*s = (int)lround(sin(a) * 16384.0);
}

int main(int argc, char **argv)
{
	const char *name = "d70_cosmology_snapshot_player_memcpy3d_roi";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct player pl;
	static unsigned char preview[IW * IH];
	static unsigned int hist[256];

	pl.snaps = malloc((size_t)SNAPS * VZ * VY * VX);
	if (!pl.snaps)
		return 1;
	for (int sn = 0; sn < SNAPS; sn++) /* "loading" the snapshots */
		make_snapshot(sn, pl.snaps + (size_t)sn * VZ * VY * VX);

	DCHECK(cuModuleGetFunction(&pl.raycast, module, "vr_render"));
	DCHECK(cuStreamCreate(&pl.render, CU_STREAM_DEFAULT));
	DCHECK(cuMemAlloc(&pl.d_roi, (size_t)RX * RY * RZ)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&pl.d_img, IW * IH * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAllocHost((void **)&pl.ring[k], IW * IH * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup, the pinned image ring
		DCHECK(cuEventCreate(&pl.shown[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before playback

	unsigned long long checksum = 14695981039346656037ull;
	unsigned int peak = 0;
	long long bright = 0;
	int view[FRAMES][6];
	for (int f = 0; f <= FRAMES; f++) {
		if (f < FRAMES) {
			int *vw = view[f];
			frame_view(f, &vw[0], &vw[1], &vw[2], &vw[3], &vw[4], &vw[5]);
			upload_roi(&pl, vw[0], vw[1], vw[2], vw[3]);
			render_frame(&pl, f, vw[4], vw[5]);
		}
		if (f == 0)
			continue;
		int g = f - 1; /* display frame g, one behind */
		DCHECK(cuEventSynchronize(pl.shown[g % 2])); // SYNCSPY-CLEAN: the frame one behind, the ring's wait
		const unsigned int *img = pl.ring[g % 2];
		unsigned int top = 0;
		memset(hist, 0, sizeof hist);
		for (int p = 0; p < IW * IH; p++) {
			unsigned int m = img[p] >> 24, col = img[p] & 0xffffffu;
			int msb = col ? 31 - __builtin_clz(col) : 0; /* a log scale: 8 steps an octave */
			int tone = msb < 3 ? (int)col : msb * 8 + (int)((col >> (msb - 3)) & 7u);
			preview[p] = (unsigned char)(tone > 255 ? 255 : tone);
			hist[m]++;
			top = m > top ? m : top;
			bright += m >= 96;
			checksum = (checksum ^ img[p]) * 1099511628211ull;
		}
		if (top < 96) {
			fprintf(stderr, "%s: frame %d: brightest maximum %u, no halo in view\n", name, g, top);
			return 1;
		}
		peak = top > peak ? top : peak;
		const int *vw = view[g];
		const unsigned char *snap = pl.snaps + (size_t)vw[0] * VZ * VY * VX;
		for (int k = 0; k < SAMPLED; k++) {
			int p = (int)(mix32((uint32_t)(g * SAMPLED + k) ^ 0x68e31da4u) % (IW * IH));
			unsigned int want = host_pixel(snap, vw[1], vw[2], vw[3], vw[4], vw[5], p);
			if (img[p] != want) {
				fprintf(stderr, "%s: frame %d pixel %d: %08x, want %08x\n", name, g, p, img[p], want);
				return 1;
			}
		}
		checksum = (checksum ^ hist[255] ^ preview[(IH / 2) * IW + IW / 2]) * 1099511628211ull;
	}
	DCHECK(cuStreamSynchronize(pl.render)); // SYNCSPY-CLEAN: the final wait

	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFreeHost(pl.ring[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(pl.shown[k]));
	}
	DCHECK(cuMemFree(pl.d_roi)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(pl.d_img)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(pl.render));
	free(pl.snaps);
	driver_teardown(module);
	printf("%s: frames=%d snapshots=%d peak=%u bright=%lld checksum=%016llx result=OK\n", name, FRAMES, SNAPS, peak, bright,
	       checksum);
	return 0;
}
