/*
 * examples/corpus/c33_cufft_plan_per_step.cu: corpus workload (CUDA C + cuFFT). A spectral
 * denoiser for a multichannel sensor stream: each step a batch of 64 channels of 4096 samples
 * is synthesized on the GPU (a low tone plus high-frequency interference), transformed with a
 * batched C2C FFT, low-pass filtered in the frequency domain and transformed back. The helper
 * that runs the filter builds its cuFFT plan with cufftPlan1d and destroys it with
 * cufftDestroy on every call. Plan creation allocates the plan's work area with cudaMalloc
 * (cuFFT docs, "Work area": the plan allocates it unless cufftSetAutoAllocation(0)) and
 * cufftDestroy frees it: device allocations and frees, each of which synchronizes the device,
 * plus the host cost of planning, every step. The fix is to create the plan once in setup and
 * reuse it (plans are meant to be reused for every transform of the same shape).
 * Planted: the per-step cufftPlan1d and cufftDestroy.
 * Clean: setup allocations, the final read of the error counter and energy, teardown.
 * The result is checked on the GPU: after the filter only the low tone is left (|err| < 1e-3).
 */
// CORPUS-LDLIBS: -lcufft
#include "corpus.h"

#include <cufft.h>

enum { STEPS = 40, NFFT = 4096, CHANNELS = 64, CUTOFF = 256, THREADS = 256 };

#define CHECK_FFT(call)                                                                            \
	do {                                                                                       \
		cufftResult check_fft_ = (call);                                                   \
		if (check_fft_ != CUFFT_SUCCESS) {                                                 \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_fft_);                                                  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__device__ int low_bin(int ch, int step) { return 1 + (ch * 7 + step) % 60; }
__device__ int high_bin(int ch) { return NFFT / 2 - 5 - (ch % 32) * 11; }

__device__ float tone(int bin, int t)
{
	/* exact phase: (bin * t) mod NFFT before the float conversion */
	int k = (int)(((long long)bin * t) % NFFT);
	return cospif(2.0f * (float)k / (float)NFFT);
}

__global__ void synthesize(cufftComplex *x, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= NFFT * CHANNELS)
		return;
	int ch = i / NFFT, t = i % NFFT;
	x[i].x = tone(low_bin(ch, step), t) + 0.5f * tone(high_bin(ch), t);
	x[i].y = 0.0f;
}

/* keep bins |f| < CUTOFF, normalize the inverse (cuFFT's transforms are unnormalized) */
__global__ void lowpass(cufftComplex *f)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= NFFT * CHANNELS)
		return;
	int k = i % NFFT;
	int fk = k < NFFT / 2 ? k : NFFT - k;
	float g = fk < CUTOFF ? 1.0f / NFFT : 0.0f;
	f[i].x *= g;
	f[i].y *= g;
}

__global__ void check(const cufftComplex *y, int step, unsigned int *bad, unsigned long long *energy)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= NFFT * CHANNELS)
		return;
	int ch = i / NFFT, t = i % NFFT;
	float want = tone(low_bin(ch, step), t);
	if (fabsf(y[i].x - want) > 1e-3f || fabsf(y[i].y) > 1e-3f)
		atomicAdd(bad, 1u);
	if (t == 0)
		atomicAdd(energy, (unsigned long long)llrintf(y[i].x * 1000.0f));
}

static void denoise(cufftComplex *d_x, cudaStream_t s)
{
	cufftHandle plan;
	CHECK_FFT(cufftPlan1d(&plan, NFFT, CUFFT_C2C, CHANNELS)); // SYNCSPY-PROBLEM: plan (and its work area) created every call
	CHECK_FFT(cufftSetStream(plan, s));
	CHECK_FFT(cufftExecC2C(plan, d_x, d_x, CUFFT_FORWARD));
	lowpass<<<NFFT * CHANNELS / THREADS, THREADS, 0, s>>>(d_x);
	CHECK_LAUNCH();
	CHECK_FFT(cufftExecC2C(plan, d_x, d_x, CUFFT_INVERSE));
	CHECK_FFT(cufftDestroy(plan)); // SYNCSPY-PROBLEM: plan destroyed (its work area freed) every call
}

int main(void)
{
	cufftComplex *d_x;
	unsigned int *d_bad, h_bad = 0;
	unsigned long long *d_energy, h_energy = 0;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_x, (size_t)NFFT * CHANNELS * sizeof(cufftComplex))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_bad, sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_energy, sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(d_bad, 0, sizeof(unsigned int), s));
	CHECK(cudaMemsetAsync(d_energy, 0, sizeof(unsigned long long), s));

	for (int step = 0; step < STEPS; step++) {
		synthesize<<<NFFT * CHANNELS / THREADS, THREADS, 0, s>>>(d_x, step);
		CHECK_LAUNCH();
		denoise(d_x, s);
		check<<<NFFT * CHANNELS / THREADS, THREADS, 0, s>>>(d_x, step, d_bad, d_energy);
		CHECK_LAUNCH();
	}

	CHECK(cudaMemcpyAsync(&h_bad, d_bad, sizeof h_bad, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpyAsync(&h_energy, d_energy, sizeof h_energy, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	corpus_expect("c33_cufft_plan_per_step", "samples off the clean tone", h_bad, 0);
	CHECK(cudaFree(d_x)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_bad)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_energy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	corpus_result("c33_cufft_plan_per_step", STEPS, h_energy);
	return 0;
}
