/*
 * examples/corpus/c137_avalanche_runout_graph_legacy_stream.cu: corpus workload (CUDA C, CUDA
 * graphs). An avalanche hazard study's snow-flow model: a 2048 x 2048 grid of 2 m cells (terrain
 * and snow depth in millimetres, integer, so that the snow mass is exact) on a mountainside with
 * a 38-degree starting zone cut by gullies and a gentle runout below. Every step new snow falls on
 * the starting zone, then 4 substeps move snow to the four neighbours whose snow surface lies
 * lower by more than the angle of repose (each cell's outflow split in proportion to the excess
 * drops), and the deepest snow seen at every cell is kept for the hazard map. The step is
 * captured once into a graph (snowfall, 4 x outflow and apply, a snapshot of the depth into one of
 * two device slots chosen by a step counter on the device, the counter's tick), instantiated and
 * uploaded in setup, and replayed 60 times. The viewer downloads every step's 16 MB snapshot on a
 * download stream into a pinned ring, ordered by events, and shows step t-1 while step t runs.
 * sim_advance() replays the graph with cudaGraphLaunch(exec, 0), "a graph carries its own
 * dependencies", while the caller records its events on the simulation stream the graph was
 * captured on. Stream 0 is the legacy default stream: "when an action is taken in the legacy
 * stream such as a kernel launch [...] the legacy stream first waits on all blocking streams, the
 * action is queued in the legacy stream, and then all blocking streams wait on the legacy stream"
 * (stream synchronization behavior). The download stream is a blocking stream (cudaStreamCreate),
 * so every replay waits for the previous step's 16 MB download, and the download waits for the
 * replay: the copy engine and the SMs take turns. Launching the graph on the simulation stream
 * ("each launch is ordered behind both any previous work in stream and any previous launches of
 * graphExec", cudaGraphLaunch) would let the download of step t-1 run beside step t; the
 * events already order what must be ordered. The events stay correct by accident: the record on
 * the blocking simulation stream, queued after the legacy-stream replay, waits for it.
 * Planted: the cudaGraphLaunch on stream 0 in sim_advance(), every step (one line).
 * Clean: the setup allocations, the terrain and snow uploads, the counter's reset, the graph's
 * instantiation and upload, the setup sync, the snapshot's cudaMemcpyAsync into the pinned ring
 * on the download stream, the viewer's cudaEventSynchronize one step behind, the final wait and
 * the final read of the hazard map, teardown.
 * Per step (estimates, H100): about 1.1 GB of stencil traffic in 4 substeps (0.4-0.6 ms) and a
 * 16 MB snapshot download (0.35-0.7 ms on the copy engine) that cannot overlap it. Checks: the
 * snow mass of the last snapshot equals the initial mass plus every step's snowfall, the last
 * step recomputed on the host from the snapshot before it (exact), and snow moved: the runout
 * below the starting zone (no snow falls there) holds more snow than it started with.
 */
#include "corpus.h"

#include <string.h>

enum { NX = 2048, NY = 2048, N = NX * NY, SUB = 4, STEPS = 60, THREADS = 256, REPOSE = 1000, ZONE = 512 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the terrain (mm): a 38-degree starting zone with gullies every 256 cells, then the runout */
static int terrain(int x, int y)
{
	int d = abs(x % 256 - 128), gully = (128 - d) * (128 - d) * 3000 / 16384;
	int base = y < 768 ? 2000000 - y * 1600 : 2000000 - 768 * 1600 - (y - 768) * 250;
	return base - gully + (int)(mix32((uint32_t)((y / 16) * 128 + x / 16) ^ 0x1b873593u) % 800u);
}

/* the initial snow (mm): 800 everywhere, slabs of 2300 in the gullies' upper reaches */
static int snow0(int x, int y)
{
	return y >= 64 && y < 320 && abs(x % 256 - 128) < 48 ? 2300 : 800;
}

/* new snow at (x, y) in step t (mm) */
__host__ __device__ static inline int snowfall_at(int x, int y, int t)
{
	return y < ZONE ? 2 + (int)(mix32((uint32_t)(y * NX + x) ^ (uint32_t)t * 0x9e3779b9u) % 4u) : 0;
}

/* a cell's outflow to E, W, N (y-1), S (y+1): the snow above the repose angle, shared in
 * proportion to each neighbour's excess drop, at most a quarter of the total excess a substep */
__host__ __device__ static inline int4 cell_outflow(const int *z, const int *h, int x, int y)
{
	int i = y * NX + x, s = z[i] + h[i], ex[4] = {0, 0, 0, 0};
	const int nx[4] = {x + 1, x - 1, x, x}, ny[4] = {y, y, y - 1, y + 1};
	long long sum = 0;
	for (int k = 0; k < 4; k++) {
		if (nx[k] < 0 || nx[k] >= NX || ny[k] < 0 || ny[k] >= NY)
			continue;
		int j = ny[k] * NX + nx[k], e = s - (z[j] + h[j]) - REPOSE;
		ex[k] = e > 0 ? e : 0;
		sum += ex[k];
	}
	int4 o = make_int4(0, 0, 0, 0);
	if (sum == 0 || h[i] == 0)
		return o;
	long long f = sum / 4 < h[i] ? sum / 4 : h[i];
	o.x = (int)(f * ex[0] / sum);
	o.y = (int)(f * ex[1] / sum);
	o.z = (int)(f * ex[2] / sum);
	o.w = (int)(f * ex[3] / sum);
	return o;
}

/* the depth after a substep: less the cell's outflow, plus what its neighbours sent it */
__host__ __device__ static inline int cell_apply(const int *h, const int4 *out, int x, int y)
{
	int i = y * NX + x;
	int4 o = out[i];
	int v = h[i] - (o.x + o.y + o.z + o.w);
	if (x > 0)
		v += out[i - 1].x;
	if (x < NX - 1)
		v += out[i + 1].y;
	if (y > 0)
		v += out[i - NX].w;
	if (y < NY - 1)
		v += out[i + NX].z;
	return v;
}

__global__ void snowfall(int *h, const int *step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < ZONE * NX)
		h[i] += snowfall_at(i % NX, i / NX, *step);
}

__global__ void outflow(const int *z, const int *h, int4 *out)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	out[y * NX + x] = cell_outflow(z, h, x, y);
}

__global__ void apply(int *h, const int4 *out, int *hmax)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, i = y * NX + x;
	int v = cell_apply(h, out, x, y);
	h[i] = v;
	if (v > hmax[i])
		hmax[i] = v;
}

/* the snapshot into slot (step & 1), then the counter's tick */
__global__ void snapshot(const int *h, int *snap, const int *step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	snap[(size_t)(*step & 1) * N + i] = h[i];
}

__global__ void tick(int *step)
{
	*step += 1;
}

struct sim {
	cudaStream_t stream; /* captured on; blocking */
	cudaGraphExec_t exec;
	int *z, *h, *hmax, *snap, *step;
	int4 *out;
};

static void capture_step(struct sim *s)
{
	cudaGraph_t g;
	const dim3 grid(NX / THREADS, NY);
	CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
	snowfall<<<ZONE * NX / THREADS, THREADS, 0, s->stream>>>(s->h, s->step);
	for (int k = 0; k < SUB; k++) {
		outflow<<<grid, THREADS, 0, s->stream>>>(s->z, s->h, s->out);
		apply<<<grid, THREADS, 0, s->stream>>>(s->h, s->out, s->hmax);
	}
	snapshot<<<N / THREADS, THREADS, 0, s->stream>>>(s->h, s->snap, s->step);
	tick<<<1, 1, 0, s->stream>>>(s->step);
	CHECK(cudaStreamEndCapture(s->stream, &g));
	CHECK(cudaGraphInstantiate(&s->exec, g, 0)); // SYNCSPY-CLEAN: setup, instantiated once
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaGraphUpload(s->exec, s->stream)); // SYNCSPY-CLEAN: setup, uploaded once
}

/* one step of the model */
static void sim_advance(struct sim *s)
{
	CHECK(cudaGraphLaunch(s->exec, 0)); // SYNCSPY-PROBLEM: the replay on the legacy default stream: waits for the blocking download stream's last snapshot, every step
}

/* the host's step t from the depths h (the mirror of the graph) */
static void host_step(const int *z, int *h, int4 *out, int t)
{
	for (int i = 0; i < ZONE * NX; i++)
		h[i] += snowfall_at(i % NX, i / NX, t);
	for (int k = 0; k < SUB; k++) {
		for (int y = 0; y < NY; y++)
			for (int x = 0; x < NX; x++)
				out[y * NX + x] = cell_outflow(z, h, x, y);
		for (int y = 0; y < NY; y++)
			for (int x = 0; x < NX; x++)
				h[y * NX + x] = cell_apply(h, out, x, y);
	}
}

int main(void)
{
	const char *name = "c137_avalanche_runout_graph_legacy_stream";
	int *z = (int *)malloc(N * sizeof(int)), *h0 = (int *)malloc(N * sizeof(int));
	long long mass = 0, runout0 = 0;
	for (int y = 0; y < NY; y++)
		for (int x = 0; x < NX; x++) {
			z[y * NX + x] = terrain(x, y);
			h0[y * NX + x] = snow0(x, y);
			mass += h0[y * NX + x];
			runout0 += y >= 768 ? h0[y * NX + x] : 0;
		}

	struct sim s;
	cudaStream_t dl;
	int *ring[2];
	cudaEvent_t stepped[2], downloaded[2];
	CHECK(cudaStreamCreate(&s.stream));
	CHECK(cudaStreamCreate(&dl));
	CHECK(cudaMalloc(&s.z, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&s.h, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&s.hmax, N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&s.snap, 2 * (size_t)N * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&s.out, N * sizeof(int4))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&s.step, sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&ring[k], N * sizeof(int))); // SYNCSPY-CLEAN: setup, the viewer's pinned ring
		CHECK(cudaEventCreateWithFlags(&stepped[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&downloaded[k], cudaEventDisableTiming));
	}
	CHECK(cudaMemcpy(s.z, z, N * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the terrain
	CHECK(cudaMemcpy(s.h, h0, N * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the snow cover
	CHECK(cudaMemcpy(s.hmax, h0, N * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the hazard map starts from the snow cover
	CHECK(cudaMemset(s.step, 0, sizeof(int))); // SYNCSPY-CLEAN: setup, the step counter
	capture_step(&s);
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the run

	unsigned long long checksum = 14695981039346656037ull;
	for (int t = 0; t <= STEPS; t++) {
		if (t < STEPS) {
			int k = t % 2;
			if (t >= 2)
				CHECK(cudaStreamWaitEvent(s.stream, downloaded[k], 0)); /* the snapshot slot is free again */
			sim_advance(&s);
			CHECK(cudaEventRecord(stepped[k], s.stream));
			CHECK(cudaStreamWaitEvent(dl, stepped[k], 0));
			CHECK(cudaMemcpyAsync(ring[k], s.snap + (size_t)k * N, N * sizeof(int), cudaMemcpyDeviceToHost, dl)); // SYNCSPY-CLEAN: the snapshot into the viewer's pinned ring, on the download stream
			CHECK(cudaEventRecord(downloaded[k], dl));
		}
		if (t == 0)
			continue;
		int g = t - 1; /* the viewer shows step g, one step behind */
		CHECK(cudaEventSynchronize(downloaded[g % 2])); // SYNCSPY-CLEAN: the viewer's step one behind
		const int *v = ring[g % 2];
		long long band = 0;
		for (int y = 0; y < NY; y += 16)
			for (int x = 0; x < NX; x++) {
				band += v[y * NX + x];
				checksum = (checksum ^ (unsigned)v[y * NX + x]) * 1099511628211ull;
			}
		checksum = (checksum ^ (unsigned long long)band) * 1099511628211ull;
	}
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: the final wait
	int *hmax = (int *)malloc(N * sizeof(int));
	CHECK(cudaMemcpy(hmax, s.hmax, N * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: the final read of the hazard map

	/* the checks: the mass of the last snapshot, the last step again on the host */
	const int *last = ring[(STEPS - 1) % 2], *before = ring[(STEPS - 2) % 2];
	long long want = mass, got = 0, runout = 0;
	for (int t = 0; t < STEPS; t++)
		for (int i = 0; i < ZONE * NX; i++)
			want += snowfall_at(i % NX, i / NX, t);
	for (int i = 0; i < N; i++) {
		got += last[i];
		runout += i >= 768 * NX ? last[i] : 0;
	}
	if (got != want) {
		printf("%s: snow mass %lld, want %lld result=FAIL\n", name, got, want);
		return 1;
	}
	int *h = (int *)malloc(N * sizeof(int));
	int4 *out = (int4 *)malloc(N * sizeof(int4));
	memcpy(h, before, N * sizeof(int));
	host_step(z, h, out, STEPS - 1);
	for (int i = 0; i < N; i++)
		if (h[i] != last[i]) {
			printf("%s: cell (%d, %d) after step %d: %d mm, want %d result=FAIL\n", name, i % NX, i / NX, STEPS - 1, last[i], h[i]);
			return 1;
		}
	int deepest = 0;
	long long hazard = 0;
	for (int i = 0; i < N; i++) {
		deepest = hmax[i] > deepest ? hmax[i] : deepest;
		hazard += hmax[i] >= 3000;
		checksum = (checksum ^ (unsigned)hmax[i]) * 1099511628211ull;
	}
	if (runout <= runout0) {
		printf("%s: runout snow %lld, no more than the initial %lld result=FAIL\n", name, runout, runout0);
		return 1;
	}

	CHECK(cudaGraphExecDestroy(s.exec));
	CHECK(cudaFree(s.z)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(s.h)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(s.hmax)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(s.snap)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(s.out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(s.step)); // SYNCSPY-CLEAN: teardown
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(ring[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(stepped[k]));
		CHECK(cudaEventDestroy(downloaded[k]));
	}
	CHECK(cudaStreamDestroy(s.stream));
	CHECK(cudaStreamDestroy(dl));
	printf("%s: steps=%d cells=%d mass=%lld runout=%lld deepest=%d hazard_cells=%lld checksum=%016llx result=OK\n", name, STEPS, N, got,
	       runout, deepest, hazard, checksum);
	free(z);
	free(h0);
	free(hmax);
	free(h);
	free(out);
	return 0;
}
