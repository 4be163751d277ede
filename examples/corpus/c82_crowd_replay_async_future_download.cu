/*
 * examples/corpus/c82_crowd_replay_async_future_download.cu: corpus workload (CUDA C++, std::async
 * worker threads). An evacuation study of a 2048 x 2048 m concourse: 8M pedestrians walk a floor
 * field (distance to the nearest of six exits) with a little noise, sixteen one-metre moves per
 * simulated second, and respawn at an entrance when they reach an exit. Each step the crowd is
 * rasterized into a 512 x 512 density map, and a flight recorder keeps every map for the replay
 * viewer: it downloads the map and delta/run-length encodes it. The recorder was meant to run in
 * the background: FlightRecorder::capture_async() starts the download and the encoding with
 * std::async(std::launch::async, ...) and returns the std::future, which the step loop ignores.
 * But the future returned by std::async owns the task's shared state, and its destructor blocks
 * until the task has finished (C++ standard, [futures.async]; cppreference, std::async: if the
 * future "is not moved from or bound to a reference, the destructor of the std::future will block
 * at the end of the full expression until the asynchronous operation completes"). Inside the
 * task, the cudaMemcpy into the recorder's malloc'd frame runs on the legacy default stream,
 * which waits for all work queued on the blocking simulation stream (CUDA programming guide,
 * implicit synchronization), and a device-to-host cudaMemcpy returns only once the copy is done
 * (runtime API reference, "API synchronization behavior"). So every step the main thread waits,
 * behind the discarded future, for the whole step's walk and rasterization, the download and the
 * encoding, and only then queues the next step: the GPU idles while a worker thread is created,
 * copies and encodes. A pinned double buffer, an async download on a side stream and a recorder
 * thread that waits on an event (or simply keeping the future and joining it a step later) would
 * keep the GPU busy.
 * Planted: the cudaMemcpy of the density map in FlightRecorder::record(), on a std::async thread
 * whose discarded future the step loop waits for, every step.
 * Clean: the setup allocations, the final stream synchronization and read of the positions,
 * teardown.
 */
#include "corpus.h"

#include <future>
#include <vector>

enum { STEPS = 48, AGENTS = 1 << 23, SUBSTEPS = 16, WORLD = 2048, HEAT = 512, CELL_SHIFT = 2, EXITS = 6, THREADS = 256 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline int exit_x(int e) { return (e * 719 + 101) % WORLD; }
__host__ __device__ static inline int exit_y(int e) { return (e * 1301 + 577) % WORLD; }

/* the floor field: Manhattan distance to the nearest exit */
__host__ __device__ static inline int field(int x, int y)
{
	int best = 1 << 30;
	for (int e = 0; e < EXITS; e++) {
		int dx = x - exit_x(e), dy = y - exit_y(e);
		int d = (dx < 0 ? -dx : dx) + (dy < 0 ? -dy : dy);
		best = d < best ? d : best;
	}
	return best;
}

__host__ __device__ static inline uint32_t spawn(uint32_t agent, uint32_t tick)
{
	uint32_t h = mix32(agent * 0x9e3779b9u + tick * 0x85ebca6bu + 1u);
	return ((h >> 16) % WORLD) << 16 | ((h & 0xffffu) % WORLD);
}

/* one simulated second of one pedestrian: SUBSTEPS moves to the best-scored neighbour */
__host__ __device__ static inline uint32_t walk(uint32_t agent, uint32_t pos, int step)
{
	int x = (int)(pos & 0xffffu), y = (int)(pos >> 16);
	for (int s = 0; s < SUBSTEPS; s++) {
		uint32_t tick = (uint32_t)step * SUBSTEPS + (uint32_t)s;
		uint32_t h = mix32(agent * 0x27d4eb2fu ^ tick * 0x165667b1u);
		int bx = x, by = y, best = field(x, y) * 8 + (int)(h & 7u);
		for (int d = 0; d < 4; d++) {
			int nx = x + (d == 0) - (d == 1), ny = y + (d == 2) - (d == 3);
			if (nx < 0 || ny < 0 || nx >= WORLD || ny >= WORLD)
				continue;
			int sc = field(nx, ny) * 8 + (int)((h >> (3 + 3 * d)) & 7u);
			if (sc < best) {
				best = sc;
				bx = nx;
				by = ny;
			}
		}
		x = bx;
		y = by;
		if (field(x, y) == 0) {
			uint32_t p = spawn(agent, tick + 1u);
			x = (int)(p & 0xffffu);
			y = (int)(p >> 16);
		}
	}
	return (uint32_t)y << 16 | (uint32_t)x;
}

__global__ void spawn_crowd(uint32_t *pos)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < AGENTS)
		pos[i] = spawn(i, 0u);
}

__global__ void move_crowd(uint32_t *pos, int step)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < AGENTS)
		pos[i] = walk(i, pos[i], step);
}

__global__ void rasterize(const uint32_t *pos, uint32_t *heat)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < AGENTS) {
		uint32_t p = pos[i];
		atomicAdd(&heat[((p >> 16) >> CELL_SHIFT) * HEAT + ((p & 0xffffu) >> CELL_SHIFT)], 1u);
	}
}

/* --- the replay flight recorder ------------------------------------------------------------- */

class FlightRecorder {
public:
	explicit FlightRecorder(const uint32_t *d_heat) : d_heat_(d_heat), frame_(HEAT * HEAT), prev_(HEAT * HEAT, 0), sizes_(STEPS), hashes_(STEPS) {}

	/* "in the background": the caller does not need to wait for the recorder */
	std::future<void> capture_async(int step)
	{
		return std::async(std::launch::async, [this, step] { record(step); });
	}

	const std::vector<uint32_t> &last_frame() const { return frame_; }
	unsigned long long encoded_bytes(int step) const { return sizes_[step]; }
	uint32_t frame_hash(int step) const { return hashes_[step]; }

private:
	void record(int step)
	{
		CHECK(cudaMemcpy(frame_.data(), d_heat_, HEAT * HEAT * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-PROBLEM: blocking download on a std::async thread whose discarded future the step loop waits for: the GPU idles through the copy and the encoding, every step
		encode(step);
	}

	/* delta against the previous frame, 8-bit saturated, run-length coded */
	void encode(int step)
	{
		unsigned long long bytes = 0;
		uint32_t h = 2166136261u;
		int run = 0;
		uint8_t run_value = 0;
		for (int i = 0; i < HEAT * HEAT; i++) {
			uint8_t q = (uint8_t)(frame_[i] > 255u ? 255u : frame_[i]);
			uint8_t d = (uint8_t)(q - prev_[i]);
			prev_[i] = q;
			if (run > 0 && d == run_value && run < 255) {
				run++;
				continue;
			}
			if (run > 0) {
				bytes += 2;
				h = (h ^ run_value) * 16777619u;
				h = (h ^ (uint32_t)run) * 16777619u;
			}
			run_value = d;
			run = 1;
		}
		bytes += 2;
		h = (h ^ run_value) * 16777619u;
		h = (h ^ (uint32_t)run) * 16777619u;
		sizes_[step] = bytes;
		hashes_[step] = h;
	}

	const uint32_t *d_heat_;
	std::vector<uint32_t> frame_;
	std::vector<uint8_t> prev_;
	std::vector<unsigned long long> sizes_;
	std::vector<uint32_t> hashes_;
};

int main(void)
{
	const char *name = "c82_crowd_replay_async_future_download";
	cudaStream_t sim;
	uint32_t *d_pos, *d_heat;

	CHECK(cudaStreamCreate(&sim));
	CHECK(cudaMalloc(&d_pos, AGENTS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_heat, HEAT * HEAT * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	spawn_crowd<<<AGENTS / THREADS, THREADS, 0, sim>>>(d_pos);
	CHECK_LAUNCH();
	FlightRecorder recorder(d_heat);

	for (int step = 0; step < STEPS; step++) {
		move_crowd<<<AGENTS / THREADS, THREADS, 0, sim>>>(d_pos, step);
		CHECK_LAUNCH();
		CHECK(cudaMemsetAsync(d_heat, 0, HEAT * HEAT * sizeof(uint32_t), sim));
		rasterize<<<AGENTS / THREADS, THREADS, 0, sim>>>(d_pos, d_heat);
		CHECK_LAUNCH();
		recorder.capture_async(step);
	}

	std::vector<uint32_t> pos(AGENTS);
	CHECK(cudaStreamSynchronize(sim)); // SYNCSPY-CLEAN: after the loop, once
	CHECK(cudaMemcpy(pos.data(), d_pos, AGENTS * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the crowd

	/* the last recorded map is the density of the final crowd */
	std::vector<uint32_t> heat(HEAT * HEAT, 0);
	for (int i = 0; i < AGENTS; i++)
		heat[((pos[i] >> 16) >> CELL_SHIFT) * HEAT + ((pos[i] & 0xffffu) >> CELL_SHIFT)]++;
	const std::vector<uint32_t> &last = recorder.last_frame();
	for (int c = 0; c < HEAT * HEAT; c++)
		if (last[c] != heat[c]) {
			corpus_expect(name, "recorded density cell", last[c], heat[c]);
			break;
		}
	/* sampled pedestrians walked on the CPU */
	unsigned long long checksum = 0;
	for (uint32_t a = 5; a < AGENTS; a += 4099) {
		uint32_t p = spawn(a, 0u);
		for (int step = 0; step < STEPS; step++)
			p = walk(a, p, step);
		corpus_expect(name, "pedestrian position", pos[a], p);
		checksum = checksum * 1000003u + p;
	}
	for (int step = 0; step < STEPS; step++)
		checksum = checksum * 1000003u + recorder.encoded_bytes(step) * 65599u + recorder.frame_hash(step);

	CHECK(cudaFree(d_pos)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_heat)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(sim));
	corpus_result(name, STEPS, checksum);
	return 0;
}
