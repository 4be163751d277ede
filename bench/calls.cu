/* SPDX-License-Identifier: MIT */
/*
 * bench/calls.cu: host-side cost of the CUDA calls syncspy wraps most often (docs/architecture.md
 * F10): a kernel launch (<<<>>>, an empty kernel on one thread), cudaEventRecord,
 * cudaStreamWaitEvent and cudaStreamSynchronize on an idle stream.
 *
 * Run once without and once with LD_PRELOAD=libsyncspy.so, the difference is what the shim adds
 * per call; bench/run.sh does that, alternating, and compares it with the targets. Built with
 * `-cudart shared` so that the shim sees the calls:
 *   nvcc -O2 -arch=sm_90 -cudart shared -o calls bench/calls.cu
 *   ./calls [calls_per_api]        (default 200000)
 *
 * Method: one clock_gettime(CLOCK_MONOTONIC) pair around each block of BLOCK_CALLS calls, so the
 * clock's own cost (~20 ns) is spread over the block; the block's average is one sample. The
 * median and 90th percentile of the samples are printed, one line per call:
 *   name median_ns p90_ns
 * Between blocks, outside the timed region, the stream the calls fill is synchronized, so every
 * block starts from an empty queue (launch queues that fill up make launches block, which would
 * measure the GPU, not the host). Warm-up blocks run first and are not counted.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum {
	DEFAULT_CALLS = 200000,
	BLOCK_CALLS = 100,
	WARMUP_BLOCKS = 50,
};

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t check_err_ = (call);                                                   \
		if (check_err_ != cudaSuccess) {                                                   \
			fprintf(stderr, "calls: %s failed at line %d: %s (%d)\n", #call, __LINE__,  \
				cudaGetErrorString(check_err_), (int)check_err_);                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void empty_kernel(void) {}

/* What the measured calls act on, created once. */
struct bench_ctx {
	cudaStream_t work;  /* launches and event records go here */
	cudaStream_t waits; /* cudaStreamWaitEvent makes this one wait */
	cudaStream_t idle;  /* never gets work: its sync returns at once */
	cudaEvent_t event;  /* recorded on `work` */
};

/* One block of BLOCK_CALLS calls of one API; returns the OR of the calls' results so a failure
 * is seen without branching inside the timed loop. */
typedef cudaError_t (*block_fn)(struct bench_ctx *ctx);

static cudaError_t block_launch(struct bench_ctx *ctx)
{
	for (int i = 0; i < BLOCK_CALLS; i++)
		empty_kernel<<<1, 1, 0, ctx->work>>>();
	return cudaGetLastError(); /* after the block: not part of the timed cost per launch */
}

static cudaError_t block_event_record(struct bench_ctx *ctx)
{
	int err = 0;
	for (int i = 0; i < BLOCK_CALLS; i++)
		err |= (int)cudaEventRecord(ctx->event, ctx->work);
	return (cudaError_t)err;
}

static cudaError_t block_stream_wait_event(struct bench_ctx *ctx)
{
	int err = 0;
	for (int i = 0; i < BLOCK_CALLS; i++)
		err |= (int)cudaStreamWaitEvent(ctx->waits, ctx->event, 0);
	return (cudaError_t)err;
}

static cudaError_t block_sync_idle(struct bench_ctx *ctx)
{
	int err = 0;
	for (int i = 0; i < BLOCK_CALLS; i++)
		err |= (int)cudaStreamSynchronize(ctx->idle);
	return (cudaError_t)err;
}

struct bench_case {
	const char *name; /* bench/run.sh matches these names to its targets */
	block_fn block;
};

static const struct bench_case CASES[] = {
	{"kernel_launch", block_launch},
	{"cudaEventRecord", block_event_record},
	{"cudaStreamWaitEvent", block_stream_wait_event},
	{"cudaStreamSynchronize_idle", block_sync_idle},
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Empty the queues the blocks fill, then pause (BENCH_PAUSE_US, default 100 us); not timed.
 * The pause lets the shim's writer thread drain its buffer between blocks: the figure is then
 * the cost a call adds on the hot path, not the cost of a full buffer. (A loop that does
 * nothing but enqueue 6 million calls a second outruns any SQLite writer; the shim counts what
 * it cannot keep as dropped, and bench/run.sh reports the rows recorded per run.) */
static long pause_us = 100;
static void settle(struct bench_ctx *ctx)
{
	CHECK(cudaStreamSynchronize(ctx->work));
	CHECK(cudaStreamSynchronize(ctx->waits));
	if (pause_us > 0)
		usleep((useconds_t)pause_us);
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? strtol(argv[1], NULL, 10) : (long)DEFAULT_CALLS;
	if (calls < BLOCK_CALLS) {
		fprintf(stderr, "usage: calls [calls_per_api >= %d]\n", BLOCK_CALLS);
		return 2;
	}
	long blocks = calls / BLOCK_CALLS;
	const char *pause = getenv("BENCH_PAUSE_US");
	if (pause)
		pause_us = strtol(pause, NULL, 10);

	struct bench_ctx ctx;
	CHECK(cudaStreamCreateWithFlags(&ctx.work, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&ctx.waits, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&ctx.idle, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&ctx.event, cudaEventDisableTiming));
	CHECK(cudaEventRecord(ctx.event, ctx.work)); /* something for the first waits to wait on */
	settle(&ctx);

	double *per_call_ns = (double *)malloc(sizeof(double) * (size_t)blocks);
	if (!per_call_ns) {
		fprintf(stderr, "calls: out of memory\n");
		return 1;
	}

	printf("# bench/calls: host ns per call, %ld calls per api in blocks of %d, "
	       "median and p90 of the blocks' averages\n",
	       blocks * BLOCK_CALLS, BLOCK_CALLS);
	for (size_t c = 0; c < sizeof(CASES) / sizeof(CASES[0]); c++) {
		const struct bench_case *bc = &CASES[c];
		for (int w = 0; w < WARMUP_BLOCKS; w++) {
			CHECK(bc->block(&ctx));
			settle(&ctx);
		}
		for (long b = 0; b < blocks; b++) {
			uint64_t t0 = now_ns();
			cudaError_t err = bc->block(&ctx);
			uint64_t t1 = now_ns();
			CHECK(err);
			per_call_ns[b] = (double)(t1 - t0) / BLOCK_CALLS;
			settle(&ctx);
		}
		qsort(per_call_ns, (size_t)blocks, sizeof(double), compare_double);
		double median = per_call_ns[blocks / 2];
		double p90 = per_call_ns[(blocks * 9) / 10];
		printf("%s %.1f %.1f\n", bc->name, median, p90);
		fflush(stdout);
	}

	free(per_call_ns);
	CHECK(cudaEventDestroy(ctx.event));
	CHECK(cudaStreamDestroy(ctx.idle));
	CHECK(cudaStreamDestroy(ctx.waits));
	CHECK(cudaStreamDestroy(ctx.work));
	return 0;
}
