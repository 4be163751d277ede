/*
 * examples/corpus/c119_ising_hysteresis_symbol_stats_per_sweep.cu: corpus workload (CUDA C). A
 * materials-science run that traces the hysteresis loop of a 2D Ising ferromagnet below its
 * critical temperature: an 8192 x 8192 lattice of int8 spins (periodic), T = 1.5 J, starting
 * saturated, the applied field swept down from +1.5 J to -1.5 J and back in 80 Metropolis sweeps.
 * A sweep updates the two checkerboard colours (one thread a site, a counter-based hash for the
 * random numbers, the acceptance thresholds of the sweep's field passed by value), then a stats
 * kernel adds up the magnetization and the bond energy into __device__ counters (warp sums, one
 * atomic a warp), zeroed by a cudaMemsetAsync through the address cudaGetSymbolAddress gave once
 * in setup. The host builds the M(h) curve from the counters, finds the coercive fields and
 * writes a log line every 10 sweeps.
 * log_sweep() reads the counters with cudaMemcpyFromSymbol every sweep. The runtime API
 * reference: cudaMemcpyFromSymbol "exhibits synchronous behavior for most use cases", and for a
 * copy from device to pageable host memory (here a struct on the stack) "the function will return
 * only once the copy has completed" (API synchronization behavior). It is on the legacy default
 * stream, which waits for the blocking simulation stream: every sweep the host waits until the
 * sweep's three kernels are done, and only then computes the next field's thresholds and queues the
 * next sweep, so the GPU idles for the copy's round trip, the host's bookkeeping and the next
 * launches, 80 times. The curve is needed only at the end and the log only every 10 sweeps:
 * kept in a device history and downloaded a window at a time, one window behind, nothing would
 * wait (c122 is that fix).
 * Planted: the cudaMemcpyFromSymbol of the sweep counters in log_sweep(), every sweep (one line).
 * Clean: the lattice's allocation and saturation (cudaMemset) and the one setup
 * cudaDeviceSynchronize, cudaGetSymbolAddress once in setup, the final lattice download used to
 * check the last sweep's counters, teardown.
 * Per sweep (estimates, H100): 67M site updates (about 0.2 ms) and a 64 MB stats pass (about
 * 0.05 ms). Spins, fields and energies are integers, the thresholds are computed on the host, so
 * the run is bit for bit repeatable; the host checks the final lattice against the last counters.
 */
#include "corpus.h"

#include <algorithm>
#include <math.h>
#include <string>

enum { L = 8192, SWEEPS = 80, LOG_EVERY = 10, THREADS = 256, ROWS_PER = 256 };
#define SITES ((long long)L * L)
#define TEMP 1.5
#define HMAX_Q 6 /* the field's amplitude in quarters of J: 1.5 J */

static const cudaMemcpyKind D2H = cudaMemcpyDeviceToHost;

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* one sweep's Metropolis thresholds: accept a flip if rand <= thr[spin is up][(sum of the four
 * neighbours + 4) / 2] (a probability of min(1, exp(-dE / T)) in 2^-32) */
struct metropolis {
	uint32_t thr[2][5];
	uint32_t seed;
};

/* the sweep's counters: the sum of the spins and the sum of s_i s_j over the bonds (two's
 * complement in unsigned, so that atomicAdd can add negative sums) */
struct sweep_stats {
	unsigned long long mag, bonds;
};

__device__ struct sweep_stats g_stats;

/* one colour of the checkerboard: thread i updates site i of that colour */
__global__ void metropolis_colour(signed char *s, struct metropolis m, int colour)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= SITES / 2)
		return;
	int y = (int)(i / (L / 2)), x = 2 * (int)(i % (L / 2)) + ((y + colour) & 1);
	long long k = (long long)y * L + x;
	int nn = s[(long long)y * L + (x + 1) % L] + s[(long long)y * L + (x + L - 1) % L] +
		 s[(long long)((y + 1) % L) * L + x] + s[(long long)((y + L - 1) % L) * L + x];
	uint32_t r = mix32(m.seed ^ mix32((uint32_t)k * 2654435761u + (uint32_t)colour));
	if (r <= m.thr[s[k] > 0][(nn + 4) / 2])
		s[k] = (signed char)-s[k];
}

/* thread (x, band) adds up column x of ROWS_PER rows: spins, right and down bonds */
__global__ void lattice_stats(const signed char *s)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int x = t % L, y0 = (t / L) * ROWS_PER, mag = 0, bonds = 0;
	for (int y = y0; y < y0 + ROWS_PER; y++) {
		int v = s[(long long)y * L + x];
		mag += v;
		bonds += v * (s[(long long)y * L + (x + 1) % L] + s[(long long)((y + 1) % L) * L + x]);
	}
	mag = __reduce_add_sync(0xffffffffu, (unsigned)mag);
	bonds = __reduce_add_sync(0xffffffffu, (unsigned)bonds);
	if (threadIdx.x % 32 == 0) {
		atomicAdd(&g_stats.mag, (unsigned long long)(long long)mag);
		atomicAdd(&g_stats.bonds, (unsigned long long)(long long)bonds);
	}
}

/* --- the host ------------------------------------------------------------------------------ */

/* the field of sweep w in quarters of J: +HMAX down to -HMAX and back */
static int field_q(int w)
{
	int half = SWEEPS / 2, p = w < half ? w : SWEEPS - 1 - w;
	return HMAX_Q - (2 * HMAX_Q * p + half / 2) / (half - 1);
}

static struct metropolis thresholds(int w)
{
	struct metropolis m;
	int hq = field_q(w);
	for (int up = 0; up < 2; up++)
		for (int j = 0; j < 5; j++) {
			int s = up ? 1 : -1, nn = 2 * j - 4;
			double de = 2.0 * s * (nn + hq / 4.0); /* dE of flipping s, J = 1 */
			double p = de <= 0 ? 1.0 : exp(-de / TEMP);
			m.thr[up][j] = p >= 1.0 ? 0xffffffffu : (uint32_t)(p * 4294967296.0);
		}
	m.seed = mix32(0x15e6u + (uint32_t)w * 0x9e3779b9u);
	return m;
}

/* the curve and the run log */
struct loop_record {
	long long mag[SWEEPS], bonds[SWEEPS];
	int coercive_down, coercive_up; /* the field (quarters of J) where M changed sign */
	std::string log;
};

static void record_sweep(struct loop_record *rec, int w, const struct sweep_stats *st)
{
	rec->mag[w] = (long long)st->mag, rec->bonds[w] = (long long)st->bonds;
	if (w > 0 && (rec->mag[w - 1] > 0) != (rec->mag[w] > 0)) {
		if (rec->mag[w] <= 0)
			rec->coercive_down = field_q(w);
		else
			rec->coercive_up = field_q(w);
	}
	if (w % LOG_EVERY == LOG_EVERY - 1) {
		char line[128];
		snprintf(line, sizeof line, "sweep %d h=%+d/4 m=%+.6f e=%+.6f\n", w, field_q(w),
			 (double)rec->mag[w] / SITES, -(double)rec->bonds[w] / SITES);
		rec->log += line;
	}
}

/* reads the sweep's counters and records them */
static void log_sweep(struct loop_record *rec, int w)
{
	struct sweep_stats st;
	CHECK(cudaMemcpyFromSymbol(&st, g_stats, sizeof st)); // SYNCSPY-PROBLEM: every sweep, to log
	record_sweep(rec, w, &st);
}

int main(void)
{
	const char *name = "c119_ising_hysteresis_symbol_stats_per_sweep";
	signed char *d_spin, *spin;
	struct sweep_stats *d_stats;
	CHECK(cudaMalloc(&d_spin, SITES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemset(d_spin, 1, SITES)); // SYNCSPY-CLEAN: setup, saturated
	CHECK(cudaGetSymbolAddress((void **)&d_stats, g_stats)); // SYNCSPY-CLEAN: setup, once
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, before the sweeps
	cudaStream_t sim;
	CHECK(cudaStreamCreate(&sim));

	static struct loop_record rec;
	rec.coercive_down = rec.coercive_up = 0;
	const int update_blocks = (int)(SITES / 2 / THREADS);
	const int stats_blocks = L * (L / ROWS_PER) / THREADS;
	for (int w = 0; w < SWEEPS; w++) {
		struct metropolis m = thresholds(w);
		for (int colour = 0; colour < 2; colour++) {
			metropolis_colour<<<update_blocks, THREADS, 0, sim>>>(d_spin, m, colour);
			CHECK_LAUNCH();
		}
		CHECK(cudaMemsetAsync(d_stats, 0, sizeof *d_stats, sim));
		lattice_stats<<<stats_blocks, THREADS, 0, sim>>>(d_spin);
		CHECK_LAUNCH();
		log_sweep(&rec, w);
	}

	/* the final lattice, to check the last sweep's counters */
	CHECK(cudaMallocHost(&spin, SITES)); // SYNCSPY-CLEAN: teardown, pinned
	CHECK(cudaMemcpyAsync(spin, d_spin, SITES, D2H, sim)); // SYNCSPY-CLEAN: the final read
	CHECK(cudaStreamSynchronize(sim)); // SYNCSPY-CLEAN: the final wait
	long long mag = 0, bonds = 0;
	unsigned long long checksum = 0;
	for (long long y = 0; y < L; y++)
		for (long long x = 0; x < L; x++) {
			int v = spin[y * L + x];
			mag += v;
			bonds += v * (spin[y * L + (x + 1) % L] + spin[((y + 1) % L) * L + x]);
		}
	corpus_expect(name, "final magnetization", mag, rec.mag[SWEEPS - 1]);
	corpus_expect(name, "final bond sum", bonds, rec.bonds[SWEEPS - 1]);
	corpus_expect(name, "log lines", (long long)std::count(rec.log.begin(), rec.log.end(), '\n'),
		      SWEEPS / LOG_EVERY);
	for (int w = 0; w < SWEEPS; w++)
		checksum = checksum * 1000003u + (unsigned long long)rec.mag[w] * 31u +
			   (unsigned long long)rec.bonds[w];
	checksum = checksum * 31u + (unsigned long long)(rec.coercive_down + 64) * 256u +
		   (unsigned long long)(rec.coercive_up + 64);
	for (char c : rec.log)
		checksum = checksum * 131u + (unsigned char)c;

	CHECK(cudaStreamDestroy(sim));
	CHECK(cudaFreeHost(spin)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_spin)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, SWEEPS, checksum);
	return 0;
}
