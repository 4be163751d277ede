/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/aggregate.c: a launch-bound training loop for aggregate mode (SYNCSPY_MODE,
 * interpose/aggregate.c; t037-t039, t430, bench/aggregate_bytes.sh): many enqueues of every
 * kind per step and a few sync points.
 *
 *   aggregate [steps N | seconds S] [launches K] [host_us U] [unmarked] [helper] [progress]
 *             [made FILE] [legacy]
 *
 * Each step: syncspy_step("train") (unless unmarked; looked up at run time, so the program runs
 * without the shim too); K no-op kernels on the compute stream (@launch); an async H2D copy from
 * pinned memory on it (@copy); an event recorded there (@record) that a side stream waits for
 * (@wait) before its own kernel (@side-launch); one ncclAllReduce on a communicator of one rank
 * (@allreduce); a stream sync (@sync: S2); two stream queries of the idle stream (@poll: one S7
 * loop of 2); a scratch buffer allocated and freed (@alloc, @free: S6); every fourth step a
 * blocking 4-byte D2H read (@read: S4). helper: a second thread launches 3 kernels in every step
 * (@helper-launch), between two barriers of the main thread's step; legacy: one kernel on the
 * legacy stream too (@legacy-launch); host_us: each launch also spins U microseconds on the host,
 * as a real launch costs the host about 4 (docs/architecture.md F10; the stand-in's costs a tenth
 * of that): bench/aggregate_bytes.sh's loop has a real GPU's launch rate. N steps (default 20)
 * or as many as fit in S seconds.
 * Prints "steps N launches L enqueues E" at the end (every enqueue call it made: E1-E3, N2) and,
 * with progress, "progress STEPS ENQUEUES" after each step that ends 50 ms or more after the
 * last line (stdout flushed: a test that kills the program reads them). With made FILE, after
 * every step FILE holds "STEPS ENQUEUES" as of that step, rewritten in place: a test that kills
 * the program reads there how much it had made in all, which the throttled progress lines do not
 * say (t039 once took the last line for it and failed when 8 steps followed that line).
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define NCHECK(call)                                                                               \
	do {                                                                                       \
		if ((call) != ncclSuccess) {                                                       \
			fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);          \
			exit(11);                                                                  \
		}                                                                                  \
	} while (0)

#define HELPER_LAUNCHES 3

static const dim3 one = {1, 1, 1};
static pthread_barrier_t step_start, step_done;
static volatile int helper_quit;

static void nothing(void *p)
{
	(void)p;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double host_us;

static void launch(cudaStream_t s)
{
	void *param = NULL, *args[] = {&param};
	CHECK(cudaLaunchKernel((const void *)nothing, one, one, args, 0, s)); /* @launch */
	if (host_us > 0)
		for (double until = now_s() + host_us / 1e6; now_s() < until;)
			;
}

/* helper: 3 launches per step of the main thread, on a stream of its own */
static void *helper(void *arg)
{
	cudaStream_t s;
	void *param = NULL, *args[] = {&param};
	(void)arg;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (;;) {
		pthread_barrier_wait(&step_start);
		if (helper_quit)
			break;
		for (int i = 0; i < HELPER_LAUNCHES; i++)
			CHECK(cudaLaunchKernel((const void *)nothing, one, one, args, 0,
					       s)); /* @helper-launch */
		pthread_barrier_wait(&step_done);
	}
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	return NULL;
}

int main(int argc, char **argv)
{
	long steps = 20, launches = 200;
	double seconds = 0;
	int marked = 1, with_helper = 0, progress = 0, legacy = 0, made_fd = -1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "steps") == 0 && i + 1 < argc)
			steps = atol(argv[++i]);
		else if (strcmp(argv[i], "seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "launches") == 0 && i + 1 < argc)
			launches = atol(argv[++i]);
		else if (strcmp(argv[i], "host_us") == 0 && i + 1 < argc)
			host_us = atof(argv[++i]);
		else if (strcmp(argv[i], "unmarked") == 0)
			marked = 0;
		else if (strcmp(argv[i], "helper") == 0)
			with_helper = 1;
		else if (strcmp(argv[i], "progress") == 0)
			progress = 1;
		else if (strcmp(argv[i], "made") == 0 && i + 1 < argc) {
			made_fd = open(argv[++i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (made_fd < 0) {
				perror(argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "legacy") == 0)
			legacy = 1;
		else {
			fprintf(stderr, "aggregate: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	void (*step_mark)(const char *) = marked ? dlsym(RTLD_DEFAULT, "syncspy_step") : NULL;
	cudaStream_t s, side;
	cudaEvent_t ev;
	float *pinned, *dev, *scratch, result;
	ncclComm_t comm;
	pthread_t thread;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CHECK(cudaMallocHost((void **)&pinned, 4096));
	CHECK(cudaMalloc((void **)&dev, 4096));
	NCHECK(ncclCommInitAll(&comm, 1, NULL));
	if (with_helper) {
		pthread_barrier_init(&step_start, NULL, 2);
		pthread_barrier_init(&step_done, NULL, 2);
		pthread_create(&thread, NULL, helper, NULL);
	}
	long step = 0, launched = 0, enqueues = 0;
	double start = now_s(), last_progress = start;
	for (; seconds > 0 ? now_s() - start < seconds : step < steps; step++) {
		if (step_mark)
			step_mark("train");
		if (with_helper)
			pthread_barrier_wait(&step_start);
		for (long k = 0; k < launches; k++)
			launch(s);
		if (legacy) {
			void *param = NULL, *args[] = {&param};
			CHECK(cudaLaunchKernel((const void *)nothing, one, one, args, 0,
					       0)); /* @legacy-launch */
		}
		CHECK(cudaMemcpyAsync(dev, pinned, 4096, cudaMemcpyHostToDevice, s)); /* @copy */
		CHECK(cudaEventRecord(ev, s));					      /* @record */
		CHECK(cudaStreamWaitEvent(side, ev, 0));			      /* @wait */
		{
			void *param = NULL, *args[] = {&param};
			CHECK(cudaLaunchKernel((const void *)nothing, one, one, args, 0,
					       side)); /* @side-launch */
		}
		NCHECK(ncclAllReduce(dev, dev, 16, ncclFloat32, ncclSum, comm, s)); /* @allreduce */
		launched += launches + 1 + legacy;
		enqueues += launches + legacy + 5;
		if (with_helper) {
			pthread_barrier_wait(&step_done);
			launched += HELPER_LAUNCHES;
			enqueues += HELPER_LAUNCHES;
		}
		CHECK(cudaStreamSynchronize(s)); /* @sync */
		CHECK(cudaStreamSynchronize(side));
		(void)cudaStreamQuery(s); /* @poll */
		(void)cudaStreamQuery(s);
		CHECK(cudaMalloc((void **)&scratch, 256)); /* @alloc */
		CHECK(cudaFree(scratch));		   /* @free */
		if (step % 4 == 3)
			CHECK(cudaMemcpy(&result, dev, 4, cudaMemcpyDeviceToHost)); /* @read */
		if (made_fd >= 0) {
			/* fixed width, so that a shorter count never leaves a longer one's tail */
			char made[64];
			int n = snprintf(made, sizeof made, "%20ld %20ld\n", step + 1, enqueues);
			if (pwrite(made_fd, made, (size_t)n, 0) != n) {
				perror("made");
				return 1;
			}
		}
		if (progress && now_s() - last_progress >= 0.05) {
			printf("progress %ld %ld\n", step + 1, enqueues);
			fflush(stdout);
			last_progress = now_s();
		}
	}
	if (with_helper) {
		helper_quit = 1;
		pthread_barrier_wait(&step_start);
		pthread_join(thread, NULL);
	}
	NCHECK(ncclCommDestroy(comm));
	CHECK(cudaFree(dev));
	CHECK(cudaFreeHost(pinned));
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaStreamDestroy(side));
	CHECK(cudaStreamDestroy(s));
	printf("steps %ld launches %ld enqueues %ld\n", step, launched, enqueues);
	return 0;
}
