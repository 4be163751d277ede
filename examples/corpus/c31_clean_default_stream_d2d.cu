/*
 * examples/corpus/c31_clean_default_stream_d2d.cu: corpus workload (CUDA C), CLEAN. A 1-D
 * wave solver written for several GPUs and run on one: its step loop walks the configured
 * devices with cudaSetDevice and sizes the reduction grid from cudaDeviceGetAttribute (the SM
 * count) each step, both host-side queries that make nothing wait. All work runs on the legacy
 * default stream, the program's only stream: the leapfrog kernel, a plain cudaMemcpy of the
 * new field into a device-side history ring (kept for the time average at the end), and the
 * energy reduction. A cudaMemcpy from device to device does not make the host wait (the CUDA
 * runtime documents no host-side synchronization for it) and it is ordered on the same stream
 * as the kernels, so the host queues the whole loop ahead of the GPU. One blocking read at the
 * end.
 */
#include "corpus.h"

enum { STEPS = 80, N = 1 << 23, HISTORY = 4, THREADS = 256, DEVICES = 1 };

__global__ void init_wave(int *prev, int *cur, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int v = (int)(((uint32_t)i * 2654435761u) >> 22) - 512;
	prev[i] = v;
	cur[i] = v;
}

/* d'Alembert's exact scheme at Courant number 1, periodic: stays an integer and bounded. */
__global__ void leapfrog(const int *prev, const int *cur, int *next, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	next[i] = cur[(i + n - 1) % n] + cur[(i + 1) % n] - prev[i];
}

__global__ void energy(const int *u, int n, unsigned long long *out)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += (unsigned long long)(u[i] < 0 ? -u[i] : u[i]);
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(out, t);
	}
}

__global__ void history_mean(const int *hist, int n, unsigned long long *out)
{
	__shared__ unsigned long long sh[THREADS];
	unsigned long long s = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long m = 0;
		for (int h = 0; h < HISTORY; h++)
			m += hist[(size_t)h * n + i];
		s += (unsigned long long)(m < 0 ? -m : m) ^ (unsigned long long)(i & 15);
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(out, t);
	}
}

int main(void)
{
	const int devices[DEVICES] = {0};
	const size_t bytes = (size_t)N * sizeof(int);
	int *d_u[3], *d_hist;
	unsigned long long *d_energy, h_energy[STEPS + 1];
	unsigned long long checksum = 0;

	CHECK(cudaSetDevice(devices[0]));
	for (int k = 0; k < 3; k++)
		CHECK(cudaMalloc(&d_u[k], bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_hist, HISTORY * bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_energy, sizeof h_energy)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemset(d_energy, 0, sizeof h_energy)); // SYNCSPY-CLEAN: setup, device memory on the one stream (no host wait)
	CHECK(cudaMemset(d_hist, 0, HISTORY * bytes)); // SYNCSPY-CLEAN: setup, device memory on the one stream (no host wait)
	init_wave<<<N / THREADS, THREADS>>>(d_u[0], d_u[1], N);
	CHECK_LAUNCH();

	for (int step = 0; step < STEPS; step++) {
		int *prev = d_u[step % 3], *cur = d_u[(step + 1) % 3], *next = d_u[(step + 2) % 3];
		for (int d = 0; d < DEVICES; d++) {
			int sms = 0;
			CHECK(cudaSetDevice(devices[d]));
			CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, devices[d]));
			leapfrog<<<N / THREADS, THREADS>>>(prev, cur, next, N);
			CHECK_LAUNCH();
			CHECK(cudaMemcpy(d_hist + (size_t)(step % HISTORY) * N, next, bytes, cudaMemcpyDeviceToDevice)); // SYNCSPY-CLEAN: device to device, no host wait, on the one stream all the work uses
			energy<<<4 * sms, THREADS>>>(next, N, d_energy + step);
			CHECK_LAUNCH();
		}
	}
	history_mean<<<512, THREADS>>>(d_hist, N, d_energy + STEPS);
	CHECK_LAUNCH();

	CHECK(cudaMemcpy(h_energy, d_energy, sizeof h_energy, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	for (int k = 0; k <= STEPS; k++)
		checksum = checksum * 1000003 + h_energy[k];
	for (int k = 0; k < 3; k++)
		CHECK(cudaFree(d_u[k])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_hist)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_energy)); // SYNCSPY-CLEAN: teardown
	corpus_result("c31_clean_default_stream_d2d", STEPS, checksum);
	return 0;
}
