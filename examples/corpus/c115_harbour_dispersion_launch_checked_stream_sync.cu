/*
 * examples/corpus/c115_harbour_dispersion_launch_checked_stream_sync.cu: corpus workload (CUDA
 * C++, variadic template). A pollutant-dispersion model of a harbour basin for a port authority:
 * a 4096 x 2048 grid of cells holding fixed-point pollutant mass (integers, so the model conserves
 * mass exactly and reruns bit for bit). 3 tidal cycles of 20 steps; every step the host computes
 * the step's releases from 1024 ships and outfalls into a pinned staging double buffer, a copy
 * stream uploads them, and the compute stream adds them and runs 8 substeps of conservative
 * advection-diffusion (edge fluxes, then the update) under the step's tidal current, then samples
 * 64 monitoring buoys. The buoys' readings come back into a pinned ring and the host raises
 * alarms one step later. After each tidal cycle, outside the step loop, the whole field is
 * checkpointed and its mass checked against the releases.
 * Every kernel is launched through launch_checked(), the project's launch helper, which after the
 * launch reads cudaGetLastError and then calls cudaStreamSynchronize on the launch's stream "so
 * that a fault is reported at the kernel that caused it". cudaStreamSynchronize "blocks until
 * stream has completed all operations" (runtime API reference): the host waits after each of the
 * 18 launches of a step, the GPU idles for the round trip between every two kernels, and the
 * host can queue neither the next kernel nor the next step's upload ahead. A debugging aid
 * (CUDA_LAUNCH_BLOCKING=1 gives the same without code) left on in production.
 * Planted: the cudaStreamSynchronize in launch_checked(), after every launch, 18 a step (one line).
 * Clean: the setup allocations, the field's reset and the buoys' upload, the one setup
 * cudaDeviceSynchronize, the releases' async upload from the pinned staging slot on the copy
 * stream, the host's cudaEventSynchronize on the upload two steps back before refilling that
 * slot, the buoys' async download into the pinned ring and the cudaEventSynchronize one step
 * behind, the per-cycle checkpoint (an async download into pinned memory and a stream sync,
 * outside the step loop), teardown.
 * The host checks the field's mass after every cycle exactly (initial 0 plus every release), that
 * no cell went negative, and that each step's readings carry that step's number.
 */
#include "corpus.h"

enum { CYCLES = 3, STEPS = 20, SUBSTEPS = 8, NX = 4096, NY = 2048, CELLS = NX * NY };
enum { SOURCES = 1024, BUOYS = 64, THREADS = 256, SLOTS = 2, ALARM = 500 };

static const cudaMemcpyKind H2D = cudaMemcpyHostToDevice, D2H = cudaMemcpyDeviceToHost;
#define REL_BYTES sizeof(struct releases)
#define FIELD_BYTES (CELLS * sizeof(int))
#define READ_BYTES ((BUOYS + 1) * sizeof(int))

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* one step's releases */
struct releases {
	int cell[SOURCES];
	int mass[SOURCES];
};

__global__ void add_releases(int *c, const struct releases *r)
{
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k < SOURCES)
		atomicAdd(&c[r->cell[k]], r->mass[k]);
}

/* an eighth of the difference, rounded towards zero: a cell gives at most an eighth of its mass
 * through each edge, so no cell goes below zero */
__host__ __device__ static inline int diffuse(int a, int b)
{
	return a >= b ? (a - b) >> 3 : -((b - a) >> 3);
}

/* the mass crossing each cell's east (fx) and north (fy) edge: diffusion plus upwind advection
 * by the current (u, v) in 1/256 of a cell a substep; closed basin, no flux through the walls */
__global__ void edge_fluxes(const int *c, int *fx, int *fy, int u, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= CELLS)
		return;
	int x = i % NX, y = i / NX, f = 0, g = 0;
	if (x < NX - 1)
		f = diffuse(c[i], c[i + 1]) + (u > 0 ? (c[i] * u) >> 8 : -((c[i + 1] * -u) >> 8));
	if (y < NY - 1)
		g = diffuse(c[i], c[i + NX]) + (v > 0 ? (c[i] * v) >> 8 : -((c[i + NX] * -v) >> 8));
	fx[i] = f;
	fy[i] = g;
}

__global__ void apply_fluxes(int *c, const int *fx, const int *fy)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= CELLS)
		return;
	int x = i % NX, y = i / NX, d = -fx[i] - fy[i];
	if (x > 0)
		d += fx[i - 1];
	if (y > 0)
		d += fy[i - NX];
	c[i] += d;
}

/* the buoys' readings, tagged with the step they belong to */
__global__ void sample_buoys(const int *c, const int *buoy, int *reading, int t)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b < BUOYS)
		reading[b] = c[buoy[b]];
	if (b == BUOYS)
		reading[BUOYS] = t;
}

/* --- the launch helper --------------------------------------------------------------------- */

/* launches kernel on `stream` and reports a failure at the kernel that caused it */
template <typename... Params, typename... Args>
static void launch_checked(const char *what, void (*kernel)(Params...), int blocks,
			   cudaStream_t stream, Args... args)
{
	kernel<<<blocks, THREADS, 0, stream>>>(args...);
	cudaError_t err = cudaGetLastError();
	if (err == cudaSuccess)
		err = cudaStreamSynchronize(stream); // SYNCSPY-PROBLEM: a wait after every launch
	if (err != cudaSuccess) {
		fprintf(stderr, "c115: kernel %s failed: %s\n", what, cudaGetErrorString(err));
		exit(1);
	}
}

/* --- the host ------------------------------------------------------------------------------ */

/* step t's releases: ships along three lanes and two outfalls; returns the mass released */
static long long plan_releases(int t, struct releases *r)
{
	long long total = 0;
	for (int k = 0; k < SOURCES; k++) {
		uint32_t h = mix32((uint32_t)k * 7919u);
		int x, y;
		if (k < 2) {
			x = k ? NX / 3 : 2 * NX / 3, y = 3;
		} else {
			int lane = k % 3;
			int along = (int)((h + (uint32_t)t * 40u * (uint32_t)(lane + 1)) % NX);
			x = along, y = NY / 4 + lane * NY / 4 + (int)(h >> 24) % 32;
		}
		r->cell[k] = y * NX + x;
		r->mass[k] = k < 2 ? 60000 : 200 + (int)(mix32(h ^ (uint32_t)t) % 800u);
		total += r->mass[k];
	}
	return total;
}

/* the tidal current of step t, in 1/256 of a cell a substep */
static void tide(int t, int *u, int *v)
{
	static const int us[8] = {24, 17, 0, -17, -24, -17, 0, 17};
	*u = us[t % 8];
	*v = us[(t + 2) % 8] / 2;
}

static int blocks_for(int n)
{
	return (n + THREADS - 1) / THREADS;
}

int main(void)
{
	const char *name = "c115_harbour_dispersion_launch_checked_stream_sync";
	int buoy[BUOYS];
	for (int b = 0; b < BUOYS; b++)
		buoy[b] = (NY / 8 + (b / 8) * NY / 10) * NX + NX / 16 + (b % 8) * NX / 9;

	int *d_c, *d_fx, *d_fy, *d_buoy, *d_read, *h_reading[SLOTS], *h_field;
	struct releases *d_rel[SLOTS], *staging[SLOTS];
	CHECK(cudaMalloc(&d_c, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_fx, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_fy, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_buoy, sizeof buoy)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_read, READ_BYTES)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&h_field, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup, checkpoint
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&d_rel[s], sizeof(struct releases))); // SYNCSPY-CLEAN: setup
		CHECK(cudaMallocHost(&staging[s], sizeof(struct releases))); // SYNCSPY-CLEAN: pinned
		CHECK(cudaMallocHost(&h_reading[s], READ_BYTES)); // SYNCSPY-CLEAN: pinned ring
	}
	CHECK(cudaMemset(d_c, 0, CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup, a clean basin
	CHECK(cudaMemcpy(d_buoy, buoy, sizeof buoy, H2D)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup, before the non-blocking streams

	cudaStream_t compute, copy;
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	cudaEvent_t uploaded[SLOTS], consumed[SLOTS], sampled[SLOTS];
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventCreateWithFlags(&uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&consumed[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&sampled[s], cudaEventDisableTiming));
	}

	long long released = 0, alarms = 0;
	unsigned long long checksum = 0;
	for (int cycle = 0; cycle < CYCLES; cycle++) {
		for (int i = 0; i < STEPS; i++) {
			int t = cycle * STEPS + i, s = t % SLOTS, u, v;
			if (t >= SLOTS)
				CHECK(cudaEventSynchronize(uploaded[s])); // SYNCSPY-CLEAN: 2 steps back
			released += plan_releases(t, staging[s]);
			CHECK(cudaStreamWaitEvent(copy, consumed[s], 0)); /* step t - 2's add */
			CHECK(cudaMemcpyAsync(d_rel[s], staging[s], REL_BYTES, H2D, copy)); // SYNCSPY-CLEAN: pinned
			CHECK(cudaEventRecord(uploaded[s], copy));

			CHECK(cudaStreamWaitEvent(compute, uploaded[s], 0));
			launch_checked("add_releases", add_releases, blocks_for(SOURCES), compute, d_c,
				       (const struct releases *)d_rel[s]);
			CHECK(cudaEventRecord(consumed[s], compute));
			tide(t, &u, &v);
			for (int k = 0; k < SUBSTEPS; k++) {
				launch_checked("edge_fluxes", edge_fluxes, blocks_for(CELLS), compute,
					       (const int *)d_c, d_fx, d_fy, u, v);
				launch_checked("apply_fluxes", apply_fluxes, blocks_for(CELLS), compute,
					       d_c, (const int *)d_fx, (const int *)d_fy);
			}
			launch_checked("sample_buoys", sample_buoys, blocks_for(BUOYS + 1), compute,
				       (const int *)d_c, (const int *)d_buoy, d_read, t);
			CHECK(cudaMemcpyAsync(h_reading[s], d_read, READ_BYTES, D2H, compute)); // SYNCSPY-CLEAN: pinned
			CHECK(cudaEventRecord(sampled[s], compute));

			if (t > 0) {
				int p = (t - 1) % SLOTS;
				CHECK(cudaEventSynchronize(sampled[p])); // SYNCSPY-CLEAN: one step behind
				corpus_expect(name, "step of the readings", h_reading[p][BUOYS], t - 1);
				for (int b = 0; b < BUOYS; b++) {
					alarms += h_reading[p][b] > ALARM;
					checksum = checksum * 1000003u + (uint32_t)h_reading[p][b];
				}
			}
		}
		/* the cycle's checkpoint, outside the step loop */
		CHECK(cudaMemcpyAsync(h_field, d_c, FIELD_BYTES, D2H, compute)); // SYNCSPY-CLEAN: per cycle
		CHECK(cudaStreamSynchronize(compute)); // SYNCSPY-CLEAN: the checkpoint, once a cycle
		long long mass = 0, negative = 0;
		for (int i = 0; i < CELLS; i++) {
			mass += h_field[i];
			negative += h_field[i] < 0;
			checksum = checksum * 31u + (uint32_t)h_field[i];
		}
		corpus_expect(name, "cells below zero", negative, 0);
		corpus_expect(name, "mass in the basin", mass, released);
	}
	int last = (CYCLES * STEPS - 1) % SLOTS;
	corpus_expect(name, "step of the last readings", h_reading[last][BUOYS], CYCLES * STEPS - 1);
	for (int b = 0; b < BUOYS; b++) { /* the last step's readings (its download is done) */
		alarms += h_reading[last][b] > ALARM;
		checksum = checksum * 1000003u + (uint32_t)h_reading[last][b];
	}
	checksum = checksum * 31u + (unsigned long long)alarms;

	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaEventDestroy(uploaded[s]));
		CHECK(cudaEventDestroy(consumed[s]));
		CHECK(cudaEventDestroy(sampled[s]));
		CHECK(cudaFree(d_rel[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(staging[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_reading[s])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaFree(d_c)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_fx)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_fy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_buoy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_read)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_field)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, CYCLES * STEPS, checksum);
	return 0;
}
