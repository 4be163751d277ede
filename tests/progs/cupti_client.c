/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/cupti_client.c: a program with a CUPTI client of its own, like torch.profiler's
 * Kineto: it loads libcupti.so.13 into the global scope and registers activity buffer
 * callbacks through the dynamic linker (the shim exports the function: CUPTI-1), then makes a
 * few CUDA calls (the stand-in runtime). Prints what the registration returned, so a test can
 * compare it with and without the shim.
 *
 *   cupti_client CUPTI_LIBRARY [register|none]
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static void request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = malloc(1 << 16);
	*size = *buffer ? 1 << 16 : 0;
	*max_records = 0;
}

static void complete(void *context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	free(buffer);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	if (strcmp(argv[2], "register") == 0) {
		if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
			fprintf(stderr, "cupti_client: %s\n", dlerror());
			return 1;
		}
		int (*register_callbacks)(void *, void *) =
		    (int (*)(void *, void *))dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");
		if (!register_callbacks)
			return 1;
		printf("cuptiActivityRegisterCallbacks: %d\n",
		       register_callbacks((void *)request, (void *)complete));
	}
	void *device = NULL;
	printf("cudaMalloc: %d\n", (int)cudaMalloc(&device, 1024));
	printf("cudaFree: %d\n", (int)cudaFree(device));
	return 0;
}
