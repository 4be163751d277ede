/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/burst.c: bursts of tiny calls, for the writer's throughput (issue 18 items 1-2;
 * tests t850-t851, bench/writer_throughput.sh).
 *
 *   burst THREADS CALLS [SYNC_EVERY [live|idle]]
 *
 * Each of THREADS threads makes CALLS cudaEventRecord calls on its own stream as fast as the
 * stand-in allows, with a cudaStreamSynchronize every SYNC_EVERY records (0: never). With live,
 * every thread waits at a barrier after its first call until all THREADS threads have made
 * theirs, so that they are all alive and recording at once. With idle, after the burst the
 * program waits (up to 30 s, making no call) until its resident memory has fallen back by
 * 1 MiB, and says whether it did: the shim gives the buffers' pages back when nothing is being
 * recorded (interpose/ring.c), and prints the nice value of the shim's writer thread then (it
 * runs at the program's own once it has caught up: interpose/writer.c); then it makes the burst
 * once more. Per thread: one
 * cudaStreamCreate, one cudaEventCreate, CALLS records, CALLS / SYNC_EVERY syncs, one
 * cudaEventDestroy, one cudaStreamDestroy. Prints the calls made and the seconds they took.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "progs.h"

static long calls, sync_every;
static int live;
static pthread_barrier_t barrier;

static void *worker(void *arg)
{
	(void)arg;
	cudaStream_t s;
	cudaEvent_t e;
	CHECK(cudaStreamCreate(&s));
	if (live)
		pthread_barrier_wait(&barrier);
	CHECK(cudaEventCreate(&e));
	for (long i = 1; i <= calls; i++) {
		CHECK(cudaEventRecord(e, s));
		if (sync_every > 0 && i % sync_every == 0)
			CHECK(cudaStreamSynchronize(s));
	}
	CHECK(cudaEventDestroy(e));
	CHECK(cudaStreamDestroy(s));
	return NULL;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* The nice value of the shim's writer thread (named syncspy-writer: interpose/writer.c), from
 * /proc/self/task/TID/stat, whose 19th field it is; 99 where there is no such thread. */
static int writer_nice(void)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *d;
	int nice = 99;
	while (dir && (d = readdir(dir)) != NULL) {
		char path[300], buf[1024];
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", d->d_name);
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = 0;
		char *close = strrchr(buf, ')');
		if (!strstr(buf, "(syncspy-writer)") || !close)
			continue;
		char *field = close + 2; /* the 3rd field, the state */
		for (int i = 3; i < 19 && field; i++)
			if ((field = strchr(field, ' ')) != NULL)
				field++;
		if (field)
			nice = atoi(field);
	}
	if (dir)
		closedir(dir);
	return nice;
}

static int run_threads(int threads, pthread_t *tids)
{
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, worker, NULL) != 0) {
			fprintf(stderr, "burst: pthread_create failed\n");
			return 3;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: burst THREADS CALLS [SYNC_EVERY [live|idle]]\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	calls = atol(argv[2]);
	sync_every = argc > 3 ? atol(argv[3]) : 0;
	live = argc > 4 && strcmp(argv[4], "live") == 0;
	int idle = argc > 4 && strcmp(argv[4], "idle") == 0;
	if (threads < 1 || threads > 4096 || calls < 0)
		return 2;
	if (live)
		pthread_barrier_init(&barrier, NULL, (unsigned)threads);
	pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (run_threads(threads, tids) != 0)
		return 3;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long per_thread = 4 + calls + (sync_every > 0 ? calls / sync_every : 0);
	printf("burst: %ld calls in %.3f s\n", per_thread * threads,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (idle) {
		/* 1 MiB: 256 of the shim's blocks */
		long peak = rss_kb(), want = 1024, now = peak;
		for (int i = 0; i < 3000 && peak - now < want; i++) {
			usleep(10000);
			now = rss_kb();
		}
		printf("burst: memory given back: %s\n", peak - now >= want ? "yes" : "no");
		/* the writer, once it has caught up with the burst, runs at the program's priority
		 * again: given up to 10 s to get there (the pages go back while it still drains) */
		int nice = writer_nice();
		for (int i = 0; i < 1000 && nice != 99 && nice != getpriority(PRIO_PROCESS, 0); i++) {
			usleep(10000);
			nice = writer_nice();
		}
		printf("burst: writer nice while idle: %d, the program's %d\n", nice,
		       getpriority(PRIO_PROCESS, 0));
		if (run_threads(threads, tids) != 0)
			return 3;
		printf("burst: %ld calls again\n", per_thread * threads);
	}
	free(tids);
	return 0;
}
