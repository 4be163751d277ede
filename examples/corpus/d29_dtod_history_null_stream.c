/*
 * examples/corpus/d29_dtod_history_null_stream.c: corpus workload (CUDA driver API). A motion
 * detector for two security cameras, each on its own stream (created with CU_STREAM_DEFAULT,
 * blocking streams, as the driver API's default flag makes them): every frame the camera's
 * stream synthesizes and denoises the frame, sums its absolute difference from the camera's
 * previous frame (the motion score), and keep_history() saves the frame as the new previous
 * frame with cuMemcpyDtoD. A device-to-device copy returns to the host at once, but the
 * synchronous cuMemcpy* calls are issued on the legacy NULL stream, and the NULL stream waits
 * for all work in every blocking stream of the context and makes them wait for it (driver API,
 * stream synchronization behavior): each camera's history copy waits for the other camera's
 * frame too, and the next work on both streams waits for the copy, so the two cameras never
 * overlap. cuMemcpyDtoDAsync on the camera's own stream keeps the same order within a camera.
 * Planted: the cuMemcpyDtoD in keep_history(), every frame of every camera.
 * Clean: the setup allocations and the zeroed first history, the final read, teardown.
 *   d29_dtod_history_null_stream driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { FRAMES = 50, CAMERAS = 2, N = 1 << 20, THREADS = 256, ROUNDS = 12, SUM_BLOCKS = 128 };

struct camera {
	CUstream s;
	CUdeviceptr d_frame, d_hist;
};

struct detector {
	CUfunction fill_hash, mix_rounds, abs_diff_sum;
	struct camera cam[CAMERAS];
	CUdeviceptr d_scores; /* FRAMES x CAMERAS */
};

static uint32_t frame_host(int seed, int step, int i)
{
	uint32_t v = ((uint32_t)i * 2654435761u) ^ ((uint32_t)seed * 40503u);
	v ^= (uint32_t)step * 0x9e3779b9u;
	for (int r = 0; r < ROUNDS; r++)
		v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
	return v;
}

/* --- one camera --------------------------------------------------------------------------- */

static void keep_history(struct camera *c)
{
	DCHECK(cuMemcpyDtoD(c->d_hist, c->d_frame, (size_t)N * sizeof(uint32_t))); // SYNCSPY-PROBLEM: legacy NULL stream: serializes both camera streams, every frame
}

static void process_frame(struct detector *d, int k, int frame)
{
	struct camera *c = &d->cam[k];
	int n = N, rounds = ROUNDS, seed = (frame % 5) * CAMERAS + k;
	CUdeviceptr slot = d->d_scores + (size_t)(frame * CAMERAS + k) * sizeof(unsigned long long);
	void *fill_args[] = {&c->d_frame, &n, &seed};
	void *mix_args[] = {&c->d_frame, &n, &frame, &rounds};
	void *diff_args[] = {&c->d_frame, &c->d_hist, &n, &slot};
	DCHECK(cuLaunchKernel(d->fill_hash, N / THREADS, 1, 1, THREADS, 1, 1, 0, c->s, fill_args, NULL));
	DCHECK(cuLaunchKernel(d->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, c->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(d->abs_diff_sum, SUM_BLOCKS, 1, 1, THREADS, 1, 1, 0, c->s, diff_args, NULL));
	keep_history(c);
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct detector d;
	static unsigned long long h_scores[FRAMES * CAMERAS];

	DCHECK(cuModuleGetFunction(&d.fill_hash, module, "fill_hash"));
	DCHECK(cuModuleGetFunction(&d.mix_rounds, module, "mix_rounds"));
	DCHECK(cuModuleGetFunction(&d.abs_diff_sum, module, "abs_diff_sum"));
	for (int k = 0; k < CAMERAS; k++) {
		DCHECK(cuStreamCreate(&d.cam[k].s, CU_STREAM_DEFAULT));
		DCHECK(cuMemAlloc(&d.cam[k].d_frame, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuMemAlloc(&d.cam[k].d_hist, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuMemsetD32Async(d.cam[k].d_hist, 0u, N, d.cam[k].s));
	}
	DCHECK(cuMemAlloc(&d.d_scores, sizeof h_scores)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32Async(d.d_scores, 0u, 2 * FRAMES * CAMERAS, d.cam[0].s));
	DCHECK(cuStreamSynchronize(d.cam[0].s)); // SYNCSPY-CLEAN: setup, once: the zeroed scores before camera 1 adds into them

	for (int frame = 0; frame < FRAMES; frame++)
		for (int k = 0; k < CAMERAS; k++)
			process_frame(&d, k, frame);

	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: the one wait for both cameras, after the loop
	DCHECK(cuMemcpyDtoH(h_scores, d.d_scores, sizeof h_scores)); // SYNCSPY-CLEAN: final read of the motion scores

	unsigned long long checksum = 0;
	uint32_t *prev = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	for (int k = 0; k < CAMERAS; k++) {
		int check_frame = 17 + 13 * k;
		for (int i = 0; i < N; i++)
			prev[i] = frame_host(((check_frame - 1) % 5) * CAMERAS + k, check_frame - 1, i);
		unsigned long long want = 0;
		for (int i = 0; i < N; i++) {
			uint32_t x = frame_host((check_frame % 5) * CAMERAS + k, check_frame, i) >> 8, y = prev[i] >> 8;
			want += x > y ? x - y : y - x;
		}
		if (h_scores[check_frame * CAMERAS + k] != want) {
			fprintf(stderr, "d29: camera %d frame %d score = %llu, want %llu\n", k, check_frame, h_scores[check_frame * CAMERAS + k], want);
			return 1;
		}
	}
	free(prev);
	for (int j = 0; j < FRAMES * CAMERAS; j++)
		checksum = checksum * 1000003u + h_scores[j];

	for (int k = 0; k < CAMERAS; k++) {
		DCHECK(cuMemFree(d.cam[k].d_frame)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(d.cam[k].d_hist)); // SYNCSPY-CLEAN: teardown
		DCHECK(cuStreamDestroy(d.cam[k].s));
	}
	DCHECK(cuMemFree(d.d_scores)); // SYNCSPY-CLEAN: teardown
	driver_teardown(module);
	printf("d29_dtod_history_null_stream: steps=%d checksum=%llu result=OK\n", FRAMES, checksum);
	return 0;
}
