/*
 * examples/corpus/d34_lidar_archive_h2h_async.c: corpus workload (CUDA driver API). The mapping
 * node of a survey vehicle: every lidar sweep (256K returns) is decoded by the host into one of
 * two pinned staging buffers, uploaded on an upload stream, and on the mapping stream every
 * return's ray is traced through a 256^3 occupancy grid (free passes along the ray, a hit at the
 * end) and the grid's statistics are reduced and downloaded into a pinned slot. The sweep log
 * then appends the statistics to its pinned history with archive_sweep(), which copies the slot
 * into the log with cuMemcpyAsync on the mapping stream "to stay ordered after the download".
 * Both pointers are host memory (cuMemcpyAsync infers the direction from the unified addresses),
 * and for transfers from any host memory to any host memory the copy functions, the Async ones
 * included, are fully synchronous with respect to the host (driver API, "API synchronization
 * behavior"): the call returns only when the mapping stream has run the whole sweep before it,
 * so the host decodes the next sweep only after the GPU has finished this one, and the GPU idles
 * while it decodes. A plain memcpy from the slot after waiting on an event one sweep behind
 * would keep the upload, the mapping and the decoding overlapped.
 * Planted: the host-to-host cuMemcpyAsync in archive_sweep(), every sweep.
 * Clean: the setup allocations, the staging double buffer's cuEventSynchronize on the upload two
 * sweeps back, the uploads from pinned staging, the statistics' download into a pinned slot, the
 * final wait and read, teardown.
 *   d34_lidar_archive_h2h_async driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { SWEEPS = 48, POINTS = 1 << 18, DIM = 256, THREADS = 256, STAT_BLOCKS = 264, MIN_RANGE = 40 * 256, MAX_RANGE = 120 * 256 };

struct sweep_stats {
	unsigned long long free_passes, hits, occupied;
};

struct mapper {
	CUfunction raycast, stats;
	CUstream up, map;
	int *h_stage[2];
	CUdeviceptr d_pts[2], d_grid, d_stats;
	struct sweep_stats *h_slot[2];
	CUevent uploaded[2], traced[2];
};

struct sweep_log {
	struct sweep_stats *rows; /* pinned, one per sweep */
	int n;
};

/* the decoder: one sweep's returns as offsets from the sensor in 1/256 voxel */
static void decode_sweep(int sweep, int *pts)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(sweep + 1);
	for (int i = 0; i < POINTS; i++) {
		int d[3], m;
		do {
			m = 0;
			for (int a = 0; a < 3; a++) {
				s ^= s << 13;
				s ^= s >> 7;
				s ^= s << 17;
				d[a] = (int)((s >> 16) % (2u * MAX_RANGE + 1u)) - MAX_RANGE;
				int ad = d[a] < 0 ? -d[a] : d[a];
				m = ad > m ? ad : m;
			}
		} while (m < MIN_RANGE);
		pts[3 * i] = d[0];
		pts[3 * i + 1] = d[1];
		pts[3 * i + 2] = d[2];
	}
}

/* --- the sweep log ------------------------------------------------------------------------- */

static void archive_sweep(struct sweep_log *log, const struct sweep_stats *slot, CUstream s)
{
	DCHECK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)&log->rows[log->n++], (CUdeviceptr)(uintptr_t)slot, sizeof *slot, s)); // SYNCSPY-PROBLEM: host to host: fully synchronous, waits for the whole sweep on the mapping stream
}

static void map_sweep(struct mapper *m, struct sweep_log *log, int sweep)
{
	int k = sweep % 2, n = POINTS, dim = DIM, cells = DIM * DIM * DIM;
	if (sweep >= 2)
		DCHECK(cuEventSynchronize(m->uploaded[k])); // SYNCSPY-CLEAN: the staging double buffer: the upload two sweeps back
	decode_sweep(sweep, m->h_stage[k]);
	DCHECK(cuStreamWaitEvent(m->up, m->traced[k], 0));
	DCHECK(cuMemcpyHtoDAsync(m->d_pts[k], m->h_stage[k], (size_t)3 * POINTS * sizeof(int), m->up)); // SYNCSPY-CLEAN: async upload from pinned staging on the upload stream
	DCHECK(cuEventRecord(m->uploaded[k], m->up));

	void *ray_args[] = {&m->d_pts[k], &n, &m->d_grid, &dim};
	void *stat_args[] = {&m->d_grid, &cells, &m->d_stats};
	DCHECK(cuStreamWaitEvent(m->map, m->uploaded[k], 0));
	DCHECK(cuMemsetD32Async(m->d_grid, 0u, (size_t)cells, m->map));
	DCHECK(cuMemsetD32Async(m->d_stats, 0u, 2 * 3, m->map));
	DCHECK(cuLaunchKernel(m->raycast, POINTS / THREADS, 1, 1, THREADS, 1, 1, 0, m->map, ray_args, NULL));
	DCHECK(cuEventRecord(m->traced[k], m->map));
	DCHECK(cuLaunchKernel(m->stats, STAT_BLOCKS, 1, 1, THREADS, 1, 1, 0, m->map, stat_args, NULL));
	DCHECK(cuMemcpyDtoHAsync(m->h_slot[k], m->d_stats, sizeof(struct sweep_stats), m->map)); // SYNCSPY-CLEAN: the sweep's statistics, async into a pinned slot
	archive_sweep(log, m->h_slot[k], m->map);
}

static struct sweep_stats reference(int sweep, unsigned int *grid, int *pts)
{
	struct sweep_stats st = {0, 0, 0};
	const int c = DIM / 2 * 256;
	decode_sweep(sweep, pts);
	memset(grid, 0, (size_t)DIM * DIM * DIM * sizeof(unsigned int));
	for (int i = 0; i < POINTS; i++) {
		int dx = pts[3 * i], dy = pts[3 * i + 1], dz = pts[3 * i + 2];
		int ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy, az = dz < 0 ? -dz : dz;
		int steps = (ax > ay ? (ax > az ? ax : az) : (ay > az ? ay : az)) >> 8;
		for (int k = 8; k < steps; k++)
			grid[((size_t)((c + dz * k / steps) >> 8) * DIM + ((c + dy * k / steps) >> 8)) * DIM + ((c + dx * k / steps) >> 8)] += 1u;
		grid[((size_t)((c + dz) >> 8) * DIM + ((c + dy) >> 8)) * DIM + ((c + dx) >> 8)] += 1u << 16;
	}
	for (size_t i = 0; i < (size_t)DIM * DIM * DIM; i++) {
		unsigned int f = grid[i] & 0xffffu, h = grid[i] >> 16;
		st.free_passes += f;
		st.hits += h;
		st.occupied += h && h * 4u > f;
	}
	return st;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct mapper m;
	struct sweep_log log = {NULL, 0};

	DCHECK(cuModuleGetFunction(&m.raycast, module, "raycast_occupancy"));
	DCHECK(cuModuleGetFunction(&m.stats, module, "occupancy_stats"));
	DCHECK(cuStreamCreate(&m.up, CU_STREAM_NON_BLOCKING));
	DCHECK(cuStreamCreate(&m.map, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemAllocHost((void **)&m.h_stage[k], (size_t)3 * POINTS * sizeof(int))); // SYNCSPY-CLEAN: setup pinned staging
		DCHECK(cuMemAllocHost((void **)&m.h_slot[k], sizeof(struct sweep_stats))); // SYNCSPY-CLEAN: setup pinned statistics slot
		DCHECK(cuMemAlloc(&m.d_pts[k], (size_t)3 * POINTS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuEventCreate(&m.uploaded[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuEventCreate(&m.traced[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemAlloc(&m.d_grid, (size_t)DIM * DIM * DIM * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&m.d_stats, sizeof(struct sweep_stats))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&log.rows, SWEEPS * sizeof(struct sweep_stats))); // SYNCSPY-CLEAN: setup, the pinned sweep log

	for (int sweep = 0; sweep < SWEEPS; sweep++)
		map_sweep(&m, &log, sweep);
	DCHECK(cuStreamSynchronize(m.map)); // SYNCSPY-CLEAN: the one wait, after the last sweep

	unsigned int *grid = (unsigned int *)malloc((size_t)DIM * DIM * DIM * sizeof(unsigned int));
	int *pts = (int *)malloc((size_t)3 * POINTS * sizeof(int));
	unsigned long long checksum = 0;
	for (int sweep = 0; sweep < SWEEPS; sweep++) {
		const struct sweep_stats *r = &log.rows[sweep];
		if (sweep == 13) {
			struct sweep_stats want = reference(sweep, grid, pts);
			if (r->free_passes != want.free_passes || r->hits != want.hits || r->occupied != want.occupied) {
				fprintf(stderr, "d34: sweep %d stats %llu/%llu/%llu, want %llu/%llu/%llu\n", sweep, r->free_passes, r->hits, r->occupied, want.free_passes, want.hits, want.occupied);
				return 1;
			}
		}
		if (r->hits != POINTS) {
			fprintf(stderr, "d34: sweep %d hits = %llu, want %d\n", sweep, r->hits, POINTS);
			return 1;
		}
		checksum = checksum * 1000003u + r->free_passes * 31u + r->occupied;
	}
	free(grid);
	free(pts);

	for (int k = 0; k < 2; k++) {
		DCHECK(cuMemFreeHost(m.h_stage[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(m.h_slot[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(m.d_pts[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(m.uploaded[k]));
		DCHECK(cuEventDestroy(m.traced[k]));
	}
	DCHECK(cuMemFree(m.d_grid)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(m.d_stats)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(log.rows)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(m.up));
	DCHECK(cuStreamDestroy(m.map));
	driver_teardown(module);
	printf("d34_lidar_archive_h2h_async: steps=%d checksum=%llu result=OK\n", SWEEPS, checksum);
	return 0;
}
