/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/libcurand_standin.c: a library that makes an object as cuRAND makes a generator
 * (t250; examples/corpus c92), for the shim to see through the CPU stand-ins: making one
 * allocates its header on the device, its first use allocates its state and synchronizes the
 * device (curandGenerate on a fresh generator), and destroying it frees both. The module's name
 * starts with "libcurand", so that the shim names the program's call into it as the site
 * (interpose/sites.c ss_framework_module).
 */
#include <stdlib.h>

#include <cuda_runtime_api.h>

struct standin_generator {
	void *header, *state;
};

int standinCreateGenerator(struct standin_generator **out);
int standinGenerate(struct standin_generator *g, cudaStream_t stream);
int standinDestroyGenerator(struct standin_generator *g);

int standinCreateGenerator(struct standin_generator **out)
{
	struct standin_generator *g = calloc(1, sizeof(*g));

	if (!g || cudaMalloc(&g->header, 256) != cudaSuccess)
		return 1;
	*out = g;
	return 0;
}

int standinGenerate(struct standin_generator *g, cudaStream_t stream)
{
	if (!g->state) { /* the first use: the state, seeded on the device */
		if (cudaMalloc(&g->state, 4096) != cudaSuccess ||
		    cudaDeviceSynchronize() != cudaSuccess)
			return 1;
	}
	return cudaMemsetAsync(g->state, 0, 4096, stream) != cudaSuccess;
}

int standinDestroyGenerator(struct standin_generator *g)
{
	int rc =
	    (g->state && cudaFree(g->state) != cudaSuccess) || cudaFree(g->header) != cudaSuccess;

	free(g);
	return rc;
}
