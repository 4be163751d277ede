/*
 * examples/corpus/c22_managed_counters_devsync.cu: corpus workload (CUDA C, unified memory).
 * An epidemic (SIR) simulation on a 2048 x 2048 grid written with cudaMallocManaged, as a port
 * from CPU code often is: the grid and a small struct of daily counters are managed memory;
 * after each simulated day the host calls cudaDeviceSynchronize, reads the counters directly,
 * logs them and sets the next day's contact rate (a lockdown policy), then zeroes them. The
 * host waits for every day's kernel, and the counters' page migrates to the host and back each
 * day (the migration is a consequence of the same read: the lines that touch the counters make
 * no CUDA call and carry no marker).
 * Planted: the per-day cudaDeviceSynchronize before reading the managed counters (the policy
 * could run on the device, or read counters copied asynchronously a few days late).
 * Clean: the managed allocations and the prefetch of the grid in setup, teardown.
 */
#include "corpus.h"

enum { DAYS = 60, W = 2048, N = W * W, THREADS = 256, SEEDS = 1024, SICK_DAYS = 6 };
enum { RATE_OPEN = 300, RATE_LOCKDOWN = 70 };

struct counters {
	int infected; /* new infections today */
	int recovered;
	int active;
};

__global__ void spread(const uint8_t *state, const uint8_t *timer, uint8_t *nstate, uint8_t *ntimer, int day, int rate,
		       struct counters *c)
{
	__shared__ int s_inf, s_rec, s_act;
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (threadIdx.x == 0)
		s_inf = s_rec = s_act = 0;
	__syncthreads();
	if (i < N) {
		int x = i % W, y = i / W;
		uint8_t st = state[i], t = timer[i];
		if (st == 0) {
			int sick = (state[y * W + (x + 1) % W] == 1) + (state[y * W + (x + W - 1) % W] == 1) +
				   (state[((y + 1) % W) * W + x] == 1) + (state[((y + W - 1) % W) * W + x] == 1);
			uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)day * 2246822519u;
			h ^= h >> 16;
			h *= 2246822519u;
			h ^= h >> 13;
			if (sick && (int)(h % 1000) < rate * sick) {
				st = 1;
				t = SICK_DAYS;
				atomicAdd(&s_inf, 1);
			}
		} else if (st == 1) {
			if (--t == 0) {
				st = 2;
				atomicAdd(&s_rec, 1);
			}
		}
		if (st == 1)
			atomicAdd(&s_act, 1);
		nstate[i] = st;
		ntimer[i] = t;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		atomicAdd(&c->infected, s_inf);
		atomicAdd(&c->recovered, s_rec);
		atomicAdd(&c->active, s_act);
	}
}

int main(void)
{
	uint8_t *state[2], *timer[2];
	struct counters *c;
	int rate = RATE_OPEN, lockdown_days = 0, concurrent = 0;
	unsigned long long checksum = 0;

	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocManaged(&state[k], N)); // SYNCSPY-CLEAN: setup managed allocation
		CHECK(cudaMallocManaged(&timer[k], N)); // SYNCSPY-CLEAN: setup managed allocation
	}
	CHECK(cudaMallocManaged(&c, sizeof *c)); // SYNCSPY-CLEAN: setup managed allocation
	for (int i = 0; i < N; i++) {
		state[0][i] = 0;
		timer[0][i] = 0;
	}
	for (int k = 0; k < SEEDS; k++) {
		int i = (int)(((unsigned)k * 2654435761u) % N);
		state[0][i] = 1;
		timer[0][i] = SICK_DAYS;
	}
	c->infected = c->recovered = c->active = 0;
	CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
	if (concurrent) {
		struct cudaMemLocation gpu;
		gpu.type = cudaMemLocationTypeDevice;
		gpu.id = 0;
		for (int k = 0; k < 2; k++) {
			CHECK(cudaMemPrefetchAsync(state[k], N, gpu, 0, 0)); // SYNCSPY-CLEAN: setup prefetch of the grid
			CHECK(cudaMemPrefetchAsync(timer[k], N, gpu, 0, 0)); // SYNCSPY-CLEAN: setup prefetch of the grid
		}
	}

	for (int day = 0; day < DAYS; day++) {
		int cur = day & 1;
		spread<<<N / THREADS, THREADS>>>(state[cur], timer[cur], state[cur ^ 1], timer[cur ^ 1], day, rate, c);
		CHECK_LAUNCH();
		CHECK(cudaDeviceSynchronize()); // SYNCSPY-PROBLEM: waits for every day to read the managed counters
		checksum = checksum * 1000003 + (unsigned)c->infected;
		checksum = checksum * 1000003 + (unsigned)c->recovered;
		checksum = checksum * 1000003 + (unsigned)c->active;
		rate = c->active > N / 40 ? RATE_LOCKDOWN : RATE_OPEN;
		lockdown_days += rate == RATE_LOCKDOWN;
		c->infected = c->recovered = c->active = 0;
	}

	checksum = checksum * 1000003 + (unsigned)lockdown_days;
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(state[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(timer[k])); // SYNCSPY-CLEAN: teardown
	}
	CHECK(cudaFree(c)); // SYNCSPY-CLEAN: teardown
	corpus_result("c22_managed_counters_devsync", DAYS, checksum);
	return 0;
}
