/*
 * examples/corpus/c125_traffic_vsl_symbol_stats_pageable.cu: corpus workload (CUDA C). A
 * traffic control centre's what-if simulator for variable speed limits (VSL) on a ring-road
 * corridor: 8192 Monte Carlo replicas of a 2048-cell single-lane ring (7.5 m cells, 15.4 km)
 * carrying 512 vehicles each, stepped with the Nagel-Schreckenberg cellular automaton
 * (accelerate, brake to the gap, random slowdown with probability 1/4, move), one CUDA block a
 * replica, 30 one-second updates per 30-second control interval, 40 intervals (20 minutes).
 * Each vehicle drives a trip; when it arrives a new trip starts (the corridor's demand stays
 * constant). Every interval the centre uploads the speed limit of every replica (its VSL plan,
 * from pinned staging), and the replicas add the interval's arrivals, stopped vehicle-seconds
 * and distance into a __device__ statistics array (two slots, by interval parity).
 * The interval's statistics reach the host through cudaMemcpyFromSymbolAsync on the simulation
 * stream, followed by an event; the host reads them one interval behind, after
 * cudaEventSynchronize on the previous interval's event: a double buffer, meant to keep the
 * GPU an interval ahead while the host updates its dashboard. But the destination is a static
 * host array, pageable memory, and "for transfers from device memory to pageable host memory,
 * the function will return only once the copy has completed" (API synchronization behavior, the
 * asynchronous memcpy functions; current releases: "might be synchronous"): every interval the
 * call waits for the interval's 30 updates of all replicas, and the host prepares the next
 * interval only after the GPU has finished this one. The event wait one interval behind, the
 * double buffer's, then finds its event long done. The fix: a pinned statistics ring
 * (cudaMallocHost).
 * Planted: the cudaMemcpyFromSymbolAsync into the pageable static array, every interval (one
 * line).
 * Clean: the setup allocations, uploads and sync, the per-interval upload of the speed limits
 * from pinned staging, the one-interval-behind cudaEventSynchronize, the last interval's wait,
 * the final wait and reads, teardown. The per-interval cudaMemsetAsync of the statistics slot
 * is an enqueue (unmarked).
 * Per interval (estimates, H100): 126M vehicle updates in 8192 blocks of 512 threads, two
 * __syncthreads an update, about 0.4-0.6 ms; the host's dashboard and next VSL plan about
 * 0.2-0.4 ms. The checks after the loop: the per-interval arrivals add up to the per-replica
 * arrival counters, and eight sampled replicas, re-simulated on the host with the same plan,
 * end with the same vehicles (position, speed, odometer, trip) and the same arrivals.
 */
#include "corpus.h"

enum { REPLICAS = 8192, VEH = 512, ROAD = 2048, SUB = 30, INTERVALS = 40, SLOW_Q16 = 16384, SAMPLES = 8 };
enum { ST_ARRIVALS, ST_STOPPED, ST_DISTANCE, ST_WORDS = 4 };

__device__ unsigned long long g_stats[2][ST_WORDS];

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline int slows_down(int g, int t)
{
	return (mix32((uint32_t)g * 2654435761u ^ (uint32_t)t * 0x9e3779b9u) & 0xffffu) < SLOW_Q16;
}

/* a new trip's length (cells), for vehicle g at update t */
__host__ __device__ static inline int new_trip(int g, int t)
{
	return 500 + (int)(mix32((uint32_t)g ^ mix32((uint32_t)t + 0x7217u)) % 3000u);
}

struct vehicles {
	int *pos, *vel, *odo, *trip;
};

/* one control interval of one replica (a block; vehicle k follows vehicle k + 1 around the ring) */
__global__ void nasch_interval(struct vehicles v, const unsigned char *speed_limit, int interval, int slot,
			       unsigned int *replica_arrivals)
{
	__shared__ int ring_pos[VEH];
	__shared__ unsigned long long totals[3];
	int r = blockIdx.x, k = threadIdx.x, g = r * VEH + k;
	int p = v.pos[g], s = v.vel[g], o = v.odo[g], tr = v.trip[g], vmax = speed_limit[r];
	unsigned arrivals = 0, stopped = 0, dist = 0;
	if (k < 3)
		totals[k] = 0;
	ring_pos[k] = p;
	__syncthreads();
	for (int u = 0; u < SUB; u++) {
		int t = interval * SUB + u;
		int gap = (ring_pos[(k + 1) % VEH] - p - 1 + ROAD) % ROAD;
		s = min(min(s + 1, vmax), gap);
		if (s > 0 && slows_down(g, t))
			s--;
		__syncthreads(); /* every vehicle has read the old positions */
		p = (p + s) % ROAD;
		ring_pos[k] = p;
		o += s, dist += s, stopped += s == 0;
		if (o >= tr) {
			arrivals++;
			o -= tr;
			tr = new_trip(g, t);
		}
		__syncthreads();
	}
	atomicAdd(&totals[0], (unsigned long long)arrivals);
	atomicAdd(&totals[1], (unsigned long long)stopped);
	atomicAdd(&totals[2], (unsigned long long)dist);
	__syncthreads();
	if (k == 0) {
		atomicAdd(&g_stats[slot][ST_ARRIVALS], totals[0]);
		atomicAdd(&g_stats[slot][ST_STOPPED], totals[1]);
		atomicAdd(&g_stats[slot][ST_DISTANCE], totals[2]);
		replica_arrivals[r] += (unsigned int)totals[0];
	}
	v.pos[g] = p, v.vel[g] = s, v.odo[g] = o, v.trip[g] = tr;
}

/* --- the control centre -------------------------------------------------------------------- */

/* the VSL plan under study: replica r's speed limit (cells a second) in interval i */
static unsigned char speed_limit(int r, int i)
{
	switch (r % 4) {
	case 1:
		return i >= 10 && i < 30 ? 4 : 5; /* 108 km/h for ten minutes */
	case 2:
		return i >= 15 && i < 25 ? 3 : 5; /* 81 km/h for five minutes */
	case 3:
		return i >= 20 && i < 24 ? 2 : 5; /* an incident: 54 km/h for two minutes */
	default:
		return 5;
	}
}

static void initial_vehicle(int g, int *pos, int *vel, int *odo, int *trip)
{
	int k = g % VEH;
	*pos = k * (ROAD / VEH) + (int)(mix32((uint32_t)g) % (ROAD / VEH));
	*vel = 0;
	*trip = new_trip(g, -1);
	*odo = (int)(mix32((uint32_t)g + 0xabcdu) % (uint32_t)*trip);
}

/* the host's replica r, all intervals, the same rules; returns its arrivals */
static unsigned simulate_replica(int r, int *pos, int *vel, int *odo, int *trip)
{
	static int next_vel[VEH];
	unsigned arrivals = 0;
	for (int k = 0; k < VEH; k++)
		initial_vehicle(r * VEH + k, &pos[k], &vel[k], &odo[k], &trip[k]);
	for (int i = 0; i < INTERVALS; i++)
		for (int u = 0; u < SUB; u++) {
			int t = i * SUB + u, vmax = speed_limit(r, i);
			for (int k = 0; k < VEH; k++) {
				int gap = (pos[(k + 1) % VEH] - pos[k] - 1 + ROAD) % ROAD;
				int s = vel[k] + 1 < vmax ? vel[k] + 1 : vmax;
				s = s < gap ? s : gap;
				next_vel[k] = s > 0 && slows_down(r * VEH + k, t) ? s - 1 : s;
			}
			for (int k = 0; k < VEH; k++) {
				vel[k] = next_vel[k];
				pos[k] = (pos[k] + vel[k]) % ROAD;
				odo[k] += vel[k];
				if (odo[k] >= trip[k]) {
					arrivals++;
					odo[k] -= trip[k];
					trip[k] = new_trip(r * VEH + k, t);
				}
			}
		}
	return arrivals;
}

static unsigned long long h_stats[2][ST_WORDS]; /* the dashboard's copy of the interval statistics */

int main(void)
{
	const char *name = "c125_traffic_vsl_symbol_stats_pageable";
	const size_t n = (size_t)REPLICAS * VEH;
	struct vehicles v;
	unsigned char *limits[2], *d_limits;
	unsigned int *d_replica_arrivals;
	cudaStream_t stream;
	cudaEvent_t stats_ready[2];
	int *h_state = (int *)malloc(4 * n * sizeof(int));
	unsigned int *h_replica_arrivals = (unsigned int *)malloc(REPLICAS * sizeof(unsigned int));

	for (size_t g = 0; g < n; g++)
		initial_vehicle((int)g, &h_state[g], &h_state[n + g], &h_state[2 * n + g], &h_state[3 * n + g]);
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&limits[k], REPLICAS)); // SYNCSPY-CLEAN: setup, pinned staging for the speed limits
		CHECK(cudaEventCreateWithFlags(&stats_ready[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&v.pos, 4 * n * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	v.vel = v.pos + n, v.odo = v.pos + 2 * n, v.trip = v.pos + 3 * n;
	CHECK(cudaMalloc(&d_limits, REPLICAS)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_replica_arrivals, REPLICAS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(v.pos, h_state, 4 * n * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the vehicles
	CHECK(cudaMemset(d_replica_arrivals, 0, REPLICAS * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup
	void *stats_addr;
	CHECK(cudaGetSymbolAddress(&stats_addr, g_stats));
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the simulation stream starts

	unsigned long long totals[3] = {0, 0, 0}, checksum = 14695981039346656037ull;
	for (int i = 0; i < INTERVALS; i++) {
		int k = i % 2;
		for (int r = 0; r < REPLICAS; r++)
			limits[k][r] = speed_limit(r, i);
		CHECK(cudaMemsetAsync((char *)stats_addr + k * sizeof g_stats[0], 0, sizeof g_stats[0], stream));
		CHECK(cudaMemcpyAsync(d_limits, limits[k], REPLICAS, cudaMemcpyHostToDevice, stream)); // SYNCSPY-CLEAN: from pinned staging
		nasch_interval<<<REPLICAS, VEH, 0, stream>>>(v, d_limits, i, k, d_replica_arrivals);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyFromSymbolAsync(h_stats[k], g_stats, sizeof g_stats[0], k * sizeof g_stats[0], cudaMemcpyDeviceToHost, stream)); // SYNCSPY-PROBLEM: into a pageable static array: returns only when the interval is done
		CHECK(cudaEventRecord(stats_ready[k], stream));
		if (i > 0) { /* the dashboard, one interval behind */
			CHECK(cudaEventSynchronize(stats_ready[k ^ 1])); // SYNCSPY-CLEAN: the double buffer's wait, one interval behind
			for (int w = 0; w < 3; w++) {
				totals[w] += h_stats[k ^ 1][w];
				checksum = (checksum ^ h_stats[k ^ 1][w]) * 1099511628211ull;
			}
		}
	}
	int last = (INTERVALS - 1) % 2;
	CHECK(cudaEventSynchronize(stats_ready[last])); // SYNCSPY-CLEAN: the last interval's statistics
	for (int w = 0; w < 3; w++) {
		totals[w] += h_stats[last][w];
		checksum = (checksum ^ h_stats[last][w]) * 1099511628211ull;
	}
	CHECK(cudaStreamSynchronize(stream)); // SYNCSPY-CLEAN: the final wait, before the final reads
	CHECK(cudaMemcpy(h_state, v.pos, 4 * n * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the vehicles
	CHECK(cudaMemcpy(h_replica_arrivals, d_replica_arrivals, REPLICAS * sizeof(unsigned int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the arrival counters

	/* the checks: the interval totals against the replica counters, sampled replicas on the host */
	unsigned long long by_replica = 0;
	for (int r = 0; r < REPLICAS; r++)
		by_replica += h_replica_arrivals[r];
	corpus_expect(name, "arrivals, intervals against replicas", (long long)totals[0], (long long)by_replica);
	static int pos[VEH], vel[VEH], odo[VEH], trip[VEH];
	for (int q = 0; q < SAMPLES; q++) {
		int r = (int)(mix32((uint32_t)q + 99u) % REPLICAS);
		unsigned arrivals = simulate_replica(r, pos, vel, odo, trip);
		corpus_expect(name, "sampled replica arrivals", h_replica_arrivals[r], arrivals);
		for (int k = 0; k < VEH; k++) {
			size_t g = (size_t)r * VEH + k;
			corpus_expect(name, "sampled position", h_state[g], pos[k]);
			corpus_expect(name, "sampled speed", h_state[n + g], vel[k]);
			corpus_expect(name, "sampled odometer", h_state[2 * n + g], odo[k]);
			corpus_expect(name, "sampled trip", h_state[3 * n + g], trip[k]);
		}
	}

	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(limits[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(stats_ready[k]));
	}
	CHECK(cudaFree(v.pos)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_limits)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_replica_arrivals)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(stream));
	free(h_state);
	free(h_replica_arrivals);
	printf("%s: intervals=%d arrivals=%llu stopped=%llu distance=%llu checksum=%016llx result=OK\n", name, INTERVALS,
	       totals[0], totals[1], totals[2], checksum);
	return 0;
}
