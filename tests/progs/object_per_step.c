/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/object_per_step.c: a loop that makes a library's object every step (t250;
 * examples/corpus c92): each step a kernel, then a generator of libcurand_standin.so made, used
 * once and destroyed, then a stream sync.
 *
 *   object_per_step STEPS per-step   the generator made, used and destroyed every step
 *   object_per_step STEPS once       the fix: made before the loop, destroyed after it
 *
 * Lines that tests look up carry a MARK: comment.
 */
#include <string.h>

#include <cuda_runtime_api.h>

#include "progs.h"

struct standin_generator;
int standinCreateGenerator(struct standin_generator **out);
int standinGenerate(struct standin_generator *g, cudaStream_t stream);
int standinDestroyGenerator(struct standin_generator *g);

#define LIB(call)                                                                                  \
	do {                                                                                       \
		if ((call) != 0) {                                                                 \
			fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);          \
			exit(10);                                                                  \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 0;
	const char *mode = argc > 2 ? argv[2] : "";
	int once = !strcmp(mode, "once");
	struct standin_generator *g = NULL;
	cudaStream_t s;
	void *param = (void *)(uintptr_t)1000;
	void *args[] = {&param};
	const dim3 one = {1, 1, 1};

	if (steps <= 0 || (!once && strcmp(mode, "per-step"))) {
		fprintf(stderr, "usage: object_per_step STEPS per-step|once\n");
		return 2;
	}
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	if (once)
		LIB(standinCreateGenerator(&g));
	for (int step = 0; step < steps; step++) {
		CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, s));
		if (!once)
			LIB(standinCreateGenerator(&g)); /* MARK:make */
		LIB(standinGenerate(g, s));		 /* MARK:use */
		if (!once)
			LIB(standinDestroyGenerator(g)); /* MARK:destroy */
		CHECK(cudaStreamSynchronize(s));	 /* MARK:sync */
	}
	if (once)
		LIB(standinDestroyGenerator(g));
	CHECK(cudaStreamDestroy(s));
	printf("object_per_step %s %d\n", mode, steps);
	return 0;
}
