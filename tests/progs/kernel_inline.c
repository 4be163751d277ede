// SPDX-License-Identifier: MIT
// tests/progs/kernel_inline.c: a kernel launch as nvcc's optimized host code has it. For
// `k<<<...>>>(args)` nvcc generates a host function k that calls k's stub, named
// "__device_stub_" + k's mangled name; built with -O2 -g, k is inlined into the launching
// function, and the innermost line of the launch's return address is k's own (the __global__
// declaration's, through nvcc's #line directives). report/lines.c names the line k was inlined
// at instead. Two kernels, one with a C++-mangled stub name (_Z29__device_stub__Z10count_livePiPi
// for k = _Z10count_livePi) and one extern "C" (__device_stub__scale_rows); each makes a stream
// sync where its stub would launch, so that the call has a site of its own to name.
#include <stdio.h>

#include <cuda_runtime.h>

/* the stubs: out of line, as nvcc emits them */
__attribute__((noinline, used)) void
count_live_stub(int *p) __asm__("_Z29__device_stub__Z10count_livePiPi");
__attribute__((noinline, used)) void count_live_stub(int *p)
{
	__asm__ volatile("" ::"r"(p) : "memory");
}

__attribute__((noinline, used)) void __device_stub__scale_rows(int *p)
{
	__asm__ volatile("" ::"r"(p) : "memory");
}

/* the kernels' host-side functions, inlined into main */
static inline __attribute__((always_inline)) void count_live(int *p)
{
	cudaStreamSynchronize(0);
	count_live_stub(p);
}

static inline __attribute__((always_inline)) void scale_rows(int *p)
{
	cudaStreamSynchronize(0);
	__device_stub__scale_rows(p);
}

int main(void)
{
	int x = 0;
	for (int i = 0; i < 20; i++) {
		count_live(&x); // @site mangled-kernel
		scale_rows(&x); // @site c-kernel
	}
	printf("done\n");
	return 0;
}
