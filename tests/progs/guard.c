/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/guard.c: the sync guard's C API (include/syncspy/syncspy.h, interpose/guard.c)
 * from a C program, on the CPU stand-ins, for t900. The functions are looked up at run time, as
 * the header says a program that also runs without the shim does; without them the program
 * says so and exits 3. It prints what each guard counted and named, one line per fact, so that
 * the test compares the whole output:
 *
 *   an outer guard of every class around syncs of S1, S2, S4, S6 and S7 (an enqueue and an
 *   event record between them, not counted), two from one line in a loop; an inner guard of S2
 *   only with a callback; a close out of order refused; another thread's syncs counted in that
 *   thread's guard only (GUARD-3); the per-thread counters; errno unchanged (GUARD-2).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "syncspy/syncspy.h"

static __typeof__(syncspy_guard_open) *guard_open;
static __typeof__(syncspy_guard_points) *guard_points;
static __typeof__(syncspy_guard_count) *guard_count;
static __typeof__(syncspy_guard_close) *guard_close;
static __typeof__(syncspy_sync_counts) *sync_counts;

static int callbacks;

static void on_sync(void *arg, const struct syncspy_sync_point *point)
{
	callbacks++;
	printf("callback %s: %s S%d count %llu\n", (const char *)arg, point->api, point->sync_class,
	       point->count);
}

/* The points of guard ID, the native symbol without its offset (the offsets are the
 * compiler's), the module by its base name. */
static void print_points(const char *name, int id)
{
	struct syncspy_sync_point points[16];
	int n = guard_points(id, points, 16);
	printf("%s: %lld sync points, %d places\n", name, guard_count(id, 0), n);
	for (int i = 0; i < n && i < 16; i++) {
		const char *module = strrchr(points[i].file, '/');
		int symbol = (int)strcspn(points[i].function, "+");
		printf("  %s S%d x%llu at %.*s (%s) line %d, address %s\n", points[i].api,
		       points[i].sync_class, points[i].count, symbol, points[i].function,
		       module ? module + 1 : points[i].file, points[i].line,
		       points[i].address ? "set" : "none");
	}
}

/* Exported (-rdynamic) for dladdr to name it; one call site, twice (volatile: not unrolled,
 * and the call is no tail call). */
__attribute__((noinline)) int sync_twice(void)
{
	int failed = 0;
	for (volatile int i = 0; i < 2; i++)
		failed |= cudaDeviceSynchronize();
	return failed;
}

__attribute__((noinline)) int poll_three_times(void)
{
	int status = 0;
	for (volatile int i = 0; i < 3; i++)
		status |= cudaStreamQuery(0);
	return status;
}

static void *other_thread(void *arg)
{
	(void)arg;
	int id = guard_open(0, NULL, NULL);
	cudaDeviceSynchronize();
	cudaStreamSynchronize(0);
	unsigned long long counts[7];
	sync_counts(counts, 7);
	printf("thread: guard %d counted %lld; S1 %llu S2 %llu\n", id, guard_count(id, 0),
	       counts[0], counts[1]);
	guard_close(id);
	return NULL;
}

int main(void)
{
	*(void **)&guard_open = dlsym(RTLD_DEFAULT, "syncspy_guard_open");
	*(void **)&guard_points = dlsym(RTLD_DEFAULT, "syncspy_guard_points");
	*(void **)&guard_count = dlsym(RTLD_DEFAULT, "syncspy_guard_count");
	*(void **)&guard_close = dlsym(RTLD_DEFAULT, "syncspy_guard_close");
	*(void **)&sync_counts = dlsym(RTLD_DEFAULT, "syncspy_sync_counts");
	if (!guard_open || !guard_points || !guard_count || !guard_close || !sync_counts) {
		printf("guard: the shim is not loaded\n");
		return 3;
	}
	char *device = NULL, host[256];
	cudaMalloc((void **)&device, sizeof(host)); /* before any guard: counted by the thread */
	cudaEvent_t event;
	cudaEventCreate(&event);

	int outer = guard_open(0, NULL, NULL);
	printf("outer guard %d\n", outer);
	sync_twice();
	cudaEventRecord(event, 0);					/* E2: not a sync point */
	cudaMemsetAsync(device, 0, sizeof(host), 0);			/* E1 */
	cudaMemcpy(host, device, sizeof(host), cudaMemcpyDeviceToHost); /* S4 */
	poll_three_times(); /* S7, one polling loop of 3 queries */

	int inner = guard_open(SYNCSPY_S2, on_sync, "inner");
	printf("inner guard %d\n", inner);
	cudaStreamSynchronize(0);
	errno = 1234;
	cudaDeviceSynchronize(); /* outer's, not inner's */
	printf("errno after a guarded sync: %d\n", errno);
	printf("close outer first: %lld\n", guard_close(outer));
	print_points("inner", inner);
	printf("inner S2 %lld, S1 %lld, bad class %lld; callbacks %d\n", guard_count(inner, 2),
	       guard_count(inner, 1), guard_count(inner, 8), callbacks);
	printf("close inner: %lld\n", guard_close(inner));

	pthread_t thread;
	pthread_create(&thread, NULL, other_thread, NULL);
	pthread_join(thread, NULL);

	cudaFree(device); /* S6 */
	print_points("outer", outer);
	printf("outer S1 %lld S2 %lld S4 %lld S6 %lld S7 %lld\n", guard_count(outer, 1),
	       guard_count(outer, 2), guard_count(outer, 4), guard_count(outer, 6),
	       guard_count(outer, 7));
	printf("close outer: %lld\n", guard_close(outer));
	printf("again: %lld; points of a closed guard: %d\n", guard_close(outer),
	       guard_points(outer, NULL, 0));
	unsigned long long counts[7];
	int n = sync_counts(counts, 7);
	printf("main thread counts (%d classes):", n);
	for (int i = 0; i < n; i++)
		printf(" S%d %llu", i + 1, counts[i]);
	printf("\n");
	cudaEventDestroy(event);
	return 0;
}
