/*
 * examples/corpus/c42_event_sync_adaptive_dt.cu: corpus workload (CUDA C). An explicit particle
 * integrator with a CFL-limited adaptive time step (fixed-point positions and velocities in a
 * box with a restoring spring). Every step the integrate kernel advances the particles by the
 * current dt, and a CFL controller picks the next dt from the largest speed: its helper
 * controller_next_dt() reduces |v| on the device, copies the maximum into pinned memory with
 * cudaMemcpyAsync (asynchronous: pinned destination), records an event and then calls
 * cudaEventSynchronize on it to read the value on the host (CUDA runtime docs: the call blocks
 * until the event, and so the step's kernels before it, has completed). The host waits for
 * every step before it may queue the next one; computing dt on the device (a one-thread kernel
 * that writes dt where the integrate kernel reads it) would need no wait.
 * Planted: the cudaEventSynchronize in controller_next_dt(), every step.
 * Clean: the per-step cudaMemcpyAsync of the maximum speed into pinned memory, the setup
 * allocations and uploads, the final read, teardown.
 */
#include "corpus.h"

enum { STEPS = 80, N = 1 << 20, THREADS = 256, LIM = 1 << 20, VMAX = 1 << 16, DT_MAX = 64, CFL = 1 << 21 };

/* one particle, one step: drift by v*dt/64, reflect at the walls, kick by the spring */
__host__ __device__ static inline void advance_particle(int *px, int *pv, int dt)
{
	int x = *px, v = *pv;
	x += (v * dt) >> 6;
	if (x > LIM) {
		x = 2 * LIM - x;
		v = -v;
	} else if (x < -LIM) {
		x = -2 * LIM - x;
		v = -v;
	}
	v -= ((x >> 8) * dt) >> 8;
	if (v > VMAX)
		v = VMAX;
	if (v < -VMAX)
		v = -VMAX;
	*px = x;
	*pv = v;
}

static int dt_from_speed(unsigned int vmax)
{
	int dt = (int)(CFL / (vmax + 1u));
	return dt < 1 ? 1 : dt > DT_MAX ? DT_MAX : dt;
}

__global__ void integrate(int *x, int *v, int n, int dt)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		advance_particle(&x[i], &v[i], dt);
}

__global__ void max_speed(const int *v, int n, unsigned int *vmax)
{
	__shared__ unsigned int sh[THREADS];
	unsigned int m = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int a = v[i];
		m = max(m, (unsigned int)(a < 0 ? -a : a));
	}
	sh[threadIdx.x] = m;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int k = 0; k < THREADS; k++)
			m = max(m, sh[k]);
		atomicMax(vmax, m);
	}
}

/* --- the CFL controller ------------------------------------------------------------------ */

struct cfl_controller {
	unsigned int *d_vmax, *h_vmax; /* h_vmax pinned */
	cudaEvent_t ready;
};

static void controller_init(struct cfl_controller *c)
{
	CHECK(cudaMalloc(&c->d_vmax, sizeof *c->d_vmax)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMallocHost(&c->h_vmax, sizeof *c->h_vmax)); // SYNCSPY-CLEAN: setup pinned allocation
	CHECK(cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming));
}

/* the next step's dt, from the largest speed after this step */
static int controller_next_dt(struct cfl_controller *c, const int *d_v, cudaStream_t s)
{
	CHECK(cudaMemsetAsync(c->d_vmax, 0, sizeof *c->d_vmax, s));
	max_speed<<<256, THREADS, 0, s>>>(d_v, N, c->d_vmax);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(c->h_vmax, c->d_vmax, sizeof *c->h_vmax, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: async copy into pinned memory
	CHECK(cudaEventRecord(c->ready, s));
	CHECK(cudaEventSynchronize(c->ready)); // SYNCSPY-PROBLEM: the host waits for every step to choose dt; a device-side dt needs no wait
	return dt_from_speed(*c->h_vmax);
}

static void controller_teardown(struct cfl_controller *c)
{
	CHECK(cudaFree(c->d_vmax)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(c->h_vmax)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaEventDestroy(c->ready));
}

static void integrate_step(int *d_x, int *d_v, int dt, cudaStream_t s)
{
	integrate<<<N / THREADS, THREADS, 0, s>>>(d_x, d_v, N, dt);
	CHECK_LAUNCH();
}

/* the same run on the host; returns the trace of the chosen time steps */
static unsigned long long reference(int *x, int *v)
{
	unsigned long long trace = 0;
	int dt = DT_MAX;
	for (int step = 0; step < STEPS; step++) {
		unsigned int vmax = 0;
		for (int i = 0; i < N; i++) {
			advance_particle(&x[i], &v[i], dt);
			unsigned int a = (unsigned int)(v[i] < 0 ? -v[i] : v[i]);
			vmax = a > vmax ? a : vmax;
		}
		dt = dt_from_speed(vmax);
		trace = trace * 131u + (unsigned long long)dt;
	}
	return trace;
}

int main(void)
{
	const char *name = "c42_event_sync_adaptive_dt";
	const size_t bytes = (size_t)N * sizeof(int);
	int *h_x = (int *)malloc(bytes), *h_v = (int *)malloc(bytes);
	int *ref_x = (int *)malloc(bytes), *ref_v = (int *)malloc(bytes);
	int *d_x, *d_v;
	struct cfl_controller ctl;
	cudaStream_t s;

	for (int i = 0; i < N; i++) {
		uint32_t h = (uint32_t)i * 2654435761u;
		ref_x[i] = h_x[i] = (int)(h % (2u * LIM)) - LIM;
		ref_v[i] = h_v[i] = (int)((h >> 7) % VMAX) - VMAX / 2;
	}
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_x, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_v, bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpyAsync(d_x, h_x, bytes, cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	CHECK(cudaMemcpyAsync(d_v, h_v, bytes, cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	controller_init(&ctl);

	unsigned long long trace = 0;
	int dt = DT_MAX;
	for (int step = 0; step < STEPS; step++) {
		integrate_step(d_x, d_v, dt, s);
		dt = controller_next_dt(&ctl, d_v, s);
		trace = trace * 131u + (unsigned long long)dt;
	}

	CHECK(cudaMemcpyAsync(h_x, d_x, bytes, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpyAsync(h_v, d_v, bytes, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	controller_teardown(&ctl);
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_v)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));

	corpus_expect(name, "dt trace", (long long)trace, (long long)reference(ref_x, ref_v));
	unsigned long long checksum = trace;
	for (int i = 0; i < N; i++) {
		if (h_x[i] != ref_x[i] || h_v[i] != ref_v[i])
			corpus_expect(name, "particle", i, -1);
		checksum = checksum * 1000003u + (uint32_t)h_x[i] * 31u + (uint32_t)h_v[i];
	}
	free(h_x);
	free(h_v);
	free(ref_x);
	free(ref_v);
	corpus_result(name, STEPS, checksum);
	return 0;
}
