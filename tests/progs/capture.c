/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/capture.c: a loop in three phases for capture ranges (interpose/capture.c,
 * SHIM-6; t035, t036): BEFORE steps, then IN steps inside the capture range, then AFTER steps
 * outside it again. A step is one kernel (a host function of the CPU stand-in that sleeps
 * KERNEL_US) and a cudaStreamSynchronize; the steps in the range start with
 * syncspy_step("train").
 *
 *   capture MODE [BEFORE IN AFTER]        (4 6 5 by default)
 *
 * MODE says what starts and stops the range: profiler (cudaProfilerStart/Stop), driver
 * (cuProfilerStart/Stop, looked up with dlsym as a static runtime would), api
 * (syncspy_start/syncspy_stop; syncspy_stop first), nvtx (the NVTX range "capture", between
 * ranges "before" and "after"), time (nothing: SYNCSPY_DELAY/SYNCSPY_DURATION decide; BEFORE is
 * then the run's length in ms, steps of about a ms). The shim's functions are looked up at run
 * time, so the program runs without it too. At the end it prints what reached the stand-in
 * driver's profiler API ("profiler STARTS STOPS") and how many kernels it launched.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progs.h"

#define KERNEL_US 200

static cudaStream_t stream;
static int launched;

static void step(void (*mark)(const char *))
{
	const dim3 one = {1, 1, 1};
	void *param = (void *)(uintptr_t)KERNEL_US;
	void *args[] = {&param};

	if (mark)
		mark("train");
	CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, stream));
	CHECK(cudaStreamSynchronize(stream));
	launched++;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* What starts and stops the range in MODE (nothing for time). */
static void range(const char *mode, int on)
{
	if (!strcmp(mode, "profiler")) {
		CHECK(on ? cudaProfilerStart() : cudaProfilerStop());
	} else if (!strcmp(mode, "driver")) {
		void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		CUresult (*fn)(void) =
		    cuda ? (CUresult(*)(void))dlsym(cuda, on ? "cuProfilerStart" : "cuProfilerStop")
			 : NULL;
		if (!fn || fn() != CUDA_SUCCESS) {
			fprintf(stderr, "cuProfiler%s failed\n", on ? "Start" : "Stop");
			exit(10);
		}
	} else if (!strcmp(mode, "api")) {
		int (*fn)(void) =
		    (int (*)(void))dlsym(RTLD_DEFAULT, on ? "syncspy_start" : "syncspy_stop");
		if (fn)
			printf("syncspy_%s: %d\n", on ? "start" : "stop", fn());
	} else if (!strcmp(mode, "nvtx")) {
		nvtxRangePop();
		nvtxRangePushA(on ? "capture" : "after");
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "profiler";
	int before = argc > 2 ? atoi(argv[2]) : 4, in = argc > 3 ? atoi(argv[3]) : 6,
	    after = argc > 4 ? atoi(argv[4]) : 5;
	void (*mark)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step");

	if (!strcmp(mode, "api"))
		range(mode, 0); /* nothing before the start */
	if (!strcmp(mode, "nvtx"))
		nvtxRangePushA("before");
	CHECK(cudaStreamCreate(&stream));
	if (!strcmp(mode, "time")) {
		double end = now_ms() + before;
		while (now_ms() < end)
			step(NULL);
	} else {
		for (int i = 0; i < before; i++)
			step(NULL);
		range(mode, 1);
		for (int i = 0; i < in; i++)
			step(mark);
		range(mode, 0);
		for (int i = 0; i < after; i++)
			step(NULL);
	}
	if (!strcmp(mode, "nvtx"))
		nvtxRangePop();
	CHECK(cudaStreamDestroy(stream));

	void (*calls)(int *, int *) = NULL;
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (cuda)
		calls = (void (*)(int *, int *))dlsym(cuda, "standin_cuda_profiler_calls");
	int starts = -1, stops = -1;
	if (calls)
		calls(&starts, &stops);
	printf("profiler %d %d\nlaunched %d\n", starts, stops, launched);
	return 0;
}
