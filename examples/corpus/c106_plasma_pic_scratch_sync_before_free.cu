/*
 * examples/corpus/c106_plasma_pic_scratch_sync_before_free.cu: corpus workload (CUDA C++ + CUB,
 * stream-ordered allocation). A 2D electrostatic particle-in-cell plasma code: 2M particles in a
 * periodic 512 x 512 box, integer fixed point throughout. Every step the host computes an
 * antenna's drive field into a pinned double buffer, and a stream uploads it. The GPU pushes the
 * particles in the field, sorts them by cell (cub::DeviceRadixSort::SortPairs on the cell keys,
 * then a gather into the other half of the particle double buffer), deposits the charge, relaxes
 * the potential and takes its gradient. It then reduces the kinetic energy and a speed histogram
 * into a pinned ring that the host reads one step behind.
 * sort_by_cell() takes its scratch (keys, permutation, CUB's temporary storage) from a
 * DeviceScratch guard. The guard allocates one block with cudaMallocAsync on the step's stream,
 * from the default pool, whose release threshold is raised in setup, so the block is reused
 * every step. But the guard's destructor frees it with cudaFree. The runtime API reference says
 * that cudaFree "will not perform any implicit synchronization when the pointer was allocated
 * with cudaMallocAsync ... Callers must ensure that all accesses to these pointer have completed
 * before invoking cudaFree", so the destructor first calls cudaStreamSynchronize. Every step,
 * at sort_by_cell()'s return, the host waits for the push, the sort and the gather. It queues
 * the deposit and the field solve only afterwards, then computes the next step's drive while
 * the GPU runs out of work: host time and GPU time add up instead of overlapping.
 * cudaFreeAsync(block, stream) "inserts a free operation into hStream": it is ordered after the
 * sort with no host wait, and the next step's cudaMallocAsync reuses the block.
 * Planted: the cudaStreamSynchronize and the cudaFree in ~DeviceScratch(), every step (one
 * problem, two lines).
 * Clean: the guard's cudaMallocAsync (stream-ordered, from a pool that keeps its memory), the
 * setup allocations, the drive's async upload from the pinned double buffer (a slot reused after
 * a cudaEventSynchronize on its upload two steps back), the diagnostics' async download into a
 * pinned ring read one step behind, the final waits and reads, teardown.
 * All arithmetic is integer (the charge deposited with integer atomics), so every run computes
 * the same fields. The checksum adds per-step diagnostics and a sum over particles, which do not
 * depend on the order of particles within a cell. The final check: the particles are a
 * permutation of the ids and sorted by cell, every histogram holds all particles, and the charge
 * sums to N.
 */
#include "corpus.h"

#include <cub/device/device_radix_sort.cuh>

enum { STEPS = 40, NX = 512, NY = 512, CELLS = NX * NY, N = 1 << 21, PER_CELL = N / CELLS };
enum { THREADS = 256, SWEEPS = 4, BINS = 64, SLOTS = 2, ANTENNAS = 2, KEY_BITS = 18 };

#define XMASK (((uint32_t)NX << 16) - 1u)
#define YMASK (((uint32_t)NY << 16) - 1u)
#define VMAX 24576

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* structure of arrays: positions in 16.16 cells, velocities in 1/65536 cell per step */
struct particles {
	uint32_t *x, *y, *id;
	int *vx, *vy;
};

struct diag {
	unsigned long long energy;
	unsigned int hist[BINS];
	unsigned int pad;
};

__device__ static inline int clampv(int v) { return v > VMAX ? VMAX : (v < -VMAX ? -VMAX : v); }

__global__ void push(struct particles p, const int *ex, const int *ey, const int *drive)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	int c = (int)(p.y[i] >> 16) * NX + (int)(p.x[i] >> 16);
	int vx = clampv(p.vx[i] + (ex[c] + drive[c]) * 4), vy = clampv(p.vy[i] + ey[c] * 4);
	p.vx[i] = vx;
	p.vy[i] = vy;
	p.x[i] = (p.x[i] + (uint32_t)vx) & XMASK;
	p.y[i] = (p.y[i] + (uint32_t)vy) & YMASK;
}

__global__ void cell_keys(struct particles p, uint32_t *keys, uint32_t *idx)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	keys[i] = (p.y[i] >> 16) * NX + (p.x[i] >> 16);
	idx[i] = (uint32_t)i;
}

__global__ void gather(const uint32_t *idx, struct particles from, struct particles to)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	uint32_t j = idx[i];
	to.x[i] = from.x[j];
	to.y[i] = from.y[j];
	to.id[i] = from.id[j];
	to.vx[i] = from.vx[j];
	to.vy[i] = from.vy[j];
}

__global__ void deposit(struct particles p, int *rho)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		atomicAdd(&rho[(p.y[i] >> 16) * NX + (p.x[i] >> 16)], 1);
}

/* one Jacobi sweep of the periodic Poisson problem, the background charge subtracted */
__global__ void relax(const int *phi, const int *rho, int *out)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= CELLS)
		return;
	int x = c % NX, y = c / NX;
	int s = phi[y * NX + (x + 1) % NX] + phi[y * NX + (x + NX - 1) % NX] +
		phi[((y + 1) % NY) * NX + x] + phi[((y + NY - 1) % NY) * NX + x];
	out[c] = (s + (rho[c] - PER_CELL) * 64) >> 2;
}

__global__ void gradient(const int *phi, int *ex, int *ey)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= CELLS)
		return;
	int x = c % NX, y = c / NX;
	ex[c] = (phi[y * NX + (x + NX - 1) % NX] - phi[y * NX + (x + 1) % NX]) >> 3;
	ey[c] = (phi[((y + NY - 1) % NY) * NX + x] - phi[((y + 1) % NY) * NX + x]) >> 3;
}

__global__ void diagnostics(struct particles p, struct diag *d)
{
	__shared__ unsigned long long e[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long mine = 0;
	if (i < N) {
		int vx = p.vx[i], vy = p.vy[i];
		mine = ((unsigned int)(vx * vx) + (unsigned int)(vy * vy)) >> 8;
		unsigned int bin = (unsigned int)(abs(vx) + abs(vy)) >> 10;
		atomicAdd(&d->hist[bin < BINS ? bin : BINS - 1], 1u);
	}
	e[threadIdx.x] = mine;
	__syncthreads();
	for (int k = THREADS / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			e[threadIdx.x] += e[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(&d->energy, e[0]);
}

/* --- sort_by_cell's scratch --------------------------------------------------------------- */

/* One stream-ordered block per call, carved into the sort's arrays. The pool keeps its memory. */
class DeviceScratch {
public:
	DeviceScratch(size_t bytes, cudaStream_t s) : stream_(s), used_(0)
	{
		CHECK(cudaMallocAsync(&base_, bytes, s)); // SYNCSPY-CLEAN: pool keeps memory
	}
	~DeviceScratch()
	{
		/* cudaFree does not wait for pool memory: "callers must ensure that all accesses
		 * ... have completed" (runtime API reference) */
		CHECK(cudaStreamSynchronize(stream_)); // SYNCSPY-PROBLEM: waits for the sort
		CHECK(cudaFree(base_)); // SYNCSPY-PROBLEM: needs that wait; cudaFreeAsync would not
	}
	template <class T> T *carve(size_t count)
	{
		T *p = (T *)((char *)base_ + used_);
		used_ += (count * sizeof(T) + 255) & ~(size_t)255;
		return p;
	}

private:
	cudaStream_t stream_;
	void *base_;
	size_t used_;
};

static size_t sort_temp_bytes(void)
{
	size_t bytes = 0;
	CHECK(cub::DeviceRadixSort::SortPairs(NULL, bytes, (const uint32_t *)NULL, (uint32_t *)NULL,
					      (const uint32_t *)NULL, (uint32_t *)NULL, (int)N, 0,
					      KEY_BITS));
	return bytes;
}

/* sorts `from` by cell into `to` */
static void sort_by_cell(struct particles from, struct particles to, size_t temp_bytes,
			 cudaStream_t s)
{
	size_t arr = (N * sizeof(uint32_t) + 255) & ~(size_t)255;
	DeviceScratch scratch(4 * arr + temp_bytes, s);
	uint32_t *keys = scratch.carve<uint32_t>(N), *keys_sorted = scratch.carve<uint32_t>(N);
	uint32_t *idx = scratch.carve<uint32_t>(N), *idx_sorted = scratch.carve<uint32_t>(N);
	void *temp = scratch.carve<char>(temp_bytes);
	cell_keys<<<N / THREADS, THREADS, 0, s>>>(from, keys, idx);
	CHECK_LAUNCH();
	CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_sorted, idx, idx_sorted,
					      (int)N, 0, KEY_BITS, s));
	gather<<<N / THREADS, THREADS, 0, s>>>(idx_sorted, from, to);
	CHECK_LAUNCH();
}

/* --- the host's part ------------------------------------------------------------------------ */

static int tri(int v) { return (v & 1023) < 512 ? (v & 511) - 256 : 255 - (v & 511); }

/* the antenna drive of step s: two sources radiating triangle waves (L1 distance) */
static void antenna_drive(int s, int *drive)
{
	static const int ax[ANTENNAS] = {96, 400}, ay[ANTENNAS] = {128, 352};
	for (int y = 0; y < NY; y++)
		for (int x = 0; x < NX; x++) {
			int v = 0;
			for (int a = 0; a < ANTENNAS; a++) {
				int r = abs(x - ax[a]) + abs(y - ay[a]);
				v += tri(r * 24 - s * (40 + 8 * a)) * (a + 1);
			}
			drive[y * NX + x] = v >> 3;
		}
}

static struct particles alloc_particles(void)
{
	struct particles p;
	CHECK(cudaMalloc(&p.x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&p.y, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&p.id, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&p.vx, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&p.vy, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	return p;
}

static void free_particles(struct particles p)
{
	CHECK(cudaFree(p.x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(p.y)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(p.id)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(p.vx)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(p.vy)); // SYNCSPY-CLEAN: teardown
}

static unsigned long long fold_diag(unsigned long long sum, const struct diag *d, const char *name)
{
	unsigned long long total = 0;
	for (int b = 0; b < BINS; b++) {
		total += d->hist[b];
		sum = sum * 1000003u + d->hist[b];
	}
	corpus_expect(name, "histogram total", (long long)total, N);
	return sum * 31u + d->energy;
}

int main(void)
{
	const char *name = "c106_plasma_pic_scratch_sync_before_free";
	cudaStream_t s;
	cudaMemPool_t pool;
	uint64_t keep = UINT64_MAX;
	struct particles part[2];
	int *d_rho, *d_phi[2], *d_ex, *d_ey, *d_drive, *h_drive[SLOTS];
	struct diag *d_diag, *h_diag;
	cudaEvent_t uploaded[SLOTS], reported[SLOTS];
	CHECK(cudaStreamCreate(&s)); /* blocking: ordered after the setup uploads */
	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
	part[0] = alloc_particles();
	part[1] = alloc_particles();
	CHECK(cudaMalloc(&d_rho, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_phi[0], CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_phi[1], CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_ex, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_ey, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_drive, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_diag, sizeof(struct diag))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_diag, SLOTS * sizeof(struct diag))); // SYNCSPY-CLEAN: setup, pinned
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaMallocHost(&h_drive[k], CELLS * 4)); // SYNCSPY-CLEAN: setup, pinned
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&reported[k], cudaEventDisableTiming));
	}

	/* a quiet start: particles spread over the box with small hashed velocities */
	uint32_t *hx = (uint32_t *)malloc(N * 4), *hy = (uint32_t *)malloc(N * 4);
	uint32_t *hid = (uint32_t *)malloc(N * 4);
	int *hvx = (int *)malloc(N * sizeof(int)), *hvy = (int *)malloc(N * sizeof(int));
	for (int i = 0; i < N; i++) {
		hx[i] = mix32((uint32_t)i * 2u) & XMASK;
		hy[i] = mix32((uint32_t)i * 2u + 1u) & YMASK;
		hid[i] = (uint32_t)i;
		hvx[i] = (int)(mix32((uint32_t)i ^ 0x5bd1e995u) % 4097u) - 2048;
		hvy[i] = (int)(mix32((uint32_t)i ^ 0x27d4eb2fu) % 4097u) - 2048;
	}
	CHECK(cudaMemcpy(part[0].x, hx, N * 4, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(part[0].y, hy, N * 4, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(part[0].id, hid, N * 4, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(part[0].vx, hvx, N * 4, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpy(part[0].vy, hvy, N * 4, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemsetAsync(d_phi[0], 0, CELLS * sizeof(int), s));
	CHECK(cudaMemsetAsync(d_ex, 0, CELLS * sizeof(int), s));
	CHECK(cudaMemsetAsync(d_ey, 0, CELLS * sizeof(int), s));
	size_t temp_bytes = sort_temp_bytes();

	unsigned long long checksum = 0;
	int cur = 0;
	for (int step = 0; step < STEPS; step++) {
		int k = step % SLOTS;
		if (step >= SLOTS)
			CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: 2 steps back
		antenna_drive(step, h_drive[k]);
		int *drive = h_drive[k];
		CHECK(cudaMemcpyAsync(d_drive, drive, CELLS * 4, H2D, s)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(uploaded[k], s));
		push<<<N / THREADS, THREADS, 0, s>>>(part[cur], d_ex, d_ey, d_drive);
		CHECK_LAUNCH();
		sort_by_cell(part[cur], part[1 - cur], temp_bytes, s);
		cur = 1 - cur;
		CHECK(cudaMemsetAsync(d_rho, 0, CELLS * sizeof(int), s));
		deposit<<<N / THREADS, THREADS, 0, s>>>(part[cur], d_rho);
		CHECK_LAUNCH();
		for (int w = 0; w < SWEEPS; w++) {
			int *from = d_phi[w & 1], *to = d_phi[~w & 1];
			relax<<<CELLS / THREADS, THREADS, 0, s>>>(from, d_rho, to);
			CHECK_LAUNCH();
		}
		gradient<<<CELLS / THREADS, THREADS, 0, s>>>(d_phi[0], d_ex, d_ey);
		CHECK_LAUNCH();
		CHECK(cudaMemsetAsync(d_diag, 0, sizeof(struct diag), s));
		diagnostics<<<N / THREADS, THREADS, 0, s>>>(part[cur], d_diag);
		CHECK_LAUNCH();
		struct diag *slot = &h_diag[k];
		CHECK(cudaMemcpyAsync(slot, d_diag, sizeof *slot, D2H, s)); // SYNCSPY-CLEAN: pinned
		CHECK(cudaEventRecord(reported[k], s));
		if (step >= 1) {
			int m = (step - 1) % SLOTS;
			CHECK(cudaEventSynchronize(reported[m])); // SYNCSPY-CLEAN: one step behind
			checksum = fold_diag(checksum, &h_diag[m], name);
		}
	}
	CHECK(cudaEventSynchronize(reported[(STEPS - 1) % SLOTS])); // SYNCSPY-CLEAN: the last step
	checksum = fold_diag(checksum, &h_diag[(STEPS - 1) % SLOTS], name);

	/* the final state: a permutation of the ids, sorted by cell, and the charge sums to N */
	int *rho = (int *)malloc(CELLS * sizeof(int));
	CHECK(cudaMemcpy(hx, part[cur].x, N * 4, D2H)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpy(hy, part[cur].y, N * 4, D2H)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpy(hid, part[cur].id, N * 4, D2H)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpy(hvx, part[cur].vx, N * 4, D2H)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpy(hvy, part[cur].vy, N * 4, D2H)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpy(rho, d_rho, CELLS * sizeof(int), D2H)); // SYNCSPY-CLEAN: final read
	unsigned long long ids = 0, ids_xor = 0, state = 0, charge = 0;
	long long unsorted = 0;
	for (int i = 0; i < N; i++) {
		uint32_t key = (hy[i] >> 16) * NX + (hx[i] >> 16);
		if (i > 0)
			unsorted += key < (hy[i - 1] >> 16) * NX + (hx[i - 1] >> 16);
		ids += hid[i];
		ids_xor ^= hid[i];
		state += mix32(hid[i] ^ mix32(hx[i] ^ mix32(hy[i] ^ mix32((uint32_t)hvx[i] ^
			 mix32((uint32_t)hvy[i])))));
	}
	for (int c = 0; c < CELLS; c++)
		charge += (unsigned long long)rho[c];
	corpus_expect(name, "particles out of cell order", unsorted, 0);
	corpus_expect(name, "id sum", (long long)ids, (long long)N * (N - 1) / 2);
	corpus_expect(name, "id xor", (long long)ids_xor, 0);
	corpus_expect(name, "charge", (long long)charge, N);
	checksum = checksum * 1000003u + state;

	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaFreeHost(h_drive[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(reported[k]));
	}
	CHECK(cudaFreeHost(h_diag)); // SYNCSPY-CLEAN: teardown
	free_particles(part[0]);
	free_particles(part[1]);
	CHECK(cudaFree(d_rho)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_phi[0])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_phi[1])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_ex)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_ey)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_drive)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_diag)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	free(hx);
	free(hy);
	free(hid);
	free(hvx);
	free(hvy);
	free(rho);
	corpus_result(name, STEPS, checksum);
	return 0;
}
