// SPDX-License-Identifier: MIT
// tests/progs/thrust_frames.cc: sync points reached through functions of Thrust's and CUB's
// namespaces compiled into the program, as thrust::count_if's temporary allocation and
// cub::SyncStream are (templates instantiated in the user's binary, frames of their own, not
// inlined). Their sites must be this file's lines in main (interpose/elfsyms.c counts the
// module's thrust:: and cub:: functions as the toolkit's, ELFSYMS-1: t226), not the lines
// inside those functions.
#include <cstdio>

#include <cuda_runtime_api.h>

namespace thrust
{
namespace detail
{
__attribute__((noinline)) void *temporary_allocate(size_t bytes)
{
	void *p = nullptr;
	if (cudaMalloc(&p, bytes) != cudaSuccess)
		return nullptr;
	__asm__ volatile(""); // a frame of its own, as Thrust's allocator is
	return p;
}
} // namespace detail
} // namespace thrust

namespace cub
{
__attribute__((noinline)) cudaError_t SyncStream(cudaStream_t stream)
{
	cudaError_t rc = cudaStreamSynchronize(stream);
	__asm__ volatile("");
	return rc;
}
} // namespace cub

int main()
{
	for (int i = 0; i < 30; i++) {
		void *scratch = thrust::detail::temporary_allocate(4096); // @site thrust-alloc
		if (!scratch || cub::SyncStream(nullptr) != cudaSuccess)  // @site cub-sync
			return 1;
		cudaFree(scratch);
	}
	std::printf("done\n");
	return 0;
}
