/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/driver_calls.c: programs that reach the CUDA driver without libcudart.so, as the
 * static cudart, cuBLAS and NCCL do (docs/architecture.md F4), run on the CPU stand-in driver.
 *
 *   driver_calls linked     calls the driver through its link-time symbols (-lcuda)
 *   driver_calls procaddr   dlopen("libcuda.so.1"), dlsym "cuGetProcAddress_v2", then every
 *                           function through cuGetProcAddress (per-thread flag for the syncs),
 *                           and one straight dlsym of cuCtxSynchronize
 *   driver_calls direct N   links libcuda and calls cuGetProcAddress (_v2, as cuda.h names it)
 *                           and the 11.3 cuGetProcAddress itself, then the pointers: N stream
 *                           syncs, 2 per-thread ones, 3 context syncs; prints every return
 *                           code and lookup status, which the shim must leave as they are
 * Each makes a known set of calls; a kernel is a host function (tests/standin/README.md).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		CUresult rc_ = (call);                                                             \
		if (rc_ != CUDA_SUCCESS) {                                                         \
			fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)rc_); \
			exit(10);                                                                  \
		}                                                                                  \
	} while (0)

static void sleep_kernel(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

static int linked(void)
{
	CUstream s;
	CUdeviceptr dev;
	char host[4096];
	memset(host, 5, sizeof(host));
	CHECK(cuInit(0));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&dev, sizeof(host)));
	CHECK(cuMemcpyHtoD(dev, host, sizeof(host)));
	void *param = (void *)(uintptr_t)20000;
	void *args[] = {&param};
	CHECK(cuLaunchKernel((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CHECK(cuStreamSynchronize(s));
	memset(host, 0, sizeof(host));
	CHECK(cuMemcpyDtoH(host, dev, sizeof(host)));
	/* the same 4096 bytes as 64 rows of 64: down blocking, up asynchronously (pageable: S5) */
	CUDA_MEMCPY2D down = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			      .srcDevice = dev,
			      .srcPitch = 64,
			      .dstMemoryType = CU_MEMORYTYPE_HOST,
			      .dstHost = host,
			      .dstPitch = 64,
			      .WidthInBytes = 64,
			      .Height = 64};
	CUDA_MEMCPY2D up = {.srcMemoryType = CU_MEMORYTYPE_HOST,
			    .srcHost = host,
			    .srcPitch = 64,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			    .dstDevice = dev,
			    .dstPitch = 64,
			    .WidthInBytes = 64,
			    .Height = 64};
	CHECK(cuMemcpy2D(&down));
	CHECK(cuMemcpy2DAsync(&up, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemFree(dev));
	CHECK(cuStreamDestroy(s));
	CHECK(cuCtxSynchronize());
	printf("linked %s\n", host[4095] == 5 ? "ok" : "BAD");
	return 0;
}

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);

static void *get(get_proc_t get_proc, const char *name, cuuint64_t flags)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult status;
	CHECK(get_proc(name, &fn, 13000, flags, &status));
	return fn;
}

static int procaddr(void)
{
	void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!libcuda)
		return 3;
	get_proc_t get_proc = (get_proc_t)dlsym(libcuda, "cuGetProcAddress_v2");
	CUresult (*init)(unsigned) = get(get_proc, "cuInit", 0);
	CUresult (*stream_create)(CUstream *, unsigned) = get(get_proc, "cuStreamCreate", 0);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, CUstream, void **, void **) =
	    get(get_proc, "cuLaunchKernel", 0);
	CUresult (*stream_sync_ptsz)(CUstream) =
	    get(get_proc, "cuStreamSynchronize", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	CUresult (*launch_ptsz)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				unsigned, unsigned, CUstream, void **, void **) =
	    get(get_proc, "cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	CUresult (*stream_destroy)(CUstream) = get(get_proc, "cuStreamDestroy", 0);
	CUresult (*ctx_sync)(void) = (CUresult(*)(void))dlsym(libcuda, "cuCtxSynchronize");
	CUstream s;
	CHECK(init(0));
	CHECK(stream_create(&s, CU_STREAM_NON_BLOCKING));
	void *param = (void *)(uintptr_t)20000;
	void *args[] = {&param};
	CHECK(launch((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CHECK(launch_ptsz((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
	CHECK(stream_sync_ptsz(0));
	CHECK(stream_destroy(s));
	CHECK(ctx_sync());
	printf("procaddr ok\n");
	return 0;
}

/* The 11.3 entry point, which cuda.h hides behind the name of _v2: declared by its symbol. */
CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags) __asm__("cuGetProcAddress");

static int direct(int n)
{
	CUdriverProcAddressQueryResult status = -1;
	CUresult (*stream_sync)(CUstream) = NULL, (*stream_sync_ptsz)(CUstream) = NULL;
	CUresult (*ctx_sync)(void) = NULL;
	void *missing = &status, *too_old = &status;
	CUstream s;
	CHECK(cuInit(0));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUresult r =
	    cuGetProcAddress("cuStreamSynchronize", (void **)&stream_sync, 13000, 0, &status);
	printf("v2 sync: %d status %d\n", (int)r, (int)status);
	r = cuGetProcAddress_v2("cuStreamSynchronize", (void **)&stream_sync_ptsz, 13000,
				CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status);
	printf("v2 sync ptsz: %d status %d\n", (int)r, (int)status);
	r = get_proc_address_v1("cuCtxSynchronize", (void **)&ctx_sync, 13000, 0);
	printf("v1 ctx sync: %d\n", (int)r);
	r = cuGetProcAddress("cuNoSuchFunction", &missing, 13000, 0, &status);
	printf("v2 missing: %d status %d %s\n", (int)r, (int)status, missing ? "set" : "null");
	r = cuGetProcAddress("cuStreamDestroy", &too_old, 3000, 0, &status);
	printf("v2 too old: %d status %d %s\n", (int)r, (int)status, too_old ? "set" : "null");
	r = get_proc_address_v1("cuStreamQuery", NULL, 13000, 0);
	printf("v1 no pfn: %d\n", (int)r);
	if (!stream_sync || !stream_sync_ptsz || !ctx_sync)
		return 4;
	void *param = (void *)(uintptr_t)2000;
	void *args[] = {&param};
	for (int i = 0; i < n; i++) {
		CHECK(cuLaunchKernel((CUfunction)(void *)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s, args,
				     NULL));
		CHECK(stream_sync(s));
	}
	for (int i = 0; i < 2; i++)
		CHECK(stream_sync_ptsz(0));
	for (int i = 0; i < 3; i++)
		CHECK(ctx_sync());
	printf("bad stream: %d\n", (int)stream_sync((CUstream)(uintptr_t)0x10));
	CHECK(cuStreamDestroy(s));
	printf("direct ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "linked"))
		return linked();
	if (!strcmp(mode, "procaddr"))
		return procaddr();
	if (!strcmp(mode, "direct") && argc > 2)
		return direct(atoi(argv[2]));
	fprintf(stderr, "usage: driver_calls linked|procaddr|direct N\n");
	return 2;
}
