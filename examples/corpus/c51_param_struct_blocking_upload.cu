/*
 * examples/corpus/c51_param_struct_blocking_upload.cu: corpus workload (CUDA C). A camera
 * tone-mapping stage: every frame a synthesis kernel stands in for the sensor, and a tone-map
 * kernel applies a gain/offset/shift chosen by a host-side auto-exposure controller, summing the
 * output into the frame's slot of a device histogram of sums. The controller's parameters are a
 * 16-byte struct, and set_tone_params() hands them to the kernel by writing them into a device
 * buffer with a plain cudaMemcpy from the stack, every frame. A host-to-device cudaMemcpy from
 * pageable memory is synchronous (CUDA runtime docs, "API synchronization behavior": a stream
 * sync is performed before the copy is initiated), and on the legacy default stream it waits for
 * the previous frame's kernels: the host can never queue a frame ahead. The struct passed by value
 * as a kernel argument (kernel parameters are copied at launch) would need no copy at all.
 * Planted: the cudaMemcpy in set_tone_params(), every frame.
 * Clean: the setup allocations and the zeroing of the sums, the final reads, teardown.
 */
#include "corpus.h"

enum { FRAMES = 60, N = 1 << 18, THREADS = 256 };

struct tone_params {
	uint32_t gain;
	uint32_t offset;
	uint32_t shift;
	uint32_t frame;
};

__host__ __device__ static inline uint32_t sensor_pixel(int i, int frame)
{
	uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)frame * 0x9e3779b9u;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	return (h ^ (h >> 12)) & 0xffffu;
}

__host__ __device__ static inline uint32_t tone(uint32_t v, const struct tone_params *p)
{
	return ((v * p->gain + p->offset) >> p->shift) & 0xffffu;
}

__global__ void synth_frame(uint32_t *raw, int n, int frame)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		raw[i] = sensor_pixel(i, frame);
}

__global__ void tone_map(const uint32_t *raw, uint32_t *out, const struct tone_params *p, int n, unsigned long long *sums)
{
	__shared__ unsigned long long sh[THREADS];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long s = 0;
	if (i < n) {
		out[i] = tone(raw[i], p);
		s = out[i];
	}
	sh[threadIdx.x] = s;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			sh[threadIdx.x] += sh[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(&sums[p->frame], sh[0]);
}

/* --- the auto-exposure controller --------------------------------------------------------- */

static struct tone_params exposure_for(int frame)
{
	struct tone_params p;
	p.gain = 3u + (uint32_t)(frame % 5);
	p.offset = 128u * (uint32_t)(frame % 7);
	p.shift = 1u + (uint32_t)(frame % 3);
	p.frame = (uint32_t)frame;
	return p;
}

static void set_tone_params(struct tone_params *d_params, int frame)
{
	struct tone_params p = exposure_for(frame);
	CHECK(cudaMemcpy(d_params, &p, sizeof p, cudaMemcpyHostToDevice)); // SYNCSPY-PROBLEM: blocking pageable copy of a 16-byte struct every frame, instead of a kernel argument
}

/* --- one frame ----------------------------------------------------------------------------- */

static void process_frame(uint32_t *d_raw, uint32_t *d_out, struct tone_params *d_params, unsigned long long *d_sums, int frame)
{
	synth_frame<<<N / THREADS, THREADS>>>(d_raw, N, frame);
	CHECK_LAUNCH();
	set_tone_params(d_params, frame);
	tone_map<<<N / THREADS, THREADS>>>(d_raw, d_out, d_params, N, d_sums);
	CHECK_LAUNCH();
}

int main(void)
{
	const char *name = "c51_param_struct_blocking_upload";
	uint32_t *d_raw, *d_out;
	struct tone_params *d_params;
	unsigned long long *d_sums;
	unsigned long long h_sums[FRAMES];
	uint32_t *h_last = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));

	CHECK(cudaMalloc(&d_raw, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_out, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_params, sizeof(struct tone_params))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_sums, sizeof h_sums)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemset(d_sums, 0, sizeof h_sums)); // SYNCSPY-CLEAN: setup, the sums zeroed once

	for (int frame = 0; frame < FRAMES; frame++)
		process_frame(d_raw, d_out, d_params, d_sums, frame);

	CHECK(cudaMemcpy(h_sums, d_sums, sizeof h_sums, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the per-frame sums
	CHECK(cudaMemcpy(h_last, d_out, (size_t)N * sizeof(uint32_t), cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the last frame
	CHECK(cudaFree(d_raw)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_out)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_params)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_sums)); // SYNCSPY-CLEAN: teardown

	unsigned long long checksum = 0;
	for (int frame = 0; frame < FRAMES; frame++) {
		struct tone_params p = exposure_for(frame);
		unsigned long long want = 0;
		for (int i = 0; i < N; i++) {
			uint32_t v = tone(sensor_pixel(i, frame), &p);
			want += v;
			if (frame == FRAMES - 1 && h_last[i] != v)
				corpus_expect(name, "last frame pixel", h_last[i], v);
		}
		corpus_expect(name, "frame sum", (long long)h_sums[frame], (long long)want);
		checksum = checksum * 1000003u + h_sums[frame];
	}
	free(h_last);
	corpus_result(name, FRAMES, checksum);
	return 0;
}
