/*
 * examples/corpus/c79_clean_beamformer_stream_events.cu: corpus workload (CUDA C), CLEAN. A
 * plane-wave ultrasound scanner's beamformer with two probe heads, each on its own stream created
 * with cudaStreamCreate (blocking streams): every step each head's 128-channel RF frame is
 * simulated on the device, its time-gain compensation curve is uploaded from a pinned table,
 * and a delay-and-sum kernel forms the 256 x 512 image (one thread per pixel, an integer square
 * root per channel for the receive path) and reduces its brightness. A phase profiler times each
 * head's frame with two events recorded on that head's own stream (cudaEventRecord(ev, stream)),
 * so nothing in the loop is queued on the legacy default stream and the heads overlap (the fix
 * of c73); the timings are read with cudaEventElapsedTime once, after the loop and the two
 * stream synchronizations.
 * Clean: the setup allocations and the setup cudaMemset of the brightness slots, the per-frame
 * gain curve upload (async, from a pinned table filled at setup), the two stream
 * synchronizations after the loop, the final read, teardown.
 */
#include "corpus.h"

#include <math.h>

enum { STEPS = 40, HEADS = 2, CHANNELS = 128, RF = 2048, LINES = 256, DEPTH = 512, THREADS = 256 };

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* echo of channel ch at RF sample t of frame f (scatterers every 97 samples, plus noise) */
__host__ __device__ static inline int rf_sample(int f, int ch, int t)
{
	int echo = ((t + ch / 8 + f) % 97 == 0) ? 900 : 0;
	return echo + (int)(mix32((uint32_t)f * 0x9e3779b9u ^ (uint32_t)(ch * RF + t) * 2654435761u) & 63u) - 32;
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

static inline uint32_t isqrt_host(uint32_t v)
{
	uint64_t r = (uint64_t)sqrt((double)v);
	while (r * r > v)
		r--;
	while ((r + 1) * (r + 1) <= v)
		r++;
	return (uint32_t)r;
}

/* the round trip to pixel (line, depth) and back to element ch, in RF samples: the plane wave's
 * depth plus the receive path sqrt(depth^2 + dx^2) */
__host__ __device__ static inline uint32_t receive_path_sq(int line, int depth, int ch)
{
	int dx = 2 * line - 4 * ch; /* pixel lateral position minus element position, in samples */
	return (uint32_t)(depth * depth + dx * dx);
}

__global__ void simulate_rf(int *rf, int f)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx < CHANNELS * RF)
		rf[idx] = rf_sample(f, idx / RF, idx % RF);
}

__global__ void beamform(const int *rf, const int *gain, unsigned long long *brightness)
{
	__shared__ unsigned long long sh[THREADS];
	int pix = blockIdx.x * blockDim.x + threadIdx.x;
	int line = pix / DEPTH, depth = pix % DEPTH;
	long long sum = 0;
	for (int ch = 0; ch < CHANNELS; ch++) {
		int t = depth + (int)isqrt32(receive_path_sq(line, depth, ch));
		if (t < RF)
			sum += rf[ch * RF + t];
	}
	long long env = (sum < 0 ? -sum : sum) * gain[depth] / 64;
	sh[threadIdx.x] = (unsigned long long)env;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long b = 0;
		for (int k = 0; k < THREADS; k++)
			b += sh[k];
		atomicAdd(brightness, b);
	}
}

static int gain_curve(int frame, int depth) { return 64 + depth / 8 + (frame % 5); }

/* --- the phase profiler: events on the head's own stream ----------------------------------- */

struct head_timer {
	cudaEvent_t start[STEPS], stop[STEPS];
};

static void timer_begin(struct head_timer *t, int step, cudaStream_t s) { CHECK(cudaEventRecord(t->start[step], s)); }
static void timer_end(struct head_timer *t, int step, cudaStream_t s) { CHECK(cudaEventRecord(t->stop[step], s)); }

static unsigned long long reference(int head, int step)
{
	int f = step * HEADS + head;
	unsigned long long b = 0;
	for (int line = 0; line < LINES; line++)
		for (int depth = 0; depth < DEPTH; depth++) {
			long long sum = 0;
			for (int ch = 0; ch < CHANNELS; ch++) {
				int t = depth + (int)isqrt_host(receive_path_sq(line, depth, ch));
				if (t < RF)
					sum += rf_sample(f, ch, t);
			}
			b += (unsigned long long)((sum < 0 ? -sum : sum) * gain_curve(f, depth) / 64);
		}
	return b;
}

int main(void)
{
	const char *name = "c79_clean_beamformer_stream_events";
	cudaStream_t head[HEADS];
	int *d_rf[HEADS], *d_gain[HEADS], *h_gain;
	unsigned long long *d_bright, h_bright[STEPS * HEADS];
	static struct head_timer timer[HEADS];

	CHECK(cudaMallocHost(&h_gain, (size_t)STEPS * HEADS * DEPTH * sizeof(int))); // SYNCSPY-CLEAN: setup pinned gain table
	for (int f = 0; f < STEPS * HEADS; f++)
		for (int d = 0; d < DEPTH; d++)
			h_gain[f * DEPTH + d] = gain_curve(f, d);
	for (int k = 0; k < HEADS; k++) {
		CHECK(cudaStreamCreate(&head[k]));
		CHECK(cudaMalloc(&d_rf[k], (size_t)CHANNELS * RF * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&d_gain[k], DEPTH * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
		for (int step = 0; step < STEPS; step++) {
			CHECK(cudaEventCreate(&timer[k].start[step]));
			CHECK(cudaEventCreate(&timer[k].stop[step]));
		}
	}
	CHECK(cudaMalloc(&d_bright, sizeof h_bright)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemset(d_bright, 0, sizeof h_bright)); // SYNCSPY-CLEAN: setup, before any head starts

	for (int step = 0; step < STEPS; step++)
		for (int k = 0; k < HEADS; k++) {
			int f = step * HEADS + k;
			timer_begin(&timer[k], step, head[k]);
			simulate_rf<<<CHANNELS * RF / THREADS, THREADS, 0, head[k]>>>(d_rf[k], f);
			CHECK_LAUNCH();
			CHECK(cudaMemcpyAsync(d_gain[k], h_gain + (size_t)f * DEPTH, DEPTH * sizeof(int), cudaMemcpyHostToDevice, head[k])); // SYNCSPY-CLEAN: the frame's gain curve, async from the pinned table on the head's stream
			beamform<<<LINES * DEPTH / THREADS, THREADS, 0, head[k]>>>(d_rf[k], d_gain[k], d_bright + f);
			CHECK_LAUNCH();
			timer_end(&timer[k], step, head[k]);
		}

	for (int k = 0; k < HEADS; k++)
		CHECK(cudaStreamSynchronize(head[k])); // SYNCSPY-CLEAN: once per head, after the loop
	float frame_ms = 0.0f;
	for (int k = 0; k < HEADS; k++)
		for (int step = 0; step < STEPS; step++) {
			float ms;
			CHECK(cudaEventElapsedTime(&ms, timer[k].start[step], timer[k].stop[step]));
			frame_ms += ms;
		}
	(void)frame_ms; /* the profile goes to the log, not to the result line */
	CHECK(cudaMemcpy(h_bright, d_bright, sizeof h_bright, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read

	unsigned long long checksum = 0;
	for (int f = 0; f < STEPS * HEADS; f++) {
		if (f == 3 || f == 70)
			corpus_expect(name, "frame brightness", (long long)h_bright[f], (long long)reference(f % HEADS, f / HEADS));
		checksum = checksum * 1000003u + h_bright[f];
	}

	for (int k = 0; k < HEADS; k++) {
		for (int step = 0; step < STEPS; step++) {
			CHECK(cudaEventDestroy(timer[k].start[step]));
			CHECK(cudaEventDestroy(timer[k].stop[step]));
		}
		CHECK(cudaFree(d_rf[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(d_gain[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaStreamDestroy(head[k]));
	}
	CHECK(cudaFree(d_bright)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_gain)); // SYNCSPY-CLEAN: teardown
	corpus_result(name, STEPS, checksum);
	return 0;
}
