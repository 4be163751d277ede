// SPDX-License-Identifier: MIT
// tests/progs/include/fakecuda/nested_sync.h: stands for a header-only CUDA library (thrust,
// cub: a path with "/include/" and "cuda" is toolkit code to report/lines.c). A template that
// syncs three inline levels down, as thrust::count_if reaches cub::SyncStream.
#ifndef FAKECUDA_NESTED_SYNC_H
#define FAKECUDA_NESTED_SYNC_H
#include <cuda_runtime.h>

namespace fakecuda {
template <typename T> inline __attribute__((always_inline)) cudaError_t sync_stream(T stream)
{
	return cudaStreamSynchronize(stream);
}
template <typename T> inline __attribute__((always_inline)) long reduce_n(T stream, long n)
{
	long total = n * 2;
	if (sync_stream(stream) != cudaSuccess)
		return -1;
	return total;
}
template <typename T> inline __attribute__((always_inline)) long count_if(T stream, long n)
{
	long r = reduce_n(stream, n + 1);
	return r < 0 ? r : r / 2;
}
} // namespace fakecuda
#endif
