/*
 * examples/corpus/c89_hyperspectral_unmix_cublas_session_per_cube.cu: corpus workload (CUDA C++ +
 * cuBLAS). The unmixing stage of an airborne imaging spectrometer's ground processor: every frame
 * the sensor stand-in writes a 224-band cube of 512K pixels (dark-corrected digital numbers, 0..15)
 * into device memory, a cublasSgemm projects every pixel's spectrum onto a 64-vector endmember
 * basis (64 x 512K abundance scores), and a classifier counts each pixel's dominant endmember into
 * a per-frame report that leaves the GPU through a two-slot pinned ring on a copy stream. The host
 * reads frame f-1's report while frame f runs (a one-behind cudaEventSynchronize), checks its
 * sampled pixels against a CPU projection, and writes the next frame's dark offsets into a pinned
 * double buffer that is uploaded on the compute stream.
 * The GEMM goes through BlasSession, a small RAII wrapper written "so that no handle leaks when a
 * cube is dropped": project_cube() makes one on the stack for every cube. Its constructor calls
 * cublasCreate and its destructor cublasDestroy, every frame. The cuBLAS documentation
 * (cublasCreate, cublasDestroy): cublasCreate "allocates hardware resources on the host and
 * device", and "because cublasCreate() allocates some internal resources and the release of those
 * resources by calling cublasDestroy() will implicitly call cudaDeviceSynchronize(), it is
 * recommended to minimize the number of times these functions are called". So the destructor at
 * the end of project_cube() waits, every frame, for the whole device: the cube synthesis and the
 * GEMM just queued, and the copy stream. The classifier is not queued until the GEMM has finished,
 * the GPU idles while the host creates the next frame's handle and checks reports, and the
 * one-behind ring finds every report already complete. One handle made once for the run and bound
 * to the compute stream fixes it (c95 is that fix).
 * Planted: cublasCreate in BlasSession's constructor and cublasDestroy in its destructor, run for
 * every cube by project_cube() (one problem, two lines).
 * Clean: the setup allocations and the basis's one upload, the dark offsets uploaded async from a
 * pinned double buffer (its slot reused after a cudaEventSynchronize on the upload two frames
 * back), the report downloaded into the pinned ring on the copy stream and read one frame behind,
 * the last report's wait after the loop, teardown.
 * Scores are integers (DN 0..15 times basis entries -4..4, 224 terms) held in floats: exact in any
 * summation order, so the GPU's scores equal the CPU's.
 */
// CORPUS-LDLIBS: -lcublas
#include "corpus.h"

#include <cublas_v2.h>

enum { FRAMES = 48, BANDS = 224, PIXELS = 1 << 19, COMPONENTS = 64, MATERIALS = 8, SAMPLES = 16, THREADS = 256, SLOTS = 2 };

#define WORKSPACE_BYTES ((size_t)32 << 20)
#define SCORE_BIAS 20000

#define CHECK_BLAS(call)                                                                           \
	do {                                                                                       \
		cublasStatus_t check_blas_ = (call);                                               \
		if (check_blas_ != CUBLAS_STATUS_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
				(int)check_blas_);                                                 \
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

/* the scene: runs of 4096 pixels of one material, drifting by three materials a frame */
__host__ __device__ static inline int material_of(int frame, uint32_t p) { return (int)(((p >> 12) + (uint32_t)frame * 3u) % MATERIALS); }
__host__ __device__ static inline int signature(int m, int b) { return (int)(mix32((uint32_t)m * 257u + (uint32_t)b * 0x9e3779b1u) % 12u) + 2; }
__host__ __device__ static inline int raw_dn(int frame, uint32_t p, int b)
{
	uint32_t h = mix32(p * 0x85ebca77u ^ (uint32_t)b * 0xc2b2ae3du ^ (uint32_t)frame * 0x27d4eb2fu);
	return signature(material_of(frame, p), b) + (int)(h % 5u) - 2; /* 0..15 */
}
__host__ __device__ static inline int dark_offset(int frame, int b) { return (int)(mix32((uint32_t)frame * 131u + (uint32_t)b) % 4u); }
__host__ __device__ static inline int calibrated(int raw, int dark) { return raw > dark ? raw - dark : 0; }
__host__ __device__ static inline int basis_entry(int c, int b) { return (int)(mix32((uint32_t)c * 7919u + (uint32_t)b * 31u + 5u) % 9u) - 4; }
__host__ __device__ static inline uint32_t sample_pixel(int frame, int k) { return mix32((uint32_t)(frame * SAMPLES + k) + 99u) % PIXELS; }

struct frame_report {
	int hist[COMPONENTS];              /* pixels per dominant endmember */
	unsigned long long score_sum;      /* sum of (best score + SCORE_BIAS) */
	float sample[SAMPLES][COMPONENTS]; /* the sampled pixels' scores, for the host's check */
};

/* cube: BANDS x PIXELS, column-major (a pixel's spectrum is contiguous) */
__global__ void synthesize_cube(int frame, const uint8_t *dark, float *cube)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* BANDS * PIXELS < 2^31 */
	if (i >= (uint32_t)BANDS * PIXELS)
		return;
	uint32_t p = i / BANDS;
	int b = (int)(i % BANDS);
	cube[i] = (float)calibrated(raw_dn(frame, p, b), dark[b]);
}

/* scores: COMPONENTS x PIXELS, column-major; one thread per pixel */
__global__ void classify(const float *scores, struct frame_report *rep)
{
	__shared__ int s_hist[COMPONENTS];
	__shared__ unsigned long long s_sum;
	int t = threadIdx.x;
	if (t < COMPONENTS)
		s_hist[t] = 0;
	if (t == 0)
		s_sum = 0;
	__syncthreads();
	uint32_t p = blockIdx.x * blockDim.x + t;
	if (p < PIXELS) {
		const float *col = scores + (size_t)p * COMPONENTS;
		int best = 0, bs = (int)col[0];
		for (int c = 1; c < COMPONENTS; c++) {
			int s = (int)col[c];
			if (s > bs) {
				bs = s;
				best = c;
			}
		}
		atomicAdd(&s_hist[best], 1);
		atomicAdd(&s_sum, (unsigned long long)(bs + SCORE_BIAS));
	}
	__syncthreads();
	if (t < COMPONENTS)
		atomicAdd(&rep->hist[t], s_hist[t]);
	if (t == 0)
		atomicAdd(&rep->score_sum, s_sum);
}

__global__ void gather_samples(int frame, const float *scores, struct frame_report *rep)
{
	int k = blockIdx.x, c = threadIdx.x;
	rep->sample[k][c] = scores[(size_t)sample_pixel(frame, k) * COMPONENTS + c];
}

/* --- the cuBLAS wrapper ------------------------------------------------------------------------- */

/* One handle per session, bound to the caller's stream and workspace. */
class BlasSession {
public:
	BlasSession(cudaStream_t stream, void *workspace, size_t bytes)
	{
		CHECK_BLAS(cublasCreate(&handle_)); // SYNCSPY-PROBLEM: a new handle for every cube: cublasCreate allocates hardware resources on the host and device, every frame
		CHECK_BLAS(cublasSetStream(handle_, stream));
		CHECK_BLAS(cublasSetWorkspace(handle_, workspace, bytes));
	}
	~BlasSession()
	{
		CHECK_BLAS(cublasDestroy(handle_)); // SYNCSPY-PROBLEM: cublasDestroy implicitly calls cudaDeviceSynchronize: the end of project_cube() waits for the whole device, every frame
	}
	BlasSession(const BlasSession &) = delete;
	BlasSession &operator=(const BlasSession &) = delete;
	cublasHandle_t get() const { return handle_; }

private:
	cublasHandle_t handle_;
};

/* --- the unmixing pipeline ---------------------------------------------------------------------- */

struct unmix_pipeline {
	cudaStream_t compute, copy;
	float *d_cube, *d_scores, *d_basis;
	void *d_workspace;
	uint8_t *d_dark[SLOTS], *h_dark[SLOTS];
	struct frame_report *d_report[SLOTS], *h_report[SLOTS];
	cudaEvent_t dark_uploaded[SLOTS], classified[SLOTS], downloaded[SLOTS];
};

/* the next frame's dark offsets, from the detector's housekeeping, into the pinned slot */
static void upload_dark(struct unmix_pipeline *up, int frame)
{
	int s = frame % SLOTS;
	if (frame >= SLOTS)
		CHECK(cudaEventSynchronize(up->dark_uploaded[s])); // SYNCSPY-CLEAN: the pinned double buffer: the upload from this slot two frames back, long done
	for (int b = 0; b < BANDS; b++)
		up->h_dark[s][b] = (uint8_t)dark_offset(frame, b);
	CHECK(cudaMemcpyAsync(up->d_dark[s], up->h_dark[s], BANDS, cudaMemcpyHostToDevice, up->compute)); // SYNCSPY-CLEAN: async from the pinned slot, on the stream that uses it
	CHECK(cudaEventRecord(up->dark_uploaded[s], up->compute));
}

/* abundance scores = basis^T * cube: (COMPONENTS x BANDS) * (BANDS x PIXELS) */
static void project_cube(struct unmix_pipeline *up)
{
	BlasSession blas(up->compute, up->d_workspace, WORKSPACE_BYTES); /* one session per cube: nothing leaks if a cube is dropped */
	const float one = 1.0f, zero = 0.0f;
	CHECK_BLAS(cublasSgemm(blas.get(), CUBLAS_OP_T, CUBLAS_OP_N, COMPONENTS, PIXELS, BANDS, &one, up->d_basis, BANDS, up->d_cube, BANDS, &zero, up->d_scores, COMPONENTS));
}

static void process_frame(struct unmix_pipeline *up, int frame)
{
	int s = frame % SLOTS;
	upload_dark(up, frame);
	synthesize_cube<<<(BANDS * PIXELS + THREADS - 1) / THREADS, THREADS, 0, up->compute>>>(frame, up->d_dark[s], up->d_cube);
	CHECK_LAUNCH();
	project_cube(up);
	if (frame >= SLOTS)
		CHECK(cudaStreamWaitEvent(up->compute, up->downloaded[s], 0));
	CHECK(cudaMemsetAsync(up->d_report[s], 0, sizeof(struct frame_report), up->compute));
	classify<<<PIXELS / THREADS, THREADS, 0, up->compute>>>(up->d_scores, up->d_report[s]);
	CHECK_LAUNCH();
	gather_samples<<<SAMPLES, COMPONENTS, 0, up->compute>>>(frame, up->d_scores, up->d_report[s]);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(up->classified[s], up->compute));
	CHECK(cudaStreamWaitEvent(up->copy, up->classified[s], 0));
	CHECK(cudaMemcpyAsync(up->h_report[s], up->d_report[s], sizeof(struct frame_report), cudaMemcpyDeviceToHost, up->copy)); // SYNCSPY-CLEAN: the report, async into the pinned ring slot on the copy stream
	CHECK(cudaEventRecord(up->downloaded[s], up->copy));
}

/* --- the host side: frame f-1's report while frame f runs --------------------------------------- */

struct frame_log {
	unsigned long long checksum;
	int checked_pixels;
};

static void consume_report(const char *name, struct unmix_pipeline *up, const float *basis, int frame, struct frame_log *log)
{
	int s = frame % SLOTS;
	CHECK(cudaEventSynchronize(up->downloaded[s])); // SYNCSPY-CLEAN: one frame behind: frame f-1's report while frame f runs (the last one after the loop)
	const struct frame_report *rep = up->h_report[s];
	long long pixels = 0;
	for (int c = 0; c < COMPONENTS; c++) {
		pixels += rep->hist[c];
		log->checksum = log->checksum * 1000003u + (unsigned long long)rep->hist[c];
	}
	corpus_expect(name, "classified pixels", pixels, PIXELS);
	log->checksum = log->checksum * 31u + rep->score_sum;
	int spectrum[BANDS];
	for (int k = 0; k < SAMPLES; k++) {
		uint32_t p = sample_pixel(frame, k);
		for (int b = 0; b < BANDS; b++)
			spectrum[b] = calibrated(raw_dn(frame, p, b), dark_offset(frame, b));
		for (int c = 0; c < COMPONENTS; c++) {
			int want = 0;
			for (int b = 0; b < BANDS; b++)
				want += (int)basis[(size_t)c * BANDS + b] * spectrum[b];
			corpus_expect(name, "abundance score", (long long)rep->sample[k][c], want);
		}
		log->checked_pixels++;
	}
}

int main(void)
{
	const char *name = "c89_hyperspectral_unmix_cublas_session_per_cube";
	struct unmix_pipeline up;
	struct frame_log log = {0, 0};

	CHECK(cudaStreamCreateWithFlags(&up.compute, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&up.copy, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&up.d_cube, (size_t)BANDS * PIXELS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation, the cube
	CHECK(cudaMalloc(&up.d_scores, (size_t)COMPONENTS * PIXELS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation, the abundance scores
	CHECK(cudaMalloc(&up.d_basis, (size_t)COMPONENTS * BANDS * sizeof(float))); // SYNCSPY-CLEAN: setup allocation, the endmember basis
	CHECK(cudaMalloc(&up.d_workspace, WORKSPACE_BYTES)); // SYNCSPY-CLEAN: setup allocation, cuBLAS's workspace
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&up.d_dark[s], BANDS)); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&up.d_report[s], sizeof(struct frame_report))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&up.h_dark[s], BANDS)); // SYNCSPY-CLEAN: setup pinned allocation, a dark-offset slot
		CHECK(cudaMallocHost(&up.h_report[s], sizeof(struct frame_report))); // SYNCSPY-CLEAN: setup pinned allocation, a report slot
		CHECK(cudaEventCreateWithFlags(&up.dark_uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&up.classified[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&up.downloaded[s], cudaEventDisableTiming));
	}
	float *h_basis = (float *)malloc((size_t)COMPONENTS * BANDS * sizeof(float));
	for (int c = 0; c < COMPONENTS; c++)
		for (int b = 0; b < BANDS; b++)
			h_basis[(size_t)c * BANDS + b] = (float)basis_entry(c, b);
	CHECK(cudaMemcpy(up.d_basis, h_basis, (size_t)COMPONENTS * BANDS * sizeof(float), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the basis once

	for (int frame = 0; frame < FRAMES; frame++) {
		process_frame(&up, frame);
		if (frame >= 1)
			consume_report(name, &up, h_basis, frame - 1, &log);
	}
	consume_report(name, &up, h_basis, FRAMES - 1, &log);
	corpus_expect(name, "checked pixels", log.checked_pixels, (long long)FRAMES * SAMPLES);

	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaFree(up.d_dark[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(up.d_report[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(up.h_dark[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(up.h_report[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(up.dark_uploaded[s]));
		CHECK(cudaEventDestroy(up.classified[s]));
		CHECK(cudaEventDestroy(up.downloaded[s]));
	}
	CHECK(cudaFree(up.d_cube)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(up.d_scores)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(up.d_basis)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(up.d_workspace)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(up.compute));
	CHECK(cudaStreamDestroy(up.copy));
	free(h_basis);
	corpus_result(name, FRAMES, log.checksum);
	return 0;
}
