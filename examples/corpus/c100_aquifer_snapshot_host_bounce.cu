/*
 * examples/corpus/c100_aquifer_snapshot_host_bounce.cu: corpus workload (CUDA C++, RAII). A
 * groundwater model of a confined aquifer: the hydraulic head on a 2048 x 2048 grid (fixed-point
 * millimetres, so that the water budget is exact) evolves by 96 explicit substeps a step, each a
 * nonlinear-conductance flux between neighbouring cells plus 64 injection and pumping wells. The
 * solver runs on the legacy default stream. Before each step it snapshots the head so that a
 * device-side watchdog can restore it if the step leaves the physical range (no host decision, no
 * read-back); the aquifer's water volume is summed on the device every step and read by the
 * budget monitor one step late from a pinned ring on a copy stream.
 * The snapshot is taken with Field::copy_from(), which the Field class provides "for any two
 * fields, on this device or another, without peer access": it bounces the data through a host
 * vector, a cudaMemcpy down and a cudaMemcpy up, 16 MB each, every step. The runtime API's
 * synchronous memcpy rules: for transfers from device to pageable host memory "the function
 * returns only once the copy has completed", and for transfers from pageable host memory to
 * device memory "a stream sync is performed before the copy is initiated". So every step the host
 * waits for the previous step's substeps, then for both 16 MB transfers through pageable memory,
 * while the GPU has nothing queued; a cudaMemcpyAsync device-to-device on the solver's stream
 * (or cudaMemcpyPeerAsync across devices) takes a few microseconds of GPU time and no wait.
 * Planted: the two cudaMemcpy calls in Field::copy_from(), every step (one problem, two lines).
 * Clean: the Field allocations in setup and their frees in the destructor, the initial head's
 * upload, the volume download into the pinned ring on the copy stream, the monitor's
 * cudaEventSynchronize one step behind, the final reads of the head and the snapshot.
 * Checks: the water volume of every step against the wells' budget (integer, exact), no rollback,
 * and two windows of the final head recomputed on the CPU from the final snapshot.
 */
#include "corpus.h"

#include <vector>

enum { STEPS = 40, NX = 2048, NY = 2048, SUBSTEPS = 96, WELLS = 64, INJECT = 40, PUMP = 30, HEAD_MAX = 200000, WINDOW = 32, THREADS = 256, RING = 2 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline int well_x(int w) { return 8 + (int)(mix32((uint32_t)w * 2u + 1u) % (NX - 16)); }
__host__ __device__ static inline int well_y(int w) { return 8 + (int)(mix32((uint32_t)w * 2u + 2u) % (NY - 16)); }

/* exact water budget: the flux across an edge is antisymmetric (integer division truncates) */
__host__ __device__ static inline int edge_flux(int from, int to) { return (160 + ((from + to) >> 13)) * (to - from) / 4096; }

__host__ __device__ static inline int cell_update(const int *h, const short *well, int x, int y, int stride, int width, int height)
{
	int c = h[y * stride + x], d = well[y * stride + x];
	if (x > 0)
		d += edge_flux(c, h[y * stride + x - 1]);
	if (x < width - 1)
		d += edge_flux(c, h[y * stride + x + 1]);
	if (y > 0)
		d += edge_flux(c, h[(y - 1) * stride + x]);
	if (y < height - 1)
		d += edge_flux(c, h[(y + 1) * stride + x]);
	return c + d;
}

__global__ void substep(const int *in, const short *well, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < NX * NY)
		out[i] = cell_update(in, well, i % NX, i / NX, NX, NX, NY);
}

/* the watchdog: restore the snapshot if any cell left [0, HEAD_MAX] (device-side, no read-back) */
__global__ void watch(const int *h, unsigned int *flag)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < NX * NY && (h[i] < 0 || h[i] > HEAD_MAX))
		*flag = 1u;
}

__global__ void restore_if_flagged(unsigned int *flag, int *h, const int *snapshot, unsigned int *rollbacks)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (*flag && i < NX * NY)
		h[i] = snapshot[i];
	if (*flag && i == 0)
		atomicAdd(rollbacks, 1u);
}

/* the aquifer's volume: one thread per column (coalesced), then one add per column */
__global__ void volume(const int *h, unsigned long long *total)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	long long s = 0;
	for (int y = 0; y < NY; y++)
		s += h[y * NX + x];
	atomicAdd(total, (unsigned long long)s);
}

/* --- the field class ------------------------------------------------------------------------------ */

class Field {
public:
	explicit Field(size_t n) : n_(n)
	{
		CHECK(cudaMalloc(&d_, n_ * sizeof(int))); // SYNCSPY-CLEAN: setup allocation, a field
	}
	~Field()
	{
		CHECK(cudaFree(d_)); // SYNCSPY-CLEAN: teardown
	}
	Field(const Field &) = delete;
	Field &operator=(const Field &) = delete;
	int *data() { return d_; }

	void upload(const std::vector<int> &h)
	{
		CHECK(cudaMemcpy(d_, h.data(), n_ * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the initial head once
	}
	void download(std::vector<int> &h) const
	{
		h.resize(n_);
		CHECK(cudaMemcpy(h.data(), d_, n_ * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final reads, after the loop
	}
	/* any two fields, on this device or another, without peer access: bounced through the host */
	void copy_from(const Field &src)
	{
		bounce_.resize(n_);
		CHECK(cudaMemcpy(bounce_.data(), src.d_, n_ * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: the snapshot's way down: waits for the previous step, then 16 MB into pageable memory, every step
		CHECK(cudaMemcpy(d_, bounce_.data(), n_ * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-PROBLEM: and back up from pageable memory, every step (a device-to-device cudaMemcpyAsync would do)
	}

private:
	size_t n_;
	int *d_;
	std::vector<int> bounce_;
};

static int initial_head(int x, int y) { return 50000 + (x * 7 + y * 13) % 2000 + (int)(mix32((uint32_t)(y * NX + x)) % 100u); }

/* the head after one step, recomputed on the CPU in a window (the substeps' reach is one cell each) */
static void check_window(const char *name, const std::vector<int> &snap, const std::vector<int> &well, const std::vector<int> &head, int x0, int y0)
{
	int ax = x0 - SUBSTEPS < 0 ? 0 : x0 - SUBSTEPS, ay = y0 - SUBSTEPS < 0 ? 0 : y0 - SUBSTEPS;
	int bx = x0 + WINDOW + SUBSTEPS > NX ? NX : x0 + WINDOW + SUBSTEPS, by = y0 + WINDOW + SUBSTEPS > NY ? NY : y0 + WINDOW + SUBSTEPS;
	int w = bx - ax, hgt = by - ay;
	std::vector<int> a((size_t)w * hgt), b((size_t)w * hgt);
	std::vector<short> wl((size_t)w * hgt);
	for (int y = 0; y < hgt; y++)
		for (int x = 0; x < w; x++) {
			a[(size_t)y * w + x] = snap[(size_t)(ay + y) * NX + ax + x];
			wl[(size_t)y * w + x] = (short)well[(size_t)(ay + y) * NX + ax + x];
		}
	/* the window's own edges act as walls: wrong only within SUBSTEPS cells of a cut, never in the middle */
	for (int k = 0; k < SUBSTEPS; k++) {
		for (int y = 0; y < hgt; y++)
			for (int x = 0; x < w; x++)
				b[(size_t)y * w + x] = cell_update(a.data(), wl.data(), x, y, w, w, hgt);
		a.swap(b);
	}
	for (int y = y0; y < y0 + WINDOW; y++)
		for (int x = x0; x < x0 + WINDOW; x++)
			corpus_expect(name, "head", head[(size_t)y * NX + x], a[(size_t)(y - ay) * w + x - ax]);
}

int main(void)
{
	const char *name = "c100_aquifer_snapshot_host_bounce";
	const size_t cells = (size_t)NX * NY;
	std::vector<int> head0(cells), well(cells, 0);
	long long volume0 = 0, recharge = 0;
	for (int y = 0; y < NY; y++)
		for (int x = 0; x < NX; x++) {
			head0[(size_t)y * NX + x] = initial_head(x, y);
			volume0 += initial_head(x, y);
		}
	for (int w = 0; w < WELLS; w++) {
		int rate = w % 2 ? -PUMP : INJECT;
		well[(size_t)well_y(w) * NX + well_x(w)] += rate;
		recharge += rate;
	}
	std::vector<short> well16(well.begin(), well.end());

	cudaStream_t copy;
	short *d_well;
	unsigned int *d_flag, *d_rollbacks, rollbacks = 0;
	unsigned long long *d_volume, *h_volume;
	cudaEvent_t summed[RING], downloaded[RING];
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_well, cells * sizeof(short))); // SYNCSPY-CLEAN: setup allocation, the well map
	CHECK(cudaMalloc(&d_flag, sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_rollbacks, sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_volume, RING * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_volume, RING * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation, the budget ring
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventCreateWithFlags(&summed[r], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&downloaded[r], cudaEventDisableTiming));
	}
	CHECK(cudaMemcpy(d_well, well16.data(), cells * sizeof(short), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the well map once
	CHECK(cudaMemsetAsync(d_rollbacks, 0, sizeof(unsigned int), 0));

	std::vector<int> final_head, final_snapshot;
	{
		Field head(cells), scratch(cells), snapshot(cells);
		head.upload(head0);
		for (int step = 0; step <= STEPS; step++) {
			int r = step % RING;
			if (step < STEPS) {
				snapshot.copy_from(head);
				for (int k = 0; k < SUBSTEPS; k += 2) {
					substep<<<(unsigned)(cells / THREADS), THREADS>>>(head.data(), d_well, scratch.data());
					CHECK_LAUNCH();
					substep<<<(unsigned)(cells / THREADS), THREADS>>>(scratch.data(), d_well, head.data());
					CHECK_LAUNCH();
				}
				CHECK(cudaMemsetAsync(d_flag, 0, sizeof(unsigned int), 0));
				watch<<<(unsigned)(cells / THREADS), THREADS>>>(head.data(), d_flag);
				CHECK_LAUNCH();
				restore_if_flagged<<<(unsigned)(cells / THREADS), THREADS>>>(d_flag, head.data(), snapshot.data(), d_rollbacks);
				CHECK_LAUNCH();
				CHECK(cudaStreamWaitEvent(0, downloaded[r], 0));
				CHECK(cudaMemsetAsync(d_volume + r, 0, sizeof(unsigned long long), 0));
				volume<<<NX / THREADS, THREADS>>>(head.data(), d_volume + r);
				CHECK_LAUNCH();
				CHECK(cudaEventRecord(summed[r], 0));
				CHECK(cudaStreamWaitEvent(copy, summed[r], 0));
				CHECK(cudaMemcpyAsync(h_volume + r, d_volume + r, sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy)); // SYNCSPY-CLEAN: the step's volume, async into the pinned ring on the copy stream
				CHECK(cudaEventRecord(downloaded[r], copy));
			}
			if (step >= 1) { /* the budget monitor, one step late */
				int prev = step - 1;
				CHECK(cudaEventSynchronize(downloaded[prev % RING])); // SYNCSPY-CLEAN: one step behind: step s-1's volume while step s runs (the last one after the loop)
				corpus_expect(name, "water volume", (long long)h_volume[prev % RING], volume0 + recharge * SUBSTEPS * (prev + 1));
			}
		}
		head.download(final_head);
		snapshot.download(final_snapshot);
	}
	CHECK(cudaMemcpy(&rollbacks, d_rollbacks, sizeof rollbacks, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	corpus_expect(name, "rollbacks", rollbacks, 0);
	check_window(name, final_snapshot, well, final_head, 0, 0);
	int wx = well_x(0) - WINDOW / 2, wy = well_y(0) - WINDOW / 2;
	check_window(name, final_snapshot, well, final_head, wx < 0 ? 0 : (wx > NX - WINDOW ? NX - WINDOW : wx), wy < 0 ? 0 : (wy > NY - WINDOW ? NY - WINDOW : wy));

	unsigned long long checksum = 0;
	for (size_t i = 0; i < cells; i += 97)
		checksum = checksum * 1000003u + (unsigned long long)final_head[i];
	CHECK(cudaFree(d_well)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_flag)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_rollbacks)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_volume)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_volume)); // SYNCSPY-CLEAN: teardown
	for (int r = 0; r < RING; r++) {
		CHECK(cudaEventDestroy(summed[r]));
		CHECK(cudaEventDestroy(downloaded[r]));
	}
	CHECK(cudaStreamDestroy(copy));
	corpus_result(name, STEPS, checksum);
	return 0;
}
