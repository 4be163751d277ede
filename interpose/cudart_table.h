/*
 * interpose/cudart_table.h: every CUDA runtime entry point of the sync model, declared once.
 *
 * SS_CUDART(name, variant, class, (params), (args), pre, post)
 *   variant  NONE, PTSZ or PTDS: which per-thread-default-stream twin libcudart.so.13 also
 *            exports (name_ptsz / name_ptds); its wrapper is generated from the same line, and
 *            tests/e2e/t002-cudart-table.sh checks this column against `nm -D libcudart.so.13`.
 *   class    the static class (model.h); COPY/MEMSET/FREE/LIMIT may change it per call.
 *   pre      what the call means, read from its arguments before the real call runs:
 *              STREAM(s)  the stream it works on        EVENT(e)  the event it records/waits
 *              BYTES(n)   the byte count                AUX(x)    an API-specific number
 *              COPY(dst, src, bytes, kind, async)       a copy: direction, host memory kind
 *              COPY_PEER(bytes)                         a copy between devices
 *              MEMSET(ptr, bytes, async)                a memset: target memory kind
 *              FREE(ptr)                                a free: forgets the range
 *              LIMIT(limit, value)                      a limit set: S6 (stack size) or X1
 *   post     what the call produced, read after it returned cudaSuccess:
 *              ALLOC(ptr, bytes, kind)    a new range of memory (ranges.h)
 *              CREATED_STREAM(s, flags, priority)       CREATED_EVENT(e, flags)
 *              CREATED_GRAPH_EXEC(exec)   the executable graph made (aux, as launches and
 *                                         destroys name theirs)
 *              CREATED_MODULE(m)          the library loaded (aux, as cudaLibraryGetKernel and
 *                                         cudaLibraryUnload name theirs)
 *            and either: PROFILER(on)  a capture range's start or stop (capture.h)
 *
 * Generated from this table: the API ids and names (shim.h, resolve.c), the wrappers and their
 * _ptsz/_ptds twins (cudart.c). Wrappers are defined with the prototypes of the toolkit's
 * cuda_runtime_api.h in scope, so a wrong parameter list here fails to compile.
 */
#ifndef SYNCSPY_CUDART_TABLE_H
#define SYNCSPY_CUDART_TABLE_H

#define SS_CUDART_FUNCS(X)                                                                         \
	/* S1-S3: explicit syncs */                                                                \
	X(cudaDeviceSynchronize, NONE, S1, (void), (), , )                                         \
	X(cudaStreamSynchronize, PTSZ, S2, (cudaStream_t stream), (stream), STREAM(stream), )      \
	X(cudaEventSynchronize, NONE, S3, (cudaEvent_t event), (event), EVENT(event), )            \
	/* S7: polling */                                                                          \
	X(cudaStreamQuery, PTSZ, S7, (cudaStream_t stream), (stream), STREAM(stream), )            \
	X(cudaEventQuery, NONE, S7, (cudaEvent_t event), (event), EVENT(event), )                  \
	/* E2, E3: the edges between streams */                                                    \
	X(cudaEventRecord, PTSZ, E2, (cudaEvent_t event, cudaStream_t stream), (event, stream),    \
	  EVENT(event) STREAM(stream), )                                                           \
	X(cudaEventRecordWithFlags, PTSZ, E2,                                                      \
	  (cudaEvent_t event, cudaStream_t stream, unsigned int flags), (event, stream, flags),    \
	  EVENT(event) STREAM(stream) AUX(flags), )                                                \
	X(cudaStreamWaitEvent, PTSZ, E3,                                                           \
	  (cudaStream_t stream, cudaEvent_t event, unsigned int flags), (stream, event, flags),    \
	  EVENT(event) STREAM(stream) AUX(flags), )                                                \
	/* E1: launches */                                                                         \
	X(__cudaLaunchKernel, PTSZ, E1,                                                            \
	  (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,        \
	   cudaStream_t stream),                                                                   \
	  (kernel, gridDim, blockDim, args, sharedMem, stream), STREAM(stream) AUX(kernel), )      \
	X(cudaLaunchKernel, PTSZ, E1,                                                              \
	  (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,           \
	   cudaStream_t stream),                                                                   \
	  (func, gridDim, blockDim, args, sharedMem, stream), STREAM(stream) AUX(func), )          \
	X(cudaLaunchKernelExC, PTSZ, E1,                                                           \
	  (const cudaLaunchConfig_t *config, const void *func, void **args), (config, func, args), \
	  STREAM(config ? config->stream : 0) AUX(func), )                                         \
	X(cudaLaunchCooperativeKernel, PTSZ, E1,                                                   \
	  (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,           \
	   cudaStream_t stream),                                                                   \
	  (func, gridDim, blockDim, args, sharedMem, stream), STREAM(stream) AUX(func), )          \
	X(cudaLaunchHostFunc, PTSZ, E1, (cudaStream_t stream, cudaHostFn_t fn, void *userData),    \
	  (stream, fn, userData), STREAM(stream) AUX(fn), )                                        \
	X(cudaStreamAddCallback, PTSZ, E1,                                                         \
	  (cudaStream_t stream, cudaStreamCallback_t callback, void *userData,                     \
	   unsigned int flags),                                                                    \
	  (stream, callback, userData, flags), STREAM(stream) AUX(callback), )                     \
	X(cudaGraphLaunch, PTSZ, E1, (cudaGraphExec_t graphExec, cudaStream_t stream),             \
	  (graphExec, stream), STREAM(stream) AUX(graphExec), )                                    \
	X(cudaGraphUpload, PTSZ, E1, (cudaGraphExec_t graphExec, cudaStream_t stream),             \
	  (graphExec, stream), STREAM(stream) AUX(graphExec), )                                    \
	X(cudaSignalExternalSemaphoresAsync, PTSZ, E1,                                             \
	  (const cudaExternalSemaphore_t *extSemArray,                                             \
	   const struct cudaExternalSemaphoreSignalParams *paramsArray, unsigned int numExtSems,   \
	   cudaStream_t stream),                                                                   \
	  (extSemArray, paramsArray, numExtSems, stream), STREAM(stream) AUX(numExtSems), )        \
	X(cudaWaitExternalSemaphoresAsync, PTSZ, E1,                                               \
	  (const cudaExternalSemaphore_t *extSemArray,                                             \
	   const struct cudaExternalSemaphoreWaitParams *paramsArray, unsigned int numExtSems,     \
	   cudaStream_t stream),                                                                   \
	  (extSemArray, paramsArray, numExtSems, stream), STREAM(stream) AUX(numExtSems), )        \
	/* S4 and E1/S5: copies */                                                                 \
	X(cudaMemcpy, PTDS, S4,                                                                    \
	  (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),                    \
	  (dst, src, count, kind), STREAM(0) COPY(dst, src, count, kind, 0), )                     \
	X(cudaMemcpyAsync, PTSZ, E1,                                                               \
	  (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,                     \
	   cudaStream_t stream),                                                                   \
	  (dst, src, count, kind, stream), STREAM(stream) COPY(dst, src, count, kind, 1), )        \
	X(cudaMemcpy2D, PTDS, S4,                                                                  \
	  (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,  \
	   enum cudaMemcpyKind kind),                                                              \
	  (dst, dpitch, src, spitch, width, height, kind),                                         \
	  STREAM(0) COPY(dst, src, width *height, kind, 0), )                                      \
	X(cudaMemcpy2DAsync, PTSZ, E1,                                                             \
	  (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,  \
	   enum cudaMemcpyKind kind, cudaStream_t stream),                                         \
	  (dst, dpitch, src, spitch, width, height, kind, stream),                                 \
	  STREAM(stream) COPY(dst, src, width *height, kind, 1), )                                 \
	X(cudaMemcpy3D, PTDS, S4, (const struct cudaMemcpy3DParms *p), (p),                        \
	  STREAM(0) COPY3D(p, 0), )                                                                \
	X(cudaMemcpy3DAsync, PTSZ, E1, (const struct cudaMemcpy3DParms *p, cudaStream_t stream),   \
	  (p, stream), STREAM(stream) COPY3D(p, 1), )                                              \
	X(cudaMemcpy3DPeer, PTDS, S4, (const struct cudaMemcpy3DPeerParms *p), (p),                \
	  STREAM(0) COPY_PEER(p ? p->extent.width * p->extent.height * p->extent.depth : 0), )     \
	X(cudaMemcpy3DPeerAsync, PTSZ, E1,                                                         \
	  (const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream), (p, stream),               \
	  STREAM(stream)                                                                           \
	      COPY_PEER(p ? p->extent.width * p->extent.height * p->extent.depth : 0), )           \
	X(cudaMemcpyPeer, NONE, S4,                                                                \
	  (void *dst, int dstDevice, const void *src, int srcDevice, size_t count),                \
	  (dst, dstDevice, src, srcDevice, count), STREAM(0) COPY_PEER(count), )                   \
	X(cudaMemcpyPeerAsync, NONE, E1,                                                           \
	  (void *dst, int dstDevice, const void *src, int srcDevice, size_t count,                 \
	   cudaStream_t stream),                                                                   \
	  (dst, dstDevice, src, srcDevice, count, stream), STREAM(stream) COPY_PEER(count), )      \
	X(cudaMemcpyToSymbol, PTDS, S4,                                                            \
	  (const void *symbol, const void *src, size_t count, size_t offset,                       \
	   enum cudaMemcpyKind kind),                                                              \
	  (symbol, src, count, offset, kind), STREAM(0) COPY_SYMBOL(src, count, kind, 1, 0), )     \
	X(cudaMemcpyFromSymbol, PTDS, S4,                                                          \
	  (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind),  \
	  (dst, symbol, count, offset, kind), STREAM(0) COPY_SYMBOL(dst, count, kind, 0, 0), )     \
	X(cudaMemcpyToSymbolAsync, PTSZ, E1,                                                       \
	  (const void *symbol, const void *src, size_t count, size_t offset,                       \
	   enum cudaMemcpyKind kind, cudaStream_t stream),                                         \
	  (symbol, src, count, offset, kind, stream),                                              \
	  STREAM(stream) COPY_SYMBOL(src, count, kind, 1, 1), )                                    \
	X(cudaMemcpyFromSymbolAsync, PTSZ, E1,                                                     \
	  (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind,   \
	   cudaStream_t stream),                                                                   \
	  (dst, symbol, count, offset, kind, stream),                                              \
	  STREAM(stream) COPY_SYMBOL(dst, count, kind, 0, 1), )                                    \
	X(cudaMemcpyToArray, PTDS, S4,                                                             \
	  (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,         \
	   enum cudaMemcpyKind kind),                                                              \
	  (dst, wOffset, hOffset, src, count, kind),                                               \
	  STREAM(0) COPY_SYMBOL(src, count, kind, 1, 0), )                                         \
	X(cudaMemcpyFromArray, PTDS, S4,                                                           \
	  (void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,         \
	   enum cudaMemcpyKind kind),                                                              \
	  (dst, src, wOffset, hOffset, count, kind),                                               \
	  STREAM(0) COPY_SYMBOL(dst, count, kind, 0, 0), )                                         \
	X(cudaMemcpyToArrayAsync, PTSZ, E1,                                                        \
	  (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,         \
	   enum cudaMemcpyKind kind, cudaStream_t stream),                                         \
	  (dst, wOffset, hOffset, src, count, kind, stream),                                       \
	  STREAM(stream) COPY_SYMBOL(src, count, kind, 1, 1), )                                    \
	X(cudaMemcpyFromArrayAsync, PTSZ, E1,                                                      \
	  (void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,         \
	   enum cudaMemcpyKind kind, cudaStream_t stream),                                         \
	  (dst, src, wOffset, hOffset, count, kind, stream),                                       \
	  STREAM(stream) COPY_SYMBOL(dst, count, kind, 0, 1), )                                    \
	X(cudaMemcpy2DToArray, PTDS, S4,                                                           \
	  (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,        \
	   size_t width, size_t height, enum cudaMemcpyKind kind),                                 \
	  (dst, wOffset, hOffset, src, spitch, width, height, kind),                               \
	  STREAM(0) COPY_SYMBOL(src, width *height, kind, 1, 0), )                                 \
	X(cudaMemcpy2DFromArray, PTDS, S4,                                                         \
	  (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,        \
	   size_t width, size_t height, enum cudaMemcpyKind kind),                                 \
	  (dst, dpitch, src, wOffset, hOffset, width, height, kind),                               \
	  STREAM(0) COPY_SYMBOL(dst, width *height, kind, 0, 0), )                                 \
	X(cudaMemcpy2DToArrayAsync, PTSZ, E1,                                                      \
	  (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,        \
	   size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),            \
	  (dst, wOffset, hOffset, src, spitch, width, height, kind, stream),                       \
	  STREAM(stream) COPY_SYMBOL(src, width *height, kind, 1, 1), )                            \
	X(cudaMemcpy2DFromArrayAsync, PTSZ, E1,                                                    \
	  (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,        \
	   size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),            \
	  (dst, dpitch, src, wOffset, hOffset, width, height, kind, stream),                       \
	  STREAM(stream) COPY_SYMBOL(dst, width *height, kind, 0, 1), )                            \
	X(cudaMemcpyArrayToArray, PTDS, S4,                                                        \
	  (cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,           \
	   size_t wOffsetSrc, size_t hOffsetSrc, size_t count, enum cudaMemcpyKind kind),          \
	  (dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, count, kind),                 \
	  STREAM(0) COPY_D2D(count), )                                                             \
	X(cudaMemcpy2DArrayToArray, PTDS, S4,                                                      \
	  (cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,           \
	   size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,                      \
	   enum cudaMemcpyKind kind),                                                              \
	  (dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height, kind),         \
	  STREAM(0) COPY_D2D(width *height), )                                                     \
	X(cudaMemcpyBatchAsync, PTSZ, E1,                                                          \
	  (void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,          \
	   struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,                 \
	   cudaStream_t stream),                                                                   \
	  (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream),                          \
	  STREAM(stream) COPY_BATCH(dsts, srcs, sizes, count), )                                   \
	X(cudaMemcpy3DBatchAsync, PTSZ, E1,                                                        \
	  (size_t numOps, struct cudaMemcpy3DBatchOp * opList, unsigned long long flags,           \
	   cudaStream_t stream),                                                                   \
	  (numOps, opList, flags, stream), STREAM(stream) AUX(numOps), )                           \
	/* memsets: E1, S6 to pinned or managed memory when not async */                           \
	X(cudaMemset, PTDS, E1, (void *devPtr, int value, size_t count), (devPtr, value, count),   \
	  STREAM(0) MEMSET(devPtr, count, 0), )                                                    \
	X(cudaMemsetAsync, PTSZ, E1, (void *devPtr, int value, size_t count, cudaStream_t stream), \
	  (devPtr, value, count, stream), STREAM(stream) MEMSET(devPtr, count, 1), )               \
	X(cudaMemset2D, PTDS, E1,                                                                  \
	  (void *devPtr, size_t pitch, int value, size_t width, size_t height),                    \
	  (devPtr, pitch, value, width, height), STREAM(0) MEMSET(devPtr, width *height, 0), )     \
	X(cudaMemset2DAsync, PTSZ, E1,                                                             \
	  (void *devPtr, size_t pitch, int value, size_t width, size_t height,                     \
	   cudaStream_t stream),                                                                   \
	  (devPtr, pitch, value, width, height, stream),                                           \
	  STREAM(stream) MEMSET(devPtr, width *height, 1), )                                       \
	X(cudaMemset3D, PTDS, E1,                                                                  \
	  (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent),              \
	  (pitchedDevPtr, value, extent),                                                          \
	  STREAM(0) MEMSET(pitchedDevPtr.ptr, extent.width *extent.height *extent.depth, 0), )     \
	X(cudaMemset3DAsync, PTSZ, E1,                                                             \
	  (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,               \
	   cudaStream_t stream),                                                                   \
	  (pitchedDevPtr, value, extent, stream),                                                  \
	  STREAM(stream)                                                                           \
	      MEMSET(pitchedDevPtr.ptr, extent.width *extent.height *extent.depth, 1), )           \
	/* E1: stream-ordered memory operations */                                                 \
	X(cudaMemPrefetchAsync, PTSZ, E1,                                                          \
	  (const void *devPtr, size_t count, struct cudaMemLocation location, unsigned int flags,  \
	   cudaStream_t stream),                                                                   \
	  (devPtr, count, location, flags, stream),                                                \
	  STREAM(stream) BYTES(count) PREFETCH(devPtr, location), )                                \
	X(cudaMemPrefetchBatchAsync, PTSZ, E1,                                                     \
	  (void **dptrs, size_t *sizes, size_t count, struct cudaMemLocation *prefetchLocs,        \
	   size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,              \
	   cudaStream_t stream),                                                                   \
	  (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, stream),    \
	  STREAM(stream) BYTES(ss_sum_sizes(sizes, count)), )                                      \
	X(cudaMemDiscardBatchAsync, PTSZ, E1,                                                      \
	  (void **dptrs, size_t *sizes, size_t count, unsigned long long flags,                    \
	   cudaStream_t stream),                                                                   \
	  (dptrs, sizes, count, flags, stream),                                                    \
	  STREAM(stream) BYTES(ss_sum_sizes(sizes, count)), )                                      \
	X(cudaMemDiscardAndPrefetchBatchAsync, PTSZ, E1,                                           \
	  (void **dptrs, size_t *sizes, size_t count, struct cudaMemLocation *prefetchLocs,        \
	   size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,              \
	   cudaStream_t stream),                                                                   \
	  (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, stream),    \
	  STREAM(stream) BYTES(ss_sum_sizes(sizes, count)), )                                      \
	X(cudaStreamAttachMemAsync, PTSZ, E1,                                                      \
	  (cudaStream_t stream, void *devPtr, size_t length, unsigned int flags),                  \
	  (stream, devPtr, length, flags), STREAM(stream) BYTES(length), )                         \
	X(cudaMallocAsync, PTSZ, E1, (void **devPtr, size_t size, cudaStream_t stream),            \
	  (devPtr, size, stream), STREAM(stream),                                                  \
	  ALLOC(*devPtr, size, SS_MEM_DEVICE | SS_RANGE_ASYNC))                                    \
	X(cudaMallocFromPoolAsync, PTSZ, E1,                                                       \
	  (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),                   \
	  (ptr, size, memPool, stream), STREAM(stream),                                            \
	  ALLOC(*ptr, size, SS_MEM_DEVICE | SS_RANGE_ASYNC))                                       \
	X(cudaFreeAsync, PTSZ, E1, (void *devPtr, cudaStream_t stream), (devPtr, stream),          \
	  STREAM(stream) FREE(devPtr), )                                                           \
	/* X1, timed: a pool given back to the OS maps its memory again at the next allocation */  \
	X(cudaMemPoolTrimTo, NONE, X1, (cudaMemPool_t memPool, size_t minBytesToKeep),             \
	  (memPool, minBytesToKeep), BYTES(minBytesToKeep) AUX(memPool), )                         \
	/* S6: allocation, free and registration */                                                \
	X(cudaMalloc, NONE, S6, (void **devPtr, size_t size), (devPtr, size), ,                    \
	  ALLOC(*devPtr, size, SS_MEM_DEVICE))                                                     \
	X(cudaMallocManaged, NONE, S6, (void **devPtr, size_t size, unsigned int flags),           \
	  (devPtr, size, flags), , ALLOC(*devPtr, size, SS_MEM_MANAGED))                           \
	X(cudaMallocPitch, NONE, S6, (void **devPtr, size_t *pitch, size_t width, size_t height),  \
	  (devPtr, pitch, width, height), , ALLOC(*devPtr, *pitch *height, SS_MEM_DEVICE))         \
	X(cudaMalloc3D, NONE, S6,                                                                  \
	  (struct cudaPitchedPtr * pitchedDevPtr, struct cudaExtent extent),                       \
	  (pitchedDevPtr, extent), ,                                                               \
	  ALLOC(pitchedDevPtr->ptr, pitchedDevPtr->pitch *extent.height *extent.depth,             \
		SS_MEM_DEVICE))                                                                    \
	X(cudaMallocArray, NONE, S6,                                                               \
	  (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, size_t width,            \
	   size_t height, unsigned int flags),                                                     \
	  (array, desc, width, height, flags), , )                                                 \
	X(cudaMalloc3DArray, NONE, S6,                                                             \
	  (cudaArray_t * array, const struct cudaChannelFormatDesc *desc,                          \
	   struct cudaExtent extent, unsigned int flags),                                          \
	  (array, desc, extent, flags), , )                                                        \
	X(cudaMallocMipmappedArray, NONE, S6,                                                      \
	  (cudaMipmappedArray_t * mipmappedArray, const struct cudaChannelFormatDesc *desc,        \
	   struct cudaExtent extent, unsigned int numLevels, unsigned int flags),                  \
	  (mipmappedArray, desc, extent, numLevels, flags), , )                                    \
	X(cudaFree, NONE, S6, (void *devPtr), (devPtr), FREE(devPtr), )                            \
	/* S6 for the stack size (it waits for the device), X1 for the other limits: LIMIT */      \
	X(cudaDeviceSetLimit, NONE, S6, (enum cudaLimit limit, size_t value), (limit, value),      \
	  LIMIT(limit, value), )                                                                   \
	X(cudaFreeArray, NONE, S6, (cudaArray_t array), (array), , )                               \
	X(cudaFreeMipmappedArray, NONE, S6, (cudaMipmappedArray_t mipmappedArray),                 \
	  (mipmappedArray), , )                                                                    \
	X(cudaMallocHost, NONE, S6, (void **ptr, size_t size), (ptr, size), ,                      \
	  ALLOC(*ptr, size, SS_MEM_PINNED))                                                        \
	X(cudaHostAlloc, NONE, S6, (void **pHost, size_t size, unsigned int flags),                \
	  (pHost, size, flags), AUX(flags), ALLOC(*pHost, size, SS_MEM_PINNED))                    \
	X(cudaFreeHost, NONE, S6, (void *ptr), (ptr), FREE(ptr), )                                 \
	X(cudaHostRegister, NONE, S6, (void *ptr, size_t size, unsigned int flags),                \
	  (ptr, size, flags), AUX(flags), ALLOC(ptr, size, SS_MEM_PINNED))                         \
	X(cudaHostUnregister, NONE, S6, (void *ptr), (ptr), FREE(ptr), )                           \
	/* X1: context for the rest */                                                             \
	X(cudaStreamCreate, NONE, X1, (cudaStream_t * pStream), (pStream), ,                       \
	  CREATED_STREAM(*pStream, 0, 0))                                                          \
	X(cudaStreamCreateWithFlags, NONE, X1, (cudaStream_t * pStream, unsigned int flags),       \
	  (pStream, flags), , CREATED_STREAM(*pStream, flags, 0))                                  \
	X(cudaStreamCreateWithPriority, NONE, X1,                                                  \
	  (cudaStream_t * pStream, unsigned int flags, int priority), (pStream, flags, priority),  \
	  , CREATED_STREAM(*pStream, flags, priority))                                             \
	X(cudaStreamDestroy, NONE, X1, (cudaStream_t stream), (stream), STREAM(stream), )          \
	X(cudaStreamBeginCapture, PTSZ, X1,                                                        \
	  (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode),                  \
	  STREAM(stream) AUX(mode), CAPTURE_BEGUN)                                                 \
	X(cudaStreamBeginCaptureToGraph, PTSZ, X1,                                                 \
	  (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,            \
	   const cudaGraphEdgeData *dependencyData, size_t numDependencies,                        \
	   enum cudaStreamCaptureMode mode),                                                       \
	  (stream, graph, dependencies, dependencyData, numDependencies, mode),                    \
	  STREAM(stream) AUX(mode) GRAPH(graph), CAPTURE_BEGUN)                                    \
	X(cudaStreamEndCapture, PTSZ, X1, (cudaStream_t stream, cudaGraph_t * pGraph),             \
	  (stream, pGraph), STREAM(stream), CAPTURED_GRAPH(*pGraph) CAPTURE_ENDED)                 \
	X(cudaGraphInstantiate, NONE, X1,                                                          \
	  (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, unsigned long long flags),             \
	  (pGraphExec, graph, flags), GRAPH(graph), CREATED_GRAPH_EXEC(*pGraphExec))               \
	X(cudaGraphInstantiateWithFlags, NONE, X1,                                                 \
	  (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, unsigned long long flags),             \
	  (pGraphExec, graph, flags), GRAPH(graph), CREATED_GRAPH_EXEC(*pGraphExec))               \
	X(cudaGraphInstantiateWithParams, PTSZ, X1,                                                \
	  (cudaGraphExec_t * pGraphExec, cudaGraph_t graph,                                        \
	   cudaGraphInstantiateParams * instantiateParams),                                        \
	  (pGraphExec, graph, instantiateParams), GRAPH(graph), CREATED_GRAPH_EXEC(*pGraphExec))   \
	X(cudaGraphExecDestroy, NONE, X1, (cudaGraphExec_t graphExec), (graphExec),                \
	  AUX(graphExec), )                                                                        \
	X(cudaLibraryLoadData, NONE, X1,                                                           \
	  (cudaLibrary_t * library, const void *code, enum cudaJitOption *jitOptions,              \
	   void **jitOptionsValues, unsigned int numJitOptions,                                    \
	   enum cudaLibraryOption *libraryOptions, void **libraryOptionValues,                     \
	   unsigned int numLibraryOptions),                                                        \
	  (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,             \
	   libraryOptionValues, numLibraryOptions),                                                \
	  , CREATED_MODULE(*library))                                                              \
	X(cudaLibraryLoadFromFile, NONE, X1,                                                       \
	  (cudaLibrary_t * library, const char *fileName, enum cudaJitOption *jitOptions,          \
	   void **jitOptionsValues, unsigned int numJitOptions,                                    \
	   enum cudaLibraryOption *libraryOptions, void **libraryOptionValues,                     \
	   unsigned int numLibraryOptions),                                                        \
	  (library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,         \
	   libraryOptionValues, numLibraryOptions),                                                \
	  , CREATED_MODULE(*library))                                                              \
	X(cudaLibraryGetKernel, NONE, X1,                                                          \
	  (cudaKernel_t * pKernel, cudaLibrary_t library, const char *name),                       \
	  (pKernel, library, name), AUX(library), )                                                \
	X(cudaLibraryUnload, NONE, X1, (cudaLibrary_t library), (library), AUX(library), )         \
	X(cudaEventCreate, NONE, X1, (cudaEvent_t * event), (event), , CREATED_EVENT(*event, 0))   \
	X(cudaEventCreateWithFlags, NONE, X1, (cudaEvent_t * event, unsigned int flags),           \
	  (event, flags), , CREATED_EVENT(*event, flags))                                          \
	X(cudaEventDestroy, NONE, X1, (cudaEvent_t event), (event), EVENT(event), )                \
	/* X1: capture ranges in cudaProfilerApi mode (capture.h); the real call always runs */    \
	X(cudaProfilerStart, NONE, X1, (void), (), PROFILER(1), )                                  \
	X(cudaProfilerStop, NONE, X1, (void), (), , PROFILER(0))

#endif
