// SPDX-License-Identifier: MIT
// tests/progs/include/fakecuda/nested_sync.h: a header-only library in the manner of thrust and
// cub (t220): count_if reaches a stream sync through several levels of templates, each inlined
// into the caller, so the sync's innermost line lies in this header (a path under /include/ and
// with "cuda" in it: report/lines.c treats it as toolkit code and steps out of it).
#ifndef FAKECUDA_NESTED_SYNC_H
#define FAKECUDA_NESTED_SYNC_H

#include <cuda_runtime.h>

namespace fakecuda
{
namespace detail
{

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

} // namespace detail

template <typename T, typename N> inline __attribute__((always_inline)) N count_if(T stream, N n)
{
	return detail::dispatch(stream, n);
}

} // namespace fakecuda

#endif
