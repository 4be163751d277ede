/*
 * tests/progs/cu_check.h: CHECK for the test programs that call the CUDA driver API (progs.h has
 * the runtime's): a failed call prints where and what it returned, and the program exits 10.
 */
#ifndef SYNCSPY_TESTS_CU_CHECK_H
#define SYNCSPY_TESTS_CU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		CUresult rc_ = (call);                                                             \
		if (rc_ != CUDA_SUCCESS) {                                                         \
			fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)rc_); \
			exit(10);                                                                  \
		}                                                                                  \
	} while (0)

#endif
