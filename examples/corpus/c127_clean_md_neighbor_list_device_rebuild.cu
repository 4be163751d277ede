/*
 * examples/corpus/c127_clean_md_neighbor_list_device_rebuild.cu: corpus workload (CUDA C).
 * Clean: c123's Lennard-Jones benchmark (1,048,576 atoms, density 0.8442, temperature 1.44,
 * cutoff 2.5 sigma, a Verlet list with a 0.3 sigma skin, fixed point, exact momentum) with the
 * rebuild decided on the device, the fix of c123: the skin check raises a flag in device memory,
 * and the list rebuild (clearing the cell counts, binning, building the list) is queued every
 * step behind it; each of its three kernels reads the flag first and returns at once when no
 * rebuild is due, and the first one counts the rebuilds. Nothing in the step loop waits for the
 * GPU: the host queues the steps back to back (the stream's queue is the only limit), and the
 * GPU runs them without gaps. The flag is zeroed with cudaMemsetAsync on the MD stream every
 * step (an enqueue). The rebuild count is read once after the loop, with the final state.
 * Planted: nothing.
 * Clean: the setup allocations, the uploads of the lattice, the velocities, the force table and
 * the first flag, the first list build and force pass and the setup sync, the final wait and
 * the final downloads of positions, velocities, forces, the overflow flags and the rebuild
 * count, teardown.
 * Per step (estimates, H100): as c123, about 0.6-0.8 ms, a rebuild about 1.5-2 ms every 6-10
 * steps; a step without a rebuild adds three launches that return at once (a few microseconds
 * each). The same checks after the loop as c123, and the same output line: the trajectory and
 * the rebuild steps are the same.
 */
#include "corpus.h"

#include <math.h>

enum { FCC = 64, N = 4 * FCC * FCC * FCC, STEPS = 60, THREADS = 256 };
enum { CELL_CAP = 64, MAXNB = 128, TABLE = 9216, SAMPLES = 32 };

static const double DENSITY = 0.8442, TEMP = 1.44, DT = 0.005, RC = 2.5, SKIN = 0.3, RMIN = 0.75;

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* squared minimum-image distance of two positions (the box is 2^32 units a side) */
__host__ __device__ static inline unsigned long long dist2(uint4 a, uint4 b)
{
	long long dx = (int)(a.x - b.x), dy = (int)(a.y - b.y), dz = (int)(a.z - b.z);
	return (unsigned long long)(dx * dx) + (unsigned long long)(dy * dy) + (unsigned long long)(dz * dz);
}

/* p / 2^30 rounded towards zero: the pair's two halves cancel exactly */
__host__ __device__ static inline long long qdiv(long long p)
{
	return p >= 0 ? p >> 30 : -((-p) >> 30);
}

/* the velocity change atom p gets from atom q (none beyond the cutoff) */
__host__ __device__ static inline void pair_dv(uint4 p, uint4 q, const int *table, int shift,
					       unsigned long long rc2, long long *acc)
{
	unsigned long long r2 = dist2(p, q);
	if (r2 >= rc2)
		return;
	long long c = table[r2 >> shift];
	acc[0] += qdiv(c * (int)(p.x - q.x));
	acc[1] += qdiv(c * (int)(p.y - q.y));
	acc[2] += qdiv(c * (int)(p.z - q.z));
}

__host__ __device__ static inline int cell_of(uint4 p, int ncell)
{
	int cx = (int)(((unsigned long long)p.x * ncell) >> 32);
	int cy = (int)(((unsigned long long)p.y * ncell) >> 32);
	int cz = (int)(((unsigned long long)p.z * ncell) >> 32);
	return (cz * ncell + cy) * ncell + cx;
}

/* leapfrog: v(t + 1/2) = v(t - 1/2) + dv(t), x(t + 1) = x(t) + v(t + 1/2) */
__global__ void md_integrate(uint4 *x, int4 *v, const int4 *dv, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int4 vi = v[i], a = dv[i];
	vi.x += a.x, vi.y += a.y, vi.z += a.z;
	uint4 p = x[i];
	p.x += (unsigned)vi.x, p.y += (unsigned)vi.y, p.z += (unsigned)vi.z;
	v[i] = vi;
	x[i] = p;
}

/* raises the flag when an atom has moved more than half the skin */
__global__ void md_skin_check(const uint4 *x, const uint4 *x_built, int n, unsigned long long half2, int *flag)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && dist2(x[i], x_built[i]) > half2)
		*flag = 1;
}

/* the rebuild's three kernels return at once unless the skin check raised the flag */
__global__ void md_clear_cells(const int *flag, int *cell_count, int cells, int *rebuilds)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (!*flag || c >= cells)
		return;
	cell_count[c] = 0;
	if (c == 0)
		*rebuilds += 1;
}

/* the cell list, and the positions the next skin checks compare with */
__global__ void md_bin(const int *flag, const uint4 *x, uint4 *x_built, int n, int ncell, int *cell_count, int *cell_atoms,
		       int *overflow)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (!*flag || i >= n)
		return;
	uint4 p = x[i];
	x_built[i] = p;
	int c = cell_of(p, ncell);
	int slot = atomicAdd(&cell_count[c], 1);
	if (slot < CELL_CAP)
		cell_atoms[c * CELL_CAP + slot] = i;
	else
		atomicOr(overflow, 1);
}

/* each atom's neighbours within cutoff + skin, from the 27 cells around it (list column-major) */
__global__ void md_build(const int *flag, const uint4 *x, int n, int ncell, const int *cell_count,
			 const int *cell_atoms, unsigned long long list2, int *nlist, int *ncount, int *overflow)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (!*flag || i >= n)
		return;
	uint4 p = x[i];
	int c0 = cell_of(p, ncell), cx = c0 % ncell, cy = c0 / ncell % ncell, cz = c0 / (ncell * ncell), k = 0;
	for (int dz = -1; dz <= 1; dz++)
		for (int dy = -1; dy <= 1; dy++)
			for (int dx = -1; dx <= 1; dx++) {
				int c = (((cz + dz + ncell) % ncell) * ncell + (cy + dy + ncell) % ncell) * ncell +
					(cx + dx + ncell) % ncell;
				int cnt = min(cell_count[c], (int)CELL_CAP);
				for (int s = 0; s < cnt; s++) {
					int j = cell_atoms[c * CELL_CAP + s];
					if (j == i || dist2(p, x[j]) >= list2)
						continue;
					if (k < MAXNB)
						nlist[(size_t)k * n + i] = j;
					k++;
				}
			}
	if (k > MAXNB) {
		atomicOr(overflow, 2);
		k = MAXNB;
	}
	ncount[i] = k;
}

__global__ void md_force(const uint4 *x, int n, const int *nlist, const int *ncount, const int *table, int shift,
			 unsigned long long rc2, int4 *dv)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint4 p = x[i];
	long long acc[3] = {0, 0, 0};
	int k = ncount[i];
	for (int s = 0; s < k; s++)
		pair_dv(p, x[nlist[(size_t)s * n + i]], table, shift, rc2, acc);
	dv[i] = make_int4((int)acc[0], (int)acc[1], (int)acc[2], 0);
}

/* --- the simulation ---------------------------------------------------------------------- */

struct md {
	cudaStream_t stream;
	uint4 *x, *x_built;
	int4 *v, *dv;
	int *table, *cell_count, *cell_atoms, *nlist, *ncount, *overflow, *flag, *rebuilds;
	int ncell, shift;
	unsigned long long rc2, list2, half2;
};

static const int BLOCKS = (N + THREADS - 1) / THREADS;

/* queued every step: does the work only when the skin check raised the flag */
static void neighbor_rebuild_if_flagged(struct md *m)
{
	int cells = m->ncell * m->ncell * m->ncell;
	md_clear_cells<<<(cells + THREADS - 1) / THREADS, THREADS, 0, m->stream>>>(m->flag, m->cell_count, cells, m->rebuilds);
	CHECK_LAUNCH();
	md_bin<<<BLOCKS, THREADS, 0, m->stream>>>(m->flag, m->x, m->x_built, N, m->ncell, m->cell_count, m->cell_atoms,
						  m->overflow);
	CHECK_LAUNCH();
	md_build<<<BLOCKS, THREADS, 0, m->stream>>>(m->flag, m->x, N, m->ncell, m->cell_count, m->cell_atoms, m->list2,
						    m->nlist, m->ncount, m->overflow);
	CHECK_LAUNCH();
}

static void force_pass(struct md *m)
{
	md_force<<<BLOCKS, THREADS, 0, m->stream>>>(m->x, N, m->nlist, m->ncount, m->table, m->shift, m->rc2, m->dv);
	CHECK_LAUNCH();
}

int main(void)
{
	const char *name = "c127_clean_md_neighbor_list_device_rebuild";
	const double a_sigma = cbrt(4.0 / DENSITY), units = 4294967296.0 / FCC / a_sigma;
	struct md m;
	static int table[TABLE];
	m.rc2 = (unsigned long long)(RC * units) * (unsigned long long)(RC * units);
	m.list2 = (unsigned long long)((RC + SKIN) * units) * (unsigned long long)((RC + SKIN) * units);
	m.half2 = (unsigned long long)(SKIN / 2 * units) * (unsigned long long)(SKIN / 2 * units);
	m.ncell = (int)(4294967296.0 / ((RC + SKIN) * units));
	for (m.shift = 0; (m.rc2 >> m.shift) >= TABLE; m.shift++)
		;
	for (int k = 0; k < TABLE; k++) { /* (F/r) dt^2 at the bin's centre, Q30 */
		double r = sqrt(((double)k + 0.5) * (double)(1ull << m.shift)) / units;
		r = r < RMIN ? RMIN : r;
		double fr = 24.0 * (2.0 * pow(r, -14.0) - pow(r, -8.0));
		table[k] = (int)lround(fr * DT * DT * 1073741824.0);
	}

	/* the lattice and the velocities (pairs of opposite velocities: no net momentum) */
	uint4 *h_x = (uint4 *)malloc(N * sizeof(uint4));
	int4 *h_v = (int4 *)malloc(N * sizeof(int4)), *h_dv = (int4 *)malloc(N * sizeof(int4));
	const unsigned cellw = (unsigned)(4294967296ull / FCC);
	for (int c = 0; c < FCC * FCC * FCC; c++)
		for (int b = 0; b < 4; b++) {
			unsigned ox = cellw / 4 + (b == 1 || b == 2 ? cellw / 2 : 0);
			unsigned oy = cellw / 4 + (b == 1 || b == 3 ? cellw / 2 : 0);
			unsigned oz = cellw / 4 + (b == 2 || b == 3 ? cellw / 2 : 0);
			h_x[4 * c + b] = make_uint4((unsigned)(c % FCC) * cellw + ox, (unsigned)(c / FCC % FCC) * cellw + oy,
						    (unsigned)(c / (FCC * FCC)) * cellw + oz, 0);
		}
	const double vscale = sqrt(TEMP) * DT * units;
	for (int p = 0; p < N / 2; p++) {
		int comp[3];
		for (int d = 0; d < 3; d++) { /* four uniforms: roughly normal, unit variance */
			uint32_t h = mix32((uint32_t)(p * 3 + d) ^ 0x5eedu), g = mix32(h);
			double s = (h & 0xffff) + (h >> 16) + (g & 0xffff) + (g >> 16);
			comp[d] = (int)lround((s / 65536.0 - 2.0) * sqrt(3.0) * vscale);
		}
		h_v[2 * p] = make_int4(comp[0], comp[1], comp[2], 0);
		h_v[2 * p + 1] = make_int4(-comp[0], -comp[1], -comp[2], 0);
	}

	size_t cells = (size_t)m.ncell * m.ncell * m.ncell;
	const int one = 1;
	CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&m.x, N * sizeof(uint4))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.x_built, N * sizeof(uint4))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.v, N * sizeof(int4))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.dv, N * sizeof(int4))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.table, sizeof table)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.cell_count, cells * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.cell_atoms, cells * CELL_CAP * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.nlist, (size_t)MAXNB * N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.ncount, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.overflow, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.flag, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&m.rebuilds, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(m.x, h_x, N * sizeof(uint4), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the lattice
	CHECK(cudaMemcpy(m.v, h_v, N * sizeof(int4), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the velocities
	CHECK(cudaMemcpy(m.table, table, sizeof table, cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the force table
	CHECK(cudaMemcpy(m.flag, &one, sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the first build is due
	CHECK(cudaMemset(m.overflow, 0, sizeof(int))); // SYNCSPY-CLEAN: setup
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, the uploads done before the stream uses them
	neighbor_rebuild_if_flagged(&m);
	force_pass(&m);
	CHECK(cudaMemsetAsync(m.rebuilds, 0, sizeof(int), m.stream));
	CHECK(cudaStreamSynchronize(m.stream)); // SYNCSPY-CLEAN: setup, the first list and forces

	for (int s = 0; s < STEPS; s++) {
		CHECK(cudaMemsetAsync(m.flag, 0, sizeof(int), m.stream));
		md_integrate<<<BLOCKS, THREADS, 0, m.stream>>>(m.x, m.v, m.dv, N);
		CHECK_LAUNCH();
		md_skin_check<<<BLOCKS, THREADS, 0, m.stream>>>(m.x, m.x_built, N, m.half2, m.flag);
		CHECK_LAUNCH();
		neighbor_rebuild_if_flagged(&m);
		force_pass(&m);
	}

	int overflow = 0, rebuilds = 0;
	CHECK(cudaStreamSynchronize(m.stream)); // SYNCSPY-CLEAN: the final wait, before the reads
	CHECK(cudaMemcpy(h_x, m.x, N * sizeof(uint4), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the positions
	CHECK(cudaMemcpy(h_v, m.v, N * sizeof(int4), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the velocities
	CHECK(cudaMemcpy(h_dv, m.dv, N * sizeof(int4), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the forces
	CHECK(cudaMemcpy(&overflow, m.overflow, sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the overflow flags
	CHECK(cudaMemcpy(&rebuilds, m.rebuilds, sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the rebuild count

	/* the checks: momentum, sampled forces against a brute-force sum, the temperature */
	corpus_expect(name, "cell or list overflow", overflow, 0);
	long long px = 0, py = 0, pz = 0;
	double ke = 0;
	unsigned long long checksum = 14695981039346656037ull;
	for (int i = 0; i < N; i++) {
		px += h_v[i].x, py += h_v[i].y, pz += h_v[i].z;
		ke += (double)h_v[i].x * h_v[i].x + (double)h_v[i].y * h_v[i].y + (double)h_v[i].z * h_v[i].z;
		checksum = (checksum ^ h_x[i].x ^ ((unsigned long long)h_x[i].y << 32)) * 1099511628211ull;
		checksum = (checksum ^ h_x[i].z ^ ((unsigned long long)(unsigned)h_v[i].x << 32)) * 1099511628211ull;
	}
	corpus_expect(name, "momentum x", px, 0);
	corpus_expect(name, "momentum y", py, 0);
	corpus_expect(name, "momentum z", pz, 0);
	for (int k = 0; k < SAMPLES; k++) {
		int i = (int)(mix32((uint32_t)k + 77u) % N);
		long long acc[3] = {0, 0, 0};
		for (int j = 0; j < N; j++)
			if (j != i)
				pair_dv(h_x[i], h_x[j], table, m.shift, m.rc2, acc);
		corpus_expect(name, "sampled force x", h_dv[i].x, acc[0]);
		corpus_expect(name, "sampled force y", h_dv[i].y, acc[1]);
		corpus_expect(name, "sampled force z", h_dv[i].z, acc[2]);
	}
	double temp = ke / (3.0 * N) / (DT * units) / (DT * units);
	if (temp < 0.4 || temp > 2.5 || rebuilds < 1) {
		fprintf(stderr, "%s: temperature %.3f after %d rebuilds\n", name, temp, rebuilds);
		return 1;
	}

	CHECK(cudaFree(m.x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.x_built)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.v)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.dv)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.table)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.cell_count)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.cell_atoms)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.nlist)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.ncount)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.overflow)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.flag)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(m.rebuilds)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(m.stream));
	free(h_x);
	free(h_v);
	free(h_dv);
	printf("%s: steps=%d rebuilds=%d temp_milli=%d checksum=%016llx result=OK\n", name, STEPS, rebuilds,
	       (int)lround(temp * 1000.0), checksum);
	return 0;
}
