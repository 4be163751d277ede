/*
 * examples/corpus/c90_stellar_lines_stack_limit_scope.cu: corpus workload (CUDA C++). Spectrum
 * synthesis for a grid of stellar atmosphere models: for each of four models the formal solution
 * walks 16 layers outward; in every layer 512 spectral lines get Voigt profiles on a 2048-point
 * frequency grid, H(a,u) = a/pi * integral of exp(-t^2) / ((u-t)^2 + a^2) dt, each integral by
 * recursive adaptive Simpson quadrature (split at the line core, refined to 1e-9), a continuum
 * kernel on a second stream gives the layer's continuum opacity, and the transfer kernel sums the
 * opacities and updates the emergent intensity. The layer's line parameters come from the host
 * through a pinned double buffer on the line stream; after each model its emergent spectrum is
 * copied out once (the per-model checkpoint, outside the layer loop).
 * The recursive integrator needs a deeper per-thread stack than the default, so
 * integrate_profiles() opens a StackLimitScope around its launch: the guard saves the current
 * cudaLimitStackSize, raises it to 16 KB, and puts the old value back in its destructor, "so that
 * the 16 KB stack is not reserved while the rest of the pipeline runs". The runtime reference
 * says of cudaDeviceSetLimit that setting a limit "is a request by the application to update the
 * current limit maintained by the device", and the driver reference of the call underneath
 * (cuCtxSetLimit, CU_LIMIT_STACK_SIZE): "Setting this value will take effect immediately, and if
 * necessary, the device will block until all preceding requested tasks are complete." Changing
 * the stack size changes the local memory reserved for every resident thread, so it is necessary
 * here, twice a layer: the raise waits for the continuum kernel and the previous layer's transfer,
 * the restore waits for the profile kernel just launched. The continuum stream never overlaps the
 * line work, and the host cannot queue the next layer while the GPU runs. Setting the limit once
 * in setup (the 16 KB reserve is small next to the H100's memory) removes both waits.
 * Planted: cudaDeviceSetLimit(cudaLimitStackSize, ...) in StackLimitScope's constructor and its
 * restoring call in the destructor, every layer (one problem, two lines).
 * Clean: the setup allocations, the layer parameters uploaded async from the pinned double buffer
 * (its slot reused after a cudaEventSynchronize on the upload two layers back), the per-model
 * checkpoint (an async download into pinned memory and one stream sync, once per model outside the
 * layer loop), teardown. cudaDeviceGetLimit only reads the current value.
 */
#include "corpus.h"

#include <math.h>
#include <string.h>

enum { MODELS = 4, LAYERS = 16, LINES = 512, FREQS = 2048, EDGES = 2048, THREADS = 128, SLOTS = 2, CHECKED_FREQS = 8 };

#define INTEGRATOR_STACK_BYTES ((size_t)16 << 10)
#define T_EDGE 6.0        /* the profile integral runs over [-6, 6] */
#define INTEGRAL_EPS 1e-9 /* absolute, on each half of the integral */
#define MIN_LEVEL 3
#define MAX_LEVEL 30

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

__host__ __device__ static inline double unit(uint32_t h) { return (double)(h >> 8) * (1.0 / 16777216.0); }

/* --- the Voigt profile by recursive adaptive Simpson ---------------------------------------- */

__host__ __device__ static inline double voigt_integrand(double t, double a, double u)
{
	double d = u - t;
	return exp(-t * t) / (d * d + a * a);
}

__host__ __device__ static double simpson_refine(double a, double u, double lo, double hi, double flo, double fmid, double fhi, double whole, double eps, int level, unsigned *evals)
{
	double mid = 0.5 * (lo + hi), lm = 0.5 * (lo + mid), rm = 0.5 * (mid + hi);
	double flm = voigt_integrand(lm, a, u), frm = voigt_integrand(rm, a, u);
	*evals += 2;
	double left = (mid - lo) / 6.0 * (flo + 4.0 * flm + fmid);
	double right = (hi - mid) / 6.0 * (fmid + 4.0 * frm + fhi);
	double delta = left + right - whole;
	if (level >= MAX_LEVEL || (level >= MIN_LEVEL && fabs(delta) <= 15.0 * eps))
		return left + right + delta / 15.0;
	return simpson_refine(a, u, lo, mid, flo, flm, fmid, left, 0.5 * eps, level + 1, evals) +
	       simpson_refine(a, u, mid, hi, fmid, frm, fhi, right, 0.5 * eps, level + 1, evals);
}

__host__ __device__ static double simpson(double a, double u, double lo, double hi, unsigned *evals)
{
	double flo = voigt_integrand(lo, a, u), fhi = voigt_integrand(hi, a, u), fmid = voigt_integrand(0.5 * (lo + hi), a, u);
	*evals += 3;
	return simpson_refine(a, u, lo, hi, flo, fmid, fhi, (hi - lo) / 6.0 * (flo + 4.0 * fmid + fhi), INTEGRAL_EPS, 0, evals);
}

/* H(a, u); the core t = u is a panel end when it lies inside [-6, 6] */
__host__ __device__ static double voigt(double a, double u, unsigned *evals)
{
	double sum;
	if (u > -T_EDGE && u < T_EDGE)
		sum = simpson(a, u, -T_EDGE, u, evals) + simpson(a, u, u, T_EDGE, evals);
	else
		sum = simpson(a, u, -T_EDGE, T_EDGE, evals);
	return a / M_PI * sum;
}

/* --- the model ------------------------------------------------------------------------------- */

struct layer_params {
	double center[LINES], doppler[LINES], damping[LINES], strength[LINES];
	double temperature, dz, source;
};

static double model_teff(int model) { return 4500.0 + 750.0 * model; }

static void fill_layer(struct layer_params *lp, int model, int layer)
{
	double t = model_teff(model) * (0.7 + 0.6 * (double)(LAYERS - 1 - layer) / (LAYERS - 1)); /* deep layers are hotter */
	lp->temperature = t;
	lp->dz = 0.02 + 0.01 * (layer % 3);
	lp->source = pow(t / 5000.0, 4.0);
	for (int l = 0; l < LINES; l++) {
		uint32_t h = mix32((uint32_t)l * 0x9e3779b1u + 7u);
		double mass = 1.0 + 55.0 * unit(h);
		lp->center[l] = 16.0 + (FREQS - 32.0) * unit(mix32(h + 1u));
		lp->doppler[l] = 2.0 + 6.0 * sqrt(t / 5000.0 / mass) * (1.0 + unit(mix32(h + 2u)));
		lp->damping[l] = 0.01 + 0.2 * unit(mix32(h + 3u)) * (t / 5000.0);
		lp->strength[l] = (0.5 + 20.0 * unit(mix32(h + 4u))) * exp(-2.0 * unit(mix32(h + 5u)) * 5000.0 / t);
	}
}

/* bound-free edges: each absorbs above its threshold frequency as (edge / nu)^3 */
__host__ __device__ static double continuum_opacity(double temperature, int j)
{
	double nu = 1.0 + j, k = 0.0;
	for (int e = 0; e < EDGES; e++) {
		double edge = 1.0 + (double)(mix32((uint32_t)e + 0x51u) % FREQS);
		if (nu >= edge) {
			double r = edge / nu;
			k += r * r * r * (1e-4 + 1e-4 * (e % 7)) * (temperature / 5000.0);
		}
	}
	return k;
}

__global__ void continuum(double temperature, double *kc)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j < FREQS)
		kc[j] = continuum_opacity(temperature, j);
}

/* H[l][j] for every line l and frequency j; the evaluation count for the model's statistics */
__global__ void voigt_profiles(const struct layer_params *lp, double *H, unsigned long long *evals)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x, l = i / FREQS, j = i % FREQS;
	unsigned n = 0;
	if (l < LINES) {
		double a = lp->damping[l] / lp->doppler[l], u = ((double)j - lp->center[l]) / lp->doppler[l];
		H[i] = voigt(a, u, &n);
	}
	for (int o = 16; o > 0; o >>= 1)
		n += __shfl_down_sync(0xffffffffu, n, o);
	if ((threadIdx.x & 31) == 0)
		atomicAdd(evals, (unsigned long long)n);
}

struct model_result {
	double intensity[FREQS];
	unsigned long long evals;
};

__global__ void set_boundary(double source, struct model_result *res)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j < FREQS)
		res->intensity[j] = source;
	if (j == 0)
		res->evals = 0;
}

__host__ __device__ static inline double transfer_step(double intensity, double kappa, double dz, double source)
{
	double att = exp(-kappa * dz);
	return intensity * att + source * (1.0 - att);
}

__global__ void transfer(const struct layer_params *lp, const double *H, const double *kc, struct model_result *res)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= FREQS)
		return;
	double kappa = kc[j];
	for (int l = 0; l < LINES; l++)
		kappa += lp->strength[l] * H[(size_t)l * FREQS + j];
	res->intensity[j] = transfer_step(res->intensity[j], kappa, lp->dz, lp->source);
}

/* --- the stack guard ------------------------------------------------------------------------- */

/* Raises the per-thread stack for the recursive integrator and puts the previous limit back on
 * scope exit, so that the large stack is reserved only while the integrator needs it. */
class StackLimitScope {
public:
	explicit StackLimitScope(size_t bytes)
	{
		CHECK(cudaDeviceGetLimit(&saved_, cudaLimitStackSize));
		CHECK(cudaDeviceSetLimit(cudaLimitStackSize, bytes)); // SYNCSPY-PROBLEM: changing the stack limit blocks until all preceding device work is complete ("if necessary"): the continuum and the previous layer, every layer
	}
	~StackLimitScope()
	{
		CHECK(cudaDeviceSetLimit(cudaLimitStackSize, saved_)); // SYNCSPY-PROBLEM: the restore blocks until the profile kernel just launched is complete, every layer
	}
	StackLimitScope(const StackLimitScope &) = delete;
	StackLimitScope &operator=(const StackLimitScope &) = delete;

private:
	size_t saved_;
};

/* --- the synthesis pipeline ------------------------------------------------------------------ */

struct synth {
	cudaStream_t lines, cont;
	struct layer_params *d_params[SLOTS], *h_params[SLOTS];
	double *d_H, *d_kc[SLOTS];
	struct model_result *d_result, *h_result;
	cudaEvent_t uploaded[SLOTS], cont_done[SLOTS], transferred[SLOTS];
};

static void integrate_profiles(struct synth *sy, int s)
{
	StackLimitScope stack(INTEGRATOR_STACK_BYTES);
	voigt_profiles<<<LINES * FREQS / THREADS, THREADS, 0, sy->lines>>>(sy->d_params[s], sy->d_H, &sy->d_result->evals);
	CHECK_LAUNCH();
}

static void solve_layer(struct synth *sy, int model, int layer, int step)
{
	int s = step % SLOTS;
	if (step >= SLOTS)
		CHECK(cudaEventSynchronize(sy->uploaded[s])); // SYNCSPY-CLEAN: the pinned double buffer: the upload from this slot two layers back
	fill_layer(sy->h_params[s], model, layer);
	CHECK(cudaMemcpyAsync(sy->d_params[s], sy->h_params[s], sizeof(struct layer_params), cudaMemcpyHostToDevice, sy->lines)); // SYNCSPY-CLEAN: async from the pinned slot on the line stream
	CHECK(cudaEventRecord(sy->uploaded[s], sy->lines));
	if (step >= SLOTS)
		CHECK(cudaStreamWaitEvent(sy->cont, sy->transferred[s], 0));
	continuum<<<FREQS / THREADS, THREADS, 0, sy->cont>>>(sy->h_params[s]->temperature, sy->d_kc[s]);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(sy->cont_done[s], sy->cont));
	integrate_profiles(sy, s);
	CHECK(cudaStreamWaitEvent(sy->lines, sy->cont_done[s], 0));
	transfer<<<FREQS / THREADS, THREADS, 0, sy->lines>>>(sy->d_params[s], sy->d_H, sy->d_kc[s], sy->d_result);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(sy->transferred[s], sy->lines));
}

/* the CPU's formal solution at a few frequencies, each next to a line core */
static void reference_model(int model, const int *freqs, double *want)
{
	struct layer_params *lp = (struct layer_params *)malloc(sizeof *lp);
	unsigned evals = 0;
	fill_layer(lp, model, 0);
	for (int k = 0; k < CHECKED_FREQS; k++)
		want[k] = lp->source;
	for (int layer = 0; layer < LAYERS; layer++) {
		fill_layer(lp, model, layer);
		for (int k = 0; k < CHECKED_FREQS; k++) {
			int j = freqs[k];
			double kappa = continuum_opacity(lp->temperature, j);
			for (int l = 0; l < LINES; l++)
				kappa += lp->strength[l] * voigt(lp->damping[l] / lp->doppler[l], ((double)j - lp->center[l]) / lp->doppler[l], &evals);
			want[k] = transfer_step(want[k], kappa, lp->dz, lp->source);
		}
	}
	free(lp);
}

int main(void)
{
	const char *name = "c90_stellar_lines_stack_limit_scope";
	struct synth sy;
	static double spectra[MODELS][FREQS];
	unsigned long long evals[MODELS];

	CHECK(cudaStreamCreateWithFlags(&sy.lines, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&sy.cont, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&sy.d_H, (size_t)LINES * FREQS * sizeof(double))); // SYNCSPY-CLEAN: setup allocation, the profiles
	CHECK(cudaMalloc(&sy.d_result, sizeof(struct model_result))); // SYNCSPY-CLEAN: setup allocation, the emergent spectrum
	CHECK(cudaMallocHost(&sy.h_result, sizeof(struct model_result))); // SYNCSPY-CLEAN: setup pinned allocation, the checkpoint buffer
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&sy.d_params[s], sizeof(struct layer_params))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMalloc(&sy.d_kc[s], FREQS * sizeof(double))); // SYNCSPY-CLEAN: setup allocation
		CHECK(cudaMallocHost(&sy.h_params[s], sizeof(struct layer_params))); // SYNCSPY-CLEAN: setup pinned allocation, a parameter slot
		CHECK(cudaEventCreateWithFlags(&sy.uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&sy.cont_done[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&sy.transferred[s], cudaEventDisableTiming));
	}

	int step = 0;
	for (int model = 0; model < MODELS; model++) {
		struct layer_params bottom;
		fill_layer(&bottom, model, 0);
		set_boundary<<<FREQS / THREADS, THREADS, 0, sy.lines>>>(bottom.source, sy.d_result);
		CHECK_LAUNCH();
		for (int layer = 0; layer < LAYERS; layer++, step++)
			solve_layer(&sy, model, layer, step);
		/* the model's checkpoint: its emergent spectrum, once per model */
		CHECK(cudaMemcpyAsync(sy.h_result, sy.d_result, sizeof(struct model_result), cudaMemcpyDeviceToHost, sy.lines)); // SYNCSPY-CLEAN: per-model checkpoint into pinned memory, outside the layer loop
		CHECK(cudaStreamSynchronize(sy.lines)); // SYNCSPY-CLEAN: per-model checkpoint, outside the layer loop
		memcpy(spectra[model], sy.h_result->intensity, sizeof spectra[model]);
		evals[model] = sy.h_result->evals;
	}

	/* the CPU's check at frequencies next to the first lines' cores, every model */
	struct layer_params *lp0 = (struct layer_params *)malloc(sizeof *lp0);
	fill_layer(lp0, 0, 0);
	int freqs[CHECKED_FREQS];
	for (int k = 0; k < CHECKED_FREQS; k++)
		freqs[k] = (int)lrint(lp0->center[k * 61]);
	free(lp0);
	unsigned long long checksum = 0;
	for (int model = 0; model < MODELS; model++) {
		double want[CHECKED_FREQS];
		reference_model(model, freqs, want);
		for (int k = 0; k < CHECKED_FREQS; k++) {
			double got = spectra[model][freqs[k]];
			if (!(fabs(got - want[k]) <= 1e-6 * fabs(want[k]) + 1e-12)) {
				fprintf(stderr, "%s: model %d frequency %d: intensity %.12g, want %.12g\n", name, model, freqs[k], got, want[k]);
				return 1;
			}
		}
		corpus_expect(name, "evaluations above the minimum", evals[model] >= (unsigned long long)LAYERS * LINES * FREQS * 9, 1);
		for (int j = 0; j < FREQS; j++)
			checksum = checksum * 1000003u + (unsigned long long)llrint(spectra[model][j] * 1e6);
		checksum = checksum * 31u + evals[model];
	}

	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaFree(sy.d_params[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFree(sy.d_kc[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(sy.h_params[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(sy.uploaded[s]));
		CHECK(cudaEventDestroy(sy.cont_done[s]));
		CHECK(cudaEventDestroy(sy.transferred[s]));
	}
	CHECK(cudaFree(sy.d_H)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(sy.d_result)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFreeHost(sy.h_result)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(sy.lines));
	CHECK(cudaStreamDestroy(sy.cont));
	corpus_result(name, MODELS * LAYERS, checksum);
	return 0;
}
