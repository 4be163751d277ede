/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/progs.h: what the C test programs share: CHECK, which stops the program (exit
 * 10) at the first CUDA runtime call that fails, naming it, and sleep_kernel, a "kernel" of the
 * CPU stand-ins (a host function the stream's worker runs, tests/standin/README.md) that takes
 * the given microseconds.
 */
#ifndef SYNCSPY_TEST_PROGS_H
#define SYNCSPY_TEST_PROGS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t rc_ = (call);                                                          \
		if (rc_ != cudaSuccess) {                                                          \
			fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)rc_); \
			exit(10);                                                                  \
		}                                                                                  \
	} while (0)

static inline void sleep_kernel(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

#endif
