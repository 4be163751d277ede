/*
 * examples/corpus/d17_module_load_per_step.c: corpus workload (CUDA driver API). A simulation
 * pipeline with a pluggable post-processing stage: the stage's kernel is named in the
 * configuration and resolved from a plugin cubin through a small plugin registry. The
 * registry's plugin_resolve() was written for hot reloading and has no cache: every call loads
 * the plugin cubin again with cuModuleLoad (the file read and parsed, a new module created in
 * the context) and looks the kernel up with cuModuleGetFunction (with lazy loading, the
 * default, this is where the kernel's code is loaded onto the device), and the pipeline calls
 * it every step. The loaded modules are kept and unloaded at shutdown. Resolving the stage
 * once in setup, as the pipeline does for its own kernels, is the fix.
 * Planted: the cuModuleLoad and the cuModuleGetFunction in plugin_resolve(), every step.
 * Clean: the pipeline's own kernel lookups and allocations in setup, the initial upload from
 * pinned memory, the per-step async download of the step's sum into pinned memory, the final
 * synchronize, the unloading of the plugin modules and the frees at teardown.
 *   d17_module_load_per_step driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>

enum { STEPS = 50, N = 1 << 17, THREADS = 256, MIX_ROUNDS = 16, POST_ROUNDS = 8 };

/* --- the plugin registry ----------------------------------------------------------------- */

struct plugin_registry {
	const char *path;
	CUmodule loaded[STEPS];
	int count;
};

static CUfunction plugin_resolve(struct plugin_registry *reg, const char *symbol)
{
	CUmodule mod;
	CUfunction fn;
	DCHECK(cuModuleLoad(&mod, reg->path)); // SYNCSPY-PROBLEM: the plugin cubin loaded again on every call
	DCHECK(cuModuleGetFunction(&fn, mod, symbol)); // SYNCSPY-PROBLEM: a fresh module's kernel, loaded onto the device on every call
	if (reg->count == STEPS) {
		fprintf(stderr, "d17: plugin registry full\n");
		exit(1);
	}
	reg->loaded[reg->count++] = mod;
	return fn;
}

static void plugin_registry_unload(struct plugin_registry *reg)
{
	for (int k = 0; k < reg->count; k++)
		DCHECK(cuModuleUnload(reg->loaded[k])); // SYNCSPY-CLEAN: teardown, after the final synchronize
	reg->count = 0;
}

/* --- the pipeline ------------------------------------------------------------------------ */

struct pipeline {
	CUstream s;
	CUfunction mix_rounds, sum_into;
	CUdeviceptr d_x, d_sums;
	uint32_t *h_init;            /* pinned */
	unsigned long long *h_sums;  /* pinned, one per step */
	const char *post_stage;      /* from the configuration */
};

static void pipeline_init(struct pipeline *p, CUmodule module)
{
	DCHECK(cuModuleGetFunction(&p->mix_rounds, module, "mix_rounds")); // SYNCSPY-CLEAN: setup, looked up once
	DCHECK(cuModuleGetFunction(&p->sum_into, module, "sum_into")); // SYNCSPY-CLEAN: setup, looked up once
	DCHECK(cuStreamCreate(&p->s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&p->d_x, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&p->d_sums, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&p->h_init, N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup pinned allocation
	DCHECK(cuMemAllocHost((void **)&p->h_sums, STEPS * sizeof(unsigned long long))); // SYNCSPY-CLEAN: setup pinned allocation
	for (int i = 0; i < N; i++)
		p->h_init[i] = (uint32_t)i * 2654435761u ^ 0x5bd1e995u;
	DCHECK(cuMemsetD32Async(p->d_sums, 0, STEPS * 2, p->s));
	DCHECK(cuMemcpyHtoDAsync(p->d_x, p->h_init, N * sizeof(uint32_t), p->s)); // SYNCSPY-CLEAN: setup upload from pinned memory
	p->post_stage = "collide";
}

static void pipeline_step(struct pipeline *p, struct plugin_registry *reg, int step)
{
	int n = N, mix = MIX_ROUNDS, post = POST_ROUNDS;
	CUdeviceptr slot = p->d_sums + (size_t)step * sizeof(unsigned long long);
	CUfunction post_fn = plugin_resolve(reg, p->post_stage);
	void *mix_args[] = {&p->d_x, &n, &step, &mix};
	void *post_args[] = {&p->d_x, &n, &post};
	void *sum_args[] = {&p->d_x, &n, &slot};
	DCHECK(cuLaunchKernel(p->mix_rounds, N / THREADS, 1, 1, THREADS, 1, 1, 0, p->s, mix_args, NULL));
	DCHECK(cuLaunchKernel(post_fn, N / THREADS, 1, 1, THREADS, 1, 1, 0, p->s, post_args, NULL));
	DCHECK(cuLaunchKernel(p->sum_into, 64, 1, 1, THREADS, 1, 1, 0, p->s, sum_args, NULL));
	DCHECK(cuMemcpyDtoHAsync(&p->h_sums[step], slot, sizeof(unsigned long long), p->s)); // SYNCSPY-CLEAN: async download into pinned memory
}

static void pipeline_teardown(struct pipeline *p)
{
	DCHECK(cuMemFree(p->d_x)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(p->d_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(p->h_init)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(p->h_sums)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(p->s));
}

/* the kernels' arithmetic on the host (driver_kernels.cu: mix_rounds, collide, sum_into) */
static unsigned long long reference_step(uint32_t *x, int step)
{
	unsigned long long sum = 0;
	for (int i = 0; i < N; i++) {
		uint32_t v = x[i] ^ ((uint32_t)step * 0x9e3779b9u);
		for (int r = 0; r < MIX_ROUNDS; r++)
			v = (v ^ (v >> 15)) * 2246822519u + 374761393u;
		for (int r = 0; r < POST_ROUNDS; r++)
			v = ((v << 7) | (v >> 25)) * 2654435761u + (uint32_t)r;
		x[i] = v;
		sum += v >> 8;
	}
	return sum;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct plugin_registry reg = {argv[1], {0}, 0};
	struct pipeline p;

	pipeline_init(&p, module);
	for (int step = 0; step < STEPS; step++)
		pipeline_step(&p, &reg, step);
	DCHECK(cuStreamSynchronize(p.s)); // SYNCSPY-CLEAN: final read, the one wait

	uint32_t *ref = (uint32_t *)malloc(N * sizeof(uint32_t));
	unsigned long long checksum = 0;
	for (int i = 0; i < N; i++)
		ref[i] = (uint32_t)i * 2654435761u ^ 0x5bd1e995u;
	for (int step = 0; step < STEPS; step++) {
		unsigned long long want = reference_step(ref, step);
		if (p.h_sums[step] != want) {
			fprintf(stderr, "d17: step %d sum = %llu, want %llu\n", step, p.h_sums[step], want);
			return 1;
		}
		checksum = checksum * 1000003u + p.h_sums[step];
	}
	free(ref);
	plugin_registry_unload(&reg);
	pipeline_teardown(&p);
	driver_teardown(module);
	printf("d17_module_load_per_step: steps=%d checksum=%llu result=OK\n", STEPS, checksum);
	return 0;
}
