// SPDX-License-Identifier: MIT
// tests/progs/toolkit_inline.cc: a sync point reached through the CUDA toolkit's own inline
// code. cuda_runtime.h's typed overload `cudaMalloc<T>(T **, size_t)` is an inline template
// that calls the C function: built with -O2 -g, the call instruction's innermost line is in
// cuda_runtime.h. Its site must still name this file's line (report/lines.c steps out of
// toolkit code inlined into the program's).
#include <cstdio>

#include <cuda_runtime.h>

int main()
{
	for (int i = 0; i < 30; i++) {
		float *buffer = nullptr;
		if (cudaMalloc(&buffer, 4096) != cudaSuccess) // @site typed-malloc
			return 1;
		cudaFree(buffer);
	}
	std::printf("done\n");
	return 0;
}
