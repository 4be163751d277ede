/*
 * examples/corpus/c50_managed_prefetch_roundtrip.cu: corpus workload (CUDA C, managed memory).
 * A wildfire-spread cellular automaton on a 2048x1024 grid held in cudaMallocManaged memory
 * (two grids, ping-pong), prefetched to the GPU once in setup. Every tick the spread kernel
 * writes the next grid, and the incident dashboard wants the number of burning cells: the
 * helper tally_burning() prefetches the whole new grid to the host with cudaMemPrefetchAsync,
 * waits for the stream with cudaStreamSynchronize, counts on the CPU and prefetches the grid
 * back to the GPU for the next tick. Every tick the whole grid migrates to the host and back
 * (cudaMemPrefetchAsync moves the pages to the destination processor, CUDA runtime docs) and the
 * host waits for the tick, where a count kept on the device (an atomicAdd in the spread kernel)
 * copied asynchronously into pinned memory, and read a few ticks later, would move 8 bytes and
 * never wait.
 * Planted: in tally_burning(), the cudaMemPrefetchAsync to the host, the cudaStreamSynchronize,
 * and the cudaMemPrefetchAsync back to the device, every tick.
 * Clean: the managed allocations and the prefetch to the device in setup, the final prefetch to
 * the host and synchronize, teardown.
 */
#include "corpus.h"

#include <string.h>

enum { TICKS = 40, W = 2048, H = 1024, CELLS = W * H, THREADS = 256, IGNITIONS = 16 };
enum { UNBURNT = 0, BURNING = 1, BURNT = 2 };

__host__ __device__ static inline int catches(int i, int tick)
{
	uint32_t h = ((uint32_t)i * 2654435761u) ^ ((uint32_t)tick * 40503u);
	h = (h ^ (h >> 15)) * 0x2c1b3c6du;
	return (h >> 30) != 0; /* three in four */
}

__host__ __device__ static inline uint8_t spread_cell(const uint8_t *cur, int i, int tick)
{
	uint8_t c = cur[i];
	if (c == BURNING)
		return BURNT;
	if (c == BURNT)
		return BURNT;
	int x = i % W, y = i / W;
	int lit = (x > 0 && cur[i - 1] == BURNING) || (x < W - 1 && cur[i + 1] == BURNING) ||
		  (y > 0 && cur[i - W] == BURNING) || (y < H - 1 && cur[i + W] == BURNING);
	return lit && catches(i, tick) ? BURNING : UNBURNT;
}

__global__ void spread(const uint8_t *cur, uint8_t *next, int tick)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < CELLS)
		next[i] = spread_cell(cur, i, tick);
}

static void ignite(uint8_t *grid)
{
	memset(grid, UNBURNT, CELLS);
	for (int k = 0; k < IGNITIONS; k++) {
		int x = (int)(((uint32_t)k * 2246822519u) % W), y = (int)(((uint32_t)k * 3266489917u) % H);
		grid[y * W + x] = BURNING;
	}
}

/* --- the dashboard's tally --------------------------------------------------------------- */

static long long tally_burning(uint8_t *grid, int dev, cudaStream_t s)
{
	cudaMemLocation host = {cudaMemLocationTypeHost, 0}, gpu = {cudaMemLocationTypeDevice, dev};
	long long burning = 0;
	CHECK(cudaMemPrefetchAsync(grid, CELLS, host, 0, s)); // SYNCSPY-PROBLEM: the whole grid migrated to the host every tick, for one count
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-PROBLEM: the host waits for every tick
	for (int i = 0; i < CELLS; i++)
		burning += grid[i] == BURNING;
	CHECK(cudaMemPrefetchAsync(grid, CELLS, gpu, 0, s)); // SYNCSPY-PROBLEM: and migrated back to the GPU for the next tick
	return burning;
}

int main(void)
{
	const char *name = "c50_managed_prefetch_roundtrip";
	cudaMemLocation host = {cudaMemLocationTypeHost, 0}, gpu = {cudaMemLocationTypeDevice, 0};
	uint8_t *grid[2], *ref[2];
	long long tallies[TICKS];
	cudaStream_t s;
	int dev, managed;

	CHECK(cudaGetDevice(&dev));
	CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrConcurrentManagedAccess, dev));
	if (!managed) {
		fprintf(stderr, "%s: device %d has no concurrent managed access\n", name, dev);
		return 1;
	}
	gpu.id = dev;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocManaged(&grid[k], CELLS)); // SYNCSPY-CLEAN: setup managed allocation
		ref[k] = (uint8_t *)malloc(CELLS);
	}
	ignite(grid[0]);
	ignite(ref[0]);
	memset(grid[1], UNBURNT, CELLS);
	CHECK(cudaMemPrefetchAsync(grid[0], CELLS, gpu, 0, s)); // SYNCSPY-CLEAN: setup, prefetched to the GPU once
	CHECK(cudaMemPrefetchAsync(grid[1], CELLS, gpu, 0, s)); // SYNCSPY-CLEAN: setup, prefetched to the GPU once

	for (int tick = 0; tick < TICKS; tick++) {
		uint8_t *cur = grid[tick & 1], *next = grid[(tick + 1) & 1];
		spread<<<CELLS / THREADS, THREADS, 0, s>>>(cur, next, tick);
		CHECK_LAUNCH();
		tallies[tick] = tally_burning(next, dev, s);
	}

	uint8_t *final_grid = grid[TICKS & 1];
	CHECK(cudaMemPrefetchAsync(final_grid, CELLS, host, 0, s)); // SYNCSPY-CLEAN: final read, once
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read, once

	unsigned long long checksum = 0;
	for (int tick = 0; tick < TICKS; tick++) {
		const uint8_t *cur = ref[tick & 1];
		uint8_t *next = ref[(tick + 1) & 1];
		long long burning = 0;
		for (int i = 0; i < CELLS; i++) {
			next[i] = spread_cell(cur, i, tick);
			burning += next[i] == BURNING;
		}
		corpus_expect(name, "burning cells", tallies[tick], burning);
		checksum = checksum * 1000003u + (unsigned long long)burning;
	}
	for (int i = 0; i < CELLS; i++) {
		if (final_grid[i] != ref[TICKS & 1][i])
			corpus_expect(name, "cell", final_grid[i], ref[TICKS & 1][i]);
		checksum = checksum * 31u + final_grid[i];
	}
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(grid[k])); // SYNCSPY-CLEAN: teardown
		free(ref[k]);
	}
	CHECK(cudaStreamDestroy(s));
	corpus_result(name, TICKS, checksum);
	return 0;
}
