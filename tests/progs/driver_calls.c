/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/driver_calls.c: programs that reach the CUDA driver without libcudart.so, as the
 * static cudart, cuBLAS and NCCL do (docs/architecture.md F4), run on the CPU stand-in driver.
 *
 *   driver_calls linked     calls the driver through its link-time symbols (-lcuda)
 *   driver_calls procaddr   dlopen("libcuda.so.1"), dlsym "cuGetProcAddress_v2", then every
 *                           function through cuGetProcAddress (per-thread flag for the syncs),
 *                           and one straight dlsym of cuCtxSynchronize
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
			   unsigned, CUstream, void **, void **) = get(get_proc, "cuLaunchKernel", 0);
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

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "linked"))
		return linked();
	if (!strcmp(mode, "procaddr"))
		return procaddr();
	fprintf(stderr, "usage: driver_calls linked|procaddr\n");
	return 2;
}
