/*
 * examples/corpus/c120_lidar_voxel_map_thrust_temporaries.cu: corpus workload (CUDA C++ +
 * Thrust). The mapping front end of a survey vehicle's 128-beam spinning LiDAR: 48 sweeps (10 Hz)
 * of 128 x 2048 returns while the vehicle drives 1 m a sweep down a street canyon. The host
 * unpacks each sweep's returns into world-frame millimetre points (the sensor's calibration table
 * of Q14 beam directions, the sweep's pose) in a pinned staging double buffer, and the sweep
 * stream uploads them. VoxelFilter::downsample() then runs the voxel-grid filter of a mapping
 * pipeline on the GPU: a 64-bit key per point (its 20 cm voxel, then its index), a Thrust sort of
 * the keys (par_nosync on the sweep stream, temporary storage from the stream-ordered pool), a
 * head flag where the voxel changes, an inclusive scan of the flags into voxel ordinals, integer
 * sums per voxel, and one centroid per voxel added to a 50 cm occupancy map of the street. The
 * sweep's summary (voxel count, centroid sums) comes back into a pinned ring, read one sweep
 * behind.
 * downsample() holds its keys and ordinals in two thrust::device_vector locals, so every sweep
 * constructs both and destroys both. Thrust's device_vector allocates with cudaMalloc through
 * thrust::device_allocator, value-initializes the elements with a fill on the default stream and,
 * under the synchronous default policy, waits for it (cudaStreamSynchronize); its destructor frees
 * the storage with cudaFree. The CUDA programming guide (stream-ordered memory allocator):
 * "managing memory allocations using cudaMalloc and cudaFree causes the GPU to synchronize across
 * all executing CUDA streams", and cudaFree of memory that queued kernels still use waits for them
 * (runtime API: cudaFree has "implicit synchronization"). So at the end of downsample() the host
 * waits until the sweep's sort, scan and map update are done, and only then unpacks the next
 * sweep: the double-buffered staging meant the host's unpacking to overlap the GPU's filtering,
 * and they take turns. The arrays have the same size every sweep: as VoxelFilter members,
 * allocated once, nothing would wait (the sort's and scan's own temporaries are already
 * stream-ordered).
 * Planted: the two thrust::device_vector declarations in downsample() (cudaMalloc, fill and stream
 * sync) and the function's closing brace, where their destructors call cudaFree, every sweep (one
 * problem, three lines).
 * Clean: the calibration table's and the map's setup (allocations, upload, cudaMemset, one
 * cudaDeviceSynchronize), the default pool's release threshold raised once, the VoxelFilter
 * members' allocations, the pinned staging upload and the staging wait two sweeps back, the
 * summary's download into the pinned ring and the cudaEventSynchronize one sweep behind, the sort
 * and the scan (stream-ordered temporaries on the sweep stream), the final map download, teardown.
 * Per sweep (estimates, H100): 262,144 points, a 64-bit radix sort of 2 MB of keys and five small
 * passes, about 0.3 ms; the host unpacks in about 1-2 ms. Everything is integer millimetres, so
 * the counts and sums are exact; every 8th sweep the host recomputes the voxel count and the
 * centroid sums.
 */
#include "corpus.h"

#include <algorithm>
#include <limits.h>
#include <math.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <vector>

enum { BEAMS = 128, AZ = 2048, N = BEAMS * AZ, SWEEPS = 48, SLOTS = 2, THREADS = 256 };
enum { VOXEL = 200, CELL = 500, MAP = 1024, MAX_RANGE = 100000, CHECK_EVERY = 8 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;
#define INVALID 0xffffffffffffffffull

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

struct point {
	int x, y, z; /* world frame, mm; x == INT_MIN: no return */
};

/* a sweep's summary: voxels kept and the sums of their centroids */
struct summary {
	unsigned long long voxels, sx, sy, sz;
};

struct voxel_sum {
	long long x, y, z;
	int n, pad;
};

__host__ __device__ static inline int floor_div(int a, int b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* the point's voxel, 12 bits an axis */
__host__ __device__ static inline unsigned long long voxel_of(const struct point *p)
{
	unsigned long long vx = (unsigned)(floor_div(p->x, VOXEL) + 2048) & 4095u;
	unsigned long long vy = (unsigned)(floor_div(p->y, VOXEL) + 2048) & 4095u;
	unsigned long long vz = (unsigned)(floor_div(p->z, VOXEL) + 2048) & 4095u;
	return vx << 24 | vy << 12 | vz;
}

/* the centroid's coordinate: the mean, rounded towards minus infinity */
__host__ __device__ static inline int centroid(long long sum, int n)
{
	return (int)(sum >= 0 ? sum / n : -((-sum + n - 1) / n));
}

__global__ void voxel_keys(const struct point *pts, unsigned long long *keys)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		keys[i] = pts[i].x == INT_MIN ? INVALID : voxel_of(&pts[i]) << 20 | (unsigned)i;
}

__global__ void voxel_heads(const unsigned long long *keys, int *ordinal)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		ordinal[i] = keys[i] != INVALID && (i == 0 || keys[i] >> 20 != keys[i - 1] >> 20);
}

/* after the scan, ordinal[i] - 1 is the voxel of sorted point i */
__global__ void voxel_accumulate(const unsigned long long *keys, const int *ordinal,
				 const struct point *pts, struct voxel_sum *acc)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N || keys[i] == INVALID)
		return;
	const struct point *p = &pts[keys[i] & 0xfffff];
	struct voxel_sum *v = &acc[ordinal[i] - 1];
	atomicAdd((unsigned long long *)&v->x, (unsigned long long)(long long)p->x);
	atomicAdd((unsigned long long *)&v->y, (unsigned long long)(long long)p->y);
	atomicAdd((unsigned long long *)&v->z, (unsigned long long)(long long)p->z);
	atomicAdd(&v->n, 1);
}

/* one thread a possible voxel: the centroid into the map and the summary (the voxel count is
 * ordinal[N - 1], read on the device) */
__global__ void voxel_emit(const int *ordinal, const struct voxel_sum *acc, int *map,
			   struct summary *sum)
{
	int v = blockIdx.x * blockDim.x + threadIdx.x, count = ordinal[N - 1];
	int cx = 0, cy = 0, cz = 0;
	if (v < count) {
		cx = centroid(acc[v].x, acc[v].n), cy = centroid(acc[v].y, acc[v].n);
		cz = centroid(acc[v].z, acc[v].n);
		int mx = floor_div(cx, CELL) + MAP / 2, my = floor_div(cy, CELL) + MAP / 2;
		if (mx >= 0 && mx < MAP && my >= 0 && my < MAP)
			atomicAdd(&map[my * MAP + mx], 1);
	}
	int sx = __reduce_add_sync(0xffffffffu, (unsigned)cx);
	int sy = __reduce_add_sync(0xffffffffu, (unsigned)cy);
	int sz = __reduce_add_sync(0xffffffffu, (unsigned)cz);
	if (threadIdx.x % 32 == 0) {
		atomicAdd(&sum->sx, (unsigned long long)(long long)sx);
		atomicAdd(&sum->sy, (unsigned long long)(long long)sy);
		atomicAdd(&sum->sz, (unsigned long long)(long long)sz);
	}
	if (v == 0)
		sum->voxels = (unsigned long long)count;
}

/* --- the filter ---------------------------------------------------------------------------- */

struct VoxelFilter {
	cudaStream_t stream;
	struct voxel_sum *acc; /* one entry a possible voxel */
	struct summary *sum;

	explicit VoxelFilter(cudaStream_t s) : stream(s)
	{
		CHECK(cudaMalloc(&acc, N * sizeof *acc)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&sum, sizeof *sum)); // SYNCSPY-CLEAN: setup allocation
	}
	~VoxelFilter()
	{
		CHECK(cudaFree(acc)); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(sum)); // SYNCSPY-CLEAN: teardown
	}

	/* queues the sweep's voxel filter and map update on the stream; the summary lands in sum */
	void downsample(const struct point *pts, int *map)
	{
		thrust::device_vector<unsigned long long> keys(N); // SYNCSPY-PROBLEM: malloc, fill, sync
		thrust::device_vector<int> ordinal(N); // SYNCSPY-PROBLEM: malloc, fill and sync every sweep
		unsigned long long *k = thrust::raw_pointer_cast(keys.data());
		int *o = thrust::raw_pointer_cast(ordinal.data());
		const int blocks = N / THREADS;
		auto nosync = thrust::cuda::par_nosync.on(stream);
		CHECK(cudaMemsetAsync(acc, 0, N * sizeof *acc, stream));
		CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, stream));
		voxel_keys<<<blocks, THREADS, 0, stream>>>(pts, k);
		CHECK_LAUNCH();
		thrust::sort(nosync, keys.begin(), keys.end()); // SYNCSPY-CLEAN: pool temporaries
		voxel_heads<<<blocks, THREADS, 0, stream>>>(k, o);
		CHECK_LAUNCH();
		thrust::inclusive_scan(nosync, ordinal.begin(), ordinal.end(), ordinal.begin()); // SYNCSPY-CLEAN: pool
		voxel_accumulate<<<blocks, THREADS, 0, stream>>>(k, o, pts, acc);
		CHECK_LAUNCH();
		voxel_emit<<<blocks, THREADS, 0, stream>>>(o, acc, map, sum);
		CHECK_LAUNCH();
	} // SYNCSPY-PROBLEM: ~device_vector: cudaFree of both, waits for the sweep
};

/* --- the host ------------------------------------------------------------------------------ */

static int dir[BEAMS * AZ][3]; /* the calibration table: unit directions, Q14 */

/* sweep s's returns in the world frame: ground 1.8 m below the sensor, facades 9 m either side */
static void unpack_sweep(int s, struct point *pts)
{
	const long long ex = 1000LL * s; /* the vehicle's pose: 1 m a sweep along x */
	for (int i = 0; i < N; i++) {
		const int *d = dir[i];
		long long r = MAX_RANGE + 1;
		if (d[2] < 0)
			r = std::min(r, 1800LL * 16384 / -d[2]);
		if (d[1] != 0)
			r = std::min(r, 9000LL * 16384 / (d[1] < 0 ? -d[1] : d[1]));
		r += (long long)(mix32((uint32_t)(s * N + i)) % 41u) - 20; /* range noise, mm */
		if (r > MAX_RANGE) {
			pts[i].x = INT_MIN, pts[i].y = pts[i].z = 0;
			continue;
		}
		pts[i].x = (int)(ex + r * d[0] / 16384);
		pts[i].y = (int)(r * d[1] / 16384);
		pts[i].z = (int)(r * d[2] / 16384);
	}
}

/* the summary of the points in pts, on the host */
static struct summary host_summary(const struct point *pts)
{
	static std::vector<unsigned long long> keys(N);
	int n = 0;
	for (int i = 0; i < N; i++)
		if (pts[i].x != INT_MIN)
			keys[n++] = voxel_of(&pts[i]) << 20 | (unsigned)i;
	std::sort(keys.begin(), keys.begin() + n);
	struct summary s = {0, 0, 0, 0};
	for (int a = 0, b; a < n; a = b) {
		long long x = 0, y = 0, z = 0;
		for (b = a; b < n && keys[b] >> 20 == keys[a] >> 20; b++) {
			const struct point *p = &pts[keys[b] & 0xfffff];
			x += p->x, y += p->y, z += p->z;
		}
		s.voxels++;
		s.sx += (unsigned long long)(long long)centroid(x, b - a);
		s.sy += (unsigned long long)(long long)centroid(y, b - a);
		s.sz += (unsigned long long)(long long)centroid(z, b - a);
	}
	return s;
}

/* sweep s's summary, one sweep late: checked every CHECK_EVERY sweeps */
static unsigned long long consume_summary(int s, const struct summary *got, const struct point *pts)
{
	if (s % CHECK_EVERY == 0) {
		struct summary want = host_summary(pts);
		if (got->voxels != want.voxels || got->sx != want.sx || got->sy != want.sy ||
		    got->sz != want.sz) {
			fprintf(stderr, "c120: sweep %d: %llu voxels (%llx %llx %llx), want %llu (%llx %llx %llx)\n",
				s, got->voxels, got->sx, got->sy, got->sz, want.voxels, want.sx, want.sy,
				want.sz);
			exit(1);
		}
	}
	return ((got->voxels * 1000003u + got->sx) * 1000003u + got->sy) * 1000003u + got->sz;
}

int main(void)
{
	const char *name = "c120_lidar_voxel_map_thrust_temporaries";
	for (int b = 0; b < BEAMS; b++) {
		double el = (-25.0 + 40.0 * b / (BEAMS - 1)) * M_PI / 180.0;
		for (int a = 0; a < AZ; a++) {
			double az = 2.0 * M_PI * (a + 0.5) / AZ;
			dir[b * AZ + a][0] = (int)lrint(16384.0 * cos(el) * cos(az));
			dir[b * AZ + a][1] = (int)lrint(16384.0 * cos(el) * sin(az));
			dir[b * AZ + a][2] = (int)lrint(16384.0 * sin(el));
		}
	}

	int *d_map, *map;
	struct point *d_pts[SLOTS], *staging[SLOTS];
	struct summary *h_sum[SLOTS];
	CHECK(cudaMalloc(&d_map, MAP * MAP * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&map, MAP * MAP * sizeof(int))); // SYNCSPY-CLEAN: setup, pinned
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMalloc(&d_pts[k], N * sizeof(struct point))); // SYNCSPY-CLEAN: setup
		CHECK(cudaMallocHost(&staging[k], N * sizeof(struct point))); // SYNCSPY-CLEAN: pinned
		CHECK(cudaMallocHost(&h_sum[k], sizeof(struct summary))); // SYNCSPY-CLEAN: pinned ring
	}
	CHECK(cudaMemset(d_map, 0, MAP * MAP * sizeof(int))); // SYNCSPY-CLEAN: setup, empty map
	cudaMemPool_t pool;
	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	uint64_t keep = UINT64_MAX;
	CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep)); // SYNCSPY-CLEAN: once
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, before the sweeps

	cudaStream_t stream;
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	cudaEvent_t uploaded[SLOTS], summarized[SLOTS];
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&summarized[k], cudaEventDisableTiming));
	}

	unsigned long long checksum = 0;
	{
		VoxelFilter filter(stream);
		for (int s = 0; s < SWEEPS; s++) {
			int k = s % SLOTS;
			if (s >= SLOTS)
				CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: 2 sweeps back
			unpack_sweep(s, staging[k]);
			CHECK(cudaMemcpyAsync(d_pts[k], staging[k], N * sizeof(struct point), H2D, stream)); // SYNCSPY-CLEAN: pinned
			CHECK(cudaEventRecord(uploaded[k], stream));
			filter.downsample(d_pts[k], d_map);
			CHECK(cudaMemcpyAsync(h_sum[k], filter.sum, sizeof(struct summary), D2H, stream)); // SYNCSPY-CLEAN: pinned
			CHECK(cudaEventRecord(summarized[k], stream));
			if (s > 0) {
				int p = (s - 1) % SLOTS;
				CHECK(cudaEventSynchronize(summarized[p])); // SYNCSPY-CLEAN: one sweep behind
				checksum = checksum * 31u + consume_summary(s - 1, h_sum[p], staging[p]);
			}
		}
		int last = (SWEEPS - 1) % SLOTS;
		CHECK(cudaEventSynchronize(summarized[last])); // SYNCSPY-CLEAN: the last sweep
		checksum = checksum * 31u + consume_summary(SWEEPS - 1, h_sum[last], staging[last]);

		CHECK(cudaMemcpyAsync(map, d_map, MAP * MAP * sizeof(int), D2H, stream)); // SYNCSPY-CLEAN: final read
		CHECK(cudaStreamSynchronize(stream)); // SYNCSPY-CLEAN: the final wait
	}
	long long cells = 0, hits = 0;
	for (int i = 0; i < MAP * MAP; i++) {
		cells += map[i] > 0, hits += map[i];
		checksum = checksum * 131u + (unsigned)map[i];
	}
	corpus_expect(name, "map cells hit", cells > 0, 1);
	checksum = checksum * 31u + (unsigned long long)(cells * 1000003 + hits);

	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(summarized[k]));
		CHECK(cudaFree(d_pts[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_sum[k])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaStreamDestroy(stream));
	CHECK(cudaFree(d_map)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(map)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, SWEEPS, checksum);
	return 0;
}
