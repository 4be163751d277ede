/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/static_launch.c: <<<...>>> launches and copies through a CUDA runtime linked into
 * the program, as nvcc's default static cudart is: the configuration push and pop, the launch
 * and the copy are the program's own functions (named as NVIDIA's runtime names them, and not
 * exported), which reach the driver through cuGetProcAddress. So the shim sees cuLaunchKernel
 * and cuMemcpyHtoDAsync called from inside the runtime; the rows' sites must still be the
 * lines marked LAUNCH-... and COPY below (interpose/native.c learns the path once per depth),
 * and a driver call the program makes itself keeps its own line (DIRECT).
 *
 * Five rounds of: a launch on a blocking stream, a launch on the legacy stream (rule
 * legacy-stream), a copy on the blocking stream, a driver launch of the program's own.
 *
 * `static_launch depths N ROUNDS` instead launches from one line (LAUNCH-DEPTH) at N stack
 * depths in turn, ROUNDS times: N paths to the driver along the same runtime frames, each
 * learnt once however many there are (NATIVE-1, t223).
 *
 * `static_launch library` launches from inside a function of Thrust's namespace (by its mangled
 * name), 16 of its frames deep: no user frame within the 12 a path keeps, so the site is the
 * library's launching line (LAUNCH-LIBRARY), not the runtime's (ELFSYMS-1, t226).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);
static CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, unsigned, CUstream, void **, void **);
static CUresult (*copy_htod_async)(CUdeviceptr, const void *, size_t, CUstream);

/* The stand-ins' kernel convention: a host function called with the first parameter. */
static void sleep_kernel(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

/* ------------------------------------------------------------------ the "static runtime" */

static struct {
	unsigned grid, block;
	CUstream stream;
} configuration;

__attribute__((noinline)) static unsigned __cudaPushCallConfiguration(unsigned grid, unsigned block,
								      CUstream stream)
{
	configuration.grid = grid;
	configuration.block = block;
	configuration.stream = stream;
	__asm__ volatile("");
	return 0;
}

__attribute__((noinline)) static int __cudaPopCallConfiguration(unsigned *grid, unsigned *block,
								CUstream *stream)
{
	*grid = configuration.grid;
	*block = configuration.block;
	*stream = configuration.stream;
	__asm__ volatile("");
	return 0;
}

/* two frames of runtime between the stub and the driver, as the real one has several */
__attribute__((noinline)) static CUresult
cudart_launch_internal(CUfunction f, unsigned grid, unsigned block, CUstream stream, void **args)
{
	CUresult rc = launch_kernel(f, grid, 1, 1, block, 1, 1, 0, stream, args, NULL);
	__asm__ volatile(""); /* not a tail call: the frame stays on the stack */
	return rc;
}

__attribute__((noinline)) static CUresult
__cudaLaunchKernel(CUfunction f, unsigned grid, unsigned block, CUstream stream, void **args)
{
	CUresult rc = cudart_launch_internal(f, grid, block, stream, args);
	__asm__ volatile("");
	return rc;
}

__attribute__((noinline)) static CUresult cudaMemcpyAsync(CUdeviceptr dst, const void *src,
							  size_t bytes, CUstream stream)
{
	CUresult rc = copy_htod_async(dst, src, bytes, stream);
	__asm__ volatile("");
	return rc;
}

static CUresult (*stream_query)(CUstream);

/* a query the way a static runtime makes it: the polling loop's site is the user's line too */
__attribute__((noinline)) static CUresult cudaStreamQuery(CUstream stream)
{
	CUresult rc = stream_query(stream);
	__asm__ volatile("");
	return rc;
}

/* ------------------------------------------------------------------ nvcc's generated code */

__attribute__((noinline)) void __device_stub__sleep_kernel(void *usec)
{
	void *args[1] = {&usec};
	unsigned grid, block;
	CUstream stream;
	if (__cudaPopCallConfiguration(&grid, &block, &stream))
		return;
	(void)__cudaLaunchKernel((CUfunction)(uintptr_t)sleep_kernel, grid, block, stream, args);
	__asm__ volatile("");
}

/* A kernel's host-side function, unoptimized as nvcc builds host code by default: a frame of
 * its own between the launching line and the stub. Its name is the stub's less
 * "__device_stub_" (a mangled kernel, _Z4stepPv, as `__global__ void step(void *)` gives). */
__attribute__((noinline)) void _Z23__device_stub__Z4stepPvPv(void *usec)
{
	void *args[1] = {&usec};
	unsigned grid, block;
	CUstream stream;
	if (__cudaPopCallConfiguration(&grid, &block, &stream))
		return;
	(void)__cudaLaunchKernel((CUfunction)(uintptr_t)sleep_kernel, grid, block, stream, args);
	__asm__ volatile("");
}

__attribute__((noinline)) void _Z4stepPv(void *usec)
{
	_Z23__device_stub__Z4stepPvPv(usec);
	__asm__ volatile("");
}

#define SLEEP_KERNEL(g, b, s)                                                                      \
	(__cudaPushCallConfiguration(g, b, s)) ? (void)0 : __device_stub__sleep_kernel

/* ------------------------------------------------------------------ the program */

/* DEPTH frames of its own above the launching line */
__attribute__((noinline)) static void launch_at_depth(int depth, CUstream s)
{
	if (depth > 0) {
		launch_at_depth(depth - 1, s);
		__asm__ volatile(""); /* not a tail call: each depth keeps its frame */
		return;
	}
	SLEEP_KERNEL(1, 1, s)((void *)0); /* LAUNCH-DEPTH */
	__asm__ volatile("");		  /* nor is the launch */
}

/* A function of Thrust's as a program instantiates it (the name thrust::detail::launch(int,
 * CUstream), mangled), DEPTH frames of its own above its launch */
__attribute__((noinline, noipa)) void thrust_launch(int depth, CUstream s) __asm__("_ZN6thrust6detail6launchEiP11CUstream_st");
__attribute__((noinline, noipa)) void thrust_launch(int depth, CUstream s)
{
	if (depth > 0) {
		thrust_launch(depth - 1, s);
		__asm__ volatile("");
		return;
	}
	SLEEP_KERNEL(1, 1, s)((void *)1); /* LAUNCH-LIBRARY */
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	get_proc_t get_proc = libcuda ? (get_proc_t)dlsym(libcuda, "cuGetProcAddress_v2") : NULL;
	CUdriverProcAddressQueryResult status;
	CUresult (*init)(unsigned) = NULL;
	CUresult (*stream_create)(CUstream *, unsigned) = NULL;
	CUresult (*mem_alloc)(CUdeviceptr *, size_t) = NULL;
	CUresult (*mem_alloc_host)(void **, size_t) = NULL;
	CUresult (*ctx_sync)(void) = NULL;
	if (!get_proc || get_proc("cuInit", (void **)&init, 13000, 0, &status) ||
	    get_proc("cuLaunchKernel", (void **)&launch_kernel, 13000, 0, &status) ||
	    get_proc("cuMemcpyHtoDAsync", (void **)&copy_htod_async, 13000, 0, &status) ||
	    get_proc("cuStreamCreate", (void **)&stream_create, 13000, 0, &status) ||
	    get_proc("cuMemAlloc", (void **)&mem_alloc, 13000, 0, &status) ||
	    get_proc("cuMemAllocHost", (void **)&mem_alloc_host, 13000, 0, &status) ||
	    get_proc("cuCtxSynchronize", (void **)&ctx_sync, 13000, 0, &status) ||
	    get_proc("cuStreamQuery", (void **)&stream_query, 13000, 0, &status) || init(0))
		return 3;
	CUstream s;
	CUdeviceptr dev;
	void *host; /* pinned: the async copy stays an enqueue */
	if (stream_create(&s, CU_STREAM_DEFAULT) || mem_alloc(&dev, 4096) ||
	    mem_alloc_host(&host, 4096))
		return 4;
	if (argc == 2 && !strcmp(argv[1], "library")) {
		for (int r = 0; r < 10; r++)
			thrust_launch(15, s);
		if (ctx_sync())
			return 7;
		printf("static launch library ok\n");
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "depths")) {
		int depths = atoi(argv[2]), rounds = atoi(argv[3]);
		for (int r = 0; r < rounds; r++)
			for (int d = 0; d < depths; d++)
				launch_at_depth(d, s);
		if (ctx_sync())
			return 7;
		printf("static launch depths ok\n");
		return 0;
	}
	void *usec = (void *)(uintptr_t)200;
	void *args[] = {&usec};
	CUfunction kernel = (CUfunction)(uintptr_t)sleep_kernel;
	for (int i = 0; i < 5; i++) {
		SLEEP_KERNEL(1, 1, s)((void *)200);	 /* LAUNCH-CREATED */
		SLEEP_KERNEL(1, 1, NULL)((void *)200);	 /* LAUNCH-LEGACY */
		if (cudaMemcpyAsync(dev, host, 4096, s)) /* COPY */
			return 5;
		if (launch_kernel(kernel, 1, 1, 1, 1, 1, 1, 0, s, args, NULL)) /* DIRECT */
			return 6;
		/* clang-format off: the launch stays on its marked line */
		(__cudaPushCallConfiguration(1, 1, s)) ? (void)0 : _Z4stepPv((void *)200); /* HOSTFN */
		/* clang-format on */
	}
	SLEEP_KERNEL(1, 1, s)((void *)20000);
	while (cudaStreamQuery(s) == CUDA_ERROR_NOT_READY) /* POLL */
		;
	if (ctx_sync())
		return 7;
	printf("static launch ok\n");
	return 0;
}
