/*
 * examples/corpus/c73_seismic_event_marker_legacy_stream.cu: corpus workload (CUDA C). Velocity
 * analysis of marine seismic shot gathers: two lanes, each on its own stream created with
 * cudaStreamCreate (a blocking stream, the default flag), process one shot per step each: a
 * kernel decodes the shot's 8192 traces of 1024 samples, and a normal-moveout kernel stacks every
 * trace along the hyperbola of each of four trial velocities (one thread per trace, half of the
 * GPU's SMs per lane, so the two lanes are meant to share the GPU). A phase profiler marks the
 * end of each lane's work with prof_mark(), which records a CUDA event with
 * cudaEventRecord(ev), the stream argument left to its default: 0, the legacy default stream.
 * The CUDA programming guide (default stream) and the runtime API notes on stream
 * synchronization say the legacy default stream synchronizes with every blocking stream of the
 * context: the record waits for all work queued before it in both lanes, and all work queued
 * after it in either lane waits for the record. Every mark is a device-wide barrier between the
 * lanes, so the other lane's shot never overlaps this one's, and the GPU runs one half-filled
 * lane at a time. cudaEventRecord(ev, lane_stream) (c79) measures the same phases without it.
 * Planted: the cudaEventRecord in prof_mark(), twice every step.
 * Clean: the setup allocations, the wait on the last mark after the loop (cudaEventElapsedTime
 * needs completed events), the final read, teardown.
 */
#include "corpus.h"

#include <math.h>

enum { STEPS = 40, LANES = 2, TRACES = 8192, SAMPLES = 1024, VELS = 4, THREADS = 128, MARKS = STEPS * LANES };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* sample t of trace tr (sample-major layout: gather[t * TRACES + tr]) */
__host__ __device__ static inline uint32_t shot_sample(int shot, int tr, int t)
{
	uint32_t noise = mix32((uint32_t)shot * 0x9e3779b9u ^ (uint32_t)(t * TRACES + tr) * 2654435761u) & 255u;
	uint32_t reflector = ((t + tr / 64 + shot) % 113 == 0) ? 4000u : 0u;
	return noise + reflector;
}

__device__ static inline uint32_t isqrt32(uint32_t v)
{
	uint32_t r = 0, b = 1u << 30;
	while (b > v)
		b >>= 2;
	while (b) {
		if (v >= r + b) {
			v -= r + b;
			r = (r >> 1) + b;
		} else {
			r >>= 1;
		}
		b >>= 2;
	}
	return r;
}

/* floor(sqrt(v)) on the host, the same value as isqrt32 */
static inline uint32_t isqrt_host(uint32_t v)
{
	uint64_t r = (uint64_t)sqrt((double)v);
	while (r * r > v)
		r--;
	while ((r + 1) * (r + 1) <= v)
		r++;
	return (uint32_t)r;
}

__host__ __device__ static inline uint32_t moveout_term(int tr, int vel) { return ((uint32_t)tr * (uint32_t)tr >> 6) / (uint32_t)(vel + 2); }

__global__ void decode_shot(uint32_t *gather, int shot)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx < TRACES * SAMPLES)
		gather[idx] = shot_sample(shot, idx % TRACES, idx / TRACES);
}

/* one thread per trace: stack along the moveout hyperbola of every trial velocity */
__global__ void nmo_stack(const uint32_t *gather, int shot, unsigned long long *energy)
{
	__shared__ unsigned long long sh[THREADS];
	int tr = blockIdx.x * blockDim.x + threadIdx.x;
	for (int vel = 0; vel < VELS; vel++) {
		uint32_t m = moveout_term(tr, vel);
		unsigned long long s = 0;
		for (int t = 0; t < SAMPLES; t++) {
			uint32_t tt = isqrt32((uint32_t)(t * t) + m);
			if (tt < SAMPLES)
				s += gather[tt * TRACES + tr];
		}
		sh[threadIdx.x] = s;
		__syncthreads();
		if (threadIdx.x == 0) {
			unsigned long long b = 0;
			for (int k = 0; k < THREADS; k++)
				b += sh[k];
			atomicAdd(&energy[shot * VELS + vel], b);
		}
		__syncthreads();
	}
}

/* --- the phase profiler -------------------------------------------------------------------- */

struct phase_profiler {
	cudaEvent_t ev[MARKS];
	int n;
};

static void prof_mark(struct phase_profiler *p)
{
	CHECK(cudaEventRecord(p->ev[p->n++])); // SYNCSPY-PROBLEM: no stream given: recorded on the legacy default stream, a barrier between both blocking lanes
}

static unsigned long long reference(int shot, int vel)
{
	unsigned long long s = 0;
	for (int tr = 0; tr < TRACES; tr++) {
		uint32_t m = moveout_term(tr, vel);
		for (int t = 0; t < SAMPLES; t++) {
			uint32_t tt = isqrt_host((uint32_t)(t * t) + m);
			if (tt < SAMPLES)
				s += shot_sample(shot, tr, (int)tt);
		}
	}
	return s;
}

int main(void)
{
	const char *name = "c73_seismic_event_marker_legacy_stream";
	cudaStream_t lane[LANES];
	uint32_t *d_gather[LANES];
	unsigned long long *d_energy, h_energy[STEPS * LANES * VELS];
	static struct phase_profiler prof;

	for (int k = 0; k < LANES; k++) {
		CHECK(cudaStreamCreate(&lane[k]));
		CHECK(cudaMalloc(&d_gather[k], (size_t)TRACES * SAMPLES * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	}
	CHECK(cudaMalloc(&d_energy, sizeof h_energy)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_energy, 0, sizeof h_energy, lane[0]));
	CHECK(cudaStreamSynchronize(lane[0])); // SYNCSPY-CLEAN: setup, once: the zeroed energies before lane 1 adds into them
	for (int m = 0; m < MARKS; m++)
		CHECK(cudaEventCreate(&prof.ev[m]));

	for (int step = 0; step < STEPS; step++)
		for (int k = 0; k < LANES; k++) {
			int shot = step * LANES + k;
			decode_shot<<<TRACES * SAMPLES / 256, 256, 0, lane[k]>>>(d_gather[k], shot);
			CHECK_LAUNCH();
			nmo_stack<<<TRACES / THREADS, THREADS, 0, lane[k]>>>(d_gather[k], shot, d_energy);
			CHECK_LAUNCH();
			prof_mark(&prof);
		}

	CHECK(cudaEventSynchronize(prof.ev[prof.n - 1])); // SYNCSPY-CLEAN: once, after the loop: the profile needs completed events
	float total_ms = 0.0f;
	for (int m = 1; m < prof.n; m++) {
		float ms;
		CHECK(cudaEventElapsedTime(&ms, prof.ev[m - 1], prof.ev[m]));
		total_ms += ms;
	}
	(void)total_ms; /* the profile goes to the log, not to the result line */
	CHECK(cudaMemcpy(h_energy, d_energy, sizeof h_energy, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read

	unsigned long long checksum = 0;
	for (int shot = 0; shot < STEPS * LANES; shot++) {
		if (shot == 5 || shot == 62) {
			for (int vel = 0; vel < VELS; vel += 3)
				corpus_expect(name, "stacked energy", (long long)h_energy[shot * VELS + vel], (long long)reference(shot, vel));
		}
		int best = 0;
		for (int vel = 1; vel < VELS; vel++)
			if (h_energy[shot * VELS + vel] > h_energy[shot * VELS + best])
				best = vel;
		checksum = checksum * 1000003u + h_energy[shot * VELS + best] * VELS + (unsigned)best;
	}

	for (int m = 0; m < MARKS; m++)
		CHECK(cudaEventDestroy(prof.ev[m]));
	for (int k = 0; k < LANES; k++) {
		CHECK(cudaFree(d_gather[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(lane[k]));
	}
	CHECK(cudaFree(d_energy)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, STEPS, checksum);
	return 0;
}
