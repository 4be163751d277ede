/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stub_launch.c: kernel launches shaped as nvcc compiles `kernel<<<g, b, shm, s>>>(x)`
 * (CUDA 13, crt/host_runtime.h): the launching line calls __cudaPushCallConfiguration and, when
 * it returns 0, the kernel's host stub; the stub pops the configuration and calls
 * __cudaLaunchKernel. So the launch's own return address is inside the stub, and the user's
 * line is the push's (docs/attribution.md): the enqueue rows' sites must name the lines marked
 * LAUNCH-... below, not the stub.
 *
 * legacy: launches on a blocking stream and on the legacy stream, 5 times (rule legacy-stream);
 * nested: a launch whose argument is computed by a function that launches another kernel (the
 * runtime's configurations nest: push A, push B, pop B, launch B, pop A, launch A), then a
 * launch made with the runtime API (cudaLaunchKernel) from its own line.
 */
#include <string.h>

#include <cuda_runtime_api.h>

#include "progs.h"

/* The CUDA 13 entry points nvcc's host code calls (declared for C++ only by the toolkit). */
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
				     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
				       void *stream);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
			       size_t sharedMem, cudaStream_t stream);

static const dim3 one = {1, 1, 1};

/* The host stub nvcc generates for sleep_kernel (a function of its own, as in
 * FILE.cudafe1.stub.c). */
__attribute__((noinline)) void __device_stub__sleep_kernel(void *usec)
{
	void *args[1] = {&usec};
	dim3 grid, block;
	size_t shared_mem;
	cudaStream_t stream;
	if (__cudaPopCallConfiguration(&grid, &block, &shared_mem, &stream) != cudaSuccess)
		return;
	(void)__cudaLaunchKernel((cudaKernel_t)sleep_kernel, grid, block, args, shared_mem, stream);
	__asm__ volatile(""); /* not a tail call: the stub's frame stays, as nvcc's does */
}

/* kernel<<<g, b, shm, s>>>(arg) as nvcc writes it: push ? (void)0 : stub(arg) */
#define SLEEP_KERNEL(g, b, shm, s)                                                                 \
	(__cudaPushCallConfiguration(g, b, shm, s)) ? (void)0 : __device_stub__sleep_kernel

static int legacy(void)
{
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamDefault));
	for (int i = 0; i < 5; i++) {
		SLEEP_KERNEL(one, one, 0, s)((void *)200); /* LAUNCH-CREATED */
		SLEEP_KERNEL(one, one, 0, 0)((void *)200); /* LAUNCH-LEGACY */
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaStreamDestroy(s));
	return 0;
}

__attribute__((noinline)) static void *inner_launch(cudaStream_t s)
{
	SLEEP_KERNEL(one, one, 0, s)((void *)100); /* LAUNCH-INNER */
	__asm__ volatile("");
	return (void *)100;
}

static int nested(void)
{
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	SLEEP_KERNEL(one, one, 0, s)(inner_launch(s)); /* LAUNCH-OUTER */
	void *usec = (void *)100;
	void *args[] = {&usec};
	CHECK(cudaLaunchKernel((const void *)sleep_kernel, one, one, args, 0, s)); /* LAUNCH-API */
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "legacy"))
		return legacy();
	if (argc == 2 && !strcmp(argv[1], "nested"))
		return nested();
	fprintf(stderr, "usage: stub_launch legacy|nested\n");
	return 2;
}
