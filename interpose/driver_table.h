/*
 * interpose/driver_table.h: every CUDA driver entry point of the sync model, declared once.
 *
 * SS_DRIVER(name, variant, class, (params), (args), pre, post): as cudart_table.h, with the
 * exported names of libcuda.so.1 (cuMemcpyHtoD_v2: cuda.h #defines the plain names to them) and
 * the driver's variants: name_ptsz for stream-ordered calls, name_ptds for the synchronous
 * copies and memsets. Programs that link libcuda reach these wrappers directly; everything
 * else (the static cudart nvcc links by default, cuBLAS, torch's c10, NCCL) gets them from the
 * shim's dlsym and cuGetProcAddress (driver.c), which hand out a wrapper for each function of
 * this table and the real pointer for everything else.
 *
 * Vocabulary (driver.c): STREAM(s) EVENT(e) BYTES(n) AUX(x); COPY_HTOD(src, n, async),
 * COPY_DTOH(dst, n, async), COPY_DTOD(n), COPY_ANY(dst, src, n, async), COPY_2D(CUDA_MEMCPY2D *,
 * async), COPY_3D(CUDA_MEMCPY3D *, async), COPY_PEER(n), COPY_BATCH(dsts, srcs, sizes, count);
 * MEMSET(ptr, n, async); MEM_OPS(count, CUstreamBatchMemOpParams *) (a wait among them: E3,
 * else E2); FREE(ptr); LIMIT(limit, value) (S6 for the stack size, else X1); post: ALLOC(ptr, n,
 * kind), CREATED_STREAM(s, flags, priority), CREATED_EVENT(e, flags), CREATED_GRAPH_EXEC(exec),
 * CAPTURED_GRAPH(g), CREATED_MODULE(m) (a module or library); pre: GRAPH(g) (the graph an
 * instantiation reads); either: PROFILER(on) (capture.h).
 *
 * A stream memory operation's word (cuStreamWaitValue*, cuStreamWriteValue*) is its EVENT: a
 * write and the waits that read it order streams as an event record and its waits do
 * (docs/sync-model.md, E2/E3), and the writer stores it in calls.event.
 */
#ifndef SYNCSPY_DRIVER_TABLE_H
#define SYNCSPY_DRIVER_TABLE_H

#define SS_DRIVER_FUNCS(X)                                                                         \
	X(cuCtxSynchronize, NONE, S1, (void), (), , )                                              \
	X(cuCtxSynchronize_v2, NONE, S1, (CUcontext ctx), (ctx), , )                               \
	X(cuStreamSynchronize, PTSZ, S2, (CUstream hStream), (hStream), STREAM(hStream), )         \
	X(cuEventSynchronize, NONE, S3, (CUevent hEvent), (hEvent), EVENT(hEvent), )               \
	X(cuStreamQuery, PTSZ, S7, (CUstream hStream), (hStream), STREAM(hStream), )               \
	X(cuEventQuery, NONE, S7, (CUevent hEvent), (hEvent), EVENT(hEvent), )                     \
	X(cuEventRecord, PTSZ, E2, (CUevent hEvent, CUstream hStream), (hEvent, hStream),          \
	  EVENT(hEvent) STREAM(hStream), )                                                         \
	X(cuEventRecordWithFlags, PTSZ, E2,                                                        \
	  (CUevent hEvent, CUstream hStream, unsigned int flags), (hEvent, hStream, flags),        \
	  EVENT(hEvent) STREAM(hStream) AUX(flags), )                                              \
	X(cuStreamWaitEvent, PTSZ, E3, (CUstream hStream, CUevent hEvent, unsigned int Flags),     \
	  (hStream, hEvent, Flags), EVENT(hEvent) STREAM(hStream) AUX(Flags), )                    \
	X(cuLaunchKernel, PTSZ, E1,                                                                \
	  (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,      \
	   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                 \
	   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),      \
	  (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,       \
	   hStream, kernelParams, extra),                                                          \
	  STREAM(hStream) AUX(f), )                                                                \
	X(cuLaunchKernelEx, PTSZ, E1,                                                              \
	  (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),         \
	  (config, f, kernelParams, extra), STREAM(config ? config->hStream : 0) AUX(f), )         \
	X(cuLaunchCooperativeKernel, PTSZ, E1,                                                     \
	  (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,      \
	   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                 \
	   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),                    \
	  (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,       \
	   hStream, kernelParams),                                                                 \
	  STREAM(hStream) AUX(f), )                                                                \
	X(cuLaunchHostFunc, PTSZ, E1, (CUstream hStream, CUhostFn fn, void *userData),             \
	  (hStream, fn, userData), STREAM(hStream) AUX(fn), )                                      \
	X(cuStreamAddCallback, PTSZ, E1,                                                           \
	  (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),       \
	  (hStream, callback, userData, flags), STREAM(hStream) AUX(callback), )                   \
	X(cuStreamWaitValue32_v2, PTSZ, E3,                                                        \
	  (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),               \
	  (stream, addr, value, flags), STREAM(stream) EVENT(addr) AUX(flags), )                   \
	X(cuStreamWaitValue64_v2, PTSZ, E3,                                                        \
	  (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),               \
	  (stream, addr, value, flags), STREAM(stream) EVENT(addr) AUX(flags), )                   \
	X(cuStreamWriteValue32_v2, PTSZ, E2,                                                       \
	  (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),               \
	  (stream, addr, value, flags), STREAM(stream) EVENT(addr) AUX(flags), )                   \
	X(cuStreamWriteValue64_v2, PTSZ, E2,                                                       \
	  (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),               \
	  (stream, addr, value, flags), STREAM(stream) EVENT(addr) AUX(flags), )                   \
	X(cuStreamBatchMemOp_v2, PTSZ, E3,                                                         \
	  (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,              \
	   unsigned int flags),                                                                    \
	  (stream, count, paramArray, flags), STREAM(stream) MEM_OPS(count, paramArray), )         \
	X(cuGraphInstantiateWithFlags, NONE, X1,                                                   \
	  (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags),                   \
	  (phGraphExec, hGraph, flags), GRAPH(hGraph), CREATED_GRAPH_EXEC(*phGraphExec))           \
	X(cuGraphInstantiate_v2, NONE, X1,                                                         \
	  (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode * phErrorNode, char *logBuffer,  \
	   size_t bufferSize),                                                                     \
	  (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), GRAPH(hGraph),                \
	  CREATED_GRAPH_EXEC(*phGraphExec))                                                        \
	X(cuGraphInstantiateWithParams, PTSZ, X1,                                                  \
	  (CUgraphExec * phGraphExec, CUgraph hGraph,                                              \
	   CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams),                                     \
	  (phGraphExec, hGraph, instantiateParams), GRAPH(hGraph),                                 \
	  CREATED_GRAPH_EXEC(*phGraphExec))                                                        \
	X(cuStreamBeginCapture_v2, PTSZ, X1, (CUstream hStream, CUstreamCaptureMode mode),         \
	  (hStream, mode), STREAM(hStream) AUX(mode), CAPTURE_BEGUN)                               \
	X(cuStreamEndCapture, PTSZ, X1, (CUstream hStream, CUgraph * phGraph), (hStream, phGraph), \
	  STREAM(hStream), CAPTURED_GRAPH(*phGraph) CAPTURE_ENDED)                                 \
	X(cuGraphExecDestroy, NONE, X1, (CUgraphExec hGraphExec), (hGraphExec), AUX(hGraphExec), ) \
	X(cuGraphLaunch, PTSZ, E1, (CUgraphExec hGraphExec, CUstream hStream),                     \
	  (hGraphExec, hStream), STREAM(hStream) AUX(hGraphExec), )                                \
	X(cuMemcpyHtoD_v2, PTDS, S4,                                                               \
	  (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),                          \
	  (dstDevice, srcHost, ByteCount), STREAM(0) COPY_HTOD(srcHost, ByteCount, 0), )           \
	X(cuMemcpyDtoH_v2, PTDS, S4, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),     \
	  (dstHost, srcDevice, ByteCount), STREAM(0) COPY_DTOH(dstHost, ByteCount, 0), )           \
	X(cuMemcpyDtoD_v2, PTDS, S4,                                                               \
	  (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),                        \
	  (dstDevice, srcDevice, ByteCount), STREAM(0) COPY_DTOD(ByteCount), )                     \
	X(cuMemcpyHtoA_v2, PTDS, S4,                                                               \
	  (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount),             \
	  (dstArray, dstOffset, srcHost, ByteCount), STREAM(0) COPY_HTOD(srcHost, ByteCount, 0), ) \
	X(cuMemcpyAtoH_v2, PTDS, S4,                                                               \
	  (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount),                   \
	  (dstHost, srcArray, srcOffset, ByteCount), STREAM(0) COPY_DTOH(dstHost, ByteCount, 0), ) \
	X(cuMemcpyDtoA_v2, PTDS, S4,                                                               \
	  (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount),           \
	  (dstArray, dstOffset, srcDevice, ByteCount), STREAM(0) COPY_DTOD(ByteCount), )          \
	X(cuMemcpyAtoD_v2, PTDS, S4,                                                               \
	  (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount),           \
	  (dstDevice, srcArray, srcOffset, ByteCount), STREAM(0) COPY_DTOD(ByteCount), )          \
	X(cuMemcpyAtoA_v2, PTDS, S4,                                                               \
	  (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,                 \
	   size_t ByteCount),                                                                      \
	  (dstArray, dstOffset, srcArray, srcOffset, ByteCount), STREAM(0) COPY_DTOD(ByteCount), ) \
	X(cuMemcpyHtoAAsync_v2, PTSZ, E1,                                                          \
	  (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,              \
	   CUstream hStream),                                                                      \
	  (dstArray, dstOffset, srcHost, ByteCount, hStream),                                      \
	  STREAM(hStream) COPY_HTOD(srcHost, ByteCount, 1), )                                      \
	X(cuMemcpyAtoHAsync_v2, PTSZ, E1,                                                          \
	  (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream), \
	  (dstHost, srcArray, srcOffset, ByteCount, hStream),                                      \
	  STREAM(hStream) COPY_DTOH(dstHost, ByteCount, 1), )                                      \
	X(cuMemcpy, PTDS, S4, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),                \
	  (dst, src, ByteCount), STREAM(0) COPY_ANY(dst, src, ByteCount, 0), )                     \
	X(cuMemcpyHtoDAsync_v2, PTSZ, E1,                                                          \
	  (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),        \
	  (dstDevice, srcHost, ByteCount, hStream),                                                \
	  STREAM(hStream) COPY_HTOD(srcHost, ByteCount, 1), )                                      \
	X(cuMemcpyDtoHAsync_v2, PTSZ, E1,                                                          \
	  (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),              \
	  (dstHost, srcDevice, ByteCount, hStream),                                                \
	  STREAM(hStream) COPY_DTOH(dstHost, ByteCount, 1), )                                      \
	X(cuMemcpyDtoDAsync_v2, PTSZ, E1,                                                          \
	  (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),      \
	  (dstDevice, srcDevice, ByteCount, hStream), STREAM(hStream) COPY_DTOD(ByteCount), )      \
	X(cuMemcpyAsync, PTSZ, E1,                                                                 \
	  (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),                  \
	  (dst, src, ByteCount, hStream), STREAM(hStream) COPY_ANY(dst, src, ByteCount, 1), )      \
	X(cuMemcpy2D_v2, PTDS, S4, (const CUDA_MEMCPY2D *pCopy), (pCopy),                          \
	  STREAM(0) COPY_2D(pCopy, 0), )                                                           \
	X(cuMemcpy2DAsync_v2, PTSZ, E1, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),            \
	  (pCopy, hStream), STREAM(hStream) COPY_2D(pCopy, 1), )                                   \
	X(cuMemcpy2DUnaligned_v2, PTDS, S4, (const CUDA_MEMCPY2D *pCopy), (pCopy),                 \
	  STREAM(0) COPY_2D(pCopy, 0), )                                                           \
	X(cuMemcpy3D_v2, PTDS, S4, (const CUDA_MEMCPY3D *pCopy), (pCopy),                          \
	  STREAM(0) COPY_3D(pCopy, 0), )                                                           \
	X(cuMemcpy3DAsync_v2, PTSZ, E1, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),            \
	  (pCopy, hStream), STREAM(hStream) COPY_3D(pCopy, 1), )                                   \
	X(cuMemcpyPeer, PTDS, S4,                                                                  \
	  (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,                     \
	   CUcontext srcContext, size_t ByteCount),                                                \
	  (dstDevice, dstContext, srcDevice, srcContext, ByteCount),                               \
	  STREAM(0) COPY_PEER(ByteCount), )                                                        \
	X(cuMemcpyPeerAsync, PTSZ, E1,                                                             \
	  (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,                     \
	   CUcontext srcContext, size_t ByteCount, CUstream hStream),                              \
	  (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream),                      \
	  STREAM(hStream) COPY_PEER(ByteCount), )                                                  \
	X(cuMemcpy3DPeer, PTDS, S4, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy),                    \
	  STREAM(0) COPY_PEER(pCopy ? (uint64_t)pCopy->WidthInBytes * pCopy->Height * pCopy->Depth \
				    : 0), )                                                        \
	X(cuMemcpy3DPeerAsync, PTSZ, E1, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),      \
	  (pCopy, hStream),                                                                        \
	  STREAM(hStream) COPY_PEER(                                                               \
	      pCopy ? (uint64_t)pCopy->WidthInBytes * pCopy->Height * pCopy->Depth : 0), )         \
	X(cuMemcpyBatchAsync_v2, PTSZ, E1,                                                         \
	  (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count,                   \
	   CUmemcpyAttributes * attrs, size_t * attrsIdxs, size_t numAttrs, CUstream hStream),     \
	  (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream),                         \
	  STREAM(hStream) COPY_BATCH(dsts, srcs, sizes, count) AUX(count), )                       \
	X(cuMemcpy3DBatchAsync_v2, PTSZ, E1,                                                       \
	  (size_t numOps, CUDA_MEMCPY3D_BATCH_OP * opList, unsigned long long flags,               \
	   CUstream hStream),                                                                      \
	  (numOps, opList, flags, hStream), STREAM(hStream) AUX(numOps), )                         \
	X(cuMemsetD8_v2, PTDS, E1, (CUdeviceptr dstDevice, unsigned char uc, size_t N),            \
	  (dstDevice, uc, N), STREAM(0) MEMSET(dstDevice, N, 0), )                                 \
	X(cuMemsetD32_v2, PTDS, E1, (CUdeviceptr dstDevice, unsigned int ui, size_t N),            \
	  (dstDevice, ui, N), STREAM(0) MEMSET(dstDevice, 4 * (uint64_t)N, 0), )                   \
	X(cuMemsetD8Async, PTSZ, E1,                                                               \
	  (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),                   \
	  (dstDevice, uc, N, hStream), STREAM(hStream) MEMSET(dstDevice, N, 1), )                  \
	X(cuMemsetD32Async, PTSZ, E1,                                                              \
	  (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),                    \
	  (dstDevice, ui, N, hStream), STREAM(hStream) MEMSET(dstDevice, 4 * (uint64_t)N, 1), )    \
	X(cuMemsetD16_v2, PTDS, E1, (CUdeviceptr dstDevice, unsigned short us, size_t N),          \
	  (dstDevice, us, N), STREAM(0) MEMSET(dstDevice, 2 * (uint64_t)N, 0), )                   \
	X(cuMemsetD16Async, PTSZ, E1,                                                              \
	  (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),                  \
	  (dstDevice, us, N, hStream), STREAM(hStream) MEMSET(dstDevice, 2 * (uint64_t)N, 1), )    \
	X(cuMemsetD2D8_v2, PTDS, E1,                                                               \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height), \
	  (dstDevice, dstPitch, uc, Width, Height),                                                \
	  STREAM(0) MEMSET(dstDevice, (uint64_t)Width *Height, 0), )                               \
	X(cuMemsetD2D16_v2, PTDS, E1,                                                              \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,                \
	   size_t Height),                                                                         \
	  (dstDevice, dstPitch, us, Width, Height),                                                \
	  STREAM(0) MEMSET(dstDevice, 2 * (uint64_t)Width * Height, 0), )                          \
	X(cuMemsetD2D32_v2, PTDS, E1,                                                              \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height),  \
	  (dstDevice, dstPitch, ui, Width, Height),                                                \
	  STREAM(0) MEMSET(dstDevice, 4 * (uint64_t)Width * Height, 0), )                          \
	X(cuMemsetD2D8Async, PTSZ, E1,                                                             \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,  \
	   CUstream hStream),                                                                      \
	  (dstDevice, dstPitch, uc, Width, Height, hStream),                                       \
	  STREAM(hStream) MEMSET(dstDevice, (uint64_t)Width *Height, 1), )                         \
	X(cuMemsetD2D16Async, PTSZ, E1,                                                            \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, \
	   CUstream hStream),                                                                      \
	  (dstDevice, dstPitch, us, Width, Height, hStream),                                       \
	  STREAM(hStream) MEMSET(dstDevice, 2 * (uint64_t)Width * Height, 1), )                    \
	X(cuMemsetD2D32Async, PTSZ, E1,                                                            \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,   \
	   CUstream hStream),                                                                      \
	  (dstDevice, dstPitch, ui, Width, Height, hStream),                                       \
	  STREAM(hStream) MEMSET(dstDevice, 4 * (uint64_t)Width * Height, 1), )                    \
	X(cuMemAlloc_v2, NONE, S6, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize), ,      \
	  ALLOC(*dptr, bytesize, SS_MEM_DEVICE))                                                   \
	X(cuMemAllocPitch_v2, NONE, S6,                                                            \
	  (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                \
	   unsigned int ElementSizeBytes),                                                         \
	  (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), ,                                \
	  ALLOC(*dptr, *pPitch *Height, SS_MEM_DEVICE))                                            \
	X(cuMemAllocManaged, NONE, S6, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),  \
	  (dptr, bytesize, flags), , ALLOC(*dptr, bytesize, SS_MEM_MANAGED))                       \
	X(cuMemFree_v2, NONE, S6, (CUdeviceptr dptr), (dptr), FREE(dptr), )                        \
	X(cuCtxSetLimit, NONE, S6, (CUlimit limit, size_t value), (limit, value),                  \
	  LIMIT(limit, value), )                                                                   \
	X(cuMemAllocHost_v2, NONE, S6, (void **pp, size_t bytesize), (pp, bytesize), ,             \
	  ALLOC(*pp, bytesize, SS_MEM_PINNED))                                                     \
	X(cuMemHostAlloc, NONE, S6, (void **pp, size_t bytesize, unsigned int Flags),              \
	  (pp, bytesize, Flags), AUX(Flags), ALLOC(*pp, bytesize, SS_MEM_PINNED))                  \
	X(cuMemFreeHost, NONE, S6, (void *p), (p), FREE(p), )                                      \
	X(cuMemHostRegister_v2, NONE, S6, (void *p, size_t bytesize, unsigned int Flags),          \
	  (p, bytesize, Flags), AUX(Flags), ALLOC(p, bytesize, SS_MEM_PINNED))                     \
	X(cuMemHostUnregister, NONE, S6, (void *p), (p), FREE(p), )                                \
	X(cuArrayCreate_v2, NONE, S6,                                                              \
	  (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),                        \
	  (pHandle, pAllocateArray), , )                                                           \
	X(cuArray3DCreate_v2, NONE, S6,                                                            \
	  (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),                      \
	  (pHandle, pAllocateArray), , )                                                           \
	X(cuMipmappedArrayCreate, NONE, S6,                                                        \
	  (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,         \
	   unsigned int numMipmapLevels),                                                          \
	  (pHandle, pMipmappedArrayDesc, numMipmapLevels), , )                                     \
	X(cuArrayDestroy, NONE, S6, (CUarray hArray), (hArray), , )                                \
	X(cuMipmappedArrayDestroy, NONE, S6, (CUmipmappedArray hMipmappedArray),                   \
	  (hMipmappedArray), , )                                                                   \
	X(cuMemAllocAsync, PTSZ, E1, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),      \
	  (dptr, bytesize, hStream), STREAM(hStream),                                              \
	  ALLOC(*dptr, bytesize, SS_MEM_DEVICE | SS_RANGE_ASYNC))                                  \
	X(cuMemAllocFromPoolAsync, PTSZ, E1,                                                       \
	  (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),              \
	  (dptr, bytesize, pool, hStream), STREAM(hStream),                                        \
	  ALLOC(*dptr, bytesize, SS_MEM_DEVICE | SS_RANGE_ASYNC))                                  \
	X(cuMemFreeAsync, PTSZ, E1, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream),         \
	  STREAM(hStream) FREE(dptr), )                                                            \
	X(cuMemPoolTrimTo, NONE, X1, (CUmemoryPool pool, size_t minBytesToKeep),                   \
	  (pool, minBytesToKeep), BYTES(minBytesToKeep) AUX(pool), )                               \
	X(cuMemUnmap, NONE, S6, (CUdeviceptr ptr, size_t size), (ptr, size), FREE(ptr), )          \
	X(cuMemSetAccess, NONE, S6,                                                                \
	  (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count),               \
	  (ptr, size, desc, count), BYTES(size), )                                                 \
	X(cuMemCreate, NONE, X1,                                                                   \
	  (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,    \
	   unsigned long long flags),                                                              \
	  (handle, size, prop, flags), BYTES(size), )                                              \
	X(cuMemRelease, NONE, X1, (CUmemGenericAllocationHandle handle), (handle), AUX(handle), )  \
	X(cuMemMap, NONE, X1,                                                                      \
	  (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,       \
	   unsigned long long flags),                                                              \
	  (ptr, size, offset, handle, flags), AUX(handle), ALLOC(ptr, size, SS_MEM_DEVICE))        \
	X(cuMemPrefetchAsync_v2, PTSZ, E1,                                                         \
	  (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,           \
	   CUstream hStream),                                                                      \
	  (devPtr, count, location, flags, hStream),                                               \
	  STREAM(hStream) BYTES(count) PREFETCH(devPtr, location), )                               \
	X(cuStreamCreate, NONE, X1, (CUstream * phStream, unsigned int Flags), (phStream, Flags),  \
	  , CREATED_STREAM(*phStream, Flags, 0))                                                   \
	X(cuStreamCreateWithPriority, NONE, X1,                                                    \
	  (CUstream * phStream, unsigned int flags, int priority), (phStream, flags, priority), ,  \
	  CREATED_STREAM(*phStream, flags, priority))                                              \
	X(cuStreamDestroy_v2, NONE, X1, (CUstream hStream), (hStream), STREAM(hStream), )          \
	X(cuEventCreate, NONE, X1, (CUevent * phEvent, unsigned int Flags), (phEvent, Flags), ,    \
	  CREATED_EVENT(*phEvent, Flags))                                                          \
	X(cuEventDestroy_v2, NONE, X1, (CUevent hEvent), (hEvent), EVENT(hEvent), )                \
	X(cuCtxCreate_v4, NONE, X1,                                                                \
	  (CUcontext * pctx, CUctxCreateParams * ctxCreateParams, unsigned int flags,              \
	   CUdevice dev),                                                                          \
	  (pctx, ctxCreateParams, flags, dev), DEVICE(dev), CREATED_CONTEXT(*pctx))                \
	X(cuCtxCreate_v3, NONE, X1,                                                                \
	  (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams, unsigned int flags, \
	   CUdevice dev),                                                                          \
	  (pctx, paramsArray, numParams, flags, dev), DEVICE(dev), CREATED_CONTEXT(*pctx))         \
	X(cuCtxCreate_v2, NONE, X1, (CUcontext * pctx, unsigned int flags, CUdevice dev),          \
	  (pctx, flags, dev), DEVICE(dev), CREATED_CONTEXT(*pctx))                                 \
	X(cuCtxDestroy_v2, NONE, X1, (CUcontext ctx), (ctx), AUX(ctx), )                           \
	X(cuDevicePrimaryCtxRetain, NONE, X1, (CUcontext * pctx, CUdevice dev), (pctx, dev),       \
	  DEVICE(dev), CREATED_CONTEXT(*pctx))                                                     \
	X(cuDevicePrimaryCtxRelease_v2, NONE, X1, (CUdevice dev), (dev), DEVICE(dev), )            \
	X(cuCtxPushCurrent_v2, NONE, X1, (CUcontext ctx), (ctx), AUX(ctx), )                       \
	X(cuCtxPopCurrent_v2, NONE, X1, (CUcontext * pctx), (pctx), , POPPED_CONTEXT(pctx))        \
	X(cuCtxSetCurrent, NONE, X1, (CUcontext ctx), (ctx), AUX(ctx), )                           \
	X(cuModuleLoad, NONE, X1, (CUmodule * module, const char *fname), (module, fname), ,       \
	  CREATED_MODULE(*module))                                                                 \
	X(cuModuleLoadData, NONE, X1, (CUmodule * module, const void *image), (module, image), ,   \
	  CREATED_MODULE(*module))                                                                 \
	X(cuModuleLoadDataEx, NONE, X1,                                                            \
	  (CUmodule * module, const void *image, unsigned int numOptions, CUjit_option *options,   \
	   void **optionValues),                                                                   \
	  (module, image, numOptions, options, optionValues), , CREATED_MODULE(*module))           \
	X(cuModuleLoadFatBinary, NONE, X1, (CUmodule * module, const void *fatCubin),              \
	  (module, fatCubin), , CREATED_MODULE(*module))                                           \
	X(cuModuleGetFunction, NONE, X1, (CUfunction * hfunc, CUmodule hmod, const char *name),    \
	  (hfunc, hmod, name), AUX(hmod), )                                                        \
	X(cuModuleUnload, NONE, X1, (CUmodule hmod), (hmod), AUX(hmod), )                          \
	X(cuLibraryLoadData, NONE, X1,                                                             \
	  (CUlibrary * library, const void *code, CUjit_option *jitOptions,                        \
	   void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,   \
	   void **libraryOptionValues, unsigned int numLibraryOptions),                            \
	  (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,             \
	   libraryOptionValues, numLibraryOptions),                                                \
	  , CREATED_MODULE(*library))                                                              \
	X(cuLibraryLoadFromFile, NONE, X1,                                                         \
	  (CUlibrary * library, const char *fileName, CUjit_option *jitOptions,                    \
	   void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,   \
	   void **libraryOptionValues, unsigned int numLibraryOptions),                            \
	  (library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,         \
	   libraryOptionValues, numLibraryOptions),                                                \
	  , CREATED_MODULE(*library))                                                              \
	X(cuLibraryGetKernel, NONE, X1, (CUkernel * pKernel, CUlibrary library, const char *name), \
	  (pKernel, library, name), AUX(library), )                                                \
	X(cuLibraryUnload, NONE, X1, (CUlibrary library), (library), AUX(library), )               \
	X(cuProfilerStart, NONE, X1, (void), (), PROFILER(1), )                                    \
	X(cuProfilerStop, NONE, X1, (void), (), , PROFILER(0))

#endif
