// SPDX-License-Identifier: MIT
// tests/progs/include/fakecuda/nested_sync.h: a header-only library in the manner of thrust and
// cub (t220): count_if reaches a stream sync through several levels of templates, each inlined
// into the caller, so the sync's innermost line lies in this header (a path under /include/ and
// with "cuda" in it: report/lines.c treats it as toolkit code and steps out of it).
#ifndef FAKECUDA_NESTED_SYNC_H
#define FAKECUDA_NESTED_SYNC_H

#include <cuda_runtime.h>

namespace fakecuda {
namespace detail {

template <typename T> inline __attribute__((always_inline)) cudaError_t sync_stream(T stream)
{
	return cudaStreamSynchronize(stream);
}

template <typename T, typename N>
inline __attribute__((always_inline)) N reduce_then_sync(T stream, N n)
{
	N count = n % 3 == 0 ? 1 : 0;
	if (sync_stream(stream) != cudaSuccess)
		return 0;
	return count;
}

template <typename T, typename N> inline __attribute__((always_inline)) N dispatch(T stream, N n)
{
	return reduce_then_sync(stream, n);
}

// The innermost inlined function's call lies in lexical blocks of its own (as in
// thrust::cuda_cub::malloc, inlined into count_if's temporary allocation): by address the scopes
// are those blocks, then the function, then the unit.
template <typename N> inline __attribute__((always_inline)) void *device_malloc(N n)
{
	void *p = nullptr;
	if (n > 0) {
		size_t rounded = ((size_t)n + 255) & ~(size_t)255;
		if (cudaMalloc(&p, rounded) != cudaSuccess)
			p = nullptr;
	}
	return p;
}

template <typename N> inline __attribute__((always_inline)) void *temporary_allocate(N n)
{
	return device_malloc(n);
}

} // namespace detail

template <typename T, typename N> inline __attribute__((always_inline)) N count_if(T stream, N n)
{
	return detail::dispatch(stream, n);
}

// A temporary buffer for one call, as thrust::count_if allocates one (freed in the caller).
template <typename N> inline __attribute__((always_inline)) void *temporary_buffer(N n)
{
	return detail::temporary_allocate(n);
}

} // namespace fakecuda

#endif
