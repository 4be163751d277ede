/*
 * examples/corpus/d73_tsunami_forecast_zero_copy_bathymetry.c: corpus workload (CUDA driver
 * API). A tsunami warning centre's near-field forecast: the linear shallow-water equations on a
 * 2048 x 1024 grid of 4 km cells (8 s time steps, a C grid in integer micrometres, so that the
 * water volume is exact) from a subduction earthquake's sea-floor uplift 100 cells off a coast
 * with a continental shelf and islands; 60 steps of 16 substeps (about two hours), 48 coastal
 * tide gauges and 16 deep-ocean buoys read every step into a pinned ring and checked one step
 * late for arrivals, and the highest water at every cell kept for the inundation map.
 * What is wrong: the bathymetry (int16 metres, 4 MB) is loaded into page-locked memory allocated
 * with cuMemHostAlloc(..., CU_MEMHOSTALLOC_DEVICEMAP) and the momentum kernel reads it through
 * the mapped device pointer (cuMemHostGetDevicePointer), "so that it needs no copy": zero-copy
 * memory. The kernel reads three depths a cell (the cell and its east and north neighbours) in
 * every one of the 960 substeps, across the PCIe bus every time. The CUDA C++ Best Practices
 * Guide (Zero Copy): "Because the data is not cached on the GPU, mapped pinned memory should be
 * read or written only once, and the global loads and stores that read and write the memory
 * should be coalesced." A device copy of the table, uploaded once with cuMemcpyHtoD after the
 * cuMemAlloc, would be read from HBM.
 * Planted: the cuMemHostAlloc of the bathymetry with CU_MEMHOSTALLOC_DEVICEMAP, in setup (one
 * line: the allocation the user must change; its cost is every momentum substep's reads).
 * Clean: the other setup allocations, the initial state's uploads and resets, the setup sync,
 * the gauges' async download into the pinned ring every step, the cuEventSynchronize one step
 * behind (the host checks the readings), the final wait, the final reads of the state before and
 * after one extra substep and of the inundation map, teardown. cuMemHostGetDevicePointer neither
 * syncs nor copies (unmarked).
 * Per step (estimates, H100): 16 substeps of about 60 MB of HBM traffic each (0.02-0.04 ms), and
 * of the depth table over PCIe, 4-8 MB a substep at 25-50 GB/s (0.1-0.3 ms): some 2-5 ms a step
 * where a device copy would take about 0.5 ms. Checks: the water volume equals the uplift's
 * (exact), one extra substep recomputed on the host from the final state (exact), every buoy and
 * some coastal gauges reached by the wave.
 *   d73_tsunami_forecast_zero_copy_bathymetry driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { NX = 2048, NY = 1024, N = NX * NY, SUB = 16, STEPS = 60, COAST_G = 48, BUOYS = 16, NG = COAST_G + BUOYS, THREADS = 256 };
enum { COEF = 658, /* g (dt / dx)^2 in Q24: 9.81 m/s^2 x (8 s / 4 km)^2 */ ARRIVAL = 10000 /* um */, SRC_X = 1500, SRC_Y = 512 };

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* cos and sin of k x 22.5 degrees, x 1000 */
static const int dir16[16][2] = {{1000, 0}, {924, 383}, {707, 707}, {383, 924}, {0, 1000}, {-383, 924}, {-707, 707}, {-924, 383}, {-1000, 0}, {-924, -383}, {-707, -707}, {-383, -924}, {0, -1000}, {383, -924}, {707, -707}, {924, -383}};

/* the coastline's first land cell in row y */
static int coast_x(int y)
{
	return 1600 + (int)(mix32((uint32_t)(y / 32) ^ 0x452821e6u) % 81u) - 40;
}

/* the depth (m) of cell (x, y): abyssal plain, the trench, the shelf, land and six islands */
static short depth_at(int x, int y)
{
	int xc = coast_x(y), d;
	if (x >= xc)
		return (short)-((x - xc) * 5 + 1);
	for (int k = 0; k < 6; k++) {
		uint32_t h = mix32((uint32_t)k ^ 0x38d01377u);
		int ix = 1525 + (int)(h % 50u), iy = 150 + (int)((h >> 8) % 700u), r = 5 + (int)((h >> 20) % 8u);
		if ((x - ix) * (x - ix) + (y - iy) * (y - iy) < r * r)
			return -10;
	}
	d = abs(x - 1480) < 10 ? 7000 : 4000 + (int)(mix32((uint32_t)((y / 64) * 64 + x / 64) ^ 0xbe5466cfu) % 1500u);
	if (x > xc - 30 && 50 + (xc - x) * 100 < d)
		d = 50 + (xc - x) * 100;
	return (short)d;
}

/* the host's substep (the mirror of tsu_momentum and tsu_continuity) */
static void host_substep(const short *depth, int *eta, int *p, int *q)
{
	for (int y = 0; y < NY; y++)
		for (int x = 0; x < NX; x++) {
			int i = y * NX + x, d = depth[i];
			if (x < NX - 1) {
				int de = depth[i + 1];
				p[i] = d > 0 && de > 0 ? p[i] - (int)(((long long)COEF * ((d + de) / 2) * (eta[i + 1] - eta[i])) >> 24) : 0;
			}
			if (y < NY - 1) {
				int dn = depth[i + NX];
				q[i] = d > 0 && dn > 0 ? q[i] - (int)(((long long)COEF * ((d + dn) / 2) * (eta[i + NX] - eta[i])) >> 24) : 0;
			}
		}
	for (int y = 0; y < NY; y++)
		for (int x = 0; x < NX; x++) {
			int i = y * NX + x;
			eta[i] -= p[i] - (x > 0 ? p[i - 1] : 0) + q[i] - (y > 0 ? q[i - NX] : 0);
		}
}

int main(int argc, char **argv)
{
	const char *name = "d73_tsunami_forecast_zero_copy_bathymetry";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction momentum, continuity, gauges;
	CUstream s;
	CUdeviceptr d_depth, d_eta, d_p, d_q, d_etamax, d_cell, d_read;
	CUevent read_done[2];
	short *depth;
	int *reading[2], *eta0 = (int *)calloc(N, sizeof(int)), cell[NG];

	DCHECK(cuModuleGetFunction(&momentum, module, "tsu_momentum"));
	DCHECK(cuModuleGetFunction(&continuity, module, "tsu_continuity"));
	DCHECK(cuModuleGetFunction(&gauges, module, "tsu_gauges"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemHostAlloc((void **)&depth, N * sizeof(short), CU_MEMHOSTALLOC_DEVICEMAP)); // SYNCSPY-PROBLEM: zero-copy bathymetry: every momentum substep reads it across PCIe
	DCHECK(cuMemHostGetDevicePointer(&d_depth, depth, 0));
	long long volume = 0;
	for (int y = 0; y < NY; y++)
		for (int x = 0; x < NX; x++) {
			int i = y * NX + x;
			depth[i] = depth_at(x, y); /* the bathymetry tile, read into the mapped buffer */
			double ux = (x - SRC_X) / 12.0, uy = (y - SRC_Y) / 50.0, vx = (x - SRC_X + 30) / 10.0, vy = (y - SRC_Y) / 45.0;
			if (depth[i] > 0 && ux * ux + uy * uy < 1.0)
				eta0[i] = (int)(2.0e6 * (1.0 - ux * ux - uy * uy)); /* uplift, up to 2 m */
			else if (depth[i] > 0 && vx * vx + vy * vy < 1.0)
				eta0[i] = -(int)(5.0e5 * (1.0 - vx * vx - vy * vy)); /* subsidence behind it */
			volume += eta0[i];
		}
	for (int g = 0; g < NG; g++) {
		int x, y;
		if (g < COAST_G) {
			y = 300 + 9 * g;
			x = coast_x(y) - 2;
		} else { /* the buoys on a ring around the source, every 22.5 degrees */
			int r = 40 + (int)(mix32((uint32_t)g) % 40u);
			x = SRC_X + r * dir16[g - COAST_G][0] / 1000 - 20;
			y = SRC_Y + r * dir16[g - COAST_G][1] / 1000;
		}
		while (depth[y * NX + x] <= 0) /* off the islands */
			x--;
		cell[g] = y * NX + x;
	}

	DCHECK(cuMemAlloc(&d_eta, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_p, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_q, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_etamax, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_cell, sizeof cell)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_read, 2 * sizeof cell)); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAllocHost((void **)&reading[k], sizeof cell)); // SYNCSPY-CLEAN: setup, the gauges' pinned ring
		DCHECK(cuEventCreate(&read_done[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemcpyHtoD(d_eta, eta0, N * sizeof(int))); // SYNCSPY-CLEAN: setup upload of the initial sea surface
	DCHECK(cuMemcpyHtoD(d_etamax, eta0, N * sizeof(int))); // SYNCSPY-CLEAN: setup, the inundation map starts from it
	DCHECK(cuMemcpyHtoD(d_cell, cell, sizeof cell)); // SYNCSPY-CLEAN: setup upload of the gauge cells
	DCHECK(cuMemsetD32(d_p, 0, N)); // SYNCSPY-CLEAN: setup, the sea at rest
	DCHECK(cuMemsetD32(d_q, 0, N)); // SYNCSPY-CLEAN: setup, the sea at rest
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the forecast

	int nx = NX, ny = NY, coef = COEF, ng = NG, arrival[NG], peak[NG];
	unsigned long long checksum = 14695981039346656037ull;
	for (int g = 0; g < NG; g++)
		arrival[g] = -1, peak[g] = 0;
	void *ma[] = {&d_eta, &d_depth, &nx, &ny, &coef, &d_p, &d_q};
	void *ca[] = {&d_eta, &d_p, &d_q, &nx, &d_etamax};
	for (int t = 0; t <= STEPS; t++) {
		if (t < STEPS) {
			CUdeviceptr out = d_read + (size_t)(t % 2) * sizeof cell;
			for (int k = 0; k < SUB; k++) {
				DCHECK(cuLaunchKernel(momentum, NX / THREADS, NY, 1, THREADS, 1, 1, 0, s, ma, NULL));
				DCHECK(cuLaunchKernel(continuity, NX / THREADS, NY, 1, THREADS, 1, 1, 0, s, ca, NULL));
			}
			void *ga[] = {&d_eta, &d_cell, &ng, &out};
			DCHECK(cuLaunchKernel(gauges, 1, 1, 1, NG, 1, 1, 0, s, ga, NULL));
			DCHECK(cuMemcpyDtoHAsync(reading[t % 2], out, sizeof cell, s)); // SYNCSPY-CLEAN: the readings into the pinned ring
			DCHECK(cuEventRecord(read_done[t % 2], s));
		}
		if (t == 0)
			continue;
		int g0 = t - 1; /* step g0's readings, one step behind */
		DCHECK(cuEventSynchronize(read_done[g0 % 2])); // SYNCSPY-CLEAN: the step one behind, the warning desk checks its readings
		for (int g = 0; g < NG; g++) {
			int v = reading[g0 % 2][g];
			if (arrival[g] < 0 && abs(v) >= ARRIVAL)
				arrival[g] = g0;
			peak[g] = v > peak[g] ? v : peak[g];
			checksum = (checksum ^ (unsigned)v) * 1099511628211ull;
		}
	}
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: the final wait

	/* the checks: the volume, one more substep on the host, the arrivals */
	int *eta = (int *)malloc(N * sizeof(int)), *p = (int *)malloc(N * sizeof(int)), *q = (int *)malloc(N * sizeof(int));
	int *eta1 = (int *)malloc(N * sizeof(int)), *etamax = (int *)malloc(N * sizeof(int));
	DCHECK(cuMemcpyDtoH(eta, d_eta, N * sizeof(int))); // SYNCSPY-CLEAN: the final read of the sea surface
	DCHECK(cuMemcpyDtoH(p, d_p, N * sizeof(int))); // SYNCSPY-CLEAN: the final read of the fluxes
	DCHECK(cuMemcpyDtoH(q, d_q, N * sizeof(int))); // SYNCSPY-CLEAN: the final read of the fluxes
	DCHECK(cuMemcpyDtoH(etamax, d_etamax, N * sizeof(int))); // SYNCSPY-CLEAN: the final read of the inundation map
	DCHECK(cuLaunchKernel(momentum, NX / THREADS, NY, 1, THREADS, 1, 1, 0, s, ma, NULL));
	DCHECK(cuLaunchKernel(continuity, NX / THREADS, NY, 1, THREADS, 1, 1, 0, s, ca, NULL));
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: the check's extra substep
	DCHECK(cuMemcpyDtoH(eta1, d_eta, N * sizeof(int))); // SYNCSPY-CLEAN: the check's read after the extra substep
	long long vol = 0;
	for (int i = 0; i < N; i++)
		vol += eta[i];
	if (vol != volume) {
		printf("%s: water volume %lld um cells, want %lld result=FAIL\n", name, vol, volume);
		return 1;
	}
	host_substep(depth, eta, p, q);
	for (int i = 0; i < N; i++)
		if (eta[i] != eta1[i]) {
			printf("%s: cell (%d, %d) after the extra substep: %d um, want %d result=FAIL\n", name, i % NX, i / NX, eta1[i], eta[i]);
			return 1;
		}
	int coast_hit = 0, buoys_hit = 0, coast_peak = 0;
	long long flooded = 0;
	for (int g = 0; g < NG; g++) {
		if (g < COAST_G) {
			coast_hit += arrival[g] >= 0;
			coast_peak = peak[g] > coast_peak ? peak[g] : coast_peak;
		} else {
			buoys_hit += arrival[g] >= 0;
		}
		checksum = (checksum ^ (unsigned)arrival[g]) * 1099511628211ull;
	}
	for (int i = 0; i < N; i++) {
		flooded += etamax[i] >= 500000;
		checksum = (checksum ^ (unsigned)etamax[i]) * 1099511628211ull;
	}
	if (buoys_hit != BUOYS || coast_hit == 0) {
		printf("%s: %d of %d buoys and %d of %d coastal gauges reached result=FAIL\n", name, buoys_hit, BUOYS, coast_hit, COAST_G);
		return 1;
	}

	DCHECK(cuMemFreeHost(depth)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_eta)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_p)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_q)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_etamax)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_cell)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_read)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFreeHost(reading[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(read_done[k]));
	}
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	printf("%s: steps=%d substeps=%d volume=%lld buoys=%d coast_gauges=%d coast_peak_mm=%d cells_over_half_metre=%lld checksum=%016llx result=OK\n",
	       name, STEPS, STEPS * SUB, volume, buoys_hit, coast_hit, coast_peak / 1000, flooded, checksum);
	free(eta0);
	free(eta);
	free(p);
	free(q);
	free(eta1);
	free(etamax);
	return 0;
}
