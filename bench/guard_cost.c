/* SPDX-License-Identifier: MIT */
/*
 * bench/guard_cost.c: what the sync guard (interpose/guard.c) costs, measured in-process
 * (bench/guard_cost.sh runs it). Times batches of an enqueue (cudaEventRecord) and of a sync
 * on an idle stream (cudaStreamSynchronize), and prints the median ns per call of each:
 *
 *   guard_cost none    no guard open: GUARD-1's case, to compare with a shim built without
 *                      the guard (the script's A/B) and with no shim at all
 *   guard_cost open    inside an open guard: each sync point is counted and named
 *
 * The guard's functions are looked up at run time (the program also runs without the shim).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "syncspy/syncspy.h"

#define BATCH	1000
#define BATCHES 31

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median over BATCHES batches of the ns per call of WHAT (0 enqueue, 1 sync). */
static double median_ns(int what, cudaStream_t stream, cudaEvent_t event)
{
	double per_call[BATCHES];
	for (int b = 0; b < BATCHES; b++) {
		double start = now_ns();
		for (int i = 0; i < BATCH; i++) {
			if (what == 0)
				cudaEventRecord(event, stream);
			else
				cudaStreamSynchronize(stream);
		}
		per_call[b] = (now_ns() - start) / BATCH;
	}
	qsort(per_call, BATCHES, sizeof(per_call[0]), by_value);
	return per_call[BATCHES / 2];
}

int main(int argc, char **argv)
{
	int open_guard = argc > 1 && strcmp(argv[1], "open") == 0;
	__typeof__(syncspy_guard_open) *guard_open =
	    (__typeof__(syncspy_guard_open) *)dlsym(RTLD_DEFAULT, "syncspy_guard_open");
	__typeof__(syncspy_guard_close) *guard_close =
	    (__typeof__(syncspy_guard_close) *)dlsym(RTLD_DEFAULT, "syncspy_guard_close");
	cudaStream_t stream;
	cudaEvent_t event;
	if (cudaStreamCreate(&stream) != cudaSuccess || cudaEventCreate(&event) != cudaSuccess) {
		fprintf(stderr, "guard_cost: no CUDA device\n");
		return 2;
	}
	int guard = 0;
	if (open_guard) {
		guard = guard_open ? guard_open(0, NULL, NULL) : 0;
		if (!guard) {
			fprintf(stderr, "guard_cost: no guard to open (the shim is not loaded)\n");
			return 2;
		}
	}
	median_ns(0, stream, event); /* warm up: first calls, the ring's blocks */
	median_ns(1, stream, event);
	double enqueue = median_ns(0, stream, event), sync = median_ns(1, stream, event);
	if (guard)
		guard_close(guard);
	printf("%s enqueue %.1f sync %.1f\n", open_guard ? "open" : "none", enqueue, sync);
	return 0;
}
