/*
 * examples/corpus/c138_powder_diffraction_bounce_chunk_sync.cu: corpus workload (CUDA C). A
 * synchrotron beamline's online azimuthal integration of X-ray powder diffraction: 48 frames of a
 * 2048 x 2048 16-bit area detector (six passes over an 8-frame temperature ramp of a sample whose
 * phases change, 12 Debye-Scherrer rings, big-grain spots, dead pixels and a beamstop) are dark-
 * and flat-corrected, corrected for polarization and solid angle, and integrated into 1024
 * radial bins in two passes: the second rejects pixels above three times their bin's mean (spots
 * and zingers, a sigma-clip) and also adds the kept pixels into a radial x 36-sector cake. Each
 * frame's clipped sums are read one frame late from a pinned ring by the phase tracker, which
 * finds the ring peaks.
 * The detector reader hands each frame over in its own malloc'd (pageable) buffer, and the
 * beamline's GPU library uploads it with upload_pageable() into one of two device frame slots:
 * "cudaMemcpyAsync needs page-locked memory to be asynchronous", so the helper copies the frame
 * through one 512 KB page-locked bounce buffer, chunk by chunk, on the library's own staging
 * stream, and waits for each chunk's copy with cudaStreamSynchronize ("blocks until stream has
 * completed all operations") before it refills the buffer. So each of the 16 chunks costs the
 * host's memcpy, then the copy, then the round trip of the wait, one after the other: the host's
 * copying and the copy engine never overlap, and the host, which queues the integration only once
 * the helper returns, spends most of every frame in the helper while the integration of the
 * previous frame has long finished. Two or three bounce buffers, each refilled after its own
 * copy's event, would overlap the memcpy with the copies; the reader's frame buffers, a fixed
 * pool, registered once with cudaHostRegister would need no bounce at all.
 * Planted: the cudaStreamSynchronize in upload_pageable()'s chunk loop, 16 times a frame (one
 * line).
 * Clean: the setup allocations (the two frame slots, the pinned bounce buffer, the pinned result
 * ring), the detector tables' uploads and the setup sync, the chunks' cudaMemcpyAsync from the
 * pinned bounce buffer, the frame's clipped sums downloaded into the pinned ring, the phase
 * tracker's cudaEventSynchronize one frame behind, the final wait and the final read of the cake,
 * teardown. The per-frame cudaMemsetAsync of the sums is an enqueue (unmarked).
 * Per frame (estimates, H100): two passes over the 8 MB frame and 24 MB of detector tables with
 * shared-memory histograms and 4M global atomics into the cake, about 0.2-0.4 ms; the upload, 16
 * chunks of a 512 KB memcpy (40-80 us each), a 512 KB copy (about 20-25 us with its launch) and
 * the wait's round trip (5-10 us), about 1.1-1.8 ms of host time a frame, during which the GPU is
 * mostly idle; pipelined bounce buffers would take the memcpy time alone (0.6-1.3 ms), registered
 * frames about the 0.2-0.35 ms copy, beside the integration. Checks: the last frame's sums
 * recomputed on the host (exact), the cake's total against the sum of every frame's kept
 * intensities, and all 12 ring peaks found in at least half the frames.
 */
#include "corpus.h"

#include <math.h>
#include <string.h>

enum { DW = 2048, DH = 2048, NPIX = DW * DH, NB = 1024, SECT = 36, RINGS = 12, POOL = 8, FRAMES = 48, THREADS = 256, BLOCKS = 264 };
enum { BOUNCE = 1 << 19 };

#define MASKED 0xFFFF0000u /* the geometry entry of a pixel behind the beamstop */

#define FRAME_BYTES ((size_t)NPIX * sizeof(uint16_t))

/* a frame's sums: pass 1 (all valid pixels) and pass 2 (the sigma-clipped ones), per radial bin */
struct sums {
	unsigned long long sum1[NB], cnt1[NB], sum2[NB], cnt2[NB];
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

/* a pixel's geometry entry: radial bin (10 bits), sector (6 bits), and the polarization and
 * solid-angle factor in Q14 (16 bits); the corrected intensity of a raw value */
__host__ __device__ static inline unsigned corrected(unsigned raw, unsigned dark, unsigned flat, uint32_t geo)
{
	unsigned long long v = raw > dark ? (unsigned long long)(raw - dark) * flat >> 12 : 0;
	return (unsigned)(v * (geo & 0xFFFFu) >> 14);
}

/* a pixel that counts: not dead, not behind the beamstop */
__host__ __device__ static inline int valid(unsigned raw, uint32_t geo)
{
	return raw != 0xFFFFu && (geo & MASKED) != MASKED;
}

__host__ __device__ static inline unsigned geo_bin(uint32_t geo) { return geo >> 22; }
__host__ __device__ static inline unsigned geo_sector(uint32_t geo) { return geo >> 16 & 63u; }

/* pass 1: every valid pixel (not dead, not behind the beamstop) into its radial bin */
__global__ void __launch_bounds__(THREADS) integrate_all(const uint16_t *frame, const uint16_t *dark, const uint16_t *flat,
							 const uint32_t *geo, struct sums *out)
{
	__shared__ unsigned s[NB], c[NB];
	for (int b = threadIdx.x; b < NB; b += THREADS)
		s[b] = c[b] = 0;
	__syncthreads();
	for (int i = blockIdx.x * THREADS + threadIdx.x; i < NPIX; i += BLOCKS * THREADS) {
		uint32_t g = geo[i];
		unsigned raw = frame[i];
		if (!valid(raw, g))
			continue;
		atomicAdd(&s[geo_bin(g)], corrected(raw, dark[i], flat[i], g));
		atomicAdd(&c[geo_bin(g)], 1u);
	}
	__syncthreads();
	for (int b = threadIdx.x; b < NB; b += THREADS)
		if (c[b]) {
			atomicAdd(&out->sum1[b], (unsigned long long)s[b]);
			atomicAdd(&out->cnt1[b], (unsigned long long)c[b]);
		}
}

/* the clip: a pixel is kept unless it exceeds three times its bin's pass-1 mean plus 64 */
__host__ __device__ static inline int kept(unsigned v, unsigned long long sum1, unsigned long long cnt1)
{
	return (unsigned long long)v * cnt1 <= 3ull * sum1 + 64ull * cnt1;
}

/* pass 2: the kept pixels into their radial bin, and into the cake (all frames) */
__global__ void __launch_bounds__(THREADS) integrate_clipped(const uint16_t *frame, const uint16_t *dark, const uint16_t *flat,
							     const uint32_t *geo, struct sums *out, unsigned long long *cake)
{
	__shared__ unsigned s[NB], c[NB];
	for (int b = threadIdx.x; b < NB; b += THREADS)
		s[b] = c[b] = 0;
	__syncthreads();
	for (int i = blockIdx.x * THREADS + threadIdx.x; i < NPIX; i += BLOCKS * THREADS) {
		uint32_t g = geo[i];
		unsigned raw = frame[i];
		if (!valid(raw, g))
			continue;
		unsigned b = geo_bin(g), v = corrected(raw, dark[i], flat[i], g);
		if (!kept(v, out->sum1[b], out->cnt1[b]))
			continue;
		atomicAdd(&s[b], v);
		atomicAdd(&c[b], 1u);
		atomicAdd(&cake[b * SECT + geo_sector(g)], (unsigned long long)v);
	}
	__syncthreads();
	for (int b = threadIdx.x; b < NB; b += THREADS)
		if (c[b]) {
			atomicAdd(&out->sum2[b], (unsigned long long)s[b]);
			atomicAdd(&out->cnt2[b], (unsigned long long)c[b]);
		}
}

/* the beamline library's staging helper: its own stream and one page-locked bounce buffer */
struct stager {
	cudaStream_t s;
	void *buf;
	size_t size;
};

/* dst is on the device once it returns; wait_for: the last work that reads dst */
static void upload_pageable(struct stager *st, void *dst, const void *src, size_t bytes, cudaEvent_t wait_for)
{
	CHECK(cudaStreamWaitEvent(st->s, wait_for, 0));
	for (size_t off = 0; off < bytes; off += st->size) {
		size_t n = bytes - off < st->size ? bytes - off : st->size;
		memcpy(st->buf, (const char *)src + off, n);
		CHECK(cudaMemcpyAsync((char *)dst + off, st->buf, n, cudaMemcpyHostToDevice, st->s)); // SYNCSPY-CLEAN: from the pinned bounce buffer, on the staging stream
		CHECK(cudaStreamSynchronize(st->s)); // SYNCSPY-PROBLEM: before the bounce buffer is refilled, every chunk: the host's memcpy, the copy and the wait take turns
	}
}

/* the detector geometry: beam centre (1024.5, 1100.25) px, 75 um pixels, 200 mm away; the
 * radial bin of 1.5625 px, 36 sectors, the polarization (horizontal beam, 0.99) and solid-angle
 * factor; a beamstop of 40 px */
static uint32_t geometry(int x, int y)
{
	double dx = x - 1024.5, dy = y - 1100.25, r = sqrt(dx * dx + dy * dy);
	if (r < 40.0)
		return MASKED;
	double t2 = atan(r * 75e-6 / 0.2), phi = atan2(dy, dx), c = cos(t2);
	double pol = 0.5 * (1.0 + c * c - 0.99 * cos(2.0 * phi) * (1.0 - c * c)), solid = c * c * c;
	unsigned bin = (unsigned)(r / 1.5625), sect = (unsigned)((phi + M_PI) / (2.0 * M_PI) * SECT) % SECT;
	unsigned f = (unsigned)lround(16384.0 / (pol * solid));
	return bin << 22 | sect << 16 | (f > 0xFFFF ? 0xFFFF : f);
}

/* frame k of the ramp at pixel i: the rings of two phases, background, spots, noise */
static uint16_t detector(int k, int i, const uint32_t *geo, const uint16_t *dark, const uint16_t *flat)
{
	uint32_t g = geo[i], h = mix32((uint32_t)i * 8u + (uint32_t)k);
	if (mix32((uint32_t)i ^ 0x3c6ef372u) % 20000u == 0)
		return 0xFFFF; /* a dead pixel */
	if ((g & MASKED) == MASKED)
		return (uint16_t)dark[i];
	int bin = (int)geo_bin(g), sect = (int)geo_sector(g), r = (bin - 25) / 70, d = abs(bin - (60 + 70 * r));
	long long v = 200 + bin / 8 + (long long)(h % 32u);
	if (r >= 0 && r < RINGS && d <= 2) { /* ring r, the peak bin and two either side */
		int a = r % 2 ? 700 + 220 * k : 2300 - 220 * k; /* phase B grows as phase A goes */
		v += (long long)a * (d == 0 ? 4 : d == 1 ? 2 : 1) / 4 * (80 + sect % 5 * 10) / 100;
	}
	if ((h >> 8) % 2000u == 0)
		v += 20000 + (h >> 12) % 20000u; /* a big grain's spot */
	long long raw = v * 4096 / flat[i] + dark[i];
	return (uint16_t)(raw > 0xFFFE ? 0xFFFE : raw);
}

int main(void)
{
	const char *name = "c138_powder_diffraction_bounce_chunk_sync";
	uint32_t *geo = (uint32_t *)malloc(NPIX * sizeof(uint32_t));
	uint16_t *dark = (uint16_t *)malloc(FRAME_BYTES), *flat = (uint16_t *)malloc(FRAME_BYTES);
	uint16_t *pool[POOL]; /* the reader's decompressed frames (pageable) */
	for (int i = 0; i < NPIX; i++) {
		geo[i] = geometry(i % DW, i / DW);
		dark[i] = (uint16_t)(100 + mix32((uint32_t)i ^ 0xd3a2646cu) % 16u);
		flat[i] = (uint16_t)(3896 + mix32((uint32_t)i ^ 0xfd7046c5u) % 400u);
	}
	for (int k = 0; k < POOL; k++) {
		pool[k] = (uint16_t *)malloc(FRAME_BYTES);
		for (int i = 0; i < NPIX; i++)
			pool[k][i] = detector(k, i, geo, dark, flat);
	}

	uint16_t *d_frame[2], *d_dark, *d_flat;
	uint32_t *d_geo;
	struct sums *d_sums, *h_sums[2];
	unsigned long long *d_cake;
	struct stager st;
	cudaStream_t s;
	cudaEvent_t integrated[2], read[2];
	st.size = BOUNCE;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaStreamCreateWithFlags(&st.s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_dark, FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_flat, FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_geo, NPIX * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_sums, sizeof(struct sums))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_cake, NB * SECT * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&st.buf, BOUNCE)); // SYNCSPY-CLEAN: setup, the library's pinned bounce buffer
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMalloc(&d_frame[k], FRAME_BYTES)); // SYNCSPY-CLEAN: setup allocation, the frame slot
		CHECK(cudaMallocHost(&h_sums[k], sizeof(struct sums))); // SYNCSPY-CLEAN: setup, the phase tracker's pinned ring
		CHECK(cudaEventCreateWithFlags(&integrated[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&read[k], cudaEventDisableTiming));
		CHECK(cudaEventRecord(read[k], s)); /* no integration has read the slot yet */
	}
	CHECK(cudaMemcpy(d_dark, dark, FRAME_BYTES, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the dark frame
	CHECK(cudaMemcpy(d_flat, flat, FRAME_BYTES, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the flat field
	CHECK(cudaMemcpy(d_geo, geo, NPIX * sizeof(uint32_t), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the geometry table
	CHECK(cudaMemset(d_cake, 0, NB * SECT * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup, the cake starts empty
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the series

	unsigned long long checksum = 14695981039346656037ull, kept_total = 0;
	long long rejected = 0;
	int peaks_total = 0, full_frames = 0;
	for (int t = 0; t <= FRAMES; t++) {
		if (t < FRAMES) {
			int k = t % 2;
			upload_pageable(&st, d_frame[k], pool[t % POOL], FRAME_BYTES, read[k]);
			CHECK(cudaMemsetAsync(d_sums, 0, sizeof(struct sums), s));
			integrate_all<<<BLOCKS, THREADS, 0, s>>>(d_frame[k], d_dark, d_flat, d_geo, d_sums);
			CHECK_LAUNCH();
			integrate_clipped<<<BLOCKS, THREADS, 0, s>>>(d_frame[k], d_dark, d_flat, d_geo, d_sums, d_cake);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(read[k], s));
			CHECK(cudaMemcpyAsync(h_sums[t % 2], d_sums, sizeof(struct sums), cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: into the phase tracker's pinned ring
			CHECK(cudaEventRecord(integrated[t % 2], s));
		}
		if (t == 0)
			continue;
		int g = t - 1; /* frame g's pattern, one frame behind */
		CHECK(cudaEventSynchronize(integrated[g % 2])); // SYNCSPY-CLEAN: the phase tracker's frame one behind
		const struct sums *m = h_sums[g % 2];
		long long pat[NB];
		for (int b = 0; b < NB; b++) {
			pat[b] = m->cnt2[b] ? (long long)(m->sum2[b] / m->cnt2[b]) : 0;
			kept_total += m->sum2[b];
			rejected += (long long)(m->cnt1[b] - m->cnt2[b]);
			checksum = (checksum ^ (unsigned long long)pat[b]) * 1099511628211ull;
		}
		int peaks = 0;
		for (int b = 40; b < 880; b++) { /* the rings' range, clear of the beamstop and the corners */
			long long lo = pat[b - 12] < pat[b + 12] ? pat[b - 12] : pat[b + 12];
			peaks += pat[b] > pat[b - 1] && pat[b] >= pat[b + 1] && pat[b] * 2 > lo * 3;
		}
		peaks_total += peaks;
		full_frames += peaks == RINGS;
	}
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: the final wait
	unsigned long long *cake = (unsigned long long *)malloc(NB * SECT * sizeof(unsigned long long)), cake_total = 0;
	CHECK(cudaMemcpy(cake, d_cake, NB * SECT * sizeof(unsigned long long), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the cake
	for (int i = 0; i < NB * SECT; i++) {
		cake_total += cake[i];
		checksum = (checksum ^ cake[i]) * 1099511628211ull;
	}

	/* the checks: the last frame's sums on the host, the cake's total, the peaks */
	static struct sums want;
	const uint16_t *fr = pool[(FRAMES - 1) % POOL];
	memset(&want, 0, sizeof want);
	for (int pass = 1; pass <= 2; pass++)
		for (int i = 0; i < NPIX; i++) {
			uint32_t g = geo[i];
			if (!valid(fr[i], g))
				continue;
			unsigned b = geo_bin(g), v = corrected(fr[i], dark[i], flat[i], g);
			if (pass == 1) {
				want.sum1[b] += v;
				want.cnt1[b]++;
			} else if (kept(v, want.sum1[b], want.cnt1[b])) {
				want.sum2[b] += v;
				want.cnt2[b]++;
			}
		}
	const struct sums *last = h_sums[(FRAMES - 1) % 2];
	for (int b = 0; b < NB; b++)
		if (last->sum1[b] != want.sum1[b] || last->cnt1[b] != want.cnt1[b] || last->sum2[b] != want.sum2[b] ||
		    last->cnt2[b] != want.cnt2[b]) {
			printf("%s: bin %d: sums %llu/%llu %llu/%llu, want %llu/%llu %llu/%llu result=FAIL\n", name, b, last->sum1[b],
			       last->cnt1[b], last->sum2[b], last->cnt2[b], want.sum1[b], want.cnt1[b], want.sum2[b], want.cnt2[b]);
			return 1;
		}
	if (cake_total != kept_total) {
		printf("%s: cake total %llu, want %llu result=FAIL\n", name, cake_total, kept_total);
		return 1;
	}
	if (full_frames * 2 < FRAMES || rejected <= 0) {
		printf("%s: all %d rings in %d of %d frames, %lld pixels clipped result=FAIL\n", name, RINGS, full_frames, FRAMES, rejected);
		return 1;
	}

	CHECK(cudaFree(d_dark)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_flat)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_geo)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_sums)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cake)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(st.buf)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(d_frame[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_sums[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(integrated[k]));
		CHECK(cudaEventDestroy(read[k]));
	}
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaStreamDestroy(st.s));
	printf("%s: frames=%d peaks=%d full_frames=%d clipped=%lld checksum=%016llx result=OK\n", name, FRAMES, peaks_total, full_frames,
	       rejected, checksum);
	for (int k = 0; k < POOL; k++)
		free(pool[k]);
	free(geo);
	free(dark);
	free(flat);
	free(cake);
	return 0;
}
