/*
 * examples/corpus/d22_bfs_count_readback.c: corpus workload (CUDA driver API). A graph service
 * answering breadth-first depth queries over an implicit graph of 2^20 nodes (node v links to
 * (3v+1) mod n and (7v+5) mod n): per query, level after level, an expansion kernel appends
 * newly reached nodes to the next frontier through a device counter. The host loop sizes each
 * level's launch from the frontier length, which frontier_size() reads with cuMemcpyDtoH into a
 * stack variable: a device-to-host copy into pageable memory, synchronous (driver API docs:
 * cuMemcpyDtoH "exhibits synchronous behavior for most use cases"), so every level the host
 * waits for the expansion before it can queue the next one. A fixed grid striding over the
 * frontier, its length read on the device, with a level cap, would need no read per level.
 * Planted: the cuMemcpyDtoH of the frontier length in frontier_size(), every level.
 * Clean: the setup allocations and the marking of every depth unvisited, the final read of all
 * the queries' depths, teardown.
 *   d22_bfs_count_readback driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { QUERIES = 3, N = 1 << 20, THREADS = 256 };
static const unsigned int sources[QUERIES] = {0u, 12345u, 777777u};
#define UNSEEN 0xffffffffu

struct bfs {
	CUfunction expand;
	CUdeviceptr frontier, next, next_len;
};

/* --- the frontier ------------------------------------------------------------------------- */

static unsigned int frontier_size(struct bfs *b)
{
	unsigned int len = 0;
	DCHECK(cuMemcpyDtoH(&len, b->next_len, sizeof len)); // SYNCSPY-PROBLEM: blocking read of the frontier length every level, only to size the next launch
	return len;
}

/* one query: returns the number of levels */
static int bfs_query(struct bfs *b, CUdeviceptr depth, unsigned int src)
{
	unsigned int len = 1, n = N;
	int levels = 0;
	DCHECK(cuMemsetD32Async(depth + (size_t)src * sizeof(unsigned int), 0u, 1, 0));
	DCHECK(cuMemsetD32Async(b->frontier, src, 1, 0));
	DCHECK(cuMemsetD32Async(b->next_len, 0u, 1, 0));
	for (unsigned int level = 0; len > 0; level++) {
		void *args[] = {&b->frontier, &len, &depth, &b->next, &b->next_len, &n, &level};
		DCHECK(cuLaunchKernel(b->expand, (len + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, 0, args, NULL));
		len = frontier_size(b);
		DCHECK(cuMemsetD32Async(b->next_len, 0u, 1, 0));
		CUdeviceptr t = b->frontier;
		b->frontier = b->next;
		b->next = t;
		levels++;
	}
	return levels;
}

/* the same search on the host */
static int reference(unsigned int *depth, unsigned int *queue, unsigned int src)
{
	unsigned int head = 0, tail = 0;
	int levels = 0;
	depth[src] = 0;
	queue[tail++] = src;
	while (head < tail) {
		unsigned int v = queue[head++];
		unsigned int nb[2] = {(unsigned int)((3ull * v + 1) % N), (unsigned int)((7ull * v + 5) % N)};
		if ((int)depth[v] + 1 > levels)
			levels = (int)depth[v] + 1;
		for (int k = 0; k < 2; k++)
			if (depth[nb[k]] == UNSEEN) {
				depth[nb[k]] = depth[v] + 1;
				queue[tail++] = nb[k];
			}
	}
	return levels;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	struct bfs b;
	CUdeviceptr d_depth;
	const size_t depth_bytes = (size_t)QUERIES * N * sizeof(unsigned int);
	unsigned int *h_depth = (unsigned int *)malloc(depth_bytes);
	unsigned int *ref = (unsigned int *)malloc((size_t)N * sizeof(unsigned int));
	unsigned int *queue = (unsigned int *)malloc((size_t)N * sizeof(unsigned int));
	int levels[QUERIES], total_levels = 0;

	DCHECK(cuModuleGetFunction(&b.expand, module, "bfs_expand"));
	DCHECK(cuMemAlloc(&b.frontier, (size_t)N * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b.next, (size_t)N * sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&b.next_len, sizeof(unsigned int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_depth, depth_bytes)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemsetD32(d_depth, UNSEEN, (size_t)QUERIES * N)); // SYNCSPY-CLEAN: setup, every depth marked unvisited once

	for (int q = 0; q < QUERIES; q++) {
		levels[q] = bfs_query(&b, d_depth + (size_t)q * N * sizeof(unsigned int), sources[q]);
		total_levels += levels[q];
	}

	DCHECK(cuMemcpyDtoH(h_depth, d_depth, depth_bytes)); // SYNCSPY-CLEAN: final read of every query's depths
	DCHECK(cuMemFree(b.frontier)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b.next)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(b.next_len)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_depth)); // SYNCSPY-CLEAN: teardown
	driver_teardown(module);

	unsigned long long checksum = 0;
	for (int q = 0; q < QUERIES; q++) {
		memset(ref, 0xff, (size_t)N * sizeof(unsigned int));
		int want_levels = reference(ref, queue, sources[q]);
		/* both count the expansions, the one of the deepest level (that finds nothing) included */
		if (levels[q] != want_levels) {
			fprintf(stderr, "d22: query %d levels = %d, want %d\n", q, levels[q], want_levels);
			return 1;
		}
		for (int i = 0; i < N; i++) {
			unsigned int got = h_depth[(size_t)q * N + i];
			if (got != ref[i]) {
				fprintf(stderr, "d22: query %d node %d depth = %u, want %u\n", q, i, got, ref[i]);
				return 1;
			}
			checksum = checksum * 1000003u + got;
		}
	}
	free(h_depth);
	free(ref);
	free(queue);
	printf("d22_bfs_count_readback: steps=%d checksum=%llu result=OK\n", total_levels, checksum);
	return 0;
}
