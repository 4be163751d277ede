/* SPDX-License-Identifier: MIT */
/*
 * bench/wrapper_ab.cu: what one libsyncspy.so wrapper adds to a call, measured inside one
 * process: blocks of calls through the wrapper (the global symbol, which LD_PRELOAD binds to
 * the shim) alternate with blocks of calls straight to libcudart's own function (looked up in
 * the library's handle, which an interposer cannot intercept). Both kinds of block see the
 * same process, caches, clocks and GPU state, so the difference is the wrapper's cost, free of
 * the run-to-run noise that comparing two processes adds (bench/calls.cu does that).
 *
 *   nvcc -O2 -arch=sm_90 -cudart shared -o wrapper_ab bench/wrapper_ab.cu -ldl
 *   LD_PRELOAD=libsyncspy.so ./wrapper_ab [pairs]      (default 4000 pairs of blocks)
 *   ./wrapper_ab                                       (control: both kinds are the real call)
 *
 * The calls: cudaLaunchKernel, cudaEventRecord, cudaStreamWaitEvent, cudaStreamSynchronize on an
 * idle stream, and a <<<>>> launch (push, pop, __cudaLaunchKernel: the path whose user line the
 * shim keeps, docs/attribution.md "The site of an enqueue"; issue 14 item 3's cost).
 *
 * Each pair: settle (synchronize the streams, pause BENCH_PAUSE_US, default 50 us, so the
 * shim's writer drains its buffer), then one block of BLOCK_CALLS calls of each kind, in
 * alternating order. Per call: direct and wrapped medians over the blocks, and the median of the
 * per-pair differences (the added cost), in ns:
 *   name direct_ns wrapped_ns added_ns
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { BLOCK_CALLS = 100, DEFAULT_PAIRS = 4000, WARMUP_PAIRS = 100 };

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t check_err_ = (call);                                                   \
		if (check_err_ != cudaSuccess) {                                                   \
			fprintf(stderr, "wrapper_ab: %s failed at line %d: %d\n", #call, __LINE__,  \
				(int)check_err_);                                                  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void empty_kernel(void) {}

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*record_fn)(cudaEvent_t, cudaStream_t);
typedef cudaError_t (*wait_fn)(cudaStream_t, cudaEvent_t, unsigned int);
typedef cudaError_t (*sync_fn)(cudaStream_t);
/* What nvcc's <<<>>> expands to in CUDA 13 (crt/host_runtime.h, __cudaLaunch): push the
 * configuration, then the kernel's stub pops it and calls __cudaLaunchKernel with the handle
 * __cudaGetKernel gave it. The direct side makes the same three calls on libcudart's own
 * functions; the wrapped side is the <<<>>> itself, bound to the shim by LD_PRELOAD. */
typedef unsigned (*push_fn)(dim3, dim3, size_t, struct CUstream_st *);
typedef cudaError_t (*pop_fn)(dim3 *, dim3 *, size_t *, void *);
typedef cudaError_t (*kernel_launch_fn)(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*get_kernel_fn)(cudaKernel_t *, const void *);

struct entry_points {
	launch_fn launch;
	record_fn record;
	wait_fn wait;
	sync_fn sync;
	push_fn push; /* NULL on the wrapped side: it launches with <<<>>> */
	pop_fn pop;
	kernel_launch_fn kernel_launch;
};

static struct entry_points wrapped, direct;
static cudaStream_t work, waits, idle;
static cudaEvent_t event;
static long pause_us = 50;
static cudaKernel_t empty_kernel_handle; /* from libcudart's own __cudaGetKernel */

/* One <<<>>> launch: through the shim's wrappers (ep->push NULL), or as the same three calls
 * straight to libcudart. */
static int chevron_launch(const struct entry_points *ep)
{
	if (!ep->push) {
		empty_kernel<<<1, 1, 0, work>>>();
		return 0;
	}
	dim3 grid, blk;
	size_t shared_bytes;
	cudaStream_t stream;
	ep->push(dim3(1), dim3(1), 0, work);
	if (ep->pop(&grid, &blk, &shared_bytes, &stream) != cudaSuccess)
		return 1;
	return (int)ep->kernel_launch(empty_kernel_handle, grid, blk, NULL, shared_bytes, stream);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One timed block; returns ns per call. */
static double block(int which_case, const struct entry_points *ep)
{
	int err = 0;
	uint64_t t0 = now_ns();
	switch (which_case) {
	case 0:
		for (int i = 0; i < BLOCK_CALLS; i++)
			err |= ep->launch((const void *)empty_kernel, dim3(1), dim3(1), NULL, 0, work);
		break;
	case 1:
		for (int i = 0; i < BLOCK_CALLS; i++)
			err |= ep->record(event, work);
		break;
	case 2:
		for (int i = 0; i < BLOCK_CALLS; i++)
			err |= ep->wait(waits, event, 0);
		break;
	case 3:
		for (int i = 0; i < BLOCK_CALLS; i++)
			err |= ep->sync(idle);
		break;
	default:
		for (int i = 0; i < BLOCK_CALLS; i++)
			err |= chevron_launch(ep);
	}
	uint64_t t1 = now_ns();
	if (err)
		CHECK((cudaError_t)err);
	return (double)(t1 - t0) / BLOCK_CALLS;
}

static void settle(void)
{
	CHECK(direct.sync(work));
	CHECK(direct.sync(waits));
	if (pause_us > 0)
		usleep((useconds_t)pause_us);
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(double), compare_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? strtol(argv[1], NULL, 10) : DEFAULT_PAIRS;
	if (getenv("BENCH_PAUSE_US"))
		pause_us = strtol(getenv("BENCH_PAUSE_US"), NULL, 10);
	void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!cudart || pairs < 10) {
		fprintf(stderr, "wrapper_ab: needs libcudart.so.13 loaded (-cudart shared), pairs >= 10\n");
		return 2;
	}
	wrapped = (struct entry_points){cudaLaunchKernel, cudaEventRecord, cudaStreamWaitEvent,
					cudaStreamSynchronize};
	direct.launch = (launch_fn)dlsym(cudart, "cudaLaunchKernel");
	direct.record = (record_fn)dlsym(cudart, "cudaEventRecord");
	direct.wait = (wait_fn)dlsym(cudart, "cudaStreamWaitEvent");
	direct.sync = (sync_fn)dlsym(cudart, "cudaStreamSynchronize");
	direct.push = (push_fn)dlsym(cudart, "__cudaPushCallConfiguration");
	direct.pop = (pop_fn)dlsym(cudart, "__cudaPopCallConfiguration");
	direct.kernel_launch = (kernel_launch_fn)dlsym(cudart, "__cudaLaunchKernel");
	get_kernel_fn get_kernel = (get_kernel_fn)dlsym(cudart, "__cudaGetKernel");
	if (!direct.launch || !direct.record || !direct.wait || !direct.sync || !direct.push ||
	    !direct.pop || !direct.kernel_launch || !get_kernel)
		return 2;
	CHECK(cudaStreamCreateWithFlags(&work, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&waits, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
	CHECK(cudaEventRecord(event, work));
	CHECK(get_kernel(&empty_kernel_handle, (const void *)empty_kernel));

	static const char *const names[] = {"cudaLaunchKernel", "cudaEventRecord",
					    "cudaStreamWaitEvent", "cudaStreamSynchronize_idle",
					    "triple_chevron_launch"};
	double *d = (double *)malloc(sizeof(double) * pairs);
	double *w = (double *)malloc(sizeof(double) * pairs);
	double *diff = (double *)malloc(sizeof(double) * pairs);
	printf("# bench/wrapper_ab: %ld pairs of %d-call blocks, pause %ld us; ns per call\n",
	       pairs, BLOCK_CALLS, pause_us);
	printf("# wrapper %s the real function\n",
	       (void *)wrapped.record == (void *)direct.record ? "IS" : "is not");
	for (int c = 0; c < 5; c++) {
		for (long p = -WARMUP_PAIRS; p < pairs; p++) {
			settle();
			double a, b;
			if (p & 1) {
				a = block(c, &direct);
				b = block(c, &wrapped);
			} else {
				b = block(c, &wrapped);
				a = block(c, &direct);
			}
			if (p >= 0) {
				d[p] = a;
				w[p] = b;
				diff[p] = b - a;
			}
		}
		printf("%s %.1f %.1f %.1f\n", names[c], median(d, pairs), median(w, pairs),
		       median(diff, pairs));
		fflush(stdout);
	}
	return 0;
}
