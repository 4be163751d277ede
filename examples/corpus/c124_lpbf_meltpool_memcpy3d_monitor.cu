/*
 * examples/corpus/c124_lpbf_meltpool_memcpy3d_monitor.cu: corpus workload (CUDA C). The
 * thermal model of a laser powder-bed fusion (metal 3D printing) process-parameter study: a
 * 1024 x 512 x 192 voxel block (10 um voxels) of the part and its powder layer, explicit heat
 * conduction with an enthalpy formulation (melting absorbs latent heat at a fixed melting
 * point), all in integer enthalpy units, and a laser spot (60 um radius, absorbed in the top
 * three layers) scanning one track along x, a quarter voxel a step. Each step is one stencil pass
 * over the block (two pitched buffers from cudaMalloc3D, swapped every step).
 * After every step the melt-pool monitor, which stands in for the machine's coaxial camera in
 * the study, copies a 64 x 64 x 16 voxel window around the laser spot (the top 16 layers) to
 * the host with cudaMemcpy3D and measures the pool (liquid voxels, length, width, depth, peak
 * temperature) for the process map. The process map is only logged: the scan speed and power
 * are fixed for the run, and nothing the simulation does depends on the monitor. cudaMemcpy3D
 * is a synchronous copy ("This function exhibits synchronous behavior for most use cases",
 * runtime API reference), and from device memory to the host it "returns only once the copy has
 * completed" (API synchronization behavior); it goes to the legacy default stream, where the
 * stencil runs too, so every step the host waits for the step's stencil pass and the copy, then
 * measures the pool while the GPU has nothing queued, and queues the next step only afterwards.
 * The fix (c128): the window copied with cudaMemcpy3DAsync into a pinned two-slot ring on a copy
 * stream, ordered by events, and the pool measured one step behind.
 * Planted: the cudaMemcpy3D of the monitor window, every step (one line).
 * Clean: the setup allocations (cudaMalloc3D) and cudaMemset3D, the final read of the
 * heat-affected region with cudaMemcpy3D after the loop, teardown.
 * Per step (estimates, H100): one 7-point pass over 100M voxels (about 0.8 GB read and written,
 * about 0.35-0.45 ms) and a 256 KB strided window download; the host's pool measurement and
 * process-map update about 0.1-0.3 ms. The checks after the loop: the host simulates the
 * heat-affected box around the track (its outer layer must stay at ambient, so nothing outside
 * it changed) with the same integer arithmetic; every step's pool measurement and the final box,
 * read back from the device, must equal the host's; a pool must form.
 */
#include "corpus.h"

#include <vector>

enum { NX = 1024, NY = 512, NZ = 192, STEPS = 64, THREADS = 256 };
enum { WX = 64, WY = 64, WZ = 16, WBACK = 40, SPOT = 6, SPEED_Q = 2, Q = 8 };
enum { T_MELT = 1400, LATENT = 2000, POWER = 500 }; /* enthalpy units: 1 = 1 K of solid, 0 = 300 K */

static const int X0 = NX / 5, LY = NY / 2; /* the spot's start (voxel centres), in voxels */
static const size_t VOXELS = (size_t)NX * NY * NZ;

/* temperature (above ambient) of a voxel's enthalpy: solid, melting plateau, liquid */
__host__ __device__ static inline int temp_of(int e)
{
	return e < T_MELT ? e : e < T_MELT + LATENT ? T_MELT : e - LATENT;
}

/* the laser's energy into voxel (x, y, z) with the spot's centre at (lxq, lyq) in eighths of a
 * voxel: absorbed in the powder's top three layers (half, three tenths, a fifth), a paraboloid
 * across the spot */
__host__ __device__ static inline int laser_at(int x, int y, int z, int lxq, int lyq)
{
	int dx = Q * x + Q / 2 - lxq, dy = Q * y + Q / 2 - lyq, depth = NZ - 1 - z;
	int r2 = dx * dx + dy * dy, R2 = Q * Q * SPOT * SPOT;
	if (r2 >= R2 || depth > 2)
		return 0;
	return (int)((long long)POWER * (depth == 0 ? 5 : depth == 1 ? 3 : 2) * (R2 - r2) / (10LL * R2));
}

/* the spot in step s (eighths of a voxel): SPEED_Q eighths a step along x */
static int spot_xq(int s)
{
	return Q * X0 + SPEED_Q * s;
}

/* the new enthalpy of a voxel from its own and its six neighbours' (a missing neighbour is the
 * voxel itself: no flux through the block's faces) */
__host__ __device__ static inline int conduct(int e, int xm, int xp, int ym, int yp, int zm, int zp)
{
	int t = temp_of(e);
	int sum = temp_of(xm) + temp_of(xp) + temp_of(ym) + temp_of(yp) + temp_of(zm) + temp_of(zp);
	return e + ((sum - 6 * t) >> 3);
}

__device__ static inline const int *row_of(cudaPitchedPtr f, int y, int z)
{
	return (const int *)((const char *)f.ptr + ((size_t)z * NY + y) * f.pitch);
}

__global__ void lpbf_step(cudaPitchedPtr src, cudaPitchedPtr dst, int lxq, int lyq)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= VOXELS)
		return;
	int x = (int)(i % NX), y = (int)(i / NX % NY), z = (int)(i / ((size_t)NX * NY));
	const int *r = row_of(src, y, z);
	int e = r[x];
	int ne = conduct(e, x > 0 ? r[x - 1] : e, x < NX - 1 ? r[x + 1] : e, y > 0 ? row_of(src, y - 1, z)[x] : e,
			 y < NY - 1 ? row_of(src, y + 1, z)[x] : e, z > 0 ? row_of(src, y, z - 1)[x] : e,
			 z < NZ - 1 ? row_of(src, y, z + 1)[x] : e);
	ne += laser_at(x, y, z, lxq, lyq);
	((int *)((char *)dst.ptr + ((size_t)z * NY + y) * dst.pitch))[x] = ne;
}

/* --- the melt-pool monitor ----------------------------------------------------------------- */

struct pool {
	int liquid, length, width, depth, peak;
};

/* the window's first voxel for the spot at lxq (eighths of a voxel) */
static int window_x0(int lxq)
{
	return lxq / Q - WBACK;
}

/* the pool in a window of WX x WY x WZ enthalpies (z0 = NZ - WZ) */
static struct pool measure_pool(const int *w)
{
	int minx = WX, maxx = -1, miny = WY, maxy = -1, minz = WZ;
	struct pool p = {0, 0, 0, 0, 0};
	for (int z = 0; z < WZ; z++)
		for (int y = 0; y < WY; y++)
			for (int x = 0; x < WX; x++) {
				int e = w[((size_t)z * WY + y) * WX + x];
				p.peak = temp_of(e) > p.peak ? temp_of(e) : p.peak;
				if (e < T_MELT + LATENT)
					continue;
				p.liquid++;
				minx = x < minx ? x : minx, maxx = x > maxx ? x : maxx;
				miny = y < miny ? y : miny, maxy = y > maxy ? y : maxy;
				minz = z < minz ? z : minz;
			}
	if (p.liquid) {
		p.length = maxx - minx + 1;
		p.width = maxy - miny + 1;
		p.depth = WZ - minz;
	}
	return p;
}

/* --- the host's reference: the heat-affected box, the same arithmetic ---------------------- */

enum { MARGIN = 24 };
static const int BX0 = X0 - SPOT - MARGIN, BX1 = X0 + SPEED_Q * (STEPS - 1) / Q + 1 + SPOT + MARGIN;
static const int BY0 = LY - SPOT - MARGIN, BY1 = LY + SPOT + MARGIN, BZ0 = NZ - 1 - MARGIN;
static const int BW = BX1 - BX0 + 1, BH = BY1 - BY0 + 1, BD = NZ - BZ0;

struct box {
	std::vector<int> e, next;
	int at(int x, int y, int z) const /* enthalpy anywhere: ambient outside the box */
	{
		if (x < BX0 || x > BX1 || y < BY0 || y > BY1 || z < BZ0)
			return 0;
		return e[((size_t)(z - BZ0) * BH + (y - BY0)) * BW + (x - BX0)];
	}
};

/* one step of the box; returns 0 if heat reached the box's outer layer (the box is too small) */
static int box_step(struct box *b, int lxq, int lyq)
{
	int ok = 1;
	for (int z = BZ0; z < NZ; z++)
		for (int y = BY0; y <= BY1; y++)
			for (int x = BX0; x <= BX1; x++) {
				int e = b->at(x, y, z);
				int ne = conduct(e, b->at(x - 1, y, z), b->at(x + 1, y, z), b->at(x, y - 1, z),
						 b->at(x, y + 1, z), b->at(x, y, z - 1), z < NZ - 1 ? b->at(x, y, z + 1) : e);
				ne += laser_at(x, y, z, lxq, lyq);
				if (ne != 0 && (x == BX0 || x == BX1 || y == BY0 || y == BY1 || z == BZ0))
					ok = 0;
				b->next[((size_t)(z - BZ0) * BH + (y - BY0)) * BW + (x - BX0)] = ne;
			}
	b->e.swap(b->next);
	return ok;
}

static void box_window(const struct box *b, int lxq, int *w)
{
	for (int z = 0; z < WZ; z++)
		for (int y = 0; y < WY; y++)
			for (int x = 0; x < WX; x++)
				w[((size_t)z * WY + y) * WX + x] = b->at(window_x0(lxq) + x, LY - WY / 2 + y, NZ - WZ + z);
}

int main(void)
{
	const char *name = "c124_lpbf_meltpool_memcpy3d_monitor";
	cudaPitchedPtr field[2];
	cudaExtent ext = make_cudaExtent(NX * sizeof(int), NY, NZ);
	std::vector<int> window((size_t)WX * WY * WZ), final_box((size_t)BW * BH * BD);
	struct pool pool_log[STEPS];

	for (int k = 0; k < 2; k++) {
		CHECK(cudaMalloc3D(&field[k], ext)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMemset3D(field[k], 0, ext)); // SYNCSPY-CLEAN: setup, the block at ambient
	}
	const int blocks = (int)((VOXELS + THREADS - 1) / THREADS);

	int cur = 0;
	for (int s = 0; s < STEPS; s++) {
		int lxq = spot_xq(s);
		lpbf_step<<<blocks, THREADS>>>(field[cur], field[cur ^ 1], lxq, Q * LY);
		CHECK_LAUNCH();
		cur ^= 1;

		/* the melt-pool monitor: the window around the spot, the pool measured at once */
		cudaMemcpy3DParms p = {};
		p.srcPtr = field[cur];
		p.srcPos = make_cudaPos((size_t)window_x0(lxq) * sizeof(int), LY - WY / 2, NZ - WZ);
		p.dstPtr = make_cudaPitchedPtr(window.data(), WX * sizeof(int), WX, WY);
		p.extent = make_cudaExtent(WX * sizeof(int), WY, WZ);
		p.kind = cudaMemcpyDeviceToHost;
		CHECK(cudaMemcpy3D(&p)); // SYNCSPY-PROBLEM: a blocking download every step, only for the process-map log
		pool_log[s] = measure_pool(window.data());
	}

	/* the final read: the heat-affected box */
	cudaMemcpy3DParms p = {};
	p.srcPtr = field[cur];
	p.srcPos = make_cudaPos((size_t)BX0 * sizeof(int), BY0, BZ0);
	p.dstPtr = make_cudaPitchedPtr(final_box.data(), BW * sizeof(int), BW, BH);
	p.extent = make_cudaExtent(BW * sizeof(int), BH, BD);
	p.kind = cudaMemcpyDeviceToHost;
	CHECK(cudaMemcpy3D(&p)); // SYNCSPY-CLEAN: the final read, after the loop

	/* the checks: the host's box, step by step */
	struct box b;
	b.e.assign((size_t)BW * BH * BD, 0);
	b.next.assign((size_t)BW * BH * BD, 0);
	unsigned long long checksum = 14695981039346656037ull;
	int pools = 0;
	for (int s = 0; s < STEPS; s++) {
		int lxq = spot_xq(s);
		if (!box_step(&b, lxq, Q * LY)) {
			fprintf(stderr, "%s: heat reached the reference box's edge at step %d\n", name, s);
			return 1;
		}
		box_window(&b, lxq, window.data());
		struct pool want = measure_pool(window.data()), got = pool_log[s];
		corpus_expect(name, "pool liquid voxels", got.liquid, want.liquid);
		corpus_expect(name, "pool length", got.length, want.length);
		corpus_expect(name, "pool width", got.width, want.width);
		corpus_expect(name, "pool depth", got.depth, want.depth);
		corpus_expect(name, "pool peak", got.peak, want.peak);
		pools += got.liquid > 0;
		const int v[5] = {got.liquid, got.length, got.width, got.depth, got.peak};
		for (int k = 0; k < 5; k++)
			checksum = (checksum ^ (unsigned)v[k]) * 1099511628211ull;
	}
	for (size_t i = 0; i < final_box.size(); i++)
		if (final_box[i] != b.e[i]) {
			fprintf(stderr, "%s: final enthalpy %zu = %d, want %d\n", name, i, final_box[i], b.e[i]);
			return 1;
		}
	if (pools < STEPS / 2) {
		fprintf(stderr, "%s: a melt pool in only %d of %d steps\n", name, pools, STEPS);
		return 1;
	}

	for (int k = 0; k < 2; k++)
		CHECK(cudaFree(field[k].ptr)); // SYNCSPY-CLEAN: teardown
	const struct pool &last = pool_log[STEPS - 1];
	printf("%s: steps=%d pools=%d last_pool=%dx%dx%d peak=%d checksum=%016llx result=OK\n", name, STEPS, pools,
	       last.length, last.width, last.depth, last.peak, checksum);
	return 0;
}
