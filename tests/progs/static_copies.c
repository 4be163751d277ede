/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/static_copies.c: the copies, memsets, stream memory operations and graph calls of
 * a CUDA runtime linked into the program, as nvcc's default static cudart is (static_launch.c
 * does its launches): the runtime functions are the program's own (cuda*- and cudart*-named,
 * static, not exported) and reach the driver through cuGetProcAddress, as libcudart_static
 * does, with the driver names it asks for (cudaMemcpy2D is cuMemcpy2DUnaligned there, as on the
 * H200; cudaGraphInstantiate asks for cuGraphInstantiate, which the driver answers with
 * cuGraphInstantiateWithFlags). Every line that calls the runtime is marked SITE: each
 * recorded call must name that line, whatever its class (interpose/driver.c SS_ENQUEUE_SITE;
 * sync points by their stacks).
 *
 *   static_copies calls     each runtime function once with the driver functions looked up
 *                           for the legacy default stream (async work on a created stream),
 *                           then once with those for the per-thread default stream (nvcc
 *                           --default-stream per-thread: the _ptsz/_ptds variants, stream 0)
 *   static_copies loop N    N steps (syncspy_step where the shim is there) of: a kernel; a
 *                           blocking 2D copy of its result to pageable memory (COPY2D:
 *                           sync-copy); a graph captured, instantiated (INSTANTIATE), launched
 *                           and destroyed (DESTROY); a second instantiation of it (KEEP) whose
 *                           executable graphs are all destroyed after the loop (TEARDOWN)
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "copy_shapes.h"

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);

/* The 11.0 ABI of cuGraphInstantiate, which a CUDA 11 runtime asks for at version 11000. */
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize);

/* The stand-ins' kernel convention: a host function called with the first parameter. */
static void sleep_kernel(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

/* ------------------------------------------------------------------ the "static runtime" */

/* X(field, name asked for, version, the function cuda.h declares under that name) */
#define DRIVER_FUNCS(X)                                                                            \
	X(Init, "cuInit", 13000, cuInit)                                                           \
	X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 13000, cuDevicePrimaryCtxRetain)           \
	X(StreamCreate, "cuStreamCreate", 13000, cuStreamCreate)                                   \
	X(StreamSynchronize, "cuStreamSynchronize", 13000, cuStreamSynchronize)                    \
	X(MemAlloc, "cuMemAlloc", 13000, cuMemAlloc)                                               \
	X(MemAllocHost, "cuMemAllocHost", 13000, cuMemAllocHost)                                   \
	X(LaunchKernel, "cuLaunchKernel", 13000, cuLaunchKernel)                                   \
	X(Memcpy2DUnaligned, "cuMemcpy2DUnaligned", 13000, cuMemcpy2DUnaligned)                    \
	X(Memcpy3D, "cuMemcpy3D", 13000, cuMemcpy3D)                                               \
	X(Memcpy3DAsync, "cuMemcpy3DAsync", 13000, cuMemcpy3DAsync)                                \
	X(MemcpyPeer, "cuMemcpyPeer", 13000, cuMemcpyPeer)                                         \
	X(MemcpyPeerAsync, "cuMemcpyPeerAsync", 13000, cuMemcpyPeerAsync)                          \
	X(Memcpy3DPeer, "cuMemcpy3DPeer", 13000, cuMemcpy3DPeer)                                   \
	X(Memcpy3DPeerAsync, "cuMemcpy3DPeerAsync", 13000, cuMemcpy3DPeerAsync)                    \
	X(MemcpyBatchAsync, "cuMemcpyBatchAsync", 13000, cuMemcpyBatchAsync)                       \
	X(Memcpy3DBatchAsync, "cuMemcpy3DBatchAsync", 13000, cuMemcpy3DBatchAsync)                 \
	X(MemsetD16, "cuMemsetD16", 13000, cuMemsetD16)                                            \
	X(MemsetD16Async, "cuMemsetD16Async", 13000, cuMemsetD16Async)                             \
	X(MemsetD2D8, "cuMemsetD2D8", 13000, cuMemsetD2D8)                                         \
	X(MemsetD2D16, "cuMemsetD2D16", 13000, cuMemsetD2D16)                                      \
	X(MemsetD2D32, "cuMemsetD2D32", 13000, cuMemsetD2D32)                                      \
	X(MemsetD2D8Async, "cuMemsetD2D8Async", 13000, cuMemsetD2D8Async)                          \
	X(MemsetD2D16Async, "cuMemsetD2D16Async", 13000, cuMemsetD2D16Async)                       \
	X(MemsetD2D32Async, "cuMemsetD2D32Async", 13000, cuMemsetD2D32Async)                       \
	X(WriteValue32, "cuStreamWriteValue32", 13000, cuStreamWriteValue32)                       \
	X(WaitValue32, "cuStreamWaitValue32", 13000, cuStreamWaitValue32)                          \
	X(WriteValue64, "cuStreamWriteValue64", 13000, cuStreamWriteValue64)                       \
	X(WaitValue64, "cuStreamWaitValue64", 13000, cuStreamWaitValue64)                          \
	X(BatchMemOp, "cuStreamBatchMemOp", 13000, cuStreamBatchMemOp)                             \
	X(BeginCapture, "cuStreamBeginCapture", 13000, cuStreamBeginCapture)                       \
	X(EndCapture, "cuStreamEndCapture", 13000, cuStreamEndCapture)                             \
	X(GraphInstantiate, "cuGraphInstantiate", 13000, cuGraphInstantiateWithFlags)              \
	X(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 13000,                         \
	  cuGraphInstantiateWithFlags)                                                             \
	X(GraphInstantiateWithParams, "cuGraphInstantiateWithParams", 13000,                       \
	  cuGraphInstantiateWithParams)                                                            \
	X(GraphInstantiate11, "cuGraphInstantiate", 11000, cuGraphInstantiate_v2)                  \
	X(GraphLaunch, "cuGraphLaunch", 13000, cuGraphLaunch)                                      \
	X(GraphExecDestroy, "cuGraphExecDestroy", 13000, cuGraphExecDestroy)                       \
	X(GraphDestroy, "cuGraphDestroy", 13000, cuGraphDestroy)

struct driver {
#define FIELD(field, name, version, fn) __typeof__(&fn) field;
	DRIVER_FUNCS(FIELD)
#undef FIELD
};

/* The two views a runtime keeps: plain entry points, and the per-thread-default-stream ones. */
static struct driver legacy, per_thread;
static const struct driver *drv = &legacy;

static int load_driver(void)
{
	void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	get_proc_t get_proc = libcuda ? (get_proc_t)dlsym(libcuda, "cuGetProcAddress_v2") : NULL;
	CUdriverProcAddressQueryResult status;
	if (!get_proc)
		return 0;
#define LOOKUP(field, name, version, fn)                                                           \
	if (get_proc(name, (void **)&legacy.field, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM,     \
		     &status) ||                                                                   \
	    get_proc(name, (void **)&per_thread.field, version,                                    \
		     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status))                      \
		return 0;
	DRIVER_FUNCS(LOOKUP)
#undef LOOKUP
	return legacy.Init(0) == CUDA_SUCCESS;
}

/* A runtime function: one frame of the runtime's own between the user's line and the driver
 * (not a tail call: the frame stays on the stack, as the real runtime's do). */
#define RUNTIME(fname, field, params, args)                                                        \
	__attribute__((noinline)) static CUresult fname params                                     \
	{                                                                                          \
		CUresult rc = drv->field args;                                                     \
		__asm__ volatile("");                                                              \
		return rc;                                                                         \
	}

/* clang-format off */ /* it would read the parameter lists as multiplications */
RUNTIME(cudaStreamCreate, StreamCreate, (CUstream *s), (s, CU_STREAM_DEFAULT))
RUNTIME(cudaStreamSynchronize, StreamSynchronize, (CUstream s), (s))
RUNTIME(cudaMalloc, MemAlloc, (CUdeviceptr *p, size_t n), (p, n))
RUNTIME(cudaMallocHost, MemAllocHost, (void **p, size_t n), (p, n))
RUNTIME(cudaMemcpy2D, Memcpy2DUnaligned, (const CUDA_MEMCPY2D *p), (p))
RUNTIME(cudaMemcpy3D, Memcpy3D, (const CUDA_MEMCPY3D *p), (p))
RUNTIME(cudaMemcpy3DAsync, Memcpy3DAsync, (const CUDA_MEMCPY3D *p, CUstream s), (p, s))
RUNTIME(cudaMemcpyPeer, MemcpyPeer, (CUdeviceptr d, CUcontext c, CUdeviceptr s_, size_t n),
	(d, c, s_, c, n))
RUNTIME(cudaMemcpyPeerAsync, MemcpyPeerAsync,
	(CUdeviceptr d, CUcontext c, CUdeviceptr s_, size_t n, CUstream s), (d, c, s_, c, n, s))
RUNTIME(cudaMemcpy3DPeer, Memcpy3DPeer, (const CUDA_MEMCPY3D_PEER *p), (p))
RUNTIME(cudaMemcpy3DPeerAsync, Memcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *p, CUstream s),
	(p, s))
RUNTIME(cudaMemcpyBatchAsync, MemcpyBatchAsync,
	(CUdeviceptr *d, CUdeviceptr *s_, size_t *n, size_t count, CUmemcpyAttributes *a,
	 size_t *ai, CUstream s),
	(d, s_, n, count, a, ai, 1, s))
RUNTIME(cudaMemcpy3DBatchAsync, Memcpy3DBatchAsync,
	(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, CUstream s), (n, ops, 0, s))
RUNTIME(cudartMemsetD16, MemsetD16, (CUdeviceptr d, size_t n), (d, 7, n))
RUNTIME(cudartMemsetD16Async, MemsetD16Async, (CUdeviceptr d, size_t n, CUstream s), (d, 7, n, s))
RUNTIME(cudaMemset2D, MemsetD2D8, (CUdeviceptr d, size_t w, size_t h), (d, 64, 1, w, h))
RUNTIME(cudartMemset2D16, MemsetD2D16, (CUdeviceptr d, size_t w, size_t h), (d, 64, 1, w, h))
RUNTIME(cudartMemset2D32, MemsetD2D32, (CUdeviceptr d, size_t w, size_t h), (d, 64, 1, w, h))
RUNTIME(cudaMemset2DAsync, MemsetD2D8Async, (CUdeviceptr d, size_t w, size_t h, CUstream s),
	(d, 64, 1, w, h, s))
RUNTIME(cudartMemset2D16Async, MemsetD2D16Async, (CUdeviceptr d, size_t w, size_t h, CUstream s),
	(d, 64, 1, w, h, s))
RUNTIME(cudartMemset2D32Async, MemsetD2D32Async, (CUdeviceptr d, size_t w, size_t h, CUstream s),
	(d, 64, 1, w, h, s))
RUNTIME(cudartWriteValue32, WriteValue32, (CUstream s, CUdeviceptr a, cuuint32_t v), (s, a, v, 0))
RUNTIME(cudartWaitValue32, WaitValue32, (CUstream s, CUdeviceptr a, cuuint32_t v),
	(s, a, v, CU_STREAM_WAIT_VALUE_GEQ))
RUNTIME(cudartWriteValue64, WriteValue64, (CUstream s, CUdeviceptr a, cuuint64_t v), (s, a, v, 0))
RUNTIME(cudartWaitValue64, WaitValue64, (CUstream s, CUdeviceptr a, cuuint64_t v),
	(s, a, v, CU_STREAM_WAIT_VALUE_EQ))
RUNTIME(cudartBatchMemOp, BatchMemOp, (CUstream s, unsigned n, CUstreamBatchMemOpParams *ops),
	(s, n, ops, 0))
RUNTIME(cudaStreamBeginCapture, BeginCapture, (CUstream s), (s, CU_STREAM_CAPTURE_MODE_GLOBAL))
RUNTIME(cudaStreamEndCapture, EndCapture, (CUstream s, CUgraph *g), (s, g))
RUNTIME(cudaGraphInstantiate, GraphInstantiate, (CUgraphExec *e, CUgraph g), (e, g, 0))
RUNTIME(cudaGraphInstantiateWithFlags, GraphInstantiateWithFlags, (CUgraphExec *e, CUgraph g),
	(e, g, 0))
RUNTIME(cudaGraphInstantiateWithParams, GraphInstantiateWithParams,
	(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p), (e, g, p))
RUNTIME(cudartGraphInstantiate11, GraphInstantiate11, (CUgraphExec *e, CUgraph g),
	(e, g, NULL, NULL, 0))
RUNTIME(cudaGraphLaunch, GraphLaunch, (CUgraphExec e, CUstream s), (e, s))
RUNTIME(cudaGraphExecDestroy, GraphExecDestroy, (CUgraphExec e), (e))
RUNTIME(cudaGraphDestroy, GraphDestroy, (CUgraph g), (g))
/* clang-format on */

/* A kernel that sleeps usec on s. */
__attribute__((noinline)) static CUresult cudaLaunchKernel(unsigned usec, CUstream s)
{
	void *param = (void *)(uintptr_t)usec;
	void *args[] = {&param};
	CUresult rc = drv->LaunchKernel((CUfunction)(uintptr_t)sleep_kernel, 1, 1, 1, 1, 1, 1, 0, s,
					args, NULL);
	__asm__ volatile("");
	return rc;
}

/* ------------------------------------------------------------------ the program */

#define CALL(x)                                                                                    \
	do {                                                                                       \
		CUresult rc_ = (x);                                                                \
		if (rc_ != CUDA_SUCCESS) {                                                         \
			fprintf(stderr, "static_copies.c:%d: %s -> %d\n", __LINE__, #x, (int)rc_); \
			exit(10);                                                                  \
		}                                                                                  \
	} while (0)

static CUstream stream;
static CUdeviceptr dev, dev2, words;
static void *pinned;
static char host[4096];
static CUcontext ctx;

/* Every buffer is 4096 bytes: 64 rows of 64, or 4 slices of 16 such rows (copy_shapes.h). */

static int setup(void)
{
	if (!load_driver())
		return 0;
	CALL(legacy.PrimaryCtxRetain(&ctx, 0));
	CALL(cudaStreamCreate(&stream));       /* SITE */
	CALL(cudaMalloc(&dev, sizeof(host)));  /* SITE */
	CALL(cudaMalloc(&dev2, sizeof(host))); /* SITE */
	CALL(cudaMallocHost(&pinned, 4096));   /* SITE */
	CALL(cudaMalloc(&words, 64));	       /* SITE */
	return 1;
}

static void calls(void)
{
	for (int round = 0; round < 2; round++) {
		drv = round ? &per_thread : &legacy;
		CUstream s = round ? NULL : stream; /* per-thread: stream 0 */
		CUDA_MEMCPY2D down2 = copy2d_down(dev, host);
		CUDA_MEMCPY3D down3 = copy3d_down(dev, host), up3 = copy3d_up(pinned, dev);
		CUDA_MEMCPY3D_PEER peer3 = copy3d_peer(dev, dev2, ctx);
		CUdeviceptr dsts[2] = {dev, dev + 2048};
		CUdeviceptr srcs[2] = {(CUdeviceptr)(uintptr_t)pinned,
				       (CUdeviceptr)(uintptr_t)pinned + 2048};
		size_t sizes[2] = {2048, 2048}, attr_index = 0;
		CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
		CUDA_MEMCPY3D_BATCH_OP op = copy3d_batch_op(dev2, dev);
		CUdeviceptr word = words + 32 * round;
		CUstreamBatchMemOpParams ops[2] = {
		    {.writeValue = {.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32,
				    .address = word + 16,
				    .value = 3}},
		    {.waitValue = {.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32,
				   .address = word + 16,
				   .value = 3,
				   .flags = CU_STREAM_WAIT_VALUE_EQ}}};
		CUgraph graph;
		CUgraphExec exec[4];
		CUDA_GRAPH_INSTANTIATE_PARAMS params = {.flags = 0};

		CALL(cudaMemcpy2D(&down2));						 /* SITE */
		CALL(cudaMemcpy3D(&down3));						 /* SITE */
		CALL(cudaMemcpy3DAsync(&up3, s));					 /* SITE */
		CALL(cudaMemcpyPeer(dev2, ctx, dev, 4096));				 /* SITE */
		CALL(cudaMemcpyPeerAsync(dev, ctx, dev2, 4096, s));			 /* SITE */
		CALL(cudaMemcpy3DPeer(&peer3));						 /* SITE */
		CALL(cudaMemcpy3DPeerAsync(&peer3, s));					 /* SITE */
		CALL(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &attr_index, s)); /* SITE */
		CALL(cudaMemcpy3DBatchAsync(1, &op, s));				 /* SITE */
		CALL(cudartMemsetD16(dev, 2048));					 /* SITE */
		CALL(cudartMemsetD16Async(dev, 2048, s));				 /* SITE */
		CALL(cudaMemset2D(dev, 64, 64));					 /* SITE */
		CALL(cudartMemset2D16(dev, 32, 64));					 /* SITE */
		CALL(cudartMemset2D32(dev, 16, 64));					 /* SITE */
		CALL(cudaMemset2DAsync(dev, 64, 64, s));				 /* SITE */
		CALL(cudartMemset2D16Async(dev, 32, 64, s));				 /* SITE */
		CALL(cudartMemset2D32Async(dev, 16, 64, s));				 /* SITE */
		CALL(cudartWriteValue32(s, word, 1));					 /* SITE */
		CALL(cudartWaitValue32(s, word, 1));					 /* SITE */
		CALL(cudartWriteValue64(s, word + 8, 5));				 /* SITE */
		CALL(cudartWaitValue64(s, word + 8, 5));				 /* SITE */
		CALL(cudartBatchMemOp(s, 2, ops));					 /* SITE */
		CALL(cudaStreamBeginCapture(s));					 /* SITE */
		CALL(cudaLaunchKernel(100, s));						 /* SITE */
		CALL(cudaStreamEndCapture(s, &graph));					 /* SITE */
		CALL(cudaGraphInstantiate(&exec[0], graph));				 /* SITE */
		CALL(cudaGraphInstantiateWithFlags(&exec[1], graph));			 /* SITE */
		CALL(cudaGraphInstantiateWithParams(&exec[2], graph, &params));		 /* SITE */
		CALL(cudartGraphInstantiate11(&exec[3], graph));			 /* SITE */
		CALL(cudaGraphLaunch(exec[0], s));					 /* SITE */
		CALL(cudaStreamSynchronize(s));						 /* SITE */
		for (int i = 0; i < 4; i++)
			CALL(cudaGraphExecDestroy(exec[i])); /* SITE */
		CALL(cudaGraphDestroy(graph));		     /* SITE */
	}
	printf("static copies ok\n");
}

#define KEPT_MAX 1000

static void loop(int steps)
{
	void (*step)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "syncspy_step");
	static CUgraphExec kept[KEPT_MAX];
	CUDA_MEMCPY2D down2 = copy2d_down(dev, host);
	if (steps > KEPT_MAX)
		steps = KEPT_MAX;
	for (int i = 0; i < steps; i++) {
		CUgraph graph;
		CUgraphExec exec;
		if (step)
			step("step");
		CALL(cudaLaunchKernel(500, stream));	     /* SITE */
		CALL(cudaMemcpy2D(&down2));		     /* SITE COPY2D */
		CALL(cudaStreamBeginCapture(stream));	     /* SITE */
		CALL(cudaLaunchKernel(200, stream));	     /* SITE */
		CALL(cudaStreamEndCapture(stream, &graph));  /* SITE */
		CALL(cudaGraphInstantiate(&exec, graph));    /* SITE INSTANTIATE */
		CALL(cudaGraphInstantiate(&kept[i], graph)); /* SITE KEEP */
		CALL(cudaGraphLaunch(exec, stream));	     /* SITE */
		CALL(cudaStreamSynchronize(stream));	     /* SITE */
		CALL(cudaGraphExecDestroy(exec));	     /* SITE DESTROY */
		CALL(cudaGraphDestroy(graph));		     /* SITE */
	}
	for (int i = 0; i < steps; i++)
		CALL(cudaGraphExecDestroy(kept[i])); /* SITE TEARDOWN */
	printf("static copies loop ok\n");
}

int main(int argc, char **argv)
{
	if (!setup())
		return 3;
	if (argc == 2 && !strcmp(argv[1], "calls"))
		calls();
	else if (argc == 3 && !strcmp(argv[1], "loop"))
		loop(atoi(argv[2]));
	else {
		fprintf(stderr, "usage: static_copies calls|loop N\n");
		return 2;
	}
	return 0;
}
