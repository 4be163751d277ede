/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/lookups.c: a program that links no CUDA library and finds the runtime and the
 * driver by name at run time, as ctypes and other language bindings do, run on the CPU
 * stand-ins. It prints what its lookups and calls returned, so a test can check that the shim
 * changes none of it.
 *
 *   lookups probe        dlsym(RTLD_DEFAULT) for names the shim exports, before any CUDA
 *                        library is loaded (all NULL without the shim, errno unchanged and
 *                        dlerror() set: it must say the same),
 *                        then again after dlopen("libcuda.so.1", RTLD_GLOBAL), and one call
 *   lookups cudart N     dlopen("libcudart.so.13", RTLD_LOCAL), dlsym its functions, then a
 *                        stream, a copy, N stream syncs, 2 per-thread ones, a device sync and
 *                        a driver pointer from cudaGetDriverEntryPoint called twice
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

static void *must(void *lib, const char *name)
{
	void *fn = dlsym(lib, name);
	if (!fn) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(3);
	}
	return fn;
}

static int probe(void)
{
	static const char *const names[] = {"cuGetProcAddress", "cuGetProcAddress_v2",
					    "cuStreamSynchronize", "cudaStreamSynchronize",
					    "cudaGetDriverEntryPoint"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		errno = 0;
		void *fn = dlsym(RTLD_DEFAULT, names[i]);
		int saved_errno = errno;
		printf("before %s: %s, errno %d, dlerror %s\n", names[i], fn ? "found" : "null",
		       saved_errno, dlerror() ? "set" : "clear");
	}
	if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL))
		return 3;
	for (size_t i = 0; i < 3; i++)
		printf("after %s: %s\n", names[i],
		       dlsym(RTLD_DEFAULT, names[i]) ? "found" : "null");
	CUresult (*get_proc)(const char *, void **, int, cuuint64_t,
			     CUdriverProcAddressQueryResult *) =
	    must(RTLD_DEFAULT, "cuGetProcAddress_v2");
	CUresult (*init)(unsigned) = must(RTLD_DEFAULT, "cuInit");
	CUresult (*ctx_sync)(void) = NULL;
	CUdriverProcAddressQueryResult status = -1;
	printf("init: %d\n", (int)init(0));
	CUresult r = get_proc("cuCtxSynchronize", (void **)&ctx_sync, 13000, 0, &status);
	printf("lookup: %d status %d\n", (int)r, (int)status);
	printf("ctx sync: %d\n", ctx_sync ? (int)ctx_sync() : -1);
	return 0;
}

static int cudart(int n)
{
	void *lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return 3;
	cudaError_t (*stream_create)(cudaStream_t *) = must(lib, "cudaStreamCreate");
	cudaError_t (*stream_sync)(cudaStream_t) = must(lib, "cudaStreamSynchronize");
	cudaError_t (*stream_sync_ptsz)(cudaStream_t) = must(lib, "cudaStreamSynchronize_ptsz");
	cudaError_t (*stream_destroy)(cudaStream_t) = must(lib, "cudaStreamDestroy");
	cudaError_t (*malloc_)(void **, size_t) = must(lib, "cudaMalloc");
	cudaError_t (*free_)(void *) = must(lib, "cudaFree");
	cudaError_t (*memcpy_)(void *, const void *, size_t, enum cudaMemcpyKind) =
	    must(lib, "cudaMemcpy");
	cudaError_t (*device_sync)(void) = must(lib, "cudaDeviceSynchronize");
	cudaError_t (*entry_point)(const char *, void **, unsigned long long,
				   enum cudaDriverEntryPointQueryResult *) =
	    must(lib, "cudaGetDriverEntryPoint");
	cudaStream_t s;
	void *dev = NULL;
	char host[4096];
	memset(host, 7, sizeof(host));
	printf("stream create: %d\n", (int)stream_create(&s));
	printf("malloc: %d\n", (int)malloc_(&dev, sizeof(host)));
	printf("memcpy: %d\n", (int)memcpy_(dev, host, sizeof(host), cudaMemcpyHostToDevice));
	int failed = 0;
	for (int i = 0; i < n; i++)
		failed += stream_sync(s) != cudaSuccess;
	for (int i = 0; i < 2; i++)
		failed += stream_sync_ptsz(0) != cudaSuccess;
	printf("stream syncs failed: %d\n", failed);
	printf("device sync: %d\n", (int)device_sync());
	CUresult (*ctx_sync)(void) = NULL;
	enum cudaDriverEntryPointQueryResult status = -1;
	printf("entry point: %d status %d\n",
	       (int)entry_point("cuCtxSynchronize", (void **)&ctx_sync, cudaEnableDefault, &status),
	       (int)status);
	for (int i = 0; ctx_sync && i < 2; i++)
		printf("ctx sync: %d\n", (int)ctx_sync());
	printf("free: %d\n", (int)free_(dev));
	printf("stream destroy: %d\n", (int)stream_destroy(s));
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "probe"))
		return probe();
	if (!strcmp(mode, "cudart") && argc > 2)
		return cudart(atoi(argv[2]));
	fprintf(stderr, "usage: lookups probe|cudart N\n");
	return 2;
}
