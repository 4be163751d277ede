/*
 * examples/corpus/c58_clean_priority_streams_hostfunc.cu: corpus workload (CUDA C), clean. A
 * particle simulation with an energy monitor. The dynamics run on a low-priority stream; every
 * step the step kernel also leaves per-block energy partials in a four-slot device ring. A
 * high-priority monitor stream waits for the step's event (cudaStreamWaitEvent), reduces the
 * slot into the step's energy, copies it into pinned memory with cudaMemcpyAsync, and queues a
 * cudaLaunchHostFunc callback that appends it to the host's energy log; the dynamics stream
 * waits on the monitor's event before it overwrites a slot (again on the device). The host
 * thread only queues work: no wait inside the loop, one cudaDeviceSynchronize at the end.
 * Clean: the per-step energy copy into pinned memory, the setup allocations and upload, the
 * final sync and read, teardown.
 */
#include "corpus.h"

enum { STEPS = 64, NP = 1 << 18, THREADS = 256, BLOCKS = NP / THREADS, SLOTS = 4, BOX = 1 << 20 };

__host__ __device__ static inline void advance(int *x, int *v, int step)
{
	*v += ((step & 1) == 0) ? -1 : 0;
	*x += *v;
	if (*x < 0) {
		*x = -*x;
		*v = -*v;
	}
	if (*x >= BOX) {
		*x = 2 * (BOX - 1) - *x;
		*v = -*v;
	}
}

__global__ void step_particles(int *xs, int *vs, int step, unsigned long long *partial)
{
	__shared__ unsigned long long sh[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int x = xs[i], v = vs[i];
	advance(&x, &v, step);
	xs[i] = x;
	vs[i] = v;
	sh[threadIdx.x] = (unsigned long long)((long long)v * v);
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partial[blockIdx.x] = sh[0];
}

__global__ void reduce_energy(const unsigned long long *partial, unsigned long long *energy)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int k = threadIdx.x; k < BLOCKS; k += THREADS)
		s += partial[k];
	sh[threadIdx.x] = s;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*energy = sh[0];
}

/* --- the host's energy log, filled by stream callbacks (no CUDA call inside them) ----------- */

struct energy_log {
	unsigned long long *pinned; /* one slot per step */
	unsigned long long logged[STEPS];
	int count;
};

struct log_entry {
	struct energy_log *log;
	int step;
};

static void CUDART_CB log_energy(void *arg)
{
	struct log_entry *e = (struct log_entry *)arg;
	e->log->logged[e->step] = e->log->pinned[e->step];
	e->log->count++;
}

static int initial_v(int i)
{
	return (int)(((uint32_t)i * 2654435761u >> 9) % 1501u) - 750;
}

static int initial_x(int i)
{
	return (int)(((uint32_t)i * 40503u + 17u) % (uint32_t)BOX);
}

int main(void)
{
	const char *name = "c58_clean_priority_streams_hostfunc";
	int *h_x = (int *)malloc(NP * sizeof(int)), *h_v = (int *)malloc(NP * sizeof(int));
	int *d_x, *d_v;
	unsigned long long *d_partial, *d_energy;
	int lo, hi;
	cudaStream_t dyn, mon;
	cudaEvent_t stepped[SLOTS], reduced[SLOTS];
	struct energy_log log;
	struct log_entry entries[STEPS];

	for (int i = 0; i < NP; i++) {
		h_x[i] = initial_x(i);
		h_v[i] = initial_v(i);
	}
	CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
	CHECK(cudaStreamCreateWithPriority(&dyn, cudaStreamNonBlocking, lo));
	CHECK(cudaStreamCreateWithPriority(&mon, cudaStreamNonBlocking, hi));
	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaEventCreateWithFlags(&stepped[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&reduced[k], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_x, NP * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_v, NP * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_partial, SLOTS * BLOCKS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_energy, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&log.pinned, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	log.count = 0;
	CHECK(cudaMemcpyAsync(d_x, h_x, NP * sizeof(int), cudaMemcpyHostToDevice, dyn)); // SYNCSPY-CLEAN: setup upload
	CHECK(cudaMemcpyAsync(d_v, h_v, NP * sizeof(int), cudaMemcpyHostToDevice, dyn)); // SYNCSPY-CLEAN: setup upload

	for (int step = 0; step < STEPS; step++) {
		int slot = step % SLOTS;
		unsigned long long *partial = d_partial + (size_t)slot * BLOCKS;
		if (step >= SLOTS)
			CHECK(cudaStreamWaitEvent(dyn, reduced[slot], 0));
		step_particles<<<BLOCKS, THREADS, 0, dyn>>>(d_x, d_v, step, partial);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(stepped[slot], dyn));

		CHECK(cudaStreamWaitEvent(mon, stepped[slot], 0));
		reduce_energy<<<1, THREADS, 0, mon>>>(partial, d_energy + step);
		CHECK_LAUNCH();
		CHECK(cudaEventRecord(reduced[slot], mon));
		CHECK(cudaMemcpyAsync(log.pinned + step, d_energy + step, sizeof(unsigned long long), cudaMemcpyDeviceToHost, mon)); // SYNCSPY-CLEAN: async copy of the step's energy into pinned memory
		entries[step].log = &log;
		entries[step].step = step;
		CHECK(cudaLaunchHostFunc(mon, log_energy, &entries[step]));
	}

	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: the one wait, after the loop
	CHECK(cudaMemcpy(h_x, d_x, NP * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpy(h_v, d_v, NP * sizeof(int), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read

	unsigned long long want[STEPS] = {0};
	unsigned long long checksum = 0;
	for (int i = 0; i < NP; i++) {
		int x = initial_x(i), v = initial_v(i);
		for (int step = 0; step < STEPS; step++) {
			advance(&x, &v, step);
			want[step] += (unsigned long long)((long long)v * v);
		}
		corpus_expect(name, "x", h_x[i], x);
		corpus_expect(name, "v", h_v[i], v);
	}
	corpus_expect(name, "logged energies", log.count, STEPS);
	for (int step = 0; step < STEPS; step++) {
		corpus_expect(name, "energy", (long long)log.logged[step], (long long)want[step]);
		checksum = checksum * 1000003u + log.logged[step];
	}

	for (int k = 0; k < SLOTS; k++) {
		CHECK(cudaEventDestroy(stepped[k]));
		CHECK(cudaEventDestroy(reduced[k]));
	}
	CHECK(cudaFreeHost(log.pinned)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_v)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_partial)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_energy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(dyn));
	CHECK(cudaStreamDestroy(mon));
	free(h_x);
	free(h_v);
	corpus_result(name, STEPS, checksum);
	return 0;
}
