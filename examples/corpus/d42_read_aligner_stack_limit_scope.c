/*
 * examples/corpus/d42_read_aligner_stack_limit_scope.c: corpus workload (CUDA driver API). The
 * verification stage of a short-read aligner: every step the sequencer hands over 16384 reads of
 * 150 bases with eight candidate positions each from the seed index (decoded by the host into one
 * of two pinned staging slots and uploaded asynchronously), a kernel computes the edit distance of
 * every read against the reference window at each of its candidates, a histogram kernel keeps the
 * run's distance histogram on the device, and the distances are downloaded asynchronously into
 * one of two pinned result slots; the host picks each read's best candidate one step behind. The
 * aligner's DP row is a per-thread array sized for the longest reads it accepts, a stack frame of
 * about 2 KB a thread, and its manifest asks for 4 KB (reads up to 512 bases). The kernels go
 * through a small launch backend that gives each registered kernel a profile: a kernel whose
 * stack need (the manifest's or CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, the larger) is above the
 * context's baseline (1 KB, set once at setup) is launched by launch_scoped(), which raises
 * CU_LIMIT_STACK_SIZE before the launch and puts the baseline back after it, so that the context
 * (shared, in the real service, with other models) does not keep the large local-memory
 * reservation. The driver API reference (cuCtxSetLimit): "CU_LIMIT_STACK_SIZE controls the
 * stack size in bytes of each GPU thread. The driver automatically increases the per-thread
 * stack size for each kernel launch as needed. This size isn't reset back to the original value
 * after each launch. Setting this value will take effect immediately, and if necessary, the
 * device will block until all preceding requested tasks are complete." Every step the raise waits
 * for the step's upload (and anything before it) and the restore waits for the aligner itself,
 * which is still using the larger stacks: the host decodes the next batch only after the GPU has
 * drained, and the GPU idles while it does. Setting the limit once at setup to the largest need
 * (or leaving the driver's own increase in place) overlaps the two.
 * Planted: the cuCtxSetLimit in stack_scope_enter() and the one in stack_scope_leave(), run
 * around every aligner launch (one problem, two lines).
 * Clean: the one setting of the baseline at setup, the setup allocations, the per-step async
 * upload from pinned staging and download into a pinned result slot, the consumer's
 * cuEventSynchronize on the step one behind, the final wait and the one read of the device
 * histogram, teardown.
 *   d42_read_aligner_stack_limit_scope driver_kernels.cubin
 */
#include "driver.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { STEPS = 60, READS = 16384, CANDS = 8, LEN = 150, REF_LEN = 1 << 20, BINS = 64, THREADS = 128, HIST_BLOCKS = 64, DEPTH = 2, SAMPLES = 32, MAPPED_MAX = 12 };
enum { BASE_STACK = 1024, ALIGN_STACK = 4096 }; /* the service's baseline; the aligner's manifest (reads up to 512 bases) */

/* --- the launch backend ----------------------------------------------------------------------- */

struct backend;

struct kernel_profile {
	const char *name;
	CUfunction fn;
	unsigned block;
	size_t stack_bytes; /* the per-thread stack the kernel needs when above the baseline, else 0 */
	void (*launch)(struct backend *, const struct kernel_profile *, unsigned grid, void **args);
};

struct backend {
	CUmodule module;
	CUstream s;
	size_t base_stack; /* the context's per-thread stack limit between launches */
};

static void launch_plain(struct backend *be, const struct kernel_profile *k, unsigned grid, void **args)
{
	DCHECK(cuLaunchKernel(k->fn, grid, 1, 1, k->block, 1, 1, 0, be->s, args, NULL));
}

/* a scope around a launch that needs a larger per-thread stack than the baseline: raised for the
 * launch, put back afterwards so that the local-memory reservation does not stay behind */
static void stack_scope_enter(struct backend *be, size_t bytes)
{
	(void)be;
	DCHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, bytes)); // SYNCSPY-PROBLEM: raises the stack limit before every aligner launch: the device blocks until all preceding work is complete
}

static void stack_scope_leave(struct backend *be)
{
	DCHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, be->base_stack)); // SYNCSPY-PROBLEM: puts the baseline back after every aligner launch: blocks until the aligner, still on the large stacks, has finished
}

static void launch_scoped(struct backend *be, const struct kernel_profile *k, unsigned grid, void **args)
{
	stack_scope_enter(be, k->stack_bytes);
	DCHECK(cuLaunchKernel(k->fn, grid, 1, 1, k->block, 1, 1, 0, be->s, args, NULL));
	stack_scope_leave(be);
}

/* a kernel's profile: its manifest's stack need or its compiled stack frame, whichever is larger */
static void profile_register(struct backend *be, struct kernel_profile *k, const char *name, unsigned block, size_t manifest_stack)
{
	int local = 0;
	size_t need;
	k->name = name;
	k->block = block;
	DCHECK(cuModuleGetFunction(&k->fn, be->module, name));
	DCHECK(cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->fn));
	need = ((size_t)local + 255) & ~(size_t)255;
	need = need > manifest_stack ? need : manifest_stack;
	k->stack_bytes = need > be->base_stack ? need : 0;
	k->launch = k->stack_bytes ? launch_scoped : launch_plain;
}

static void backend_launch(struct backend *be, const struct kernel_profile *k, unsigned grid, void **args)
{
	k->launch(be, k, grid, args);
}

/* --- the sequencer (simulated reads with substitutions, a deletion and decoy candidates) ---- */

struct batch { /* the layout of a staging slot and of the device batch */
	int cand[READS * CANDS];
	unsigned char reads[READS * LEN];
};

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

static void make_reference(unsigned char *ref)
{
	for (int i = 0; i < REF_LEN; i += 4) {
		uint32_t h = mix32((uint32_t)i * 0x9e3779b9u + 17u);
		for (int k = 0; k < 4; k++)
			ref[i + k] = (unsigned char)((h >> (8 * k)) & 3u);
	}
}

/* read i of a step and its CANDS candidate positions: the true origin in one of them unless the
 * read is from contamination, the others repeats elsewhere in the reference */
static void make_read(const unsigned char *ref, int step, int i, unsigned char *read, int *cand)
{
	uint32_t h = mix32((uint32_t)step * 0x632be5abu ^ (uint32_t)i * 0x9e3779b9u);
	int pos = (int)(h % (uint32_t)(REF_LEN - 2 * LEN));
	memcpy(read, ref + pos, LEN);
	if ((h >> 7) % 8u == 0) { /* a deletion: the rest of the read shifts by one base */
		int d = (int)(mix32(h + 1u) % LEN);
		memmove(read + d, read + d + 1, (size_t)(LEN - 1 - d));
		read[LEN - 1] = ref[pos + LEN];
	}
	for (uint32_t k = 0, subs = (h >> 11) % 5u; k < subs; k++) {
		uint32_t g = mix32(h + 0x51u * (k + 2u));
		read[g % LEN] = (unsigned char)((read[g % LEN] + 1u + (g >> 20) % 3u) & 3u);
	}
	for (int c = 0; c < CANDS; c++)
		cand[c] = (int)(mix32(h ^ (0xdecafbadu + (uint32_t)c)) % (uint32_t)(REF_LEN - 2 * LEN));
	if ((h >> 14) % 16u != 0)
		cand[(h >> 18) % CANDS] = pos;
}

static void decode_batch(const unsigned char *ref, int step, struct batch *b)
{
	for (int i = 0; i < READS; i++)
		make_read(ref, step, i, b->reads + (size_t)i * LEN, b->cand + (size_t)i * CANDS);
}

/* --- the host's mapping statistics and the reference edit distance ------------------------- */

struct run_stats {
	unsigned long long mapped, best_sum;
	unsigned int hist[BINS];
	int sample[STEPS][SAMPLES];
};

static int sampled_pair(int step, int k) { return (k * 1021 + step * 7) % (READS * CANDS); }

/* each read's best candidate; mapped when its distance is small enough */
static void consume(struct run_stats *st, int step, const int *dist)
{
	for (int i = 0; i < READS; i++) {
		int best = dist[i * CANDS];
		for (int c = 0; c < CANDS; c++) {
			int d = dist[i * CANDS + c], b = d < 0 ? 0 : (d >= BINS ? BINS - 1 : d);
			st->hist[b]++;
			best = d < best ? d : best;
		}
		st->best_sum += (unsigned long long)best;
		st->mapped += best <= MAPPED_MAX;
	}
	for (int k = 0; k < SAMPLES; k++)
		st->sample[step][k] = dist[sampled_pair(step, k)];
}

static int edit_distance_host(const unsigned char *q, const unsigned char *t)
{
	int row[LEN + 1];
	for (int b = 0; b <= LEN; b++)
		row[b] = b;
	for (int a = 1; a <= LEN; a++) {
		int diag = row[0], left = a;
		row[0] = a;
		for (int b = 1; b <= LEN; b++) {
			int up = row[b], v = diag + (q[a - 1] != t[b - 1]);
			v = v < up + 1 ? v : up + 1;
			v = v < left + 1 ? v : left + 1;
			diag = up;
			left = v;
			row[b] = v;
		}
	}
	return row[LEN];
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	static struct backend be;
	static struct run_stats st;
	struct kernel_profile align, hist;
	struct batch *staging;
	int *h_dist;
	CUdeviceptr d_batch, d_ref, d_dist, d_hist;
	CUevent done[DEPTH];
	unsigned char *ref = (unsigned char *)malloc(REF_LEN), read[LEN];
	int cand[CANDS];
	unsigned int dev_hist[BINS];

	be.module = driver_setup(argc, argv, &ctx);
	DCHECK(cuStreamCreate(&be.s, CU_STREAM_NON_BLOCKING));
	be.base_stack = BASE_STACK;
	DCHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, be.base_stack)); // SYNCSPY-CLEAN: setup, the shared context's baseline set once
	profile_register(&be, &align, "align_edit_distance", THREADS, ALIGN_STACK);
	profile_register(&be, &hist, "histogram_clamped", 256, 0);
	make_reference(ref);
	DCHECK(cuMemAlloc(&d_ref, REF_LEN)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_batch, sizeof(struct batch))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_dist, READS * CANDS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_hist, sizeof dev_hist)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAllocHost((void **)&staging, DEPTH * sizeof(struct batch))); // SYNCSPY-CLEAN: setup pinned staging slots
	DCHECK(cuMemAllocHost((void **)&h_dist, (size_t)DEPTH * READS * CANDS * sizeof(int))); // SYNCSPY-CLEAN: setup pinned result slots
	DCHECK(cuMemcpyHtoD(d_ref, ref, REF_LEN)); // SYNCSPY-CLEAN: setup, the reference uploaded once
	DCHECK(cuMemsetD32Async(d_hist, 0u, BINS, be.s));
	for (int k = 0; k < DEPTH; k++)
		DCHECK(cuEventCreate(&done[k], CU_EVENT_DISABLE_TIMING));

	CUdeviceptr d_cand = d_batch + offsetof(struct batch, cand), d_reads = d_batch + offsetof(struct batch, reads);
	int n = READS * CANDS, cands = CANDS, len = LEN, nbins = BINS;
	void *align_args[] = {&d_cand, &d_reads, &n, &cands, &len, &d_ref, &d_dist};
	void *hist_args[] = {&d_dist, &n, &d_hist, &nbins};
	for (int step = 0; step < STEPS; step++) {
		int slot = step % DEPTH;
		/* the slot was last used by step - 2, whose results were consumed (after its wait) in the
		 * previous iteration */
		decode_batch(ref, step, &staging[slot]);
		DCHECK(cuMemcpyHtoDAsync(d_batch, &staging[slot], sizeof(struct batch), be.s)); // SYNCSPY-CLEAN: async upload from the pinned staging slot
		backend_launch(&be, &align, READS * CANDS / THREADS, align_args);
		backend_launch(&be, &hist, HIST_BLOCKS, hist_args);
		DCHECK(cuMemcpyDtoHAsync(h_dist + (size_t)slot * READS * CANDS, d_dist, READS * CANDS * sizeof(int), be.s)); // SYNCSPY-CLEAN: async download into the pinned result slot
		DCHECK(cuEventRecord(done[slot], be.s));
		if (step > 0) { /* the mapping statistics, one step behind */
			DCHECK(cuEventSynchronize(done[(step - 1) % DEPTH])); // SYNCSPY-CLEAN: the result double buffer's wait, on the step one behind
			consume(&st, step - 1, h_dist + (size_t)((step - 1) % DEPTH) * READS * CANDS);
		}
	}
	DCHECK(cuStreamSynchronize(be.s)); // SYNCSPY-CLEAN: the final wait, after the last step
	consume(&st, STEPS - 1, h_dist + (size_t)((STEPS - 1) % DEPTH) * READS * CANDS);
	DCHECK(cuMemcpyDtoH(dev_hist, d_hist, sizeof dev_hist)); // SYNCSPY-CLEAN: final read of the run's histogram

	/* self-check: the device histogram against the downloaded distances, and sampled pairs of every
	 * step against the host's edit distance */
	for (int b = 0; b < BINS; b++)
		if (dev_hist[b] != st.hist[b]) {
			fprintf(stderr, "d42: histogram bin %d = %u, downloads give %u\n", b, dev_hist[b], st.hist[b]);
			return 1;
		}
	for (int step = 0; step < STEPS; step++)
		for (int k = 0; k < SAMPLES; k++) {
			int pair = sampled_pair(step, k), want;
			make_read(ref, step, pair / CANDS, read, cand);
			want = edit_distance_host(read, ref + cand[pair % CANDS]);
			if (st.sample[step][k] != want) {
				fprintf(stderr, "d42: step %d pair %d distance %d, want %d\n", step, pair, st.sample[step][k], want);
				return 1;
			}
		}
	free(ref);

	for (int k = 0; k < DEPTH; k++)
		DCHECK(cuEventDestroy(done[k]));
	DCHECK(cuMemFree(d_ref)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_batch)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_dist)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_hist)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(staging)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(h_dist)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(be.s));
	driver_teardown(be.module);
	printf("d42_read_aligner_stack_limit_scope: steps=%d mapped=%llu best_sum=%llu result=OK\n", STEPS, st.mapped, st.best_sum);
	return 0;
}
