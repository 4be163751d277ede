/*
 * examples/corpus/driver_kernels.cu: the kernels of the driver-API workloads (d*.c), compiled
 * to a cubin that they load with cuModuleLoad (the GPU script: nvcc -cubin -arch=sm_90). Plain
 * extern "C" names, so the driver finds them with cuModuleGetFunction.
 */
#include <stdint.h>

extern "C" __global__ void mix(uint32_t *x, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = x[i] + (uint32_t)step;
	for (int r = 0; r < 32; r++)
		v = v * 1664525u + 1013904223u;
	x[i] = v;
}

extern "C" __global__ void sum_into(const uint32_t *x, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[256];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += x[i] >> 8;
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < 256; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

/* d05-d09: mix with a chosen number of rounds (a heavier step). */
extern "C" __global__ void mix_rounds(uint32_t *x, int n, int step, int rounds)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = x[i] ^ ((uint32_t)step * 0x9e3779b9u);
	for (int r = 0; r < rounds; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	x[i] = v;
}

/* d08: the step counter lives on the device, so a graph replays with fixed arguments. */
extern "C" __global__ void tick(int *step)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*step += 1;
}

extern "C" __global__ void mix_dev_step(uint32_t *x, int n, const int *step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = x[i] + (uint32_t)*step;
	for (int r = 0; r < 32; r++)
		v = v * 1664525u + 1013904223u;
	x[i] = v;
}

/* d09: a deterministic fill of a scratch buffer. */
extern "C" __global__ void fill_hash(uint32_t *x, int n, int seed)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = ((uint32_t)i * 2654435761u) ^ ((uint32_t)seed * 40503u);
}

/* d10: a lattice-gas step, streaming (a shifted read) then a local collision. */
extern "C" __global__ void stream_shift(uint32_t *dst, const uint32_t *src, int n, int shift)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = src[(i + shift) % n] ^ (uint32_t)shift;
}

extern "C" __global__ void collide(uint32_t *x, int n, int rounds)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t v = x[i];
	for (int r = 0; r < rounds; r++)
		v = ((v << 7) | (v >> 25)) * 2654435761u + (uint32_t)r;
	x[i] = v;
}

/* d11: a three-point integer diffusion on a ring, with a hashed source term. */
extern "C" __global__ void diffuse_ring(uint32_t *next, const uint32_t *cur, int n, int step, int rounds)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t l = cur[(i + n - 1) % n], c = cur[i], r = cur[(i + 1) % n];
	uint32_t src = (uint32_t)i ^ ((uint32_t)step * 0x9e3779b9u);
	for (int k = 0; k < rounds; k++)
		src = (src ^ (src >> 15)) * 2246822519u;
	next[i] = ((l >> 2) + (c >> 1) + (r >> 2)) + (src & 255u);
}

/* d18: a three-tap horizontal blur of a pitched frame (edges clamped; pitch in bytes), summed
 * into a per-frame slot. One block row per image row, 256 threads a block. */
extern "C" __global__ void blur_sum_pitched(const uint32_t *img, size_t pitch, int width, int height, unsigned long long *acc)
{
	__shared__ unsigned long long sh[256];
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	unsigned long long s = 0;
	if (x < width && y < height) {
		const uint32_t *row = (const uint32_t *)((const char *)img + (size_t)y * pitch);
		uint32_t l = row[x > 0 ? x - 1 : 0], c = row[x], r = row[x < width - 1 ? x + 1 : width - 1];
		s = ((l >> 2) + (c >> 1) + (r >> 2)) >> 4;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < 256; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

/* d22: one level of a breadth-first expansion over an implicit graph (node v links to
 * (3v+1) mod n and (7v+5) mod n): every newly reached node gets depth level+1 and is appended
 * to the next frontier through an atomic counter. */
extern "C" __global__ void bfs_expand(const unsigned int *frontier, unsigned int len, unsigned int *depth, unsigned int *next, unsigned int *next_len, unsigned int n, unsigned int level)
{
	unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= len)
		return;
	unsigned int v = frontier[j];
	unsigned int nb[2] = {(unsigned int)((3ull * v + 1) % n), (unsigned int)((7ull * v + 5) % n)};
	for (int k = 0; k < 2; k++)
		if (atomicCAS(&depth[nb[k]], 0xffffffffu, level + 1) == 0xffffffffu)
			next[atomicAdd(next_len, 1u)] = nb[k];
}

/* d23: a per-channel colour lookup (three 256-entry tables, one after the other) on packed
 * 0x00BBGGRR pixels, the output's channel sum added into *acc. */
extern "C" __global__ void apply_lut_rgb(const uint32_t *in, uint32_t *out, const uint32_t *lut, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[256];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long s = 0;
	if (i < n) {
		uint32_t p = in[i];
		uint32_t r = lut[p & 255u], g = lut[256 + ((p >> 8) & 255u)], b = lut[512 + ((p >> 16) & 255u)];
		out[i] = r | (g << 8) | (b << 16);
		s = r + g + b;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < 256; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

/* d29: the absolute difference of two frames (top 24 bits of each word), summed into *acc; a
 * grid-stride loop, 256 threads a block. */
extern "C" __global__ void abs_diff_sum(const uint32_t *a, const uint32_t *b, int n, unsigned long long *acc)
{
	__shared__ unsigned long long sh[256];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		uint32_t x = a[i] >> 8, y = b[i] >> 8;
		s += x > y ? x - y : y - x;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < 256; k++)
			t += sh[k];
		atomicAdd(acc, t);
	}
}

/* d33: an additive synthesizer: sample t of render block `block`, the sum of `voices` triangle
 * oscillators (phase increments 40000 + 9973 v per sample, a cycle is 2^32), amplitudes 1..8. */
extern "C" __global__ void synth_voices(int *out, int frames, int voices, int block)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= frames)
		return;
	unsigned int n = (unsigned int)block * (unsigned int)frames + (unsigned int)t;
	int acc = 0;
	for (int v = 0; v < voices; v++) {
		unsigned int phase = n * (40000u + (unsigned int)v * 9973u);
		int tri = (int)(phase >> 16);
		tri = tri < 32768 ? tri : 65535 - tri;
		acc += (tri - 16384) * (1 + (v & 7)) / 64;
	}
	out[t] = acc;
}

/* d34: occupancy mapping. Each lidar return (an offset from the sensor, at the grid's centre, in
 * 1/256 voxel; three ints a point) traces its ray: every voxel it crosses gets a free pass (low
 * 16 bits of the cell), the end voxel a hit (high 16 bits); the 8 voxels next to the sensor are
 * skipped. */
extern "C" __global__ void raycast_occupancy(const int *pts, int n, unsigned int *grid, int dim)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int dx = pts[3 * i], dy = pts[3 * i + 1], dz = pts[3 * i + 2], c = dim / 2 * 256;
	int ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy, az = dz < 0 ? -dz : dz;
	int steps = (ax > ay ? (ax > az ? ax : az) : (ay > az ? ay : az)) >> 8;
	for (int k = 8; k < steps; k++) {
		int x = (c + dx * k / steps) >> 8, y = (c + dy * k / steps) >> 8, z = (c + dz * k / steps) >> 8;
		atomicAdd(&grid[((size_t)z * dim + y) * dim + x], 1u);
	}
	int x = (c + dx) >> 8, y = (c + dy) >> 8, z = (c + dz) >> 8;
	atomicAdd(&grid[((size_t)z * dim + y) * dim + x], 1u << 16);
}

/* d34: the map's statistics: stats[0] += free passes, stats[1] += hits, stats[2] += occupied
 * cells (hit, and hits * 4 > free passes); a grid-stride loop, 256 threads a block. */
extern "C" __global__ void occupancy_stats(const unsigned int *grid, int cells, unsigned long long *stats)
{
	__shared__ unsigned long long sf[256], sh[256], so[256];
	unsigned long long f = 0, h = 0, o = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < cells; i += gridDim.x * blockDim.x) {
		unsigned int free_passes = grid[i] & 0xffffu, hits = grid[i] >> 16;
		f += free_passes;
		h += hits;
		o += hits && hits * 4u > free_passes;
	}
	sf[threadIdx.x] = f;
	sh[threadIdx.x] = h;
	so[threadIdx.x] = o;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int k = 1; k < 256; k++) {
			f += sf[k];
			h += sh[k];
			o += so[k];
		}
		atomicAdd(&stats[0], f);
		atomicAdd(&stats[1], h);
		atomicAdd(&stats[2], o);
	}
}

/* d37-d38: edge clamp of the denoiser's coordinates. */
static __device__ __forceinline__ int nlm_clamp(int v, int hi)
{
	return v < 0 ? 0 : (v > hi ? hi : v);
}

/* d37-d38: a non-local-means denoiser for 10-bit luma: each pixel becomes the weighted mean of
 * the pixels of its (2r+1)^2 search window, each weighted 1024 >> (ssd >> 10) (at least 1) by
 * the squared distance of the two 3x3 patches; edges clamped. 2D blocks, one pixel a thread. */
extern "C" __global__ void nlm_denoise_luma(const unsigned short *in, unsigned short *out, int w, int h, int r)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= w || y >= h)
		return;
	int c[9];
	for (int py = -1; py <= 1; py++)
		for (int px = -1; px <= 1; px++)
			c[(py + 1) * 3 + px + 1] = in[nlm_clamp(y + py, h - 1) * w + nlm_clamp(x + px, w - 1)];
	unsigned int num = 0, den = 0;
	for (int dy = -r; dy <= r; dy++)
		for (int dx = -r; dx <= r; dx++) {
			unsigned int ssd = 0;
			for (int py = -1; py <= 1; py++) {
				const unsigned short *row = in + nlm_clamp(y + dy + py, h - 1) * w;
				for (int px = -1; px <= 1; px++) {
					int d = c[(py + 1) * 3 + px + 1] - (int)row[nlm_clamp(x + dx + px, w - 1)];
					ssd += (unsigned int)(d * d);
				}
			}
			unsigned int s = ssd >> 10, wgt = s < 10u ? 1024u >> s : 1u;
			num += wgt * in[nlm_clamp(y + dy, h - 1) * w + nlm_clamp(x + dx, w - 1)];
			den += wgt;
		}
	out[y * w + x] = (unsigned short)(num / den);
}

/* d39, d41: the prefill of a batch's key/value cache: word i of the arena gets a hash of i and
 * the batch. */
extern "C" __global__ void kv_prefill(uint32_t *kv, int words, int batch)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= words)
		return;
	uint32_t v = (uint32_t)i * 2654435761u ^ (uint32_t)batch * 0x85ebca6bu;
	v ^= v >> 13;
	v *= 0xc2b2ae35u;
	kv[i] = v ^ (v >> 16);
}

/* d39, d41: one decode step's attention logits over the whole cache, summed: word i (column
 * i % row_words of its token row) times the query's word for that column (a hash of the column
 * and query_seed), top 12 bits of the 32-bit product, added into *score; a grid-stride loop,
 * 256 threads a block. */
extern "C" __global__ void kv_attend_sum(const uint32_t *kv, int words, int row_words, int query_seed, unsigned long long *score)
{
	__shared__ unsigned long long sh[256];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x) {
		uint32_t q = (uint32_t)(i % row_words) * 0x9e3779b9u + (uint32_t)query_seed * 0x27d4eb2fu;
		q ^= q >> 15;
		s += (kv[i] * (q | 1u)) >> 20;
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < 256; k++)
			t += sh[k];
		atomicAdd(score, t);
	}
}

/* d40: the receiver's front end: sample i of sub-block `sub` of frame *frame (subs sub-blocks
 * of n samples a frame): two triangle carriers at bins 301 and 1210, a bursty interferer at bin
 * 777 (frames where frame % 5 == 2), and hashed noise of +-2048. */
extern "C" __global__ void sdr_synth(int *x, int n, int subs, const int *frame)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n * subs)
		return;
	unsigned int s = (unsigned int)*frame * (unsigned int)(n * subs) + (unsigned int)i;
	unsigned int step = 4294967295u / (unsigned int)n + 1u; /* 2^32 / n for n a power of two */
	int t1 = (int)((s * 301u * step) >> 16), t2 = (int)((s * 1210u * step) >> 16), t3 = (int)((s * 777u * step) >> 16);
	t1 = (t1 < 32768 ? t1 : 65535 - t1) - 16384;
	t2 = (t2 < 32768 ? t2 : 65535 - t2) - 16384;
	t3 = (t3 < 32768 ? t3 : 65535 - t3) - 16384;
	unsigned int hsh = s * 2654435761u;
	hsh ^= hsh >> 15;
	hsh *= 0x2c1b3c6du;
	hsh ^= hsh >> 12;
	x[i] = t1 / 4 + t2 / 8 + (*frame % 5 == 2 ? t3 / 4 : 0) + (int)(hsh & 4095u) - 2048;
}

/* d40: the power spectrum, one block per bin (blockIdx.x) and sub-block (blockIdx.y): a direct
 * DFT of the n samples against a Q14 cosine table of n entries (staged in shared memory, n at
 * most 16384), re and im divided by 16384, |X|^2 added into power[bin]; 256 threads a block. */
extern "C" __global__ void sdr_dft_power(const int *x, int n, const short *costab, unsigned long long *power)
{
	__shared__ short tab[16384];
	__shared__ long long sre[256], sim[256];
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		tab[i] = costab[i];
	__syncthreads();
	const int *xs = x + (size_t)blockIdx.y * n;
	unsigned int k = blockIdx.x, mask = (unsigned int)n - 1u, quarter = (unsigned int)n / 4u * 3u;
	long long re = 0, im = 0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		unsigned int idx = (k * (unsigned int)i) & mask;
		re += (long long)xs[i] * tab[idx];
		im += (long long)xs[i] * tab[(idx + quarter) & mask];
	}
	sre[threadIdx.x] = re;
	sim[threadIdx.x] = im;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int t = 1; t < 256; t++) {
			re += sre[t];
			im += sim[t];
		}
		re /= 16384;
		im /= 16384;
		atomicAdd(&power[k], (unsigned long long)(re * re + im * im));
	}
}

/* d42: the verification stage of a short-read aligner: the edit distance (unit costs, global)
 * of candidate pair i, read i / cands_per_read (len bases, one byte a base) against the reference
 * window at cand[i], one pair a thread. The DP row is a per-thread array sized for the longest
 * reads the aligner accepts (ALIGN_MAX_LEN), so the kernel's stack frame is about 2 KB a thread. */
#define ALIGN_MAX_LEN 512
extern "C" __global__ void align_edit_distance(const int *cand, const unsigned char *reads, int pairs, int cands_per_read, int len, const unsigned char *ref, int *dist)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= pairs || len > ALIGN_MAX_LEN)
		return;
	int row[ALIGN_MAX_LEN + 1];
	const unsigned char *q = reads + (size_t)(i / cands_per_read) * len, *t = ref + cand[i];
	for (int b = 0; b <= len; b++)
		row[b] = b;
	for (int a = 1; a <= len; a++) {
		int diag = row[0], left = a;
		unsigned char qa = q[a - 1];
		row[0] = a;
		for (int b = 1; b <= len; b++) {
			int up = row[b];
			int v = diag + (qa != t[b - 1]);
			v = min(v, up + 1);
			v = min(v, left + 1);
			diag = up;
			left = v;
			row[b] = v;
		}
	}
	dist[i] = row[len];
}

/* d42: bins[min(max(v[i], 0), nbins - 1)] += 1, a grid-stride loop. */
extern "C" __global__ void histogram_clamped(const int *v, int n, unsigned int *bins, int nbins)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int b = v[i] < 0 ? 0 : (v[i] >= nbins ? nbins - 1 : v[i]);
		atomicAdd(&bins[b], 1u);
	}
}

/* d43, d45: a gradient-boosted forest on byte features, one row a thread. Each tree is a complete
 * binary tree of the given depth, its (2^depth - 1) internal nodes in breadth-first order, a node
 * word holding the feature index (bits 0-7) and the threshold (bits 8-15): go right when the
 * feature is above the threshold. Leaf values (2^depth a tree) are summed into score[i]. */
extern "C" __global__ void gbdt_forest_eval(const unsigned char *rows, int n, int features, const unsigned int *nodes, const int *leaves, int trees, int depth, int *score)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const unsigned char *x = rows + (size_t)i * features;
	int internal = (1 << depth) - 1, s = 0;
	for (int t = 0; t < trees; t++) {
		const unsigned int *nd = nodes + (size_t)t * internal;
		int k = 0;
		for (int d = 0; d < depth; d++) {
			unsigned int w = nd[k];
			k = 2 * k + 1 + (x[w & 255u] > ((w >> 8) & 255u));
		}
		s += leaves[(size_t)t * (internal + 1) + (k - internal)];
	}
	score[i] = s;
}

/* d43, d45: a batch's score statistics: stats[0] += the scores (two's complement), stats[1] +=
 * the rows scored above the threshold. */
extern "C" __global__ void score_flag_stats(const int *score, int n, int threshold, unsigned long long *stats)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	atomicAdd(&stats[0], (unsigned long long)(long long)score[i]);
	if (score[i] > threshold)
		atomicAdd(&stats[1], 1ull);
}

/* d44, d46: the hash of the credit simulator (a murmur3 finalizer over four words). */
static __device__ __forceinline__ unsigned int credit_hash(unsigned int a, unsigned int b, unsigned int c, unsigned int d)
{
	unsigned int h = a * 0x9e3779b1u ^ b * 0x85ebca77u ^ c * 0xc2b2ae3du ^ d * 0x27d4eb2fu;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* d44, d46: a one-factor-per-sector credit portfolio simulation, one scenario path a thread.
 * market holds three arrays of `obligors` ints: the monthly default threshold (of 65536), the
 * factor loading (0..255) and the exposure; obligors are sorted by sector, sector s being
 * [sector_start[s], sector_start[s + 1]). Path p draws each sector's factor z in [-32768, 32767];
 * obligor j defaults in the first month m whose draw (16 bits) plus loading * z / 256 is below its
 * threshold, losing its exposure. loss[p * sectors + s] is the path's loss in sector s. */
extern "C" __global__ void credit_loss_paths(const int *market, int obligors, const int *sector_start, int sectors, int months, int paths, int tick, unsigned int *loss)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p >= paths)
		return;
	const int *threshold = market, *loading = market + obligors, *exposure = market + 2 * obligors;
	for (int s = 0; s < sectors; s++) {
		int z = (int)(credit_hash((unsigned int)tick, (unsigned int)p, 0x5ec70000u + (unsigned int)s, 0u) >> 16) - 32768;
		unsigned int l = 0;
		for (int j = sector_start[s]; j < sector_start[s + 1]; j++) {
			int shift = (loading[j] * z) >> 8, th = threshold[j];
			for (int m = 0; m < months; m++) {
				int u = (int)(credit_hash((unsigned int)tick, (unsigned int)p, (unsigned int)j, (unsigned int)m + 1u) >> 16);
				if (u + shift < th) {
					l += (unsigned int)exposure[j];
					break;
				}
			}
		}
		loss[(size_t)p * sectors + s] = l;
	}
}

/* d47, d50: block-matching stereo on a rectified camera pair: for pixel (x, y) of the left image
 * the disparity d in [0, max_disp) whose (2r+1)^2 window has the smallest sum of absolute
 * differences against the right image shifted left by d (coordinates clamped to the image), the
 * first minimum on ties. One pixel a thread, blockIdx.y the row; both 8-bit images share a pitch,
 * the 8-bit disparity map has its own. */
extern "C" __global__ void stereo_sad_disparity(const unsigned char *left, const unsigned char *right, size_t pitch, int w, int h, int max_disp, int r, unsigned char *disp, size_t disp_pitch)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x >= w || y >= h)
		return;
	unsigned int best = 0xffffffffu;
	int best_d = 0;
	for (int d = 0; d < max_disp; d++) {
		unsigned int cost = 0;
		for (int dy = -r; dy <= r; dy++) {
			int yy = min(max(y + dy, 0), h - 1);
			const unsigned char *lrow = left + (size_t)yy * pitch, *rrow = right + (size_t)yy * pitch;
			for (int dx = -r; dx <= r; dx++) {
				int xl = min(max(x + dx, 0), w - 1), xr = min(max(x + dx - d, 0), w - 1);
				cost += (unsigned int)abs((int)lrow[xl] - (int)rrow[xr]);
			}
		}
		if (cost < best) {
			best = cost;
			best_d = d;
		}
	}
	disp[(size_t)y * disp_pitch + x] = (unsigned char)best_d;
}

/* d48: rotate left. */
static __device__ __forceinline__ unsigned int pii_rotl(unsigned int v, int s)
{
	return (v << s) | (v >> (32 - s));
}

/* d48: the tokenizer's keyed pseudo-random function, a ChaCha-style ARX permutation of four words
 * (prf_rounds quarter rounds) standing in for FF1's AES-CBC-MAC: key k, the field's tweak, the
 * Feistel round and the half being mixed in. */
static __device__ __forceinline__ unsigned int pii_prf(const unsigned int *k, unsigned int tweak, unsigned int round, unsigned int x, int prf_rounds)
{
	unsigned int a = k[0] ^ x, b = k[1] ^ tweak, c = k[2] ^ (round * 0x9e3779b9u), d = k[3] ^ 0x3c6ef372u;
	for (int i = 0; i < prf_rounds; i++) {
		a += b;
		d = pii_rotl(d ^ a, 16);
		c += d;
		b = pii_rotl(b ^ c, 12);
		a += b;
		d = pii_rotl(d ^ a, 8);
		c += d;
		b = pii_rotl(b ^ c, 7);
		a ^= (unsigned int)i * 0x85ebca6bu;
	}
	return a ^ c;
}

/* d48: the value of n ASCII digits, and its inverse. */
static __device__ __forceinline__ unsigned int pii_digits(const unsigned char *s, int n)
{
	unsigned int v = 0;
	for (int i = 0; i < n; i++)
		v = v * 10u + (unsigned int)(s[i] - '0');
	return v;
}

static __device__ __forceinline__ void pii_put_digits(unsigned char *s, unsigned int v, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		s[i] = (unsigned char)('0' + v % 10u);
		v /= 10u;
	}
}

/* d48: format-preserving encryption of a decimal field split into halves a (mod ma) and b (mod
 * mb): ten alternating Feistel rounds, a += F(b) in even rounds, b += F(a) in odd ones (FF1's
 * structure; decryption runs the rounds backwards with subtraction). */
static __device__ __forceinline__ void pii_fpe(unsigned int *a, unsigned int *b, unsigned int ma, unsigned int mb, const unsigned int *k, unsigned int tweak, int prf_rounds)
{
	for (unsigned int i = 0; i < 10u; i++) {
		if (i & 1u)
			*b = (*b + pii_prf(k, tweak, i, *a, prf_rounds) % mb) % mb;
		else
			*a = (*a + pii_prf(k, tweak, i, *b, prf_rounds) % ma) % ma;
	}
}

/* d48: tokenizes the sensitive fields of 64-byte card-transaction records, one record a thread:
 * the middle six digits of the 16-digit card number (bytes 8-23; the issuer's first six and the
 * last four kept) and the nine-digit social security number (bytes 24-32), each with its own
 * tweak (export_id * 4 + field); every other byte copied unchanged. */
extern "C" __global__ void pii_tokenize(const unsigned int *in, unsigned int *out, int records, unsigned int k0, unsigned int k1, unsigned int k2, unsigned int k3, unsigned int export_id, int prf_rounds)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= records)
		return;
	unsigned int w[16], k[4] = {k0, k1, k2, k3};
	for (int j = 0; j < 16; j++)
		w[j] = in[(size_t)i * 16 + j];
	unsigned char *b = (unsigned char *)w;
	unsigned int hi = pii_digits(b + 14, 3), lo = pii_digits(b + 17, 3);
	pii_fpe(&hi, &lo, 1000u, 1000u, k, export_id * 4u, prf_rounds);
	pii_put_digits(b + 14, hi, 3);
	pii_put_digits(b + 17, lo, 3);
	hi = pii_digits(b + 24, 4);
	lo = pii_digits(b + 28, 5);
	pii_fpe(&hi, &lo, 10000u, 100000u, k, export_id * 4u + 1u, prf_rounds);
	pii_put_digits(b + 24, hi, 4);
	pii_put_digits(b + 28, lo, 5);
	for (int j = 0; j < 16; j++)
		out[(size_t)i * 16 + j] = w[j];
}

/* d49, d51: the hypothesis hash of the gauge fitter. */
static __device__ __forceinline__ unsigned int ransac_hash(unsigned int seed, unsigned int region, unsigned int h)
{
	unsigned int v = seed * 0x9e3779b1u ^ region * 0x85ebca77u ^ h * 0xc2b2ae3du;
	v ^= v >> 16;
	v *= 0x7feb352du;
	v ^= v >> 15;
	v *= 0x846ca68bu;
	v ^= v >> 16;
	return v;
}

/* d49, d51: RANSAC line fits for the gauge regions of an inspection camera, one region a block
 * (npts edge points, packed x | y << 16, coordinates below 2048). Thread t scores the hypotheses
 * h = k * blockDim.x + t, k < hyps_per_thread: the line through the two points drawn by
 * ransac_hash(seed, region, h), whose inliers are the points at most sqrt(thr2) pixels from it
 * (a degenerate pair scores 0). best[region] = max over hypotheses of inliers << 32 | ~h, one
 * atomicMax a thread. */
extern "C" __global__ void ransac_line_gauge(const unsigned int *points, int npts, int hyps_per_thread, unsigned int seed, int thr2, unsigned long long *best)
{
	const unsigned int *p = points + (size_t)blockIdx.x * npts;
	unsigned long long mine = 0;
	for (int k = 0; k < hyps_per_thread; k++) {
		unsigned int h = (unsigned int)k * blockDim.x + threadIdx.x;
		unsigned int r = ransac_hash(seed, blockIdx.x, h);
		int i = (int)(r % (unsigned int)npts), j = (int)((i + 1 + (r >> 16) % (unsigned int)(npts - 1)) % (unsigned int)npts);
		int xi = (int)(p[i] & 0xffffu), yi = (int)(p[i] >> 16), xj = (int)(p[j] & 0xffffu), yj = (int)(p[j] >> 16);
		int a = yj - yi, b = xi - xj, c = -(a * xi + b * yi);
		long long lim = (long long)thr2 * (long long)(a * a + b * b);
		unsigned int inliers = 0;
		if (a != 0 || b != 0)
			for (int q = 0; q < npts; q++) {
				unsigned int v = p[q];
				long long e = (long long)(a * (int)(v & 0xffffu) + b * (int)(v >> 16) + c);
				inliers += e * e <= lim;
			}
		unsigned long long key = (unsigned long long)inliers << 32 | (unsigned long long)(0xffffffffu - h);
		mine = key > mine ? key : mine;
	}
	atomicMax(&best[blockIdx.x], mine);
}

/* d49, d51: template OCR of licence-plate crops, one crop a block (crop_w x crop_h bytes): for each
 * of the plate's character slots (slot s starts at column s * slot_pitch), every class's
 * glyph_w x glyph_h glyph is matched at every offset (ox, oy) of a search x search window by the
 * sum of absolute differences. best[crop * slots + s] = min over (class, offset) of
 * sad << 32 | (class * search * search + oy * search + ox), one atomicMin a thread and slot. */
extern "C" __global__ void ocr_glyph_match(const unsigned char *crops, int crop_w, int crop_h, const unsigned char *glyphs, int glyph_w, int glyph_h, int classes, int slots, int slot_pitch, int search, unsigned long long *best)
{
	const unsigned char *img = crops + (size_t)blockIdx.x * crop_w * crop_h;
	int per_slot = classes * search * search;
	for (int s = 0; s < slots; s++) {
		unsigned long long mine = 0xffffffffffffffffull;
		for (int u = threadIdx.x; u < per_slot; u += blockDim.x) {
			int cls = u / (search * search), off = u % (search * search);
			const unsigned char *g = glyphs + (size_t)cls * glyph_w * glyph_h;
			const unsigned char *win = img + (size_t)(off / search) * crop_w + s * slot_pitch + off % search;
			unsigned int sad = 0;
			for (int y = 0; y < glyph_h; y++)
				for (int x = 0; x < glyph_w; x++)
					sad += (unsigned int)abs((int)win[y * crop_w + x] - (int)g[y * glyph_w + x]);
			unsigned long long key = (unsigned long long)sad << 32 | (unsigned int)u;
			mine = key < mine ? key : mine;
		}
		atomicMin(&best[(size_t)blockIdx.x * slots + s], mine);
	}
}

/* d52, d55: multi-pattern signature matching of packet payloads (len bytes each, a multiple of
 * 4) with an Aho-Corasick automaton: delta holds each state's 256 next states, accept the
 * patterns that end in each state (a bit mask). One packet a thread, read a word at a time;
 * flags[p] = the patterns found in packet p. */
extern "C" __global__ void dpi_match(const unsigned int *pkts, int npkts, int len,
				     const unsigned short *delta, const unsigned long long *accept,
				     unsigned long long *flags)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p >= npkts)
		return;
	const unsigned int *w = pkts + (size_t)p * (len / 4);
	unsigned int s = 0;
	unsigned long long found = 0;
	for (int i = 0; i < len / 4; i++) {
		unsigned int v = w[i];
		for (int k = 0; k < 4; k++) {
			s = delta[s * 256u + ((v >> (8 * k)) & 255u)];
			found |= accept[s];
		}
	}
	flags[p] = found;
}

/* d53: block motion search of a w x h luma frame (w, h multiples of 16): costs[b * cands + c] is
 * the sum of absolute differences between 16 x 16 block b of cur and prev at the block's position
 * moved by candidate c's offset (c % span - search, c / span - search), span = 2 * search + 1,
 * cands = span * span, prev's coordinates clamped to the frame. One thread a (block, candidate). */
extern "C" __global__ void me_block_sad(const unsigned char *cur, const unsigned char *prev,
					int w, int h, int search, unsigned int *costs)
{
	int span = 2 * search + 1, cands = span * span, bw = w / 16;
	long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= (long long)bw * (h / 16) * cands)
		return;
	int b = (int)(t / cands), c = (int)(t % cands);
	int bx = (b % bw) * 16, by = (b / bw) * 16, dx = c % span - search, dy = c / span - search;
	unsigned int sad = 0;
	for (int y = 0; y < 16; y++) {
		int py = min(max(by + y + dy, 0), h - 1);
		const unsigned char *row = cur + (size_t)(by + y) * w + bx;
		for (int x = 0; x < 16; x++) {
			int px = min(max(bx + x + dx, 0), w - 1);
			sad += (unsigned int)abs((int)row[x] - (int)prev[(size_t)py * w + px]);
		}
	}
	costs[t] = sad;
}

/* d53: each block's best candidate, best[b] = min over c of costs << 32 | c (ties: the lowest c) */
extern "C" __global__ void me_select(const unsigned int *costs, int nblocks, int cands,
				     unsigned long long *best)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b >= nblocks)
		return;
	unsigned long long m = 0xffffffffffffffffull;
	for (int c = 0; c < cands; c++) {
		unsigned long long k = (unsigned long long)costs[(size_t)b * cands + c] << 32;
		k |= (unsigned int)c;
		m = k < m ? k : m;
	}
	best[b] = m;
}

/* d54: beamformed power of a frame of complex int8 voltages (volts: samples x antennas x
 * {re, im}; weights: beams x antennas x {re, im}): power[beam] += the sum over the frame's
 * samples of |sum over a of w[beam][a] v[s][a]|^2. A block of 256 threads per (chunk of 256
 * samples, beam: blockIdx.y), a thread a sample, one atomicAdd a block. */
extern "C" __global__ void beam_power(const signed char *volts, int antennas, int samples,
				      const signed char *weights, unsigned long long *power)
{
	__shared__ unsigned long long part[256];
	int beam = blockIdx.y, s = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long p = 0;
	if (s < samples) {
		const signed char *v = volts + (size_t)s * antennas * 2;
		const signed char *wt = weights + (size_t)beam * antennas * 2;
		int re = 0, im = 0;
		for (int a = 0; a < antennas; a++) {
			int vr = v[2 * a], vi = v[2 * a + 1], wr = wt[2 * a], wi = wt[2 * a + 1];
			re += wr * vr - wi * vi;
			im += wr * vi + wi * vr;
		}
		p = (unsigned long long)((long long)re * re + (long long)im * im);
	}
	part[threadIdx.x] = p;
	__syncthreads();
	for (int k = 128; k > 0; k >>= 1) {
		if ((int)threadIdx.x < k)
			part[threadIdx.x] += part[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(&power[beam], part[0]);
}

/* d56, d59: a one-stage detector's head over a batch of anchors (4 anchor shapes a cell of a
 * grid_w-wide 16-pixel grid, k int8 features each): the scores of `classes` classes and 4 box
 * offsets are dot products with the rows of w ((classes + 4) x k int8). An anchor whose best score
 * (ties: the lowest class) reaches thresh becomes a candidate: its key, score + 2^24 << 32 |
 * class << 24 | anchor, is appended to cand through the counter (at most max_cand kept). Every
 * anchor's box (x0, y0, x1, y1) goes to boxes. One thread an anchor. */
extern "C" __global__ void det_head(const signed char *feat, int anchors, int k, const signed char *w,
				    int classes, int grid_w, int thresh, int *boxes, unsigned int *count,
				    int max_cand, unsigned long long *cand)
{
	int a = blockIdx.x * blockDim.x + threadIdx.x;
	if (a >= anchors)
		return;
	const signed char *f = feat + (size_t)a * k;
	int best = -0x7fffffff, cls = 0, r[4];
	for (int c = 0; c < classes + 4; c++) {
		const signed char *wc = w + (size_t)c * k;
		int s = 0;
		for (int i = 0; i < k; i++)
			s += (int)f[i] * (int)wc[i];
		if (c < classes) {
			if (s > best) {
				best = s;
				cls = c;
			}
		} else {
			r[c - classes] = s;
		}
	}
	int cell = a >> 2, base = 16 << (a & 3);
	int cx = (cell % grid_w) * 16 + 8 + (r[0] >> 11), cy = (cell / grid_w) * 16 + 8 + (r[1] >> 11);
	int bw = base + (abs(r[2]) >> 10), bh = base + (abs(r[3]) >> 10);
	boxes[4 * a] = cx - bw / 2;
	boxes[4 * a + 1] = cy - bh / 2;
	boxes[4 * a + 2] = cx + bw / 2;
	boxes[4 * a + 3] = cy + bh / 2;
	if (best < thresh)
		return;
	unsigned int slot = atomicAdd(count, 1u);
	if (slot < (unsigned int)max_cand)
		cand[slot] = (unsigned long long)(best + (1 << 24)) << 32 |
			     (unsigned long long)cls << 24 | (unsigned int)a;
}

/* d56, d59: the suppression mask of Fast NMS over the first n = min(*count, cap) candidates: bit
 * j % 64 of mask[i * stride + j / 64] (stride = (cap + 63) / 64 words a row) is set when
 * candidate j ranks above i (a larger key), has the same class and overlaps i's box with an IoU
 * above iou_pct percent. One thread a (row, 64-bit word) of the first n rows and their
 * (n + 63) / 64 words; threads past them return (the grid may be sized for cap). */
extern "C" __global__ void nms_iou_mask(const unsigned long long *cand, const unsigned int *count,
					int cap, const int *boxes, int iou_pct, unsigned long long *mask)
{
	unsigned int n = min(*count, (unsigned int)cap);
	int words = (int)((n + 63) / 64), stride = (cap + 63) / 64;
	long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= (long long)n * words)
		return;
	int i = (int)(t / words), wd = (int)(t % words);
	unsigned long long ki = cand[i];
	const int *bi = boxes + 4 * (ki & 0xffffff);
	long long ai = (long long)(bi[2] - bi[0]) * (bi[3] - bi[1]);
	unsigned long long bits = 0;
	for (int b = 0; b < 64; b++) {
		int j = wd * 64 + b;
		if (j >= (int)n)
			break;
		unsigned long long kj = cand[j];
		if (kj <= ki || ((kj >> 24) & 255) != ((ki >> 24) & 255))
			continue;
		const int *bj = boxes + 4 * (kj & 0xffffff);
		int iw = min(bi[2], bj[2]) - max(bi[0], bj[0]);
		int ih = min(bi[3], bj[3]) - max(bi[1], bj[1]);
		if (iw <= 0 || ih <= 0)
			continue;
		long long inter = (long long)iw * ih;
		long long aj = (long long)(bj[2] - bj[0]) * (bj[3] - bj[1]);
		if (inter * 100 > (long long)iou_pct * (ai + aj - inter))
			bits |= 1ull << b;
	}
	mask[(size_t)i * stride + wd] = bits;
}

__device__ unsigned long long det_mix64(unsigned long long x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* d56, d59: Fast NMS's selection: candidate i (of the first n = min(*count, cap)) is kept when its
 * mask row is empty. The reply record res (zeroed before): res[0] = tag, res[1] = n, res[2] +=
 * kept, res[3] += a hash of each kept key, res[4] = the largest kept key, res[5 + class] += kept
 * of that class. One thread a candidate. */
extern "C" __global__ void nms_select(const unsigned long long *cand, const unsigned int *count,
				      int cap, const unsigned long long *mask, int tag,
				      unsigned long long *res)
{
	unsigned int n = min(*count, (unsigned int)cap);
	int words = (int)((n + 63) / 64), stride = (cap + 63) / 64;
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i == 0) {
		res[0] = (unsigned long long)tag;
		res[1] = n;
	}
	if (i >= (int)n)
		return;
	unsigned long long any = 0;
	for (int wd = 0; wd < words; wd++)
		any |= mask[(size_t)i * stride + wd];
	if (any)
		return;
	unsigned long long ki = cand[i];
	atomicAdd(&res[2], 1ull);
	atomicAdd(&res[3], det_mix64(ki));
	atomicMax(&res[4], ki);
	atomicAdd(&res[5 + ((ki >> 24) & 255)], 1ull);
}

/* d57: one leapfrog step of the 2D acoustic wave equation in fixed point on an nx x ny grid:
 * next = 2u - prev + (laplacian(u) * c_q8 >> 8), plus src_amp at the source cell; the outer
 * `sponge` cells are damped towards the edge (an absorbing layer), the edge itself held at 0.
 * One thread a cell. */
extern "C" __global__ void wave_step(const int *u, const int *prev, int *next, int nx, int ny,
				     int c_q8, int sponge, int src, int src_amp)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= nx * ny)
		return;
	int x = i % nx, y = i / nx;
	int d = min(min(x, y), min(nx - 1 - x, ny - 1 - y));
	if (d == 0) {
		next[i] = 0;
		return;
	}
	int lap = u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx] - 4 * u[i];
	int v = 2 * u[i] - prev[i] + ((lap * c_q8) >> 8);
	if (i == src)
		v += src_amp;
	if (d < sponge)
		v = (int)(((long long)v * (224 + 32 * d / sponge)) >> 8);
	next[i] = v;
}

/* d57: the wave field's energy terms: diag[0] = tag, diag[1] += sum of u^2, diag[2] += sum of
 * (u - prev)^2 (diag zeroed before). One thread a (column, band of `band` rows), coalesced along
 * the rows, two atomics a thread. */
extern "C" __global__ void wave_energy(const int *u, const int *prev, int nx, int ny, int band, int tag,
				       unsigned long long *diag)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t == 0)
		diag[0] = (unsigned long long)tag;
	int bands = (ny + band - 1) / band;
	if (t >= nx * bands)
		return;
	int x = t % nx, y0 = (t / nx) * band, y1 = min(y0 + band, ny);
	unsigned long long pot = 0, kin = 0;
	for (int y = y0; y < y1; y++) {
		long long v = u[(size_t)y * nx + x], dv = v - prev[(size_t)y * nx + x];
		pot += (unsigned long long)(v * v);
		kin += (unsigned long long)(dv * dv);
	}
	atomicAdd(&diag[1], pot);
	atomicAdd(&diag[2], kin);
}

/* d58: mix a block of complex int16 samples (i, q interleaved) down to baseband with a numerically
 * controlled oscillator: sample i times e^(-j phase), sample i's phase phase0 + i * freq (32-bit
 * turns), cos and sin from a 4096-entry Q15 cosine table; out gets the int32 products >> 15. One
 * thread a sample. */
extern "C" __global__ void sig_mix_nco(const short *iq, int n, unsigned int phase0, unsigned int freq,
				       const short *costab, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	unsigned int ph = (phase0 + (unsigned int)i * freq) >> 20;
	int c = costab[ph], s = costab[(ph - 1024u) & 4095u];
	int xr = iq[2 * i], xi = iq[2 * i + 1];
	out[2 * i] = (xr * c + xi * s) >> 15;
	out[2 * i + 1] = (xi * c - xr * s) >> 15;
}

/* d58: a decimating complex FIR: y[j] = sum over t of taps[t] * x[ntaps - 1 + j * decim - t]
 * (Q15 taps, int64 accumulation, >> 15); x starts with the ntaps - 1 samples of history that
 * the previous block left. One thread an output sample. */
extern "C" __global__ void sig_fir_decim(const int *x, int n_out, int decim, const short *taps,
					 int ntaps, int *y)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= n_out)
		return;
	const int *xp = x + 2 * (ntaps - 1 + (size_t)j * decim);
	long long ar = 0, ai = 0;
	for (int t = 0; t < ntaps; t++) {
		ar += (long long)taps[t] * xp[-2 * t];
		ai += (long long)taps[t] * xp[-2 * t + 1];
	}
	y[2 * j] = (int)(ar >> 15);
	y[2 * j + 1] = (int)(ai >> 15);
}

/* d58: burst detection on the channel's output: stats[0] = tag, stats[1] += samples whose power
 * (re^2 + im^2 >> 8) reaches thresh, stats[2] += the power, stats[3] = the largest power << 20 |
 * its index (stats zeroed before). Each thread `per` consecutive samples, three atomics. */
extern "C" __global__ void sig_power_detect(const int *y, int n, int per, long long thresh, int tag,
					    unsigned long long *stats)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t == 0)
		stats[0] = (unsigned long long)tag;
	unsigned long long hits = 0, sum = 0, top = 0;
	for (int j = t * per; j < min(n, (t + 1) * per); j++) {
		long long re = y[2 * j], im = y[2 * j + 1], p = (re * re + im * im) >> 8;
		hits += p >= thresh;
		sum += (unsigned long long)p;
		unsigned long long k = (unsigned long long)min(p, (1ll << 40) - 1) << 20 | (unsigned int)j;
		top = k > top ? k : top;
	}
	if (t * per >= n)
		return;
	atomicAdd(&stats[1], hits);
	atomicAdd(&stats[2], sum);
	atomicMax(&stats[3], top);
}

/* d60/d63: a game engine's cloth solver, position-based dynamics in Q10 fixed point (int4
 * particles: x, y, z, unused; cloths of w x w particles one after another, row 0 pinned to the
 * pole). The current substep's parameters live in constant memory (the host finds the symbol
 * with cuModuleGetGlobal and writes it before every substep); all int, the host's struct is the
 * same 27 words. */
struct cloth_params_t {
	int frame, substep;
	int gravity;      /* added to y every substep (negative: down) */
	int wind[3];      /* displacement a substep at a full gust */
	int damping_q8;   /* share of the velocity kept, /256 */
	int stiffness_q8; /* share of the Jacobi correction applied, /256 */
	int rest;         /* rest length between grid neighbours (shear: rest * 181 / 128) */
	int floor_y;
	int spheres;      /* colliders in use, at most 4 */
	int sphere[4][4]; /* x, y, z, radius */
};
__constant__ cloth_params_t cloth_params;

__device__ static unsigned int cloth_hash(unsigned int h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	return h ^ (h >> 16);
}

/* the length of an integer vector: float square root of the exact squared length (correctly
 * rounded), truncated */
__device__ static int cloth_len(long long d2)
{
	return (int)sqrtf((float)d2);
}

/* Verlet prediction: pred = pos + damped velocity + gravity + gusting wind; prev = pos */
extern "C" __global__ void cloth_integrate(const int4 *pos, int4 *prev, int4 *pred, int n, int w)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int cell = i % (w * w), x = cell % w, y = cell / w;
	int4 p = pos[i], q = prev[i], o = p;
	if (y != 0) {
		int gust = (int)(cloth_hash((unsigned int)((x >> 4) + (y >> 4) * 64 + (i / (w * w)) * 4096) ^
					    (unsigned int)(cloth_params.frame * 16 + cloth_params.substep)) & 255);
		o.x = p.x + (p.x - q.x) * cloth_params.damping_q8 / 256 + cloth_params.wind[0] * gust / 256;
		o.y = p.y + (p.y - q.y) * cloth_params.damping_q8 / 256 + cloth_params.gravity +
		      cloth_params.wind[1] * gust / 256;
		o.z = p.z + (p.z - q.z) * cloth_params.damping_q8 / 256 + cloth_params.wind[2] * gust / 256;
	}
	prev[i] = p;
	pred[i] = o;
}

/* one Jacobi pass over the structural and shear distance constraints (8 neighbours): each asks
 * for half the particle's share of the error (the other half is the neighbour's), the requests
 * averaged and scaled by the stiffness */
extern "C" __global__ void cloth_relax(const int4 *in, int4 *out, int n, int w)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int cell = i % (w * w), x = cell % w, y = cell / w;
	int4 p = in[i];
	if (y == 0) {
		out[i] = p;
		return;
	}
	long long cx = 0, cy = 0, cz = 0;
	int cnt = 0;
	for (int k = 0; k < 9; k++) {
		int dx = k % 3 - 1, dy = k / 3 - 1;
		if ((dx == 0 && dy == 0) || x + dx < 0 || x + dx >= w || y + dy < 0 || y + dy >= w)
			continue;
		int4 q = in[i + dy * w + dx];
		long long ex = q.x - p.x, ey = q.y - p.y, ez = q.z - p.z;
		int len = cloth_len(ex * ex + ey * ey + ez * ez);
		if (len == 0)
			continue;
		int rest = (dx != 0 && dy != 0) ? cloth_params.rest * 181 / 128 : cloth_params.rest;
		long long f = ((long long)(len - rest) << 16) / len; /* Q16 share of the vector */
		cx += ex * f >> 17;
		cy += ey * f >> 17;
		cz += ez * f >> 17;
		cnt++;
	}
	if (cnt) {
		long long s = cloth_params.stiffness_q8;
		p.x += (int)(cx * s / (256 * cnt));
		p.y += (int)(cy * s / (256 * cnt));
		p.z += (int)(cz * s / (256 * cnt));
	}
	out[i] = p;
}

/* the colliders (spheres pushed out along the normal, then the floor), the substep's result
 * into pos; on the frame's last substep also each cloth's stats: [0] = frame << 8 | substep,
 * [1] contacts, [2] a hash of the positions, [3] top y + 2^30, [4] 2^30 - bottom y, [5]
 * largest |x| + |z| (stats zeroed before). Warp sums first, then one atomic a warp and
 * field (w * w a multiple of 32, n a multiple of the block). */
extern "C" __global__ void cloth_collide(const int4 *pred, int4 *pos, int n, int w, int want_stats,
					 unsigned long long *stats)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int cell = i % (w * w), y = cell / w;
	int4 p = pred[i];
	unsigned long long contacts = 0;
	if (y != 0) {
		for (int s = 0; s < cloth_params.spheres; s++) {
			const int *c = cloth_params.sphere[s];
			long long ex = p.x - c[0], ey = p.y - c[1], ez = p.z - c[2];
			long long d2 = ex * ex + ey * ey + ez * ez, r = c[3];
			if (d2 >= r * r)
				continue;
			int len = cloth_len(d2);
			if (len == 0)
				continue;
			p.x = c[0] + (int)(ex * r / len);
			p.y = c[1] + (int)(ey * r / len);
			p.z = c[2] + (int)(ez * r / len);
			contacts++;
		}
		if (p.y < cloth_params.floor_y) {
			p.y = cloth_params.floor_y;
			contacts++;
		}
	}
	pos[i] = p;
	if (!want_stats)
		return;
	unsigned long long *st = stats + (i / (w * w)) * 8;
	if (cell == 0)
		st[0] = (unsigned long long)(cloth_params.frame << 8 | cloth_params.substep);
	unsigned long long h = (unsigned long long)cloth_hash((unsigned int)p.x ^ cloth_hash((unsigned int)p.y ^
					cloth_hash((unsigned int)p.z ^ (unsigned int)cell)));
	unsigned long long top = (unsigned long long)(p.y + (1 << 30)), bot = (unsigned long long)((1 << 30) - p.y);
	unsigned long long reach = (unsigned long long)(abs(p.x) + abs(p.z));
	for (int o = 16; o > 0; o >>= 1) {
		contacts += __shfl_xor_sync(0xffffffffu, contacts, o);
		h += __shfl_xor_sync(0xffffffffu, h, o);
		unsigned long long t = __shfl_xor_sync(0xffffffffu, top, o);
		top = t > top ? t : top;
		t = __shfl_xor_sync(0xffffffffu, bot, o);
		bot = t > bot ? t : bot;
		t = __shfl_xor_sync(0xffffffffu, reach, o);
		reach = t > reach ? t : reach;
	}
	if ((threadIdx.x & 31) != 0)
		return;
	if (contacts)
		atomicAdd(&st[1], contacts);
	atomicAdd(&st[2], h);
	atomicMax(&st[3], top);
	atomicMax(&st[4], bot);
	atomicMax(&st[5], reach);
}

/* d61: filtered backprojection, the ramp filter. One thread an output sample of a projection
 * row: the row (det int16 line integrals) convolved with the spatial Ram-Lak kernel (taps[0] =
 * the centre, taps[k] = the tap at distance k, Q24; zero outside the detector), >> 22. */
extern "C" __global__ void ct_ramp_filter(const short *proj, int rows, int det, const int *taps, int half,
					  int *filt)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= rows * det)
		return;
	int r = i / det, c = i % det;
	const short *row = proj + (size_t)r * det;
	long long acc = (long long)taps[0] * row[c];
	for (int k = 1; k <= half; k += 2) { /* even taps are zero */
		int a = c - k >= 0 ? row[c - k] : 0, b = c + k < det ? row[c + k] : 0;
		acc += (long long)taps[k] * (a + b);
	}
	filt[i] = (int)(acc >> 22);
}

/* d61: parallel-beam backprojection of a chunk of filtered projections into the volume. One
 * thread a column (x, y) of the n x n x slices volume: for each of the chunk's angles (cos and
 * sin Q14 from trig, the chunk's first angle a0), the detector position t = x' cos + y' sin of
 * the pixel centre (Q14), linear interpolation between the two nearest detector bins (Q8
 * weights), for every slice; vol[slice][y][x] += the sum >> 8. filt: [angle][slice][det]. */
extern "C" __global__ void ct_backproject(const int *filt, int a0, int nangles, const int *trig, int det,
					  int slices, int n, int *vol)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n * n)
		return;
	int x = i % n, y = i / n;
	int px = 2 * x - n + 1, py = 2 * y - n + 1; /* pixel centre, in half pixels */
	for (int s = 0; s < slices; s++) {
		long long acc = 0;
		for (int a = 0; a < nangles; a++) {
			int c = trig[2 * (a0 + a)], sn = trig[2 * (a0 + a) + 1];
			long long t = ((long long)px * c + (long long)py * sn) * 128 / 2 + ((long long)det << 21) / 2 - (1 << 20);
			int u = (int)(t >> 21), fr = (int)((t >> 13) & 255); /* bin and Q8 fraction */
			if (u < 0 || u >= det - 1)
				continue;
			const int *row = filt + ((size_t)a * slices + s) * det;
			acc += (long long)row[u] * (256 - fr) + (long long)row[u + 1] * fr;
		}
		vol[((size_t)s * n + y) * n + x] += (int)(acc >> 8);
	}
}

/* d62: orthorectify one tile of a satellite scene. Output pixel (ox, oy) of a tile_w x tile_w
 * tile whose north-west ground corner is (e0, n0) metres (gsd metres a pixel, north up), ss x ss
 * samples a pixel. Each sample's ground point takes its height from the DEM (bilinear, int16
 * metres, dem_step metres a post, origin at ground (0, 0)), is projected into the scene by the
 * rational polynomial model (rpc: 4 x 10 coefficients, line numerator and denominator, sample
 * numerator and denominator, over 1, X, Y, Z, XY, XZ, YZ, X^2, Y^2, Z^2 of the normalized
 * ground point; norm: e, n, h offsets and scales, line and sample offsets and scales), and the
 * raw patch (raw_w x raw_h, its origin at scene line l0, sample s0) is sampled with Catmull-Rom
 * bicubic weights, clamped at the patch edge; out = the samples' mean, rounded, clamped. */
__device__ static float ortho_poly(const float *c, float x, float y, float z)
{
	return c[0] + c[1] * x + c[2] * y + c[3] * z + c[4] * x * y + c[5] * x * z + c[6] * y * z +
	       c[7] * x * x + c[8] * y * y + c[9] * z * z;
}

__device__ static void ortho_cubic(float t, float *w)
{
	float t2 = t * t, t3 = t2 * t;
	w[0] = 0.5f * (-t3 + 2.0f * t2 - t);
	w[1] = 0.5f * (3.0f * t3 - 5.0f * t2 + 2.0f);
	w[2] = 0.5f * (-3.0f * t3 + 4.0f * t2 + t);
	w[3] = 0.5f * (t3 - t2);
}

extern "C" __global__ void ortho_tile(const unsigned short *raw, int raw_w, int raw_h, int l0, int s0,
				      const short *dem, int dem_w, float dem_step, const float *rpc,
				      const float *norm, float e0, float n0, float gsd, int tile_w, int ss,
				      unsigned short *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= tile_w * tile_w)
		return;
	int ox = i % tile_w, oy = i / tile_w;
	float acc = 0.0f;
	for (int k = 0; k < ss * ss; k++) {
		float e = e0 + gsd * (ox + (k % ss + 0.5f) / ss), nn = n0 - gsd * (oy + (k / ss + 0.5f) / ss);
		float dx = e / dem_step, dy = nn / dem_step;
		int ix = min(max((int)dx, 0), dem_w - 2), iy = min(max((int)dy, 0), dem_w - 2);
		float fx = dx - ix, fy = dy - iy;
		const short *d = dem + (size_t)iy * dem_w + ix;
		float h = (1.0f - fy) * ((1.0f - fx) * d[0] + fx * d[1]) + fy * ((1.0f - fx) * d[dem_w] + fx * d[dem_w + 1]);
		float X = (e - norm[0]) / norm[3], Y = (nn - norm[1]) / norm[4], Z = (h - norm[2]) / norm[5];
		float line = norm[6] + norm[8] * ortho_poly(rpc, X, Y, Z) / ortho_poly(rpc + 10, X, Y, Z) - l0;
		float samp = norm[7] + norm[9] * ortho_poly(rpc + 20, X, Y, Z) / ortho_poly(rpc + 30, X, Y, Z) - s0;
		int li = (int)floorf(line), si = (int)floorf(samp);
		float wl[4], ws[4];
		ortho_cubic(line - li, wl);
		ortho_cubic(samp - si, ws);
		float v = 0.0f;
		for (int a = 0; a < 4; a++) {
			int r = min(max(li - 1 + a, 0), raw_h - 1);
			const unsigned short *row = raw + (size_t)r * raw_w;
			float rv = 0.0f;
			for (int b = 0; b < 4; b++)
				rv += ws[b] * row[min(max(si - 1 + b, 0), raw_w - 1)];
			v += wl[a] * rv;
		}
		acc += v;
	}
	int v = __float2int_rn(acc / (ss * ss));
	out[i] = (unsigned short)min(max(v, 0), 65535);
}

/* d65/d67: a market maker's tick over n instruments. md: per instrument the mid price (ticks),
 * the order book's imbalance (-1000..1000) and the position (lots). mm_fair_value updates the
 * imbalance EMA (state on the device) and quotes around the fair value (the EMA's signal, the
 * position's skew): bid rounded down, ask up, in ticks. */
extern "C" __global__ void mm_fair_value(const int *md, int n, int *ema, int *quotes)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int mid = md[3 * i], imb = md[3 * i + 1], pos = md[3 * i + 2];
	int e = ema[i] + ((imb - ema[i]) >> 2);
	ema[i] = e;
	int fair4 = 4 * mid + e / 64 - pos * 12 / 10, half4 = 8 + abs(e) / 128;
	quotes[2 * i] = (fair4 - half4) >> 2;
	quotes[2 * i + 1] = (fair4 + half4 + 3) >> 2;
}

/* d65/d67: the book's P&L under scenario blockIdx.x (256 threads a block): each instrument's
 * shock is its 16 factor loadings (int8) times the scenario's 16 factor moves, the P&L a delta
 * term (position x price x shock) and a gamma term (position x gamma x shock^2), all integer */
extern "C" __global__ void mm_risk(const int *md, int n, const signed char *load, const int *factors,
				   const signed char *gamma, long long *pnl)
{
	__shared__ long long part[256];
	__shared__ int f[16];
	int s = blockIdx.x, t = threadIdx.x;
	if (t < 16)
		f[t] = factors[s * 16 + t];
	__syncthreads();
	long long acc = 0;
	for (int i = t; i < n; i += blockDim.x) {
		const signed char *l = load + 16 * i;
		int shock = 0;
		for (int k = 0; k < 16; k++)
			shock += l[k] * f[k];
		long long pos = md[3 * i + 2], mid = md[3 * i];
		acc += pos * ((mid * shock) >> 10) + pos * gamma[i] * (((long long)shock * shock) >> 22);
	}
	part[t] = acc;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w >>= 1) {
		if (t < w)
			part[t] += part[t + w];
		__syncthreads();
	}
	if (t == 0)
		pnl[s] = part[0];
}

/* d65/d67: the tick's worst scenario (lowest P&L, the first on ties), one block of 1024 threads:
 * risk_log[2 tick] = the P&L, risk_log[2 tick + 1] = the scenario */
extern "C" __global__ void mm_risk_worst(const long long *pnl, int ns, int tick, long long *risk_log)
{
	__shared__ long long v[1024];
	__shared__ int at[1024];
	int t = threadIdx.x;
	long long best = 0x7fffffffffffffffLL;
	int bi = ns;
	for (int s = t; s < ns; s += blockDim.x)
		if (pnl[s] < best)
			best = pnl[s], bi = s;
	v[t] = best;
	at[t] = bi;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w >>= 1) {
		if (t < w && (v[t + w] < v[t] || (v[t + w] == v[t] && at[t + w] < at[t]))) {
			v[t] = v[t + w];
			at[t] = at[t + w];
		}
		__syncthreads();
	}
	if (t == 0) {
		risk_log[2 * tick] = v[0];
		risk_log[2 * tick + 1] = at[0];
	}
}

/* d66: an agent-based SEIR epidemic. Agents in regions of rsize (households of 4 consecutive
 * agents; wps workplaces and vps venues a region, an agent's workplace fixed, its venue drawn
 * every day). state: 0 susceptible, 1 exposed, 2 infectious, 3 recovered; days: days left in
 * the exposed or infectious state. epi_count counts the infectious in every household,
 * workplace and venue; epi_update infects the susceptible (escape probabilities in Q16,
 * 65536 = 1: esc[0..3] by housemates, esc[4 + 64 lv + w] by co-workers, esc[196 + 64 lv + v] by
 * venue visitors, lv the region's lockdown level), advances the others and counts each region's
 * new cases (exposed turning infectious). */
__device__ static unsigned int epi_hash(unsigned int h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	return h ^ (h >> 16);
}

__device__ static int epi_work(int a, int rsize, int wps)
{
	return a / rsize * wps + (int)(epi_hash((unsigned int)a * 2u + 1u) % (unsigned int)wps);
}

__device__ static int epi_venue(int a, int day, int rsize, int vps)
{
	return a / rsize * vps + (int)(epi_hash((unsigned int)a ^ ((unsigned int)day * 0x9e3779b9u)) % (unsigned int)vps);
}

extern "C" __global__ void epi_count(const unsigned char *state, int n, int rsize, int wps, int vps, int day, int *hh,
				     int *work, int *venue)
{
	int a = blockIdx.x * blockDim.x + threadIdx.x;
	if (a >= n || state[a] != 2)
		return;
	atomicAdd(&hh[a / 4], 1);
	atomicAdd(&work[epi_work(a, rsize, wps)], 1);
	atomicAdd(&venue[epi_venue(a, day, rsize, vps)], 1);
}

extern "C" __global__ void epi_update(unsigned char *state, unsigned char *days, int n, int rsize, int wps, int vps,
				      int day, const int *hh, const int *work, const int *venue,
				      const unsigned char *level, const unsigned int *esc, int *region_new)
{
	int a = blockIdx.x * blockDim.x + threadIdx.x;
	if (a >= n)
		return;
	int s = state[a], r = a / rsize;
	unsigned int h = epi_hash((unsigned int)a * 7919u + (unsigned int)day * 104729u);
	if (s == 0) {
		int lv = level[r];
		int nh = min(hh[a / 4], 3), nw = min(work[epi_work(a, rsize, wps)], 63);
		int nv = min(venue[epi_venue(a, day, rsize, vps)], 63);
		unsigned long long e = (unsigned long long)esc[nh] * esc[4 + 64 * lv + nw] * esc[196 + 64 * lv + nv] >> 32;
		if ((h & 0xffffu) >= e) {
			state[a] = 1;
			days[a] = (unsigned char)(2 + (h >> 16) % 4);
		}
	} else if (s == 1 || s == 2) {
		int d = days[a] - 1;
		if (d > 0) {
			days[a] = (unsigned char)d;
		} else if (s == 1) {
			state[a] = 2;
			days[a] = (unsigned char)(4 + (h >> 16) % 6);
			atomicAdd(&region_new[r], 1);
		} else {
			state[a] = 3;
		}
	}
}

/* d68/d71: a wind-farm power forecast. One thread per (scenario, turbine): the Jensen (top-hat)
 * wake model of every turbine upstream of it for the scenario's wind (direction in degrees
 * towards which it blows, trig[] its cos and sin in Q14; speed in mm/s), 63 m rotor radius,
 * wake expansion 0.05, deficits in Q16 combined as the root of the sum of squares, then the power
 * curve (kW every 250 mm/s, interpolated). Turbine positions in metres. */
__device__ static unsigned long long wf_isqrt(unsigned long long v)
{
	unsigned long long r = 0, bit = 1ull << 62;
	while (bit > v)
		bit >>= 2;
	while (bit) {
		if (v >= r + bit) {
			v -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

extern "C" __global__ void wf_wake(const int *inflow, int nscen, int nt, const int *txy, const int *trig,
				   const int *curve, int ncurve, int *power)
{
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= nscen * nt)
		return;
	int s = g / nt, j = g % nt;
	int dir = inflow[2 * s], speed = inflow[2 * s + 1];
	int c = trig[2 * dir], sn = trig[2 * dir + 1];
	int xj = txy[2 * j], yj = txy[2 * j + 1];
	unsigned long long acc = 0;
	for (int i = 0; i < nt; i++) {
		int ex = xj - txy[2 * i], ey = yj - txy[2 * i + 1];
		int dx = (ex * c + ey * sn) >> 14;
		if (dx <= 0)
			continue;
		int dy = (ey * c - ex * sn) >> 14;
		int rw = 63 + dx / 20;
		if (abs(dy) >= rw)
			continue;
		unsigned long long def = 43690ull * 3969ull / ((unsigned long long)rw * rw);
		acc += def * def;
	}
	unsigned long long tot = wf_isqrt(acc);
	if (tot > 65536)
		tot = 65536;
	int u = (int)(((long long)speed * (long long)(65536 - tot)) >> 16);
	int k = u / 250, f = u % 250;
	power[g] = k >= ncurve - 1 ? curve[ncurve - 1] : curve[k] + (curve[k + 1] - curve[k]) * f / 250;
}

/* d68/d71: each scenario's farm power (kW), one thread a scenario */
extern "C" __global__ void wf_farm(const int *power, int nscen, int nt, long long *farm)
{
	int s = blockIdx.x * blockDim.x + threadIdx.x;
	if (s >= nscen)
		return;
	long long sum = 0;
	for (int j = 0; j < nt; j++)
		sum += power[s * nt + j];
	farm[s] = sum;
}

/* d69: a bearing-vibration classifier (int8 1D CNN), one thread per output element.
 * pm_conv1: x [nb][w] int16 -> y [nb][32][w/2] int8, 9 taps, stride 2, ReLU, >> shift. */
extern "C" __global__ void pm_conv1(const short *x, int nb, int w, const signed char *wt, const int *bias, int shift,
				    signed char *y)
{
	int wo = w / 2;
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= nb * 32 * wo)
		return;
	int t = g % wo, c = g / wo % 32, b = g / wo / 32;
	const short *xb = x + (long long)b * w;
	int acc = bias[c];
	for (int k = 0; k < 9; k++) {
		int p = 2 * t + k - 4;
		if (p >= 0 && p < w)
			acc += wt[c * 9 + k] * xb[p];
	}
	acc >>= shift;
	y[g] = (signed char)min(max(acc, 0), 127);
}

/* pm_conv2: x [nb][32][w] int8 -> y [nb][32][w/2] int8, 32 x 32 x 9 taps, stride 2, ReLU, >> shift */
extern "C" __global__ void pm_conv2(const signed char *x, int nb, int w, const signed char *wt, const int *bias,
				    int shift, signed char *y)
{
	int wo = w / 2;
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= nb * 32 * wo)
		return;
	int t = g % wo, co = g / wo % 32, b = g / wo / 32;
	int acc = bias[co];
	for (int ci = 0; ci < 32; ci++) {
		const signed char *xc = x + ((long long)b * 32 + ci) * w;
		const signed char *wc = wt + (co * 32 + ci) * 9;
		for (int k = 0; k < 9; k++) {
			int p = 2 * t + k - 4;
			if (p >= 0 && p < w)
				acc += wc[k] * xc[p];
		}
	}
	acc >>= shift;
	y[g] = (signed char)min(max(acc, 0), 127);
}

/* pm_pool: x [nb][32][w] int8 -> y [nb][32] int32, the sum over time, one thread per channel */
extern "C" __global__ void pm_pool(const signed char *x, int nb, int w, int *y)
{
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= nb * 32)
		return;
	const signed char *xc = x + (long long)g * w;
	int sum = 0;
	for (int t = 0; t < w; t++)
		sum += xc[t];
	y[g] = sum;
}

/* pm_head: pooled [nb][32] -> out [nb][2]: the class with the highest of 4 logits (the first on
 * ties) and its margin over the second, one thread a bearing */
extern "C" __global__ void pm_head(const int *pooled, int nb, const int *wt, const int *bias, int *out)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b >= nb)
		return;
	long long best = 0, second = 0;
	int cls = 0;
	for (int o = 0; o < 4; o++) {
		long long l = bias[o];
		for (int c = 0; c < 32; c++)
			l += (long long)wt[o * 32 + c] * (pooled[b * 32 + c] >> 4);
		if (o == 0 || l > best) {
			second = o == 0 ? l : best;
			best = l;
			cls = o;
		} else if (o == 1 || l > second) {
			second = l;
		}
	}
	out[2 * b] = cls;
	out[2 * b + 1] = (int)min(best - second, 1000000000LL);
}

/* d70: a cosmology snapshot player. One thread a pixel: an orthographic ray through a
 * region of interest (nx x ny x nz uint8 density, x fastest) turning about the z axis (cos, sin
 * in Q14), trilinear samples one voxel apart (positions in Q8), the maximum and the sum along
 * the ray: img = max << 24 | min(sum >> 8, 0xffffff). Image rows are z, columns the ray's offset. */
extern "C" __global__ void vr_render(const unsigned char *vol, int nx, int ny, int nz, int iw, int ih, int c, int sn,
				     int nsteps, unsigned int *img)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p >= iw * ih)
		return;
	int px = p % iw, py = p / iw;
	int z = py * ((nz - 1) * 256) / ih;
	int z0 = z >> 8, fz = z & 255;
	int u = (px - iw / 2) * (nsteps * 256 / iw);
	unsigned int vmax = 0, vsum = 0;
	for (int k = 0; k < nsteps; k++) {
		int t = (k - nsteps / 2) * 256;
		int x = nx * 128 + ((t * c - u * sn) >> 14);
		int y = ny * 128 + ((t * sn + u * c) >> 14);
		int x0 = x >> 8, y0 = y >> 8;
		if (x < 0 || y < 0 || x0 >= nx - 1 || y0 >= ny - 1)
			continue;
		int fx = x & 255, fy = y & 255;
		const unsigned char *v = vol + ((long long)z0 * ny + y0) * nx + x0;
		long long sxy = (long long)nx * ny;
		int a = v[0] * (256 - fx) + v[1] * fx, b = v[nx] * (256 - fx) + v[nx + 1] * fx;
		int lo = (a * (256 - fy) + b * fy) >> 8;
		a = v[sxy] * (256 - fx) + v[sxy + 1] * fx;
		b = v[sxy + nx] * (256 - fx) + v[sxy + nx + 1] * fx;
		int hi = (a * (256 - fy) + b * fy) >> 8;
		unsigned int s = (unsigned int)((lo * (256 - fz) + hi * fz) >> 8);
		vmax = s > vmax ? s : vmax;
		vsum += s;
	}
	img[p] = (vmax >> 8) << 24 | min(vsum >> 8, 0xffffffu);
}

/* d72/d75: non-intrusive load monitoring of smart-meter data. One thread per (household,
 * appliance): the appliance's signature (tlen int8 taps over the load's first differences) slid
 * along the household's ns samples (watts); a detection where the score reaches the appliance's
 * threshold and tlen samples have passed since the last one. out: the detections (8 bits) << 24
 * | the detections' score sum >> 8 (saturated at 24 bits). */
extern "C" __global__ void nilm_match(const short *load, int nh, int ns, const signed char *tmpl, int na, int tlen,
				      const int *thresh, unsigned int *out)
{
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= nh * na)
		return;
	int h = g / na, a = g % na;
	const short *p = load + (long long)h * ns;
	const signed char *tp = tmpl + a * tlen;
	int th = thresh[a], last = -ns;
	unsigned int count = 0;
	unsigned long long ssum = 0;
	for (int t = 0; t + tlen < ns; t++) {
		int s = 0;
		for (int k = 0; k < tlen; k++)
			s += (p[t + k + 1] - p[t + k]) * tp[k];
		if (s >= th && t - last >= tlen) {
			count++;
			ssum += (unsigned long long)s;
			last = t;
		}
	}
	unsigned long long e = ssum >> 8;
	out[g] = (count > 255 ? 255u : count) << 24 | (unsigned int)(e > 0xffffff ? 0xffffff : e);
}

/* d73: tsunami propagation, the linear shallow-water equations on a C grid (nx x ny cells), in
 * units where continuity has coefficient one: eta in micrometres, the fluxes p (east faces) and
 * q (north faces, towards y+1) in micrometres per step; depth in metres (int16, <= 0: land; a
 * face touching land carries nothing; the faces on the domain's east and north edges stay 0).
 * coef: g (dt / dx)^2 in Q24. */
extern "C" __global__ void tsu_momentum(const int *eta, const short *depth, int nx, int ny, int coef, int *p, int *q)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x >= nx)
		return;
	int i = y * nx + x, d = depth[i];
	if (x < nx - 1) {
		int de = depth[i + 1];
		p[i] = d > 0 && de > 0 ? p[i] - (int)(((long long)coef * ((d + de) / 2) * (eta[i + 1] - eta[i])) >> 24) : 0;
	}
	if (y < ny - 1) {
		int dn = depth[i + nx];
		q[i] = d > 0 && dn > 0 ? q[i] - (int)(((long long)coef * ((d + dn) / 2) * (eta[i + nx] - eta[i])) >> 24) : 0;
	}
}

/* d73: continuity, and the highest water seen at every cell */
extern "C" __global__ void tsu_continuity(int *eta, const int *p, const int *q, int nx, int *etamax)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x >= nx)
		return;
	int i = y * nx + x;
	int v = eta[i] - (p[i] - (x > 0 ? p[i - 1] : 0) + q[i] - (y > 0 ? q[i - nx] : 0));
	eta[i] = v;
	if (v > etamax[i])
		etamax[i] = v;
}

/* d73: the tide gauges' readings */
extern "C" __global__ void tsu_gauges(const int *eta, const int *cell, int ng, int *out)
{
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g < ng)
		out[g] = eta[cell[g]];
}

/* d74: track geometry from rail-head profiles. One thread per (profile, rail): the measured head
 * (np points 0.5 mm apart, heights in 0.01 mm) registered against the nominal head (nn points)
 * at each lateral offset 0..np-nn: the vertical offset is the mean difference (truncated), the
 * fit the sum of absolute residuals; the best fit (the first on ties). out[4 g]: lateral offset,
 * vertical offset, residual sum, the largest residual below the nominal (wear) at the best fit. */
extern "C" __global__ void rail_register(const short *prof, int nrail, int np, const short *nominal, int nn, int *out)
{
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= nrail)
		return;
	const short *z = prof + (long long)g * np;
	int best = 0x7fffffff, bdx = 0, bdz = 0;
	for (int dx = 0; dx + nn <= np; dx++) {
		int s = 0;
		for (int k = 0; k < nn; k++)
			s += z[dx + k] - nominal[k];
		int dz = s / nn, sad = 0;
		for (int k = 0; k < nn; k++)
			sad += abs(z[dx + k] - nominal[k] - dz);
		if (sad < best) {
			best = sad;
			bdx = dx;
			bdz = dz;
		}
	}
	int wear = 0;
	for (int k = 0; k < nn; k++) {
		int r = nominal[k] + bdz - z[bdx + k];
		wear = r > wear ? r : wear;
	}
	out[4 * g] = bdx;
	out[4 * g + 1] = bdz;
	out[4 * g + 2] = best;
	out[4 * g + 3] = wear;
}
