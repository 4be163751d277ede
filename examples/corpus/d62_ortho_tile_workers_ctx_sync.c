/*
 * examples/corpus/d62_ortho_tile_workers_ctx_sync.c: corpus workload (CUDA driver API,
 * pthreads). The orthorectification stage of a satellite imagery pipeline: a 8192 x 4096 m
 * scene is cut into 128 ground tiles of 512 x 512 pixels (1 m), and four worker threads, each
 * with its own non-blocking stream, pinned buffers and device buffers, take every fourth tile.
 * For a tile the worker decodes the raw scene patch it needs (768 x 768 16-bit pixels, found by
 * projecting the tile's corners through the sensor's rational polynomial model) into its pinned
 * buffer, uploads it, runs ortho_tile (6 x 6 samples a pixel: the height from the DEM, the
 * rational polynomial projection into the scene, Catmull-Rom resampling), downloads the tile and
 * waits for it in finish_tile(), then encodes it (a histogram, a delta coder's size estimate and
 * sampled checks against the same projection on the host in double precision).
 * What is wrong: finish_tile() waits with cuCtxSynchronize, a leftover of the single-threaded
 * version. cuCtxSynchronize "blocks until the device has completed all preceding requested
 * tasks" (driver API reference): all streams of the context, the other three workers' tiles
 * included, not the worker's own. A worker whose tile is done still waits for the tiles the
 * others queued before its call, so the workers fall into step: they wait until the GPU is empty,
 * decode and encode at the same time while the GPU idles, then queue their next tiles together.
 * cuStreamSynchronize on the worker's stream (or an event recorded after its download) waits for
 * the worker's own tile only, and the workers' host work overlaps the others' tiles.
 * Planted: the cuCtxSynchronize in finish_tile(), every tile of every worker (one line).
 * Clean: the setup allocations, the DEM's and the model's uploads and the setup sync, each tile's
 * async upload from and download into the worker's pinned buffers, teardown.
 * Sizes (estimates, H100): 9.4M samples a tile (about 0.2-0.4 ms of GPU work, 1.2 MB up and
 * 0.5 MB down); about 1 ms of decoding and 0.3 ms of encoding a tile on the worker's thread; 32
 * tiles a worker.
 * The tiles' results are kept by tile number and combined in order after the workers have
 * joined: the line printed is the same on every run, whatever the threads' interleaving.
 *   d62_ortho_tile_workers_ctx_sync driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

enum { WORKERS = 4, TILES_E = 16, TILES_N = 8, TILES = TILES_E * TILES_N, TILE = 512, SS = 6 };
enum { RAW = 768, DEM_W = 1152, THREADS = 256, CHECKS = 8 };
static const float GSD = 1.0f, DEM_STEP = 8.0f;

#define RAW_BYTES ((size_t)RAW * RAW * sizeof(unsigned short))
#define OUT_BYTES ((size_t)TILE * TILE * sizeof(unsigned short))
#define DEM_BYTES ((size_t)DEM_W * DEM_W * sizeof(short))

/* the sensor model: line numerator and denominator, sample numerator and denominator over
 * 1, X, Y, Z, XY, XZ, YZ, X^2, Y^2, Z^2; the offsets and scales (e, n, h, then line and sample) */
static const float RPC[40] = {
	0, 0.015f, -1.0f, 0.008f, 0, 0.001f, 0, 0, 0.002f, 0,     1, 0.0002f, 0.0004f, 0, 0, 0, 0, 0, 0, 0,
	0, 1.0f, 0.02f, 0.01f, 0.001f, 0, 0, 0.002f, 0, 0,        1, 0.0005f, 0.0003f, 0, 0, 0, 0, 0, 0, 0,
};
static const float NORM[10] = {4096, 2048, 300, 4300, 2300, 500, 2875, 5375, 2875, 5375};

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the raw scene (the decoder's output): fields of 32 x 32 pixels, each a ramp */
static unsigned short scene_px(int l, int s)
{
	unsigned int f = (unsigned int)((l >> 5) * 131 + (s >> 5) * 71);
	return (unsigned short)(1000 + f % 2000 + ((l & 31) + (s & 31)) * 8);
}

/* --- the model on the host, in double precision (corners, checks) ----------------------------- */

static double poly(const float *c, double x, double y, double z)
{
	return c[0] + c[1] * x + c[2] * y + c[3] * z + c[4] * x * y + c[5] * x * z + c[6] * y * z +
	       c[7] * x * x + c[8] * y * y + c[9] * z * z;
}

static void project(double e, double n, double h, double *line, double *samp)
{
	double X = (e - NORM[0]) / NORM[3], Y = (n - NORM[1]) / NORM[4], Z = (h - NORM[2]) / NORM[5];
	*line = NORM[6] + NORM[8] * poly(RPC, X, Y, Z) / poly(RPC + 10, X, Y, Z);
	*samp = NORM[7] + NORM[9] * poly(RPC + 20, X, Y, Z) / poly(RPC + 30, X, Y, Z);
}

static void cubic(double t, double *w)
{
	double t2 = t * t, t3 = t2 * t;
	w[0] = 0.5 * (-t3 + 2 * t2 - t);
	w[1] = 0.5 * (3 * t3 - 5 * t2 + 2);
	w[2] = 0.5 * (-3 * t3 + 4 * t2 + t);
	w[3] = 0.5 * (t3 - t2);
}

/* output pixel (ox, oy) of the tile at (e0, n0) from the patch at (l0, s0), as ortho_tile does */
static double reference_px(const short *dem, const unsigned short *raw, int l0, int s0, double e0, double n0,
			   int ox, int oy)
{
	double acc = 0;
	for (int k = 0; k < SS * SS; k++) {
		double e = e0 + GSD * (ox + (k % SS + 0.5) / SS), n = n0 - GSD * (oy + (k / SS + 0.5) / SS);
		double dx = e / DEM_STEP, dy = n / DEM_STEP;
		int ix = (int)dx, iy = (int)dy;
		double fx = dx - ix, fy = dy - iy, line, samp, wl[4], ws[4], v = 0;
		const short *d = dem + (size_t)iy * DEM_W + ix;
		double h = (1 - fy) * ((1 - fx) * d[0] + fx * d[1]) + fy * ((1 - fx) * d[DEM_W] + fx * d[DEM_W + 1]);
		project(e, n, h, &line, &samp);
		line -= l0;
		samp -= s0;
		int li = (int)floor(line), si = (int)floor(samp);
		cubic(line - li, wl);
		cubic(samp - si, ws);
		for (int a = 0; a < 4; a++)
			for (int b = 0; b < 4; b++)
				v += wl[a] * ws[b] * raw[(size_t)(li - 1 + a) * RAW + si - 1 + b];
		acc += v;
	}
	return acc / (SS * SS);
}

/* --- the stage ------------------------------------------------------------------------------- */

struct shared {
	CUcontext ctx;
	CUfunction ortho;
	CUdeviceptr d_dem, d_rpc, d_norm;
	const short *dem;
	int hmin, hmax;
	unsigned long long result[TILES]; /* each tile's encoded hash, by tile number */
	int bad[TILES];                   /* sampled pixels off the host's model */
};

struct worker {
	struct shared *sh;
	int id;
	CUstream s;
	CUdeviceptr d_raw, d_out;
	unsigned short *raw, *out; /* pinned */
};

/* the scene patch tile t needs: the corners projected at the lowest and highest ground */
static int patch_origin(const struct shared *sh, double e0, double n0, int *l0, int *s0)
{
	double lmin = 1e30, lmax = -1e30, smin = 1e30, smax = -1e30;
	for (int k = 0; k < 8; k++) {
		double line, samp;
		project(e0 + (k & 1) * TILE * GSD, n0 - (k >> 1 & 1) * TILE * GSD, k & 4 ? sh->hmax : sh->hmin, &line, &samp);
		lmin = fmin(lmin, line), lmax = fmax(lmax, line), smin = fmin(smin, samp), smax = fmax(smax, samp);
	}
	*l0 = (int)floor(lmin) - 8;
	*s0 = (int)floor(smin) - 8;
	return lmax - *l0 < RAW - 8 && smax - *s0 < RAW - 8;
}

static void finish_tile(struct worker *wk)
{
	(void)wk;
	DCHECK(cuCtxSynchronize()); // SYNCSPY-PROBLEM: waits for every worker's tiles, not this worker's stream
}

static void *worker_main(void *arg)
{
	struct worker *wk = (struct worker *)arg;
	struct shared *sh = wk->sh;
	DCHECK(cuCtxSetCurrent(sh->ctx));
	for (int t = wk->id; t < TILES; t += WORKERS) {
		int tile = TILE, ss = SS, raw_n = RAW, dem_w = DEM_W, l0, s0;
		float e0 = (float)(t % TILES_E) * TILE * GSD, n0 = (float)(t / TILES_E + 1) * TILE * GSD;
		float gsd = GSD, dem_step = DEM_STEP;
		if (!patch_origin(sh, e0, n0, &l0, &s0)) {
			fprintf(stderr, "d62: tile %d does not fit its patch\n", t);
			exit(1);
		}
		for (int r = 0; r < RAW; r++) /* the decoder */
			for (int c = 0; c < RAW; c++)
				wk->raw[(size_t)r * RAW + c] = scene_px(l0 + r, s0 + c);
		DCHECK(cuMemcpyHtoDAsync(wk->d_raw, wk->raw, RAW_BYTES, wk->s)); // SYNCSPY-CLEAN: the worker's pinned patch
		void *args[] = {&wk->d_raw, &raw_n, &raw_n, &l0, &s0, &sh->d_dem, &dem_w, &dem_step,
				&sh->d_rpc, &sh->d_norm, &e0, &n0, &gsd, &tile, &ss, &wk->d_out};
		DCHECK(cuLaunchKernel(sh->ortho, TILE * TILE / THREADS, 1, 1, THREADS, 1, 1, 0, wk->s, args, NULL));
		DCHECK(cuMemcpyDtoHAsync(wk->out, wk->d_out, OUT_BYTES, wk->s)); // SYNCSPY-CLEAN: the worker's pinned tile
		finish_tile(wk);

		/* the encoder: histogram, a delta coder's size estimate, sampled checks */
		unsigned int hist[256] = {0};
		unsigned long long bits = 0, h = 14695981039346656037ull;
		for (int i = 0; i < TILE * TILE; i++) {
			int v = wk->out[i], d = i % TILE ? v - wk->out[i - 1] : v;
			hist[v >> 8 & 255]++;
			bits += 2 + 2 * (unsigned long long)(32 - __builtin_clz((unsigned int)(d < 0 ? -d : d) | 1));
			h = (h ^ (unsigned long long)v) * 1099511628211ull;
		}
		for (int k = 0; k < 256; k++)
			h = (h ^ hist[k]) * 1099511628211ull;
		for (int k = 0; k < CHECKS; k++) {
			uint32_t r = mix32((uint32_t)(t * CHECKS + k));
			int ox = (int)(r % TILE), oy = (int)(r >> 16) % TILE;
			double ref = reference_px(sh->dem, wk->raw, l0, s0, e0, n0, ox, oy);
			sh->bad[t] += fabs(ref - wk->out[oy * TILE + ox]) > 2.0;
		}
		sh->result[t] = h ^ bits << 40;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct shared sh;
	struct worker wk[WORKERS];
	pthread_t th[WORKERS];
	CUmodule module = driver_setup(argc, argv, &sh.ctx);
	short *dem = NULL;
	int ok = 1, bad = 0;

	memset(sh.result, 0, sizeof sh.result);
	memset(sh.bad, 0, sizeof sh.bad);
	DCHECK(cuModuleGetFunction(&sh.ortho, module, "ortho_tile"));
	DCHECK(cuMemHostAlloc((void **)&dem, DEM_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
	sh.hmin = 1 << 30, sh.hmax = -(1 << 30);
	for (int y = 0; y < DEM_W; y++) /* rolling hills, 8 m posts */
		for (int x = 0; x < DEM_W; x++) {
			int v = (int)lround(300 + 200 * sin(x / 97.0) * cos(y / 131.0) + 80 * sin((x + y) / 41.0));
			dem[(size_t)y * DEM_W + x] = (short)v;
			sh.hmin = v < sh.hmin ? v : sh.hmin;
			sh.hmax = v > sh.hmax ? v : sh.hmax;
		}
	sh.dem = dem;
	DCHECK(cuMemAlloc(&sh.d_dem, DEM_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&sh.d_rpc, sizeof RPC)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&sh.d_norm, sizeof NORM)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(sh.d_dem, dem, DEM_BYTES)); // SYNCSPY-CLEAN: setup upload of the DEM
	DCHECK(cuMemcpyHtoD(sh.d_rpc, RPC, sizeof RPC)); // SYNCSPY-CLEAN: setup upload of the sensor model
	DCHECK(cuMemcpyHtoD(sh.d_norm, NORM, sizeof NORM)); // SYNCSPY-CLEAN: setup upload of the sensor model
	for (int w = 0; w < WORKERS; w++) {
		wk[w].sh = &sh;
		wk[w].id = w;
		DCHECK(cuStreamCreate(&wk[w].s, CU_STREAM_NON_BLOCKING));
		DCHECK(cuMemAlloc(&wk[w].d_raw, RAW_BYTES)); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuMemAlloc(&wk[w].d_out, OUT_BYTES)); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuMemHostAlloc((void **)&wk[w].raw, RAW_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuMemHostAlloc((void **)&wk[w].out, OUT_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
	}
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the workers start

	for (int w = 0; w < WORKERS; w++)
		if (pthread_create(&th[w], NULL, worker_main, &wk[w])) {
			fprintf(stderr, "d62: pthread_create failed\n");
			return 1;
		}
	for (int w = 0; w < WORKERS; w++)
		pthread_join(th[w], NULL);

	unsigned long long h = 14695981039346656037ull;
	for (int t = 0; t < TILES; t++) {
		ok &= sh.result[t] != 0;
		bad += sh.bad[t];
		h = (h ^ sh.result[t]) * 1099511628211ull;
	}
	if (!ok || bad > TILES * CHECKS / 100) {
		fprintf(stderr, "d62: %d of %d sampled pixels differ from the host's model\n", bad, TILES * CHECKS);
		return 1;
	}
	for (int w = 0; w < WORKERS; w++) {
		DCHECK(cuMemFreeHost(wk[w].raw)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(wk[w].out)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(wk[w].d_raw)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(wk[w].d_out)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuStreamDestroy(wk[w].s));
	}
	DCHECK(cuMemFreeHost(dem)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sh.d_dem)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sh.d_rpc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sh.d_norm)); // SYNCSPY-CLEAN: teardown
	driver_teardown(module);
	printf("d62_ortho_tile_workers_ctx_sync: tiles=%d workers=%d tiles_hash=%016llx result=OK\n", TILES, WORKERS,
	       h);
	return 0;
}
