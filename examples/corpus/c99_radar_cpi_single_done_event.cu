/*
 * examples/corpus/c99_radar_cpi_single_done_event.cu: corpus workload (CUDA C + cuFFT). The
 * signal processor of a 16-channel FMCW imaging radar: every coherent processing interval (CPI)
 * the digitizer's pinned DMA ring holds 256 chirps x 2048 complex int16 samples per channel
 * (32 MB); the copy stream uploads the CPI into one of two raw device buffers, and the compute
 * stream converts it to complex floats, runs one 3-D cuFFT (range, Doppler, and across the
 * channels into 16 beams), takes the power and runs a cell-averaging CFAR over each beam's
 * range-Doppler map (818 training cells per cell). The detections go to a pinned ring on a
 * download stream, and the tracker reads CPI n-1's while CPI n is processed.
 * The raw buffers are double-buffered so that the upload of CPI n+1 overlaps the processing of
 * CPI n. But the pipeline keeps a single cpi_done event, recorded at the end of every CPI, and
 * the uploader waits on it before overwriting a raw buffer. cudaEventRecord "captures in event
 * the contents of stream at the time of this call" and "will overwrite the previously captured
 * state", and cudaStreamWaitEvent uses "the most recently captured state at the time of the API
 * call" (CUDA runtime API): the event holds only the newest CPI, so the upload of CPI n waits for
 * all of CPI n-1's processing, though its buffer was last read by CPI n-2's conversion kernel.
 * Copy and compute never overlap: every CPI takes the upload's time plus the processing's. One
 * event per raw buffer, recorded after the conversion kernel, fixes it (c104 is that fix).
 * Planted: the cudaStreamWaitEvent(upload, cpi_done) before each upload (one line; the event
 * record it waits on is an enqueue and costs nothing by itself).
 * Clean: the setup allocations and the cuFFT plan (its work area), the pinned DMA ring filled
 * once, the async upload from it, the detection download into the pinned ring on the download
 * stream, the tracker's cudaEventSynchronize one CPI behind, the last CPI's wait, teardown.
 * Targets sit on exact range, Doppler and beam bins, 100 dB above the noise floor: each CPI must
 * give exactly its targets' cells, which the tracker checks.
 */
// CORPUS-LDLIBS: -lcufft
#include "corpus.h"

#include <cufft.h>
#include <math.h>
#include <stdlib.h>

enum { CPIS = 48, CHANNELS = 16, CHIRPS = 256, SAMPLES = 2048, CELLS = CHANNELS * CHIRPS * SAMPLES, PATTERNS = 4, TARGETS = 4, AMPLITUDE = 100, DITHER = 3, GUARD_R = 2, TRAIN_R = 24, GUARD_D = 1, TRAIN_D = 8, MAX_DET = 64, THREADS = 256, RAW_SLOTS = 2, DET_SLOTS = 2 };

#define TRAINING_CELLS ((2 * TRAIN_R + 1) * (2 * TRAIN_D + 1) - (2 * GUARD_R + 1) * (2 * GUARD_D + 1))
#define ALPHA 1000.0f /* 30 dB over the training average */

#define CHECK_FFT(call)                                                                            \
	do {                                                                                       \
		cufftResult check_fft_ = (call);                                                   \
		if (check_fft_ != CUFFT_SUCCESS) {                                                 \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)check_fft_); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* the scenario: target t of pattern p, on exact bins, one beam each */
static int target_beam(int p, int t) { return (2 * t + p) % CHANNELS; }
static int target_doppler(int p, int t) { return (13 + 57 * t + 11 * p) % CHIRPS; }
static int target_range(int p, int t) { return TRAIN_R + 1 + (t * 509 + p * 97) % (SAMPLES - 2 * TRAIN_R - 2); }
static uint32_t target_cell(int p, int t) { return (uint32_t)((target_beam(p, t) * CHIRPS + target_doppler(p, t)) * SAMPLES + target_range(p, t)); }

struct detections {
	unsigned int count;
	unsigned int cell[MAX_DET];
};

__global__ void to_complex(const short2 *raw, cufftComplex *cube)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < CELLS)
		cube[i] = make_cuComplex((float)raw[i].x, (float)raw[i].y);
}

__global__ void power(const cufftComplex *cube, float *map)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < CELLS)
		map[i] = cube[i].x * cube[i].x + cube[i].y * cube[i].y;
}

/* cell-averaging CFAR in each beam's range-Doppler map (Doppler wraps, range edges skipped) */
__global__ void cfar(const float *map, struct detections *det)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= CELLS)
		return;
	int k = i % SAMPLES, d = i / SAMPLES % CHIRPS, b = i / (SAMPLES * CHIRPS);
	if (k < TRAIN_R || k >= SAMPLES - TRAIN_R)
		return;
	const float *beam = map + (size_t)b * CHIRPS * SAMPLES;
	float sum = 0.0f;
	for (int dd = -TRAIN_D; dd <= TRAIN_D; dd++) {
		const float *row = beam + (size_t)((d + dd + CHIRPS) % CHIRPS) * SAMPLES + k;
		for (int kk = -TRAIN_R; kk <= TRAIN_R; kk++)
			if (dd < -GUARD_D || dd > GUARD_D || kk < -GUARD_R || kk > GUARD_R)
				sum += row[kk];
	}
	if (beam[(size_t)d * SAMPLES + k] > ALPHA / TRAINING_CELLS * sum) {
		unsigned int slot = atomicAdd(&det->count, 1u);
		if (slot < MAX_DET)
			det->cell[slot] = (unsigned int)i;
	}
}

/* the recorded scenario, as the digitizer delivers it: int16 I/Q with dither */
static void fill_cpi(int p, short2 *out)
{
	static double rr[TARGETS][SAMPLES], ri[TARGETS][SAMPLES];
	const double two_pi = 6.283185307179586;
	for (int t = 0; t < TARGETS; t++)
		for (int n = 0; n < SAMPLES; n++) {
			rr[t][n] = cos(two_pi * (target_range(p, t) * n % SAMPLES) / SAMPLES);
			ri[t][n] = sin(two_pi * (target_range(p, t) * n % SAMPLES) / SAMPLES);
		}
	for (int cm = 0; cm < CHANNELS * CHIRPS; cm++) {
		int c = cm / CHIRPS, m = cm % CHIRPS;
		double cr[TARGETS], ci[TARGETS];
		for (int t = 0; t < TARGETS; t++) {
			double ph = two_pi * ((double)(target_beam(p, t) * c % CHANNELS) / CHANNELS + (double)(target_doppler(p, t) * m % CHIRPS) / CHIRPS);
			cr[t] = AMPLITUDE * cos(ph);
			ci[t] = AMPLITUDE * sin(ph);
		}
		for (int n = 0; n < SAMPLES; n++) {
			uint32_t h = mix32((uint32_t)(p * CELLS + cm * SAMPLES + n));
			double re = (int)(h % (2 * DITHER + 1)) - DITHER + ((h >> 8) & 1023u) / 1024.0 - 0.5;
			double im = (int)((h >> 20) % (2 * DITHER + 1)) - DITHER + ((h >> 4) & 255u) / 256.0 - 0.5;
			for (int t = 0; t < TARGETS; t++) {
				re += cr[t] * rr[t][n] - ci[t] * ri[t][n];
				im += cr[t] * ri[t][n] + ci[t] * rr[t][n];
			}
			out[(size_t)cm * SAMPLES + n] = make_short2((short)lrint(re), (short)lrint(im)); /* the ADC's rounding */
		}
	}
}

static int cmp_uint(const void *a, const void *b) { return *(const unsigned int *)a < *(const unsigned int *)b ? -1 : *(const unsigned int *)a > *(const unsigned int *)b; }

/* the tracker: CPI n's detections must be exactly its pattern's target cells */
static unsigned long long track(const char *name, const struct detections *det, int cpi, unsigned long long checksum)
{
	unsigned int got[MAX_DET], want[TARGETS];
	corpus_expect(name, "detections", det->count, TARGETS);
	for (int t = 0; t < TARGETS; t++) {
		got[t] = det->cell[t];
		want[t] = target_cell(cpi % PATTERNS, t);
	}
	qsort(got, TARGETS, sizeof got[0], cmp_uint);
	qsort(want, TARGETS, sizeof want[0], cmp_uint);
	for (int t = 0; t < TARGETS; t++) {
		corpus_expect(name, "detected cell", got[t], want[t]);
		checksum = checksum * 1000003u + got[t];
	}
	return checksum;
}

int main(void)
{
	const char *name = "c99_radar_cpi_single_done_event";
	const size_t raw_bytes = (size_t)CELLS * sizeof(short2);
	cudaStream_t upload, compute, download;
	short2 *h_ring[PATTERNS], *d_raw[RAW_SLOTS];
	cufftComplex *d_cube;
	float *d_map;
	struct detections *d_det, *h_det;
	cudaEvent_t uploaded[RAW_SLOTS], cpi_done, downloaded[DET_SLOTS];
	cufftHandle plan;
	CHECK(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&download, cudaStreamNonBlocking));
	for (int p = 0; p < PATTERNS; p++) {
		CHECK(cudaMallocHost(&h_ring[p], raw_bytes)); // SYNCSPY-CLEAN: setup pinned allocation, the digitizer's DMA ring
		fill_cpi(p, h_ring[p]);
	}
	for (int s = 0; s < RAW_SLOTS; s++) {
		CHECK(cudaMalloc(&d_raw[s], raw_bytes)); // SYNCSPY-CLEAN: setup allocation, a raw buffer
		CHECK(cudaEventCreateWithFlags(&uploaded[s], cudaEventDisableTiming));
	}
	CHECK(cudaMalloc(&d_cube, (size_t)CELLS * sizeof(cufftComplex))); // SYNCSPY-CLEAN: setup allocation, the data cube
	CHECK(cudaMalloc(&d_map, (size_t)CELLS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation, the power maps
	CHECK(cudaMalloc(&d_det, DET_SLOTS * sizeof(struct detections))); // SYNCSPY-CLEAN: setup allocation, the detection lists
	CHECK(cudaMallocHost(&h_det, DET_SLOTS * sizeof(struct detections))); // SYNCSPY-CLEAN: setup pinned allocation, the detection ring
	CHECK(cudaEventCreateWithFlags(&cpi_done, cudaEventDisableTiming));
	for (int s = 0; s < DET_SLOTS; s++)
		CHECK(cudaEventCreateWithFlags(&downloaded[s], cudaEventDisableTiming));
	CHECK_FFT(cufftPlan3d(&plan, CHANNELS, CHIRPS, SAMPLES, CUFFT_C2C)); // SYNCSPY-CLEAN: setup, the plan and its work area, once
	CHECK_FFT(cufftSetStream(plan, compute));

	unsigned long long checksum = 0;
	for (int cpi = 0; cpi <= CPIS; cpi++) {
		if (cpi < CPIS) {
			int s = cpi % RAW_SLOTS, q = cpi % DET_SLOTS;
			CHECK(cudaStreamWaitEvent(upload, cpi_done, 0)); // SYNCSPY-PROBLEM: the event holds the newest CPI: the upload waits for all of CPI n-1, so copy and compute never overlap
			CHECK(cudaMemcpyAsync(d_raw[s], h_ring[cpi % PATTERNS], raw_bytes, cudaMemcpyHostToDevice, upload)); // SYNCSPY-CLEAN: async from the pinned DMA ring on the upload stream
			CHECK(cudaEventRecord(uploaded[s], upload));
			CHECK(cudaStreamWaitEvent(compute, uploaded[s], 0));
			to_complex<<<CELLS / THREADS, THREADS, 0, compute>>>(d_raw[s], d_cube);
			CHECK_LAUNCH();
			CHECK_FFT(cufftExecC2C(plan, d_cube, d_cube, CUFFT_FORWARD));
			power<<<CELLS / THREADS, THREADS, 0, compute>>>(d_cube, d_map);
			CHECK_LAUNCH();
			CHECK(cudaStreamWaitEvent(compute, downloaded[q], 0));
			CHECK(cudaMemsetAsync(&d_det[q].count, 0, sizeof(unsigned int), compute));
			cfar<<<CELLS / THREADS, THREADS, 0, compute>>>(d_map, &d_det[q]);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(cpi_done, compute));
			CHECK(cudaStreamWaitEvent(download, cpi_done, 0));
			CHECK(cudaMemcpyAsync(&h_det[q], &d_det[q], sizeof(struct detections), cudaMemcpyDeviceToHost, download)); // SYNCSPY-CLEAN: the CPI's detections, async into the pinned ring on the download stream
			CHECK(cudaEventRecord(downloaded[q], download));
		}
		if (cpi >= 1) {
			int prev = cpi - 1;
			CHECK(cudaEventSynchronize(downloaded[prev % DET_SLOTS])); // SYNCSPY-CLEAN: one CPI behind: the tracker takes CPI n-1 while CPI n is processed (the last one after the loop)
			checksum = track(name, &h_det[prev % DET_SLOTS], prev, checksum);
		}
	}

	CHECK_FFT(cufftDestroy(plan)); // SYNCSPY-CLEAN: teardown, the plan's work area freed
	for (int s = 0; s < RAW_SLOTS; s++) {
		CHECK(cudaFree(d_raw[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[s]));
	}
	for (int p = 0; p < PATTERNS; p++)
		CHECK(cudaFreeHost(h_ring[p])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_cube)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_map)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_det)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(h_det)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaEventDestroy(cpi_done));
	for (int s = 0; s < DET_SLOTS; s++)
		CHECK(cudaEventDestroy(downloaded[s]));
	CHECK(cudaStreamDestroy(upload));
	CHECK(cudaStreamDestroy(compute));
	CHECK(cudaStreamDestroy(download));
	corpus_result(name, CPIS, checksum);
	return 0;
}
