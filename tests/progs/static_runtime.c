/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/static_runtime.c: a program carrying its own "CUDA runtime", as nvcc's default
 * static cudart does: functions named cuda* inside the program reach the driver through
 * cuGetProcAddress. The shim sees the driver calls; their user call site must be the program's
 * code that called the runtime, not the runtime function itself (interpose/elfsyms.c), or every
 * allocation would share one site inside the runtime.
 *
 * Five allocations in a loop, then one more elsewhere: two user sites.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);
static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);

/* The "runtime": kept as real frames, named as NVIDIA's runtime names its functions. */
__attribute__((noinline)) CUresult cudaStaticRuntimeMalloc(CUdeviceptr *ptr, size_t bytes)
{
	CUresult rc = mem_alloc(ptr, bytes);
	__asm__ volatile(""); /* not a tail call: the frame stays on the stack */
	return rc;
}

__attribute__((noinline)) CUresult cudaStaticRuntimeFree(CUdeviceptr ptr)
{
	CUresult rc = mem_free(ptr);
	__asm__ volatile("");
	return rc;
}

int main(void)
{
	void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	get_proc_t get_proc = libcuda ? (get_proc_t)dlsym(libcuda, "cuGetProcAddress_v2") : NULL;
	CUdriverProcAddressQueryResult status;
	CUresult (*init)(unsigned) = NULL;
	if (!get_proc || get_proc("cuInit", (void **)&init, 13000, 0, &status) ||
	    get_proc("cuMemAlloc", (void **)&mem_alloc, 13000, 0, &status) ||
	    get_proc("cuMemFree", (void **)&mem_free, 13000, 0, &status) || init(0))
		return 3;
	CUdeviceptr ptr;
	for (int i = 0; i < 5; i++) {
		if (cudaStaticRuntimeMalloc(&ptr, 4096) || cudaStaticRuntimeFree(ptr))
			return 4;
	}
	if (cudaStaticRuntimeMalloc(&ptr, 8192) || cudaStaticRuntimeFree(ptr))
		return 5;
	printf("static runtime ok\n");
	return 0;
}
