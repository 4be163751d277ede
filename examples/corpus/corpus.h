/*
 * examples/corpus/corpus.h: what the CUDA C workloads of the labelled corpus share: checking
 * every CUDA return code and printing one deterministic result line. It makes no CUDA call that
 * syncs, allocates or copies, so every such call stays in the workload's own source, on a line
 * marked SYNCSPY-PROBLEM or SYNCSPY-CLEAN (examples/corpus/README.md).
 */
#ifndef SYNCSPY_CORPUS_H
#define SYNCSPY_CORPUS_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A corpus workload is recorded to be scored: a silent CUDA error would make its trace
 * meaningless, so the first failing call ends the program with status 1. */
#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t check_err_ = (call);                                                   \
		if (check_err_ != cudaSuccess) {                                                   \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,      \
				cudaGetErrorString(check_err_));                                   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* <<<>>> returns nothing: its launch error is read right after it (no sync). */
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

/* The result line: identical with and without the shim, so the GPU script can compare them. */
static inline void corpus_result(const char *name, int steps, unsigned long long checksum)
{
	printf("%s: steps=%d checksum=%llu result=OK\n", name, steps, checksum);
}

/* A wrong value ends the program with status 1 (the shim must not change results). */
static inline void corpus_expect(const char *name, const char *what, long long got, long long want)
{
	if (got != want) {
		fprintf(stderr, "%s: %s = %lld, want %lld\n", name, what, got, want);
		exit(1);
	}
}

#endif
