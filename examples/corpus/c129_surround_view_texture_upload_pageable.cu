/*
 * examples/corpus/c129_surround_view_texture_upload_pageable.cu: corpus workload (CUDA C, texture
 * objects). A parking assistant's surround view: four fisheye cameras (1920 x 1536, 8-bit, front,
 * rear, left and right of the car, 0.8 m up, tilted 30 degrees down) are dewarped into one
 * 2048 x 2048 bird's-eye view of the ground (1 cm a pixel), blended across the corners, and the
 * view is scanned for edges (lane and kerb marks) and for motion against the previous view, in
 * 64 x 64 tiles, for the obstacle warning. The calibration (a lookup table from each view pixel
 * to one or two camera positions in 1/16 pixel, with the blend weight) is built once on the
 * device. Each camera is sampled through a texture object over a CUDA array (point fetches,
 * bilinear weights in integer arithmetic, so that every run gives the same bits). 60 frames.
 * Every frame the grabber leaves the four camera images in its malloc'd frame buffers, and
 * camera_upload() copies each into its CUDA array with cudaMemcpy2DToArray: a synchronous copy
 * from pageable memory, and on the legacy default stream beside the blocking view stream. "For
 * transfers from pageable host memory to device memory, a stream sync is performed before the
 * copy is initiated" (API synchronization behavior): the first camera's copy waits for the
 * previous frame's dewarp and tile scan, and each copy returns only once its 2.9 MB are staged.
 * The host assembles the next frame only after the GPU has finished this one and the copies are
 * through, and the GPU idles while it does: host and GPU take turns. Pinned staging, uploaded
 * with cudaMemcpy2DToArrayAsync on a copy stream into a second set of arrays, would overlap them
 * (c133).
 * Planted: the cudaMemcpy2DToArray in camera_upload(), four times a frame (one line).
 * Clean: the setup allocations (the CUDA arrays, the view buffers, the lookup table, the pinned
 * tile-count ring), the lookup table's build and the setup sync, the tile counts' download into
 * the pinned ring on the view stream, the obstacle monitor's cudaEventSynchronize one frame
 * behind, the final wait and the final reads (the two last views, the sampled table entries),
 * teardown. The per-frame cudaMemsetAsync of the tile counts is an enqueue (unmarked).
 * Per frame (estimates, H100): the dewarp of 4.2M view pixels (4-8 point fetches each) and the
 * tile scan, about 0.15-0.25 ms; the four pageable copies, 11.8 MB, about 1-1.5 ms on the host's
 * critical path; the host assembles a frame (copies the background, draws the moving objects)
 * in about 1-2 ms. The checks after the loop: 4096 sampled view pixels of the last frame,
 * recomputed on the host from their table entries and the last camera images, and the last
 * frame's edge and motion counts of every tile, recomputed on the host from the two last views.
 */
#include "corpus.h"

#include <math.h>
#include <string.h>

enum { CAMS = 4, CW = 1920, CH = 1536, VIEW = 2048, TILE = 64, TILES = VIEW / TILE, FRAMES = 60, SAMPLES = 4096 };
enum { EDGE_T = 96, MOTION_T = 24, NO_CAM = 255 };

/* a view pixel's calibration: camera positions in 1/16 pixel (u | v << 16), the weight of the
 * first camera (0..256) and the two cameras (NO_CAM: none) */
struct lut_entry {
	unsigned sa, sb, meta;
};

struct camera_set {
	cudaTextureObject_t tex[CAMS];
};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* setup: project the ground point under view pixel (x, y) into camera c (equidistant fisheye) */
__device__ static int project(int c, float gx, float gy, unsigned *packed)
{
	const float dirx[CAMS] = {0.f, 0.f, -1.f, 1.f}, diry[CAMS] = {1.f, -1.f, 0.f, 0.f};
	const float posx[CAMS] = {0.f, 0.f, -0.95f, 0.95f}, posy[CAMS] = {2.3f, -2.3f, 0.f, 0.f};
	const float tilt = 0.5235988f, height = 0.8f, focal = 500.f * CW / 1920.f;
	float dx = gx - posx[c], dy = gy - posy[c], dz = -height;
	float fx = dirx[c] * cosf(tilt), fy = diry[c] * cosf(tilt), fz = -sinf(tilt);
	float rx = diry[c], ry = -dirx[c];                                          /* right, level */
	float ux = ry * fz, uy = -rx * fz, uz = rx * fy - ry * fx;                  /* up = right x forward */
	float xc = dx * rx + dy * ry, yc = dx * ux + dy * uy + dz * uz, zc = dx * fx + dy * fy + dz * fz;
	float rho = sqrtf(xc * xc + yc * yc), alpha = atan2f(rho, zc);
	if (alpha > 1.658f || rho < 1e-6f)
		return 0;
	float u = CW * 0.5f + focal * alpha * xc / rho, v = CH * 0.5f - focal * alpha * yc / rho;
	if (u < 0.f || v < 0.f || u > CW - 1.001f || v > CH - 1.001f)
		return 0;
	*packed = (unsigned)(u * 16.f) | (unsigned)(v * 16.f) << 16;
	return 1;
}

__global__ void build_lut(struct lut_entry *lut)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x >= VIEW)
		return;
	const float metres = 20.48f / VIEW, deg = 57.29578f;
	float gx = (x - VIEW / 2 + 0.5f) * metres, gy = (VIEW / 2 - y - 0.5f) * metres;
	const float heading[CAMS] = {90.f, -90.f, 180.f, 0.f};
	struct lut_entry e = {0, 0, (unsigned)NO_CAM << 16 | (unsigned)NO_CAM << 24};
	if (fabsf(gx) > 1.0f || fabsf(gy) > 2.4f) { /* outside the car's footprint */
		float phi = atan2f(gy, gx) * deg;
		int cam[2], n = 0;
		unsigned pos[2], w[2];
		for (int c = 0; c < CAMS && n < 2; c++) {
			float d = fabsf(phi - heading[c]);
			d = d > 180.f ? 360.f - d : d;
			float wf = (55.f - d) / 20.f; /* 1 inside the camera's sector, a 20-degree ramp at the corners */
			if (wf <= 0.f || !project(c, gx, gy, &pos[n]))
				continue;
			cam[n] = c, w[n] = wf >= 1.f ? 256u : (unsigned)(wf * 256.f), n++;
		}
		if (n == 1)
			e.sa = pos[0], e.meta = 256u | (unsigned)cam[0] << 16 | (unsigned)NO_CAM << 24;
		else if (n == 2)
			e.sa = pos[0], e.sb = pos[1], e.meta = (w[0] * 256u / (w[0] + w[1])) | (unsigned)cam[0] << 16 | (unsigned)cam[1] << 24;
	}
	lut[(size_t)y * VIEW + x] = e;
}

/* one camera position, bilinear from four point fetches, weights in 1/16 */
__device__ static inline unsigned sample(cudaTextureObject_t t, unsigned packed)
{
	unsigned u = packed & 0xffffu, v = packed >> 16, fx = u & 15u, fy = v & 15u;
	float x = (float)(u >> 4) + 0.5f, y = (float)(v >> 4) + 0.5f;
	unsigned p00 = tex2D<unsigned char>(t, x, y), p10 = tex2D<unsigned char>(t, x + 1.f, y);
	unsigned p01 = tex2D<unsigned char>(t, x, y + 1.f), p11 = tex2D<unsigned char>(t, x + 1.f, y + 1.f);
	unsigned top = p00 * (16u - fx) + p10 * fx, bottom = p01 * (16u - fx) + p11 * fx;
	return (top * (16u - fy) + bottom * fy + 128u) >> 8;
}

__global__ void dewarp(const struct lut_entry *lut, struct camera_set cams, unsigned char *view)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x >= VIEW)
		return;
	struct lut_entry e = lut[(size_t)y * VIEW + x];
	unsigned w = e.meta & 0xffffu, ca = e.meta >> 16 & 0xffu, cb = e.meta >> 24, out = 0;
	if (ca != NO_CAM) {
		out = sample(cams.tex[ca], e.sa) * w;
		if (cb != NO_CAM)
			out += sample(cams.tex[cb], e.sb) * (256u - w);
		out = (out + 128u) >> 8;
	}
	view[(size_t)y * VIEW + x] = (unsigned char)out;
}

__host__ __device__ static inline int sobel(const unsigned char *v, int x, int y)
{
#define PX(a, b) (int)v[(size_t)min(max(y + (b), 0), VIEW - 1) * VIEW + min(max(x + (a), 0), VIEW - 1)]
	int gx = PX(1, -1) + 2 * PX(1, 0) + PX(1, 1) - PX(-1, -1) - 2 * PX(-1, 0) - PX(-1, 1);
	int gy = PX(-1, 1) + 2 * PX(0, 1) + PX(1, 1) - PX(-1, -1) - 2 * PX(0, -1) - PX(1, -1);
#undef PX
	return abs(gx) + abs(gy);
}

/* one thread a tile row: edge and motion pixels, added into the tile's two counters */
__global__ void tile_scan(const unsigned char *view, const unsigned char *prev, unsigned *counts)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= TILES * TILES * TILE)
		return;
	int tile = i / TILE, y = tile / TILES * TILE + i % TILE, x0 = tile % TILES * TILE;
	unsigned edges = 0, motion = 0;
	for (int x = x0; x < x0 + TILE; x++) {
		size_t p = (size_t)y * VIEW + x;
		edges += sobel(view, x, y) > EDGE_T;
		motion += abs((int)view[p] - (int)prev[p]) > MOTION_T;
	}
	atomicAdd(&counts[2 * tile], edges);
	atomicAdd(&counts[2 * tile + 1], motion);
}

/* after the loop: the sampled pixels' table entries and view values, for the host's check */
__global__ void gather_samples(const struct lut_entry *lut, const unsigned *where, struct lut_entry *out)
{
	int q = blockIdx.x * blockDim.x + threadIdx.x;
	if (q < SAMPLES)
		out[q] = lut[where[q]];
}

/* --- the host side ------------------------------------------------------------------------ */

static unsigned char background(int c, int x, int y)
{
	return (unsigned char)(72 + ((x / 48 + y / 48) & 1) * 64 + (mix32((uint32_t)(c * CH + y) * CW + (uint32_t)x) & 31u));
}

/* the grabber: frame f of camera c, the background and two moving objects */
static void grab_frame(int f, int c, const unsigned char *bg, unsigned char *img)
{
	memcpy(img, bg, (size_t)CW * CH);
	int bx = (f * 24 + c * 400) % (CW - 160), by = CH / 2 + (c & 1) * CH / 8;
	for (int y = by; y < by + CH / 5; y++)
		memset(img + (size_t)y * CW + bx, 230, 120); /* a pedestrian */
	int cy = (f * 16 + c * 300) % (CH - 200);
	for (int y = cy; y < cy + 160; y++)
		memset(img + (size_t)y * CW + CW / 3, 20, 220); /* a cyclist */
}

static void camera_upload(cudaArray_t dst, const unsigned char *img)
{
	CHECK(cudaMemcpy2DToArray(dst, 0, 0, img, CW, CW, CH, cudaMemcpyHostToDevice)); // SYNCSPY-PROBLEM: synchronous copy from pageable memory: waits for the previous frame, every camera of every frame
}

static unsigned host_sample(const unsigned char *img, unsigned packed)
{
	unsigned u = packed & 0xffffu, v = packed >> 16, fx = u & 15u, fy = v & 15u, x = u >> 4, y = v >> 4;
	unsigned x1 = x + 1 < CW ? x + 1 : CW - 1, y1 = y + 1 < CH ? y + 1 : CH - 1;
	unsigned top = img[y * CW + x] * (16u - fx) + img[y * CW + x1] * fx;
	unsigned bottom = img[y1 * CW + x] * (16u - fx) + img[y1 * CW + x1] * fx;
	return (top * (16u - fy) + bottom * fy + 128u) >> 8;
}

static void fail(const char *name, const char *what, long long got, long long want)
{
	printf("%s: %s = %lld, want %lld result=FAIL\n", name, what, got, want);
	exit(1);
}

int main(void)
{
	const char *name = "c129_surround_view_texture_upload_pageable";
	const size_t img_bytes = (size_t)CW * CH, view_bytes = (size_t)VIEW * VIEW;
	unsigned char *bg[CAMS], *frame[CAMS];
	cudaArray_t arr[CAMS];
	struct camera_set cams;
	struct lut_entry *d_lut, *d_sampled;
	unsigned char *d_view[2];
	unsigned *d_counts, *counts_ring[2], *d_where;
	cudaStream_t view_stream;
	cudaEvent_t counts_ready[2];
	const cudaChannelFormatDesc fmt = cudaCreateChannelDesc<unsigned char>();

	CHECK(cudaStreamCreate(&view_stream)); /* blocking, as the grabber's sample code had it */
	for (int c = 0; c < CAMS; c++) {
		bg[c] = (unsigned char *)malloc(img_bytes);
		frame[c] = (unsigned char *)malloc(img_bytes); /* the grabber's frame buffers */
		for (int y = 0; y < CH; y++)
			for (int x = 0; x < CW; x++)
				bg[c][(size_t)y * CW + x] = background(c, x, y);
		CHECK(cudaMallocArray(&arr[c], &fmt, CW, CH)); // SYNCSPY-CLEAN: setup allocation
		struct cudaResourceDesc rd;
		memset(&rd, 0, sizeof rd);
		rd.resType = cudaResourceTypeArray;
		rd.res.array.array = arr[c];
		struct cudaTextureDesc td;
		memset(&td, 0, sizeof td);
		td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
		td.filterMode = cudaFilterModePoint;
		td.readMode = cudaReadModeElementType;
		td.normalizedCoords = 0;
		CHECK(cudaCreateTextureObject(&cams.tex[c], &rd, &td, NULL));
	}
	CHECK(cudaMalloc(&d_lut, view_bytes * sizeof(struct lut_entry))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_view[0], 2 * view_bytes)); // SYNCSPY-CLEAN: setup allocation
	d_view[1] = d_view[0] + view_bytes;
	CHECK(cudaMalloc(&d_counts, 2 * TILES * TILES * sizeof(unsigned))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_where, SAMPLES * sizeof(unsigned))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_sampled, SAMPLES * sizeof(struct lut_entry))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&counts_ring[k], 2 * TILES * TILES * sizeof(unsigned))); // SYNCSPY-CLEAN: setup, pinned tile-count ring
		CHECK(cudaEventCreateWithFlags(&counts_ready[k], cudaEventDisableTiming));
	}
	CHECK(cudaMemsetAsync(d_view[1], 0, view_bytes, view_stream)); /* frame 0's "previous view" */
	build_lut<<<dim3((VIEW + 255) / 256, VIEW), 256, 0, view_stream>>>(d_lut);
	CHECK_LAUNCH();
	CHECK(cudaStreamSynchronize(view_stream)); // SYNCSPY-CLEAN: setup done before the first frame

	unsigned long long checksum = 14695981039346656037ull, warnings = 0, edge_total = 0;
	for (int f = 0; f < FRAMES; f++) {
		int k = f % 2;
		for (int c = 0; c < CAMS; c++) {
			grab_frame(f, c, bg[c], frame[c]);
			camera_upload(arr[c], frame[c]);
		}
		CHECK(cudaMemsetAsync(d_counts, 0, 2 * TILES * TILES * sizeof(unsigned), view_stream));
		dewarp<<<dim3((VIEW + 255) / 256, VIEW), 256, 0, view_stream>>>(d_lut, cams, d_view[k]);
		CHECK_LAUNCH();
		tile_scan<<<(TILES * TILES * TILE + 255) / 256, 256, 0, view_stream>>>(d_view[k], d_view[k ^ 1], d_counts);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(counts_ring[k], d_counts, 2 * TILES * TILES * sizeof(unsigned), cudaMemcpyDeviceToHost, view_stream)); // SYNCSPY-CLEAN: into the pinned ring
		CHECK(cudaEventRecord(counts_ready[k], view_stream));
		if (f > 0) { /* the obstacle monitor, one frame behind */
			CHECK(cudaEventSynchronize(counts_ready[k ^ 1])); // SYNCSPY-CLEAN: the ring's wait, one frame behind
			for (int t = 0; t < TILES * TILES; t++) {
				edge_total += counts_ring[k ^ 1][2 * t];
				warnings += counts_ring[k ^ 1][2 * t + 1] > TILE * TILE / 16;
				checksum = (checksum ^ counts_ring[k ^ 1][2 * t] ^ (unsigned long long)counts_ring[k ^ 1][2 * t + 1] << 32) * 1099511628211ull;
			}
		}
	}
	const int last = (FRAMES - 1) % 2;
	CHECK(cudaEventSynchronize(counts_ready[last])); // SYNCSPY-CLEAN: the last frame's tile counts
	for (int t = 0; t < TILES * TILES; t++) {
		edge_total += counts_ring[last][2 * t];
		warnings += counts_ring[last][2 * t + 1] > TILE * TILE / 16;
		checksum = (checksum ^ counts_ring[last][2 * t] ^ (unsigned long long)counts_ring[last][2 * t + 1] << 32) * 1099511628211ull;
	}

	/* the checks: sampled view pixels from their table entries, the last frame's tile counts */
	unsigned *where = (unsigned *)malloc(SAMPLES * sizeof(unsigned));
	struct lut_entry *sampled = (struct lut_entry *)malloc(SAMPLES * sizeof(struct lut_entry));
	unsigned char *view = (unsigned char *)malloc(2 * view_bytes), *prev = view + view_bytes;
	for (int q = 0; q < SAMPLES; q++)
		where[q] = mix32((uint32_t)q * 40503u + 11u) % (unsigned)view_bytes;
	CHECK(cudaMemcpy(d_where, where, SAMPLES * sizeof(unsigned), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: after the loop, the sample positions
	gather_samples<<<(SAMPLES + 255) / 256, 256, 0, view_stream>>>(d_lut, d_where, d_sampled);
	CHECK_LAUNCH();
	CHECK(cudaStreamSynchronize(view_stream)); // SYNCSPY-CLEAN: the final wait
	CHECK(cudaMemcpy(sampled, d_sampled, SAMPLES * sizeof(struct lut_entry), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the sampled table entries
	CHECK(cudaMemcpy(view, d_view[last], view_bytes, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the last view
	CHECK(cudaMemcpy(prev, d_view[last ^ 1], view_bytes, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the view before it
	int covered = 0;
	for (int q = 0; q < SAMPLES; q++) {
		struct lut_entry e = sampled[q];
		unsigned w = e.meta & 0xffffu, ca = e.meta >> 16 & 0xffu, cb = e.meta >> 24, want = 0;
		if (ca != NO_CAM) {
			want = host_sample(frame[ca], e.sa) * w;
			if (cb != NO_CAM)
				want += host_sample(frame[cb], e.sb) * (256u - w);
			want = (want + 128u) >> 8;
			covered++;
		}
		if (view[where[q]] != want)
			fail(name, "sampled view pixel", view[where[q]], want);
	}
	if (covered < SAMPLES / 2)
		fail(name, "sampled pixels seen by a camera", covered, SAMPLES / 2);
	for (int t = 0; t < TILES * TILES; t++) {
		unsigned edges = 0, motion = 0;
		for (int y = t / TILES * TILE; y < t / TILES * TILE + TILE; y++)
			for (int x = t % TILES * TILE; x < t % TILES * TILE + TILE; x++) {
				size_t p = (size_t)y * VIEW + x;
				edges += sobel(view, x, y) > EDGE_T;
				motion += abs((int)view[p] - (int)prev[p]) > MOTION_T;
			}
		if (edges != counts_ring[last][2 * t])
			fail(name, "last frame's tile edges", counts_ring[last][2 * t], edges);
		if (motion != counts_ring[last][2 * t + 1])
			fail(name, "last frame's tile motion", counts_ring[last][2 * t + 1], motion);
	}

	for (int c = 0; c < CAMS; c++) {
		CHECK(cudaDestroyTextureObject(cams.tex[c]));
		CHECK(cudaFreeArray(arr[c])); // SYNCSPY-CLEAN: teardown
		free(bg[c]);
		free(frame[c]);
	}
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(counts_ring[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(counts_ready[k]));
	}
	CHECK(cudaFree(d_lut)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_view[0])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_counts)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_where)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_sampled)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(view_stream));
	printf("%s: frames=%d covered=%d edges=%llu warnings=%llu checksum=%016llx result=OK\n", name, FRAMES, covered,
	       edge_total, warnings, checksum);
	free(where);
	free(sampled);
	free(view);
	return 0;
}
