/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/gpu_loop.c: a training-like loop for the GPU timeline's tests (t211): each step
 * launches two kernels on a stream (host functions of the CPU stand-in that sleep KERNEL_US)
 * and waits for them with cudaStreamSynchronize; every tenth step also syncs the device.
 *
 *   gpu_loop STEPS [MODE]: pause, burst, slow, graph, graph-once, library, ... (below)
 *
 * slow: kernels of SLOW_KERNEL_US, some 0.8 calls a ms: a loop whose tracing costs well under
 * the sampler's budget (CUPTI-5: 3 us a call, 1% of the time), which the default traces whole
 * (t221). At KERNEL_US the loop makes some 3 calls a ms, 0.9%: too near the budget to
 * decide the same on a loaded machine.
 * pause: the middle third of the steps runs with the GPU timeline paused
 * (syncspy_gpu_trace(0), looked up at run time so the program also runs without the shim), and
 * the program prints "paused START_NS END_NS" (CLOCK_MONOTONIC, the databases' time axis).
 * burst: each step launches BURST_KERNELS kernels that do nothing (a launch-bound loop, for
 * SYNCSPY_CUPTI_SAMPLE=auto: t221) and syncs the stream, with a pause of BURST_SLEEP_US
 * between steps so that the run lasts long enough for the sampler to decide.
 * burst-blocks: burst's steps, the recording stopped (syncspy_stop) in every other block of
 * BLOCK_STEPS steps, as bench/reference_ab.sh's in-process A/B stops it: a stopped block is no
 * quiet program to the sampler (CUPTI-5: t221).
 * burst-pauses: burst's steps, the host idle for GPU_LOOP_PAUSE_MS (default 300) without a CUDA
 * call after every BLOCK_STEPS steps (a loop between two epochs): the sampler traces whole again
 * only after a second of quiet (CUPTI-5: t221).
 * graph: each step captures its two kernels into a graph, instantiates it, launches it and
 * destroys it (graph-instantiate-in-loop at both lines: t222); graph-once: captured and
 * instantiated once before the loop, launched every step, destroyed after it (the fix).
 * library: each step loads a library (cudaLibraryLoadData), gets its kernel
 * (cudaLibraryGetKernel: the stand-in finds gpu_loop_kernel among the program's exported
 * functions), launches it, syncs and unloads it (module-load-in-loop at the load's and the
 * lookup's lines: t232).
 * hostfunc: each step queues a host function of HOST_FUNC_US (cudaLaunchHostFunc) between its
 * two kernels, so that the second waits for the host (host-func-blocks-stream: t233);
 * callback: the same with cudaStreamAddCallback; hostfunc-fast: a host function that returns
 * at once (the machinery's own floor: no finding).
 * graph-hostfunc: a kernel and a host function of HOST_FUNC_US captured once into a graph (the
 * host node last), instantiated once, and launched every step without a sync in between: each
 * launch waits on the stream for the previous one's host node (d40 of examples/corpus; t234);
 * graph-hostfunc-fast: the same with a host function that returns at once (no finding).
 * nosync: burst's steps without their sync, the first kernel of each taking NOSYNC_KERNEL_US so
 * that work is queued most of the time: the host only launches (a loop that never waits,
 * 12_stream_prefetcher's bad variant), one stream sync at the end (CUPTI-9: t235);
 * nosync-capture: the same while a capture (relaxed mode) of one kernel stays open on a second
 * stream, ended after the loop: no window is closed while it is open (t235).
 * lanes: LANES threads, each with its own stream, each step a kernel and a wait for that stream,
 * then LANE_HOST_US of host work (a server's request threads: c109 of examples/corpus), so
 * that some thread is nearly always inside cudaStreamSynchronize when CUPTI-8 detaches
 * (CUPTI-10: t236). alloc-thread: the default loop on the main thread while a second thread
 * allocates and frees device memory and never waits for the GPU (PyTorch's autograd thread,
 * as far as sync points go: GATE-4 still detaches; t236).
 * helper-backward: each iteration the main thread runs FORWARD_SOLVER_STEPS solver steps, a
 * kernel and a wait for it each, then hands the backward to a helper thread named as torch's
 * autograd thread is, which makes BACKWARD_PASSES passes of BACKWARD_LAUNCHES launches while the
 * main thread waits (t156 of examples/corpus, an ODE solver's forward and adjoint passes): the
 * helper makes the most calls, the main thread drives the loop (STEPS-8: t257); after the loop
 * the main thread works HELPER_QUIET_US on the host before its last sync.
 * sync-free: each step allocates a scratch buffer with cudaMallocAsync on the stream, launches
 * its two kernels, syncs the stream (instead of the step's usual sync) and frees the buffer with
 * cudaFree right after (c106 of examples/corpus: the sync is there for the free; t238);
 * free-async: the same scratch freed with cudaFreeAsync on the stream, then the step's sync (the
 * free needs no wait of its own; t238).
 * row-copies: before its two kernels each step copies an image of ROW_COPIES rows of ROW_BYTES to
 * the device one row at a time (cudaMemcpyAsync from pinned memory: small-copies-in-loop, d47
 * and c98 of examples/corpus; t237); rows-2d: the same rows with one cudaMemcpy2DAsync a step
 * (the fix); few-row-copies: FEW_ROW_COPIES rows a step, one at a time (under the rule's floor);
 * wide-row-copies: WIDE_ROW_COPIES rows of WIDE_ROW_BYTES, one at a time (not small copies).
 * Before each copy these modes spin ISSUE_US, what a GPU's driver takes to issue one (1.5-3 us
 * on an H100), where the stand-in takes a fraction of a microsecond.
 * then-eval: after the loop, an evaluation loop of as many iterations: a kernel and a blocking
 * read of its 4-byte result each (a second loop: STEPS-6 of report/steps.h; t239);
 * then-eval-once: the same loop, its results read once after it; then-decode: after the loop, as
 * many requests of a decoder, each an upload, two kernels, then 2 to 20 tokens (a different
 * number each request), each a kernel and a blocking read of the token (a second loop whose
 * steps vary in length: STEPS-7; t255); teardown-frees: TEARDOWN_FREES
 * buffers allocated before the loop and freed one by one after it (a burst, not a loop).
 * stream-per-step: each step creates a stream, launches a kernel that does nothing on the legacy
 * default stream and its two kernels on the new stream, syncs and destroys it (handles come
 * back: CUPTI-12's stream map starts again at each creation; t242).
 * exit-syncs: the default loop, and an exit handler registered before the first CUDA call (so
 * that it runs after every handler a CUDA library registers) that launches a kernel and waits
 * for it EXIT_SYNCS times, EXIT_SYNC_GAP_US apart, as cuBLASLt's exit handler still calls CUDA
 * after CUPTI's has run (CUPTI-14: t243); it prints "exit syncs N". exit-only: that exit
 * handler alone, no CUDA call before it (t243).
 * one-event: a copy stream uploads UPLOAD_BYTES from pinned memory into one of two device slots
 * each step, the compute stream waits for the upload and runs the step's two kernels, and the
 * host waits for the compute of two steps back before it issues a step (a ring two deep); the
 * upload waits on one event recorded at the end of every step's compute, so it waits for all
 * of the previous step and copy and compute take turns (c99 of examples/corpus:
 * copy-held-by-event; t253). slot-events: the upload waits on its slot's event, recorded after
 * the kernels that read that slot two steps back (the fix: it runs beside the previous step).
 * shared-dma: a pipeline of pages: each step uploads a page into one of two device slots on a
 * DMA stream, the compute stream waits for it and runs the step's two kernels, and the page's
 * results come back (UPLOAD_BYTES, into pinned memory) on the same DMA stream after an event
 * wait on the compute; the host reads the results one step behind. The next page's upload is
 * queued behind that download, which waits for the kernels: upload, compute and download take
 * turns (d48 of examples/corpus: upload-behind-download; t254). split-dma: the downloads on a
 * stream of their own (the fix: the next upload runs beside the kernels and the download).
 * converge: each step uploads its input (pinned, async), launches two kernels, then iterates a
 * solver until it converges: 4 to 40 iterations, a different number each step, each launching
 * a short kernel, and every CHECK_EVERY iterations a blocking read of the residual (t151 of
 * examples/corpus, a Sinkhorn stopping test); then one kernel and the step's sync. No call
 * comes at regular gaps, but the step's own calls come once a step in the same order (STEPS-7
 * of report/steps.h; t255). converge-device: the same steps with the residual kept on the GPU
 * and read once a step at the step's sync (the fix: no read inside the solver).
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define KERNEL_US 500
#define BURST_KERNELS 40
#define BURST_SLEEP_US 1000
#define BLOCK_STEPS	 25
#define SLOW_KERNEL_US 2000
#define HOST_FUNC_US   1500
#define NOSYNC_KERNEL_US 900
#define LANES		 4
#define LANE_HOST_US	 300
#define ROW_COPIES	 512
#define ROW_BYTES	 2048
#define FEW_ROW_COPIES	 32
#define WIDE_ROW_COPIES	 128
#define WIDE_ROW_BYTES	 (72 * 1024)
#define ISSUE_US	 3
#define TEARDOWN_FREES	 12
#define UPLOAD_BYTES	 (4 << 20) /* 2 ms at the stand-in's 2 GB/s */
#define SOLVER_KERNEL_US 30
#define CHECK_EVERY	 4
#define FORWARD_SOLVER_STEPS 6
#define BACKWARD_PASSES	     6
#define BACKWARD_LAUNCHES    10
#define HELPER_QUIET_US	     200000

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* The host time a GPU's driver takes to issue a copy (the row modes). */
static void issue_cost(void)
{
	unsigned long long until = now_ns() + ISSUE_US * 1000ull;

	while (now_ns() < until)
		;
}

/* The kernel of the library mode's library (exported: the stand-in looks it up by name). */
void gpu_loop_kernel(void *usec);

void gpu_loop_kernel(void *usec)
{
	sleep_kernel(usec);
}

/* The host work the hostfunc and callback modes queue in the stream (an encoder, a logger). */
static void host_work(void *usec)
{
	if (usec)
		usleep((useconds_t)(uintptr_t)usec);
}

static void CUDART_CB host_callback(cudaStream_t stream, cudaError_t status, void *usec)
{
	(void)stream;
	(void)status;
	host_work(usec);
}

/* One lane of the lanes mode: STEPS times a kernel and the wait for it, on its own stream. */
static void *lane(void *steps)
{
	cudaStream_t stream;
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)KERNEL_US, *args[] = {&param};
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	for (int step = 0; step < *(const int *)steps; step++) {
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		CHECK(cudaStreamSynchronize(stream));
		usleep(LANE_HOST_US);
	}
	CHECK(cudaStreamDestroy(stream));
	return NULL;
}

/* The helper-backward mode (above): the helper thread's side, BACKWARD_PASSES passes of
 * BACKWARD_LAUNCHES launches each iteration, while the main thread waits at the barrier. */
struct backward_job {
	pthread_barrier_t start, done;
	cudaStream_t stream;
	int iterations;
};

static void *backward_helper(void *arg)
{
	struct backward_job *job = arg;
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)0, *args[] = {&param};

	pthread_setname_np(pthread_self(), "pt_autograd_0");
	for (int it = 0; it < job->iterations; it++) {
		pthread_barrier_wait(&job->start);
		for (int pass = 0; pass < BACKWARD_PASSES; pass++) {
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0,
					       job->stream)); /* a pass's first kernel */
			for (int k = 0; k < BACKWARD_LAUNCHES - 2; k++)
				CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args,
						       0, job->stream));
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0,
					       job->stream)); /* its last */
		}
		pthread_barrier_wait(&job->done);
	}
	return NULL;
}

/* The helper-backward mode, STEPS iterations. */
static int helper_backward(int steps)
{
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)SOLVER_KERNEL_US, *args[] = {&param};
	struct backward_job job = {.iterations = steps};
	pthread_t helper;

	CHECK(cudaStreamCreate(&job.stream));
	pthread_barrier_init(&job.start, NULL, 2);
	pthread_barrier_init(&job.done, NULL, 2);
	if (pthread_create(&helper, NULL, backward_helper, &job) != 0)
		return 1;
	for (int it = 0; it < steps; it++) {
		for (int s = 0; s < FORWARD_SOLVER_STEPS; s++) { /* the forward's solver steps */
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0,
					       job.stream));
			CHECK(cudaStreamSynchronize(job.stream)); /* MARK:solver-step-sync */
		}
		pthread_barrier_wait(&job.start); /* the backward, on the helper */
		pthread_barrier_wait(&job.done);
	}
	pthread_join(helper, NULL);
	usleep(HELPER_QUIET_US); /* host work after the loop: no step of it (STEPS-8) */
	CHECK(cudaStreamSynchronize(job.stream));
	CHECK(cudaStreamDestroy(job.stream));
	printf("done %d steps\n", steps);
	return 0;
}

/* The converge and converge-device modes (above), STEPS steps. */
static int converge_loop(int steps, int read_in_solver)
{
	const enum cudaMemcpyKind up = cudaMemcpyHostToDevice, down = cudaMemcpyDeviceToHost;
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)KERNEL_US, *args[] = {&param};
	void *solver_param = (void *)(uintptr_t)SOLVER_KERNEL_US, *solver_args[] = {&solver_param};
	float *host_in = NULL, *d_in = NULL, r = 0; /* r: the residual */
	cudaStream_t stream;

	CHECK(cudaStreamCreate(&stream));
	CHECK(cudaMallocHost((void **)&host_in, 1 << 16));
	CHECK(cudaMalloc((void **)&d_in, 1 << 16));
	for (int step = 0; step < steps; step++) {
		/* the iterations to converge: 4 to 40, unlike from step to step */
		int iterations = 4 + (int)((unsigned)step * 2654435761u % 37u);

		CHECK(cudaMemcpyAsync(d_in, host_in, 1 << 16, up, stream));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		for (int i = 0; i < iterations; i++) {
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, solver_args, 0,
					       stream));
			if (read_in_solver && i % CHECK_EVERY == CHECK_EVERY - 1)
				CHECK(cudaMemcpy(&r, d_in, sizeof(r), down)); /* MARK:solver-read */
		}
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		CHECK(cudaStreamSynchronize(stream));
	}
	CHECK(cudaFree(d_in));
	CHECK(cudaFreeHost(host_in));
	CHECK(cudaStreamDestroy(stream));
	printf("done %d steps\n", steps);
	return 0;
}

/* The one-event and slot-events modes (above), STEPS steps. */
static int upload_ring(int steps, int one_event)
{
	cudaStream_t copy, compute;
	cudaEvent_t done, freed[2], uploaded[2], computed[2];
	void *host, *slot[2];
	void *param = (void *)(uintptr_t)KERNEL_US, *args[] = {&param};
	const dim3 one = {1, 1, 1};

	CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
	CHECK(cudaMallocHost(&host, UPLOAD_BYTES));
	memset(host, 3, UPLOAD_BYTES);
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMalloc(&slot[k], UPLOAD_BYTES));
		CHECK(cudaEventCreateWithFlags(&freed[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&computed[k], cudaEventDisableTiming));
	}
	for (int step = 0; step < steps; step++) {
		int k = step % 2;
		if (step >= 2)
			CHECK(cudaEventSynchronize(computed[k])); /* the ring: two steps back */
		if (one_event && step >= 1)
			CHECK(cudaStreamWaitEvent(copy, done, 0)); /* MARK:one-event-wait */
		else if (!one_event && step >= 2)
			CHECK(cudaStreamWaitEvent(copy, freed[k], 0)); /* MARK:slot-event-wait */
		CHECK(cudaMemcpyAsync(slot[k], host, UPLOAD_BYTES, cudaMemcpyHostToDevice, copy));
		CHECK(cudaEventRecord(uploaded[k], copy));
		CHECK(cudaStreamWaitEvent(compute, uploaded[k], 0));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, compute));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, compute));
		CHECK(cudaEventRecord(freed[k], compute)); /* the slot's readers are done */
		CHECK(cudaEventRecord(computed[k], compute));
		CHECK(cudaEventRecord(done, compute)); /* MARK:one-event-record */
	}
	CHECK(cudaStreamSynchronize(compute));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(slot[k]));
		CHECK(cudaEventDestroy(freed[k]));
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(computed[k]));
	}
	CHECK(cudaEventDestroy(done));
	CHECK(cudaFreeHost(host));
	CHECK(cudaStreamDestroy(copy));
	CHECK(cudaStreamDestroy(compute));
	printf("done %d steps\n", steps);
	return 0;
}

/* The shared-dma and split-dma modes (above), STEPS steps. */
static int dma_pipeline(int steps, int shared)
{
	cudaStream_t up, down, compute;
	cudaEvent_t uploaded[2], computed[2], downloaded[2];
	void *host_in, *host_out[2], *slot[2];
	const enum cudaMemcpyKind d2h = cudaMemcpyDeviceToHost;
	const size_t bytes = UPLOAD_BYTES;
	void *param = (void *)(uintptr_t)KERNEL_US, *args[] = {&param};
	const dim3 one = {1, 1, 1};

	CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	if (shared)
		down = up;
	else
		CHECK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
	CHECK(cudaMallocHost(&host_in, UPLOAD_BYTES));
	memset(host_in, 5, UPLOAD_BYTES);
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&host_out[k], UPLOAD_BYTES));
		CHECK(cudaMalloc(&slot[k], UPLOAD_BYTES));
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&computed[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&downloaded[k], cudaEventDisableTiming));
	}
	for (int step = 0; step < steps; step++) {
		int k = step % 2;
		if (step >= 2) /* the slot's results, two steps back, are out */
			CHECK(cudaStreamWaitEvent(up, downloaded[k], 0));
		CHECK(cudaMemcpyAsync(slot[k], host_in, UPLOAD_BYTES, cudaMemcpyHostToDevice, up));
		CHECK(cudaEventRecord(uploaded[k], up));
		CHECK(cudaStreamWaitEvent(compute, uploaded[k], 0));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, compute));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, compute));
		CHECK(cudaEventRecord(computed[k], compute));
		CHECK(cudaStreamWaitEvent(down, computed[k], 0));
		CHECK(cudaMemcpyAsync(host_out[k], slot[k], bytes, d2h, down)); /* MARK:dma-down */
		CHECK(cudaEventRecord(downloaded[k], down));
		if (step >= 1) /* the host reads the results one step behind */
			CHECK(cudaEventSynchronize(downloaded[1 - k]));
	}
	CHECK(cudaStreamSynchronize(down));
	for (int k = 0; k < 2; k++) {
		CHECK(cudaFree(slot[k]));
		CHECK(cudaFreeHost(host_out[k]));
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(computed[k]));
		CHECK(cudaEventDestroy(downloaded[k]));
	}
	CHECK(cudaFreeHost(host_in));
	CHECK(cudaStreamDestroy(up));
	if (!shared)
		CHECK(cudaStreamDestroy(down));
	CHECK(cudaStreamDestroy(compute));
	printf("done %d steps\n", steps);
	return 0;
}

/* The exit-syncs mode's exit handler, on the legacy default stream (the loop's is destroyed by
 * then). */
#define EXIT_SYNCS	 6
#define EXIT_SYNC_GAP_US 15000

static void syncs_at_exit(void)
{
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)100, *args[] = {&param};
	int done = 0;
	for (int i = 0; i < EXIT_SYNCS; i++) {
		usleep(EXIT_SYNC_GAP_US);
		if (cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, NULL) ==
			cudaSuccess &&
		    cudaStreamSynchronize(NULL) == cudaSuccess)
			done++;
	}
	printf("exit syncs %d\n", done);
}

/* The alloc-thread mode's second thread: allocations and frees until told to stop. */
static _Atomic int allocating = 1;

static void *alloc_thread(void *unused)
{
	(void)unused;
	while (allocating) {
		void *p = NULL;
		CHECK(cudaMalloc(&p, 1 << 20));
		CHECK(cudaFree(p));
		usleep(200);
	}
	return NULL;
}

/* cudaLibraryLoadData's JIT and library options: none */
#define NO_OPTIONS NULL, NULL, 0, NULL, NULL, 0

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 30;
	int pause = argc > 2 && strcmp(argv[2], "pause") == 0;
	int burst_blocks = argc > 2 && strcmp(argv[2], "burst-blocks") == 0;
	int burst_pauses = argc > 2 && strcmp(argv[2], "burst-pauses") == 0;
	int burst = burst_blocks || burst_pauses || (argc > 2 && strcmp(argv[2], "burst") == 0);
	const char *pause_ms = getenv("GPU_LOOP_PAUSE_MS");
	int graph = argc > 2 && strcmp(argv[2], "graph") == 0;
	int graph_once = argc > 2 && strcmp(argv[2], "graph-once") == 0;
	int library = argc > 2 && strcmp(argv[2], "library") == 0;
	int slow = argc > 2 && strcmp(argv[2], "slow") == 0;
	int hostfunc = argc > 2 && strcmp(argv[2], "hostfunc") == 0;
	int callback = argc > 2 && strcmp(argv[2], "callback") == 0;
	int hostfunc_fast = argc > 2 && strcmp(argv[2], "hostfunc-fast") == 0;
	int graph_host = argc > 2 && strcmp(argv[2], "graph-hostfunc") == 0;
	int graph_host_fast = argc > 2 && strcmp(argv[2], "graph-hostfunc-fast") == 0;
	int nosync_capture = argc > 2 && strcmp(argv[2], "nosync-capture") == 0;
	int nosync = nosync_capture || (argc > 2 && strcmp(argv[2], "nosync") == 0);
	int row_copies = argc > 2 && strcmp(argv[2], "row-copies") == 0;
	int rows_2d = argc > 2 && strcmp(argv[2], "rows-2d") == 0;
	int few_rows = argc > 2 && strcmp(argv[2], "few-row-copies") == 0;
	int wide_rows = argc > 2 && strcmp(argv[2], "wide-row-copies") == 0;
	/* the rows the row modes copy each step, one at a time or (rows-2d) at once */
	int rows = row_copies || rows_2d ? ROW_COPIES
		   : few_rows		 ? FEW_ROW_COPIES
		   : wide_rows		 ? WIDE_ROW_COPIES
					 : 0;
	size_t width = wide_rows ? WIDE_ROW_BYTES : ROW_BYTES; /* a row's bytes */
	const enum cudaMemcpyKind up = cudaMemcpyHostToDevice, down = cudaMemcpyDeviceToHost;
	unsigned char *host_rows = NULL, *device_rows = NULL;
	cudaStream_t side = NULL;
	void *host_us = (void *)(uintptr_t)(hostfunc_fast || graph_host_fast ? 0 : HOST_FUNC_US);
	cudaStreamCallback_t cb = host_callback;
	static const char image[] = "gpu_loop library image", name[] = "gpu_loop_kernel";
	cudaLibrary_t lib;
	cudaKernel_t kernel;
	cudaGraph_t captured = NULL;
	cudaGraphExec_t exec = NULL;
	int (*gpu_trace)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "syncspy_gpu_trace");
	int (*record_start)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "syncspy_start");
	int (*record_stop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "syncspy_stop");
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)(slow ? SLOW_KERNEL_US : KERNEL_US);
	void *args[] = {&param}, *no_param = NULL, *no_args[] = {&no_param};
	void *queued_param = (void *)(uintptr_t)NOSYNC_KERNEL_US, *queued_args[] = {&queued_param};
	unsigned long long paused_at = 0;
	cudaStream_t stream;

	if (argc > 2 && (strcmp(argv[2], "one-event") == 0 || strcmp(argv[2], "slot-events") == 0))
		return upload_ring(steps, strcmp(argv[2], "one-event") == 0);
	if (argc > 2 &&
	    (strcmp(argv[2], "converge") == 0 || strcmp(argv[2], "converge-device") == 0))
		return converge_loop(steps, strcmp(argv[2], "converge") == 0);
	if (argc > 2 && (strcmp(argv[2], "shared-dma") == 0 || strcmp(argv[2], "split-dma") == 0))
		return dma_pipeline(steps, strcmp(argv[2], "shared-dma") == 0);
	if (argc > 2 && strcmp(argv[2], "helper-backward") == 0)
		return helper_backward(steps);
	if (argc > 2 && strcmp(argv[2], "lanes") == 0) {
		pthread_t lanes[LANES];
		CHECK(cudaFree(NULL)); /* the context, before the threads */
		for (int i = 0; i < LANES; i++)
			if (pthread_create(&lanes[i], NULL, lane, &steps) != 0)
				return 1;
		for (int i = 0; i < LANES; i++)
			pthread_join(lanes[i], NULL);
		printf("done %d steps\n", steps);
		return 0;
	}
	pthread_t allocator;
	int alloc_thread_on = argc > 2 && strcmp(argv[2], "alloc-thread") == 0;
	int sync_free = argc > 2 && strcmp(argv[2], "sync-free") == 0;
	int free_async = argc > 2 && strcmp(argv[2], "free-async") == 0;
	int eval_loop = argc > 2 && strcmp(argv[2], "then-eval") == 0;
	int eval_once = argc > 2 && strcmp(argv[2], "then-eval-once") == 0;
	int decode = argc > 2 && strcmp(argv[2], "then-decode") == 0;
	int teardown_frees = argc > 2 && strcmp(argv[2], "teardown-frees") == 0;
	int stream_per_step = argc > 2 && strcmp(argv[2], "stream-per-step") == 0;
	void *teardown_buffers[TEARDOWN_FREES];
	void *scratch = NULL;
	if (argc > 2 && strcmp(argv[2], "exit-syncs") == 0 && atexit(syncs_at_exit) != 0)
		return 1;
	if (argc > 2 && strcmp(argv[2], "exit-only") == 0) /* the first CUDA call at exit */
		return atexit(syncs_at_exit) != 0;
	CHECK(cudaStreamCreate(&stream));
	for (int i = 0; i < (teardown_frees ? TEARDOWN_FREES : 0); i++)
		CHECK(cudaMalloc(&teardown_buffers[i], 1 << 16));
	if (alloc_thread_on && pthread_create(&allocator, NULL, alloc_thread, NULL) != 0)
		return 1;
	if (rows) {
		CHECK(cudaMallocHost((void **)&host_rows, (size_t)rows * width));
		CHECK(cudaMalloc((void **)&device_rows, (size_t)rows * width));
		memset(host_rows, 7, (size_t)rows * width);
	}
	if (graph_once) {
		CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		CHECK(cudaStreamEndCapture(stream, &captured));
		CHECK(cudaGraphInstantiate(&exec, captured, 0)); /* once: the fix */
	}
	if (graph_host || graph_host_fast) {
		CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		CHECK(cudaLaunchHostFunc(stream, host_work, host_us)); /* MARK:graph-hostfunc */
		CHECK(cudaStreamEndCapture(stream, &captured));
		CHECK(cudaGraphInstantiate(&exec, captured, 0));
		for (int step = 0; step < steps; step++)
			CHECK(cudaGraphLaunch(exec, stream));
		CHECK(cudaStreamSynchronize(stream));
		CHECK(cudaGraphExecDestroy(exec));
		CHECK(cudaGraphDestroy(captured));
		CHECK(cudaStreamDestroy(stream));
		printf("done %d steps\n", steps);
		return 0;
	}
	if (nosync_capture) {
		CHECK(cudaStreamCreate(&side));
		CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeRelaxed));
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, no_args, 0, side));
	}
	for (int step = 0; step < steps; step++) {
		if (pause && gpu_trace && step == steps / 3) {
			gpu_trace(0);
			paused_at = now_ns();
		}
		if (pause && gpu_trace && step == 2 * steps / 3) {
			printf("paused %llu %llu\n", paused_at, now_ns());
			gpu_trace(1);
		}
		if (burst_blocks && record_start && record_stop && step % BLOCK_STEPS == 0)
			(step / BLOCK_STEPS % 2 ? record_stop : record_start)();
		if (burst_pauses && step && step % BLOCK_STEPS == 0)
			usleep((useconds_t)(pause_ms ? atoi(pause_ms) : 300) * 1000);
		if (graph) {
			CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
			CHECK(cudaStreamEndCapture(stream, &captured));
			CHECK(cudaGraphInstantiate(&exec, captured, 0)); /* MARK:instantiate */
		}
		if (graph || graph_once) {
			CHECK(cudaGraphLaunch(exec, stream));
			CHECK(cudaStreamSynchronize(stream));
			if (graph) {
				CHECK(cudaGraphExecDestroy(exec)); /* MARK:destroy */
				CHECK(cudaGraphDestroy(captured));
			}
			continue;
		}
		if (stream_per_step) {
			cudaStream_t fresh;
			CHECK(cudaStreamCreate(&fresh));
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, no_args, 0,
					       NULL));
			CHECK(
			    cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, fresh));
			CHECK(
			    cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, fresh));
			CHECK(cudaStreamSynchronize(fresh));
			CHECK(cudaStreamDestroy(fresh));
			continue;
		}
		if (library) {
			CHECK(cudaLibraryLoadData(&lib, image, NO_OPTIONS)); /* MARK:libload */
			CHECK(cudaLibraryGetKernel(&kernel, lib, name));     /* MARK:libget */
			CHECK(cudaLaunchKernel((const void *)kernel, one, one, args, 0, stream));
			CHECK(cudaStreamSynchronize(stream));
			CHECK(cudaLibraryUnload(lib)); /* MARK:libunload */
			continue;
		}
		if (burst || nosync) {
			for (int k = 0; k < BURST_KERNELS; k++)
				CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one,
						       nosync && !k ? queued_args : no_args, 0,
						       stream));
			if (burst)
				CHECK(cudaStreamSynchronize(stream));
			usleep(BURST_SLEEP_US);
			continue;
		}
		for (int r = 0; r < rows && !rows_2d; r++) {
			unsigned char *to = device_rows + (size_t)r * width;
			const unsigned char *from = host_rows + (size_t)r * width;

			issue_cost();
			CHECK(cudaMemcpyAsync(to, from, width, up, stream)); /* MARK:row-copies */
		}
		if (rows_2d) { /* the fix: all the rows in one copy */
			issue_cost();
			CHECK(cudaMemcpy2DAsync(device_rows, width, host_rows, width, width,
						(size_t)rows, up, stream));
		}
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		if (sync_free || free_async)
			CHECK(cudaMallocAsync(&scratch, 1 << 20, stream));
		if (hostfunc || hostfunc_fast)
			CHECK(cudaLaunchHostFunc(stream, host_work, host_us)); /* MARK:hostfunc */
		if (callback)
			CHECK(cudaStreamAddCallback(stream, cb, host_us, 0)); /* MARK:callback */
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
		if (sync_free) {
			CHECK(cudaStreamSynchronize(stream)); /* MARK:sync-before-free */
			CHECK(cudaFree(scratch));	      /* MARK:free-after-sync */
			continue;
		}
		if (free_async)
			CHECK(cudaFreeAsync(scratch, stream)); /* MARK:free-async */
		CHECK(cudaStreamSynchronize(stream));
		if (step % 10 == 9)
			CHECK(cudaDeviceSynchronize());
	}
	if (nosync)
		CHECK(cudaStreamSynchronize(stream)); /* the loop's one wait, after it */
	if (eval_loop || eval_once) {		      /* STEPS-6: a second loop */
		int *result = NULL, got = 0;

		CHECK(cudaMalloc((void **)&result, (size_t)steps * sizeof(int)));
		for (int i = 0; i < steps; i++) {
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0,
					       stream));
			if (!eval_loop)
				continue;
			CHECK(cudaMemcpy(&got, result + i, sizeof(got), down)); /* MARK:eval-read */
		}
		if (eval_once)
			CHECK(cudaMemcpy(&got, result, sizeof(got), down));
		CHECK(cudaFree(result));
	}
	if (decode) { /* STEPS-7: a second loop whose steps vary in length */
		int *d_tok = NULL, tok = 0, *prompt = NULL; /* the tokens, the last read */

		CHECK(cudaMalloc((void **)&d_tok, 64 * sizeof(int)));
		CHECK(cudaMallocHost((void **)&prompt, 64 * sizeof(int)));
		for (int request = 0; request < steps; request++) {
			int length = 2 + (int)((unsigned)request * 2654435761u % 19u);

			CHECK(cudaMemcpyAsync(d_tok, prompt, 64 * sizeof(int), up, stream));
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0,
					       stream));
			CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0,
					       stream));
			for (int t = 0; t < length; t++) {
				CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one,
						       no_args, 0, stream));
				CHECK(cudaMemcpy(&tok, d_tok, 4, down)); /* MARK:decode-read */
			}
		}
		CHECK(cudaFreeHost(prompt));
		CHECK(cudaFree(d_tok));
	}
	for (int i = 0; i < (teardown_frees ? TEARDOWN_FREES : 0); i++)
		CHECK(cudaFree(teardown_buffers[i])); /* MARK:teardown-free */
	if (alloc_thread_on) {
		allocating = 0;
		pthread_join(allocator, NULL);
	}
	if (nosync_capture) {
		CHECK(cudaStreamEndCapture(side, &captured));
		CHECK(cudaGraphDestroy(captured));
		CHECK(cudaStreamDestroy(side));
	}
	if (graph_once) {
		CHECK(cudaGraphExecDestroy(exec)); /* MARK:teardown */
		CHECK(cudaGraphDestroy(captured));
	}
	if (rows) {
		CHECK(cudaFree(device_rows));
		CHECK(cudaFreeHost(host_rows));
	}
	CHECK(cudaStreamDestroy(stream));
	printf("done %d steps\n", steps);
	return 0;
}
