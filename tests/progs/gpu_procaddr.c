/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/gpu_procaddr.c: the GPU check of issue 14 item 4 (tests/gpu/run.sh, part
 * procaddr). Built with nvcc and -lcuda on the GPU machine; needs no kernel, so it also runs on
 * the CPU stand-ins. Two ways to CUDA that the shim once did not see:
 *
 *   gpu_procaddr direct N          the program links libcuda and calls cuGetProcAddress itself
 *                                  (cuda.h's name for cuGetProcAddress_v2, and the 11.3
 *                                  cuGetProcAddress by its symbol), then the pointers: N async
 *                                  copies each followed by a stream sync, 2 per-thread stream
 *                                  syncs, 3 context syncs
 *   gpu_procaddr cudart M LIBCUDART
 *                                  ctypes-style: dlopen(LIBCUDART, RTLD_LOCAL), dlsym, then M
 *                                  async copies each followed by cudaStreamSynchronize, one
 *                                  cudaDeviceSynchronize, then cuCtxSynchronize 3 times through
 *                                  the pointer cudaGetDriverEntryPointByVersion gives
 *
 * Prints the return codes and a checksum of the copied data, which must be the same with and
 * without the shim, and "result=OK" when every call succeeded and the data came back.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define BYTES (1 << 20)

/* The 11.3 entry point, which cuda.h hides behind the name of _v2: declared by its symbol. */
CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags) __asm__("cuGetProcAddress");

static int failed;

static int ok(const char *what, int rc)
{
	if (rc != 0) {
		printf("%s: %d\n", what, rc);
		failed++;
	}
	return rc;
}

static unsigned checksum(const unsigned char *p, size_t n)
{
	unsigned sum = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		sum = (sum ^ p[i]) * 16777619u;
	return sum;
}

static int direct(int n)
{
	CUdevice device;
	CUcontext context;
	CUstream stream;
	CUdeviceptr dev;
	CUdriverProcAddressQueryResult status;
	CUresult (*copy)(CUdeviceptr, const void *, size_t, CUstream) = NULL;
	CUresult (*stream_sync)(CUstream) = NULL, (*stream_sync_ptsz)(CUstream) = NULL;
	CUresult (*ctx_sync)(void) = NULL;
	void *missing = NULL;
	unsigned char *host = malloc(BYTES), *back = malloc(BYTES);
	for (size_t i = 0; i < BYTES; i++)
		host[i] = (unsigned char)(i * 7);
	if (ok("cuInit", cuInit(0)) || ok("cuDeviceGet", cuDeviceGet(&device, 0)) ||
	    ok("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&context, device)) ||
	    ok("cuCtxSetCurrent", cuCtxSetCurrent(context)) ||
	    ok("cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) ||
	    ok("cuMemAlloc", cuMemAlloc(&dev, BYTES)))
		return 1;
	ok("lookup copy", cuGetProcAddress("cuMemcpyHtoDAsync", (void **)&copy, 12000, 0, &status));
	ok("lookup sync",
	   cuGetProcAddress_v2("cuStreamSynchronize", (void **)&stream_sync, 12000, 0, &status));
	ok("lookup sync ptsz",
	   cuGetProcAddress("cuStreamSynchronize", (void **)&stream_sync_ptsz, 12000,
			    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
	ok("lookup v1 ctx sync",
	   get_proc_address_v1("cuCtxSynchronize", (void **)&ctx_sync, 12000, 0));
	printf("missing: %d\n",
	       (int)cuGetProcAddress("cuNoSuchFunction", &missing, 12000, 0, &status));
	if (failed || !copy || !stream_sync || !stream_sync_ptsz || !ctx_sync)
		return 1;
	for (int i = 0; i < n; i++) {
		ok("copy", copy(dev, host, BYTES, stream));
		ok("stream sync", stream_sync(stream));
	}
	for (int i = 0; i < 2; i++)
		ok("stream sync ptsz", stream_sync_ptsz(0));
	for (int i = 0; i < 3; i++)
		ok("ctx sync", ctx_sync());
	ok("cuMemcpyDtoH", cuMemcpyDtoH(back, dev, BYTES));
	int same = !memcmp(host, back, BYTES);
	printf("gpu_procaddr direct: n=%d checksum=%08x result=%s\n", n, checksum(back, BYTES),
	       same && !failed ? "OK" : "BAD");
	cuMemFree(dev);
	cuStreamDestroy(stream);
	cuDevicePrimaryCtxRelease(device);
	return same && !failed ? 0 : 1;
}

/* The runtime by name, its types spelt out: ctypes knows no header. */
typedef int (*rt_stream_create_t)(void **);
typedef int (*rt_malloc_t)(void **, size_t);
typedef int (*rt_copy_async_t)(void *, const void *, size_t, int, void *);
typedef int (*rt_copy_t)(void *, const void *, size_t, int);
typedef int (*rt_sync_t)(void *);
typedef int (*rt_device_sync_t)(void);
typedef int (*rt_entry_point_t)(const char *, void **, unsigned int, unsigned long long, int *);

static void *must(void *lib, const char *name)
{
	void *fn = dlsym(lib, name);
	if (!fn) {
		printf("dlsym %s: not found\n", name);
		exit(3);
	}
	return fn;
}

static int cudart(int m, const char *path)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("dlopen %s: %s\n", path, dlerror());
		return 3;
	}
	rt_stream_create_t stream_create = must(lib, "cudaStreamCreate");
	rt_malloc_t malloc_ = must(lib, "cudaMalloc");
	rt_copy_async_t copy_async = must(lib, "cudaMemcpyAsync");
	rt_copy_t copy = must(lib, "cudaMemcpy");
	rt_sync_t stream_sync = must(lib, "cudaStreamSynchronize");
	rt_device_sync_t device_sync = must(lib, "cudaDeviceSynchronize");
	void *stream = NULL, *dev = NULL;
	unsigned char *host = malloc(BYTES), *back = malloc(BYTES);
	for (size_t i = 0; i < BYTES; i++)
		host[i] = (unsigned char)(i * 13);
	if (ok("cudaStreamCreate", stream_create(&stream)) ||
	    ok("cudaMalloc", malloc_(&dev, BYTES)))
		return 1;
	for (int i = 0; i < m; i++) {
		ok("cudaMemcpyAsync", copy_async(dev, host, BYTES, 1 /* H2D */, stream));
		ok("cudaStreamSynchronize", stream_sync(stream));
	}
	ok("cudaDeviceSynchronize", device_sync());
	ok("cudaMemcpy", copy(back, dev, BYTES, 2 /* D2H */));
	/* the runtime's way to the driver, after the last runtime call (the check counts driver
	 * rows inside the runtime's calls apart) */
	/* ByVersion 12000: cuCtxSynchronize(void). Without a version, a CUDA 13 runtime hands out
	 * the newest ABI, cuCtxSynchronize_v2(CUcontext), which a no-argument call gets wrong
	 * (CUDA_ERROR_CONTEXT_IS_DESTROYED, 709, on the H200 without the shim) */
	rt_entry_point_t entry_point = must(lib, "cudaGetDriverEntryPointByVersion");
	CUresult (*ctx_sync)(void) = NULL;
	int status = -1;
	ok("cudaGetDriverEntryPointByVersion",
	   entry_point("cuCtxSynchronize", (void **)&ctx_sync, 12000, 0, &status));
	for (int i = 0; ctx_sync && i < 3; i++)
		ok("cuCtxSynchronize", ctx_sync());
	int same = !memcmp(host, back, BYTES) && ctx_sync;
	printf("gpu_procaddr cudart: m=%d checksum=%08x result=%s\n", m, checksum(back, BYTES),
	       same && !failed ? "OK" : "BAD");
	return same && !failed ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "direct") && argc > 2)
		return direct(atoi(argv[2]));
	if (!strcmp(mode, "cudart") && argc > 3)
		return cudart(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: gpu_procaddr direct N | cudart M LIBCUDART\n");
	return 2;
}
