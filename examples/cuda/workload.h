/*
 * examples/cuda/workload.h: what the numbered reference workloads (NN_*.cu) share: the check of
 * every CUDA return code, the choice of variant from argv, and the result line.
 *
 * Each workload is one program with two variants: run without arguments it is the "bad" version
 * (the pattern a syncspy rule flags), run with --fixed it is the repaired one. Keeping both in
 * one file keeps them comparable line by line; the .expect file beside it says what
 * `syncspy report` must find for each (examples/README.md).
 */
#ifndef SYNCSPY_EXAMPLES_WORKLOAD_H
#define SYNCSPY_EXAMPLES_WORKLOAD_H

#include <cuda_runtime.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A workload is a test: a silent CUDA error would make its database meaningless, so every call
 * is checked and the first failure ends the program with status 1, naming the call. */
#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t check_err_ = (call);                                                   \
		if (check_err_ != cudaSuccess) {                                                   \
			fprintf(stderr, "%s: %s failed at line %d: %s (%d)\n", workload_name, #call, \
				__LINE__, cudaGetErrorString(check_err_), (int)check_err_);       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* <<<>>> returns nothing: its launch error is read right after it. */
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

static const char *workload_name = "workload";

/* 1 for --fixed, 0 for no argument; anything else is a usage error (status 2). */
static int parse_variant(const char *name, int argc, char **argv)
{
	workload_name = name;
	if (argc == 1)
		return 0;
	if (argc == 2 && strcmp(argv[1], "--fixed") == 0)
		return 1;
	fprintf(stderr, "usage: %s [--fixed]\n", name);
	exit(2);
}

/* A wrong value ends the program: the variants must compute the same thing. */
static void expect_equal(const char *what, long long index, long long got, long long want)
{
	if (got != want) {
		fprintf(stderr, "%s: %s[%lld] = %lld, want %lld\n", workload_name, what, index, got,
			want);
		exit(1);
	}
}

/* One deterministic line on stdout, identical with and without the shim. */
static void print_result(int fixed, const char *fmt_details, long long a, long long b)
{
	printf("%s: variant=%s ", workload_name, fixed ? "fixed" : "bad");
	printf(fmt_details, a, b);
	printf(" result=OK\n");
}

/* The kernels' integer work is ROUNDS steps of x = x * LCG_A + LCG_C (mod 2^32). Its host check
 * composes those affine steps once into x -> mul * x + add, so checking stays O(1) per value. */
#define LCG_A 1664525u
#define LCG_C 1013904223u

static void lcg_rounds(int rounds, uint32_t *mul, uint32_t *add)
{
	uint32_t m = 1, a = 0;
	for (int r = 0; r < rounds; r++) {
		m = m * LCG_A;
		a = a * LCG_A + LCG_C;
	}
	*mul = m;
	*add = a;
}

#endif
