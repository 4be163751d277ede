/* SPDX-License-Identifier: MIT */
/*
 * cuda.c: the exported driver API of the libcuda.so.1 CPU stand-in.
 *
 * Every function is defined against the prototype of the real cuda.h (which maps plain names
 * to the _v2 symbols, so defining cuMemAlloc defines cuMemAlloc_v2 as the real library does).
 * The _ptsz / _ptds variants, where stream 0 means the calling thread's per-thread default
 * stream, are declared here with __typeof__ of the plain function. Built with -Bsymbolic: the
 * engine never calls its own exported entry points through the PLT, so a preloaded
 * interposer sees each application call exactly once.
 *
 * The work itself is done by engine.c (streams, events, memory registry); see engine.h.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cudaProfiler.h>

#include "engine.h"

#define STANDIN_DEVICE_NAME    "syncspy CPU stand-in"
#define STANDIN_DRIVER_VERSION 13000
#define STANDIN_TOTAL_MEM      (80ull << 30)

/* Per-thread-default-stream variants, with the real prototypes (cuda.h declares them only when
 * CUDA_API_PER_THREAD_DEFAULT_STREAM is defined, which would rename the plain ones). */
#define PTSZ(fn) extern __typeof__(fn) fn##_ptsz
#define PTDS(fn) extern __typeof__(fn) fn##_ptds
PTSZ(cuStreamSynchronize);
PTSZ(cuStreamQuery);
PTSZ(cuStreamGetFlags);
PTSZ(cuStreamGetPriority);
PTSZ(cuStreamWaitEvent);
PTSZ(cuStreamAddCallback);
PTSZ(cuStreamBeginCapture_v2);
PTSZ(cuStreamEndCapture);
PTSZ(cuStreamIsCapturing);
PTSZ(cuEventRecord);
PTSZ(cuEventRecordWithFlags);
PTSZ(cuLaunchKernel);
PTSZ(cuLaunchKernelEx);
PTSZ(cuLaunchCooperativeKernel);
PTSZ(cuLaunchHostFunc);
PTSZ(cuGraphLaunch);
PTSZ(cuGraphUpload);
PTSZ(cuMemAllocAsync);
PTSZ(cuMemAllocFromPoolAsync);
PTSZ(cuMemFreeAsync);
PTSZ(cuMemPrefetchAsync_v2);
PTSZ(cuMemcpyAsync);
PTSZ(cuMemcpyHtoDAsync_v2);
PTSZ(cuMemcpyHtoAAsync_v2);
PTSZ(cuMemcpyAtoHAsync_v2);
PTSZ(cuMemcpyDtoHAsync_v2);
PTSZ(cuMemcpyDtoDAsync_v2);
PTSZ(cuMemcpy2DAsync_v2);
PTSZ(cuMemcpyPeerAsync);
PTSZ(cuMemsetD8Async);
PTSZ(cuMemsetD16Async);
PTSZ(cuMemsetD32Async);
PTSZ(cuMemsetD2D8Async);
PTSZ(cuMemsetD2D16Async);
PTSZ(cuMemsetD2D32Async);
PTSZ(cuMemcpy3DAsync_v2);
PTSZ(cuMemcpy3DPeerAsync);
PTSZ(cuMemcpyBatchAsync_v2);
PTSZ(cuMemcpy3DBatchAsync_v2);
PTSZ(cuStreamWaitValue32_v2);
PTSZ(cuStreamWaitValue64_v2);
PTSZ(cuStreamWriteValue32_v2);
PTSZ(cuStreamWriteValue64_v2);
PTSZ(cuStreamBatchMemOp_v2);
PTSZ(cuGraphInstantiateWithParams);
PTDS(cuMemcpy);
PTDS(cuMemcpyHtoD_v2);
PTDS(cuMemcpyHtoA_v2);
PTDS(cuMemcpyAtoH_v2);
PTDS(cuMemcpyDtoA_v2);
PTDS(cuMemcpyAtoD_v2);
PTDS(cuMemcpyAtoA_v2);
PTDS(cuMemcpyDtoH_v2);
PTDS(cuMemcpyDtoD_v2);
PTDS(cuMemcpy2D_v2);
PTDS(cuMemcpyPeer);
PTDS(cuMemsetD8_v2);
PTDS(cuMemsetD16_v2);
PTDS(cuMemsetD32_v2);
PTDS(cuMemsetD2D8_v2);
PTDS(cuMemsetD2D16_v2);
PTDS(cuMemsetD2D32_v2);
PTDS(cuMemcpy2DUnaligned_v2);
PTDS(cuMemcpy3D_v2);
PTDS(cuMemcpy3DPeer);

/* The 11.0 ABI of cuGraphInstantiate, which the real driver still exports as _v2 and hands out
 * for cuGetProcAddress("cuGraphInstantiate", 11000); cuda.h no longer declares it (the name
 * means cuGraphInstantiateWithFlags since 12.0). cudaTypedefs.h's PFN_cuGraphInstantiate_v11000. */
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize);

/* The one device, its primary context and the calling thread's current context. A context is
 * an opaque token here: the engine has one address space and one set of streams. Contexts made
 * with cuCtxCreate are tokens too (kept after cuCtxDestroy, marked dead, so that a stale handle
 * is refused without reading freed memory); each thread has a context stack (cuCtxPushCurrent,
 * cuCtxPopCurrent) whose top is its current context. */
struct context {
	int device;
	int alive;
	struct context *next;
};
static struct context g_primary_ctx = {0, 1, NULL};
static struct context *g_created_ctx; /* under g_ctx_lock */
static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
#define CTX_STACK_DEPTH 16
static __thread CUcontext tls_current_ctx;
static __thread CUcontext tls_ctx_stack[CTX_STACK_DEPTH]; /* below the current one */
static __thread int tls_ctx_depth;

/* The primary context or a live one cuCtxCreate made. */
static int is_context(CUcontext ctx)
{
	if (ctx == (CUcontext)&g_primary_ctx)
		return 1;
	pthread_mutex_lock(&g_ctx_lock);
	struct context *c = g_created_ctx;
	while (c && (CUcontext)c != ctx)
		c = c->next;
	int alive = c && c->alive;
	pthread_mutex_unlock(&g_ctx_lock);
	return alive;
}
static _Atomic int g_initialized;

#define DEF_LEGACY DEFAULT_LEGACY
#define DEF_PTS	   DEFAULT_PER_THREAD

/* Resolves a stream handle or returns CUDA_ERROR_INVALID_HANDLE from the calling function. */
#define RESOLVE_STREAM(var, handle, def)                                                           \
	struct stream *var = stream_resolve((handle), (def));                                      \
	if (!var)                                                                                  \
	return CUDA_ERROR_INVALID_HANDLE

/* Defines an entry point and its per-thread-default-stream twin (_ptsz / _ptds): the same
 * prototype and the same static body, which takes the stream that handle 0 means last. */
#define VARIANTS(fn, fn_pt, params, body, ...)                                                     \
	CUresult fn params                                                                         \
	{                                                                                          \
		return body(__VA_ARGS__, DEF_LEGACY);                                              \
	}                                                                                          \
	CUresult fn_pt params                                                                      \
	{                                                                                          \
		return body(__VA_ARGS__, DEF_PTS);                                                 \
	}

static void *dptr_to_ptr(CUdeviceptr p)
{
	return (void *)(uintptr_t)p;
}

/* ================================================================== init, device, context */

/* ------------------------------------------------------------------ CUPTI (cupti_hooks.h) */

#define CBID_cuCtxSynchronize	 17 /* CUPTI_DRIVER_TRACE_CBID_*, cupti_driver_cbid.h */
#define CBID_cuStreamSynchronize 126
#define CBID_cuLaunchKernel	 307
#define CBID_cuGraphLaunch	 514

__attribute__((visibility("default"))) void
standin_cuda_set_cupti(const struct standin_cupti_hooks *hooks)
{
	atomic_store(&g_cupti, hooks);
}

/* Loaded before the libcupti.so.13 stand-in was: ask it for its hooks now. */
static void find_cupti(void)
{
	void *cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	const struct standin_cupti_hooks *(*get)(void) =
	    cupti ? (const struct standin_cupti_hooks *(*)(void))dlsym(cupti, "standin_cupti_hooks")
		  : NULL;
	if (get)
		atomic_store(&g_cupti, get());
}

/* A synchronization as CUPTI records it (type 3 stream, 4 context), with its API record. */
static void cupti_sync(uint64_t start, uint32_t correlation, uint32_t cbid, uint32_t stream,
		       uint32_t type)
{
	const struct standin_cupti_hooks *cupti = atomic_load(&g_cupti);
	uint64_t end = cupti->now();
	cupti->sync(correlation, stream, type, start, end);
	cupti->api_end(correlation, cbid, start, end);
	cupti->api_site(cbid, 1, correlation);
}

CUresult cuInit(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!atomic_load(&g_cupti))
		find_cupti();
	engine_init();
	atomic_store(&g_initialized, 1);
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = STANDIN_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "%s", STANDIN_DEVICE_NAME);
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = STANDIN_TOTAL_MEM;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*pi = 9;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		*pi = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*pi = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		*pi = 32;
		break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
		*pi = 1;
		break;
	default:
		*pi = 0;
		break;
	}
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	engine_init();
	*pctx = (CUcontext)&g_primary_ctx;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = tls_current_ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	if (ctx && !is_context(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	tls_current_ctx = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	if (!ctx || !is_context(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (tls_ctx_depth == CTX_STACK_DEPTH)
		return CUDA_ERROR_OUT_OF_MEMORY;
	tls_ctx_stack[tls_ctx_depth++] = tls_current_ctx;
	tls_current_ctx = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	if (!tls_current_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (pctx)
		*pctx = tls_current_ctx;
	tls_current_ctx = tls_ctx_depth ? tls_ctx_stack[--tls_ctx_depth] : NULL;
	return CUDA_SUCCESS;
}

/* A context of its own, on the one device, pushed on the calling thread's stack as the real
 * cuCtxCreate does; the same engine as the primary context's. */
static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	engine_init();
	struct context *c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->device = dev;
	c->alive = 1;
	pthread_mutex_lock(&g_ctx_lock);
	c->next = g_created_ctx;
	g_created_ctx = c;
	pthread_mutex_unlock(&g_ctx_lock);
	CUresult ret = cuCtxPushCurrent((CUcontext)c);
	if (ret == CUDA_SUCCESS)
		*pctx = (CUcontext)c;
	return ret;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
			CUdevice dev)
{
	(void)params;
	(void)flags;
	return ctx_create(pctx, dev);
}

/* The 11.4 and 3.2 ABIs (cuda.h 13.0 declares neither outside the driver's own build). */
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int nparams,
			unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int nparams,
			unsigned int flags, CUdevice dev)
{
	(void)params;
	(void)nparams;
	(void)flags;
	return ctx_create(pctx, dev);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	(void)flags;
	return ctx_create(pctx, dev);
}

/* Waits for the device's work (the engine is shared: all of it) and pops the context where it
 * is the caller's current one, as the real call does; the token stays, dead. */
CUresult cuCtxDestroy(CUcontext ctx)
{
	if (!ctx || ctx == (CUcontext)&g_primary_ctx || !is_context(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_synchronize();
	pthread_mutex_lock(&g_ctx_lock);
	((struct context *)ctx)->alive = 0;
	pthread_mutex_unlock(&g_ctx_lock);
	if (tls_current_ctx == ctx)
		cuCtxPopCurrent(NULL);
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = 0;
	return CUDA_SUCCESS;
}

/* The default memory pool's release threshold is 0: at every synchronization the pool gives its
 * unused memory back, and the next stream-ordered allocation maps memory again, on the host's
 * time. STANDIN_POOL_REMAP_US=N: that allocation takes N us more (default 0: a pool that keeps
 * its memory, as one with a raised threshold does). */
static _Atomic int pool_released;

/* STANDIN_POOL_KEEP=1: a pool whose release threshold was raised keeps its memory across
 * synchronizations; only cuMemPoolTrimTo gives it back. */
static void pool_release_at_sync(void)
{
	static _Atomic int keep = -1;
	int k = atomic_load(&keep);

	if (k < 0) {
		const char *text = getenv("STANDIN_POOL_KEEP");
		k = text && atoi(text) != 0;
		atomic_store(&keep, k);
	}
	if (!k)
		atomic_store(&pool_released, 1);
}

/* The stand-in's one memory pool: a handle, nothing behind it. */
static char default_pool;

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
	if (!pool || dev != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*pool = (CUmemoryPool)(void *)&default_pool;
	return CUDA_SUCCESS;
}

/* Gives the pool's unused memory back: the next stream-ordered allocation maps memory again
 * (STANDIN_POOL_REMAP_US), whatever the threshold. */
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	(void)minBytesToKeep;
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	atomic_store(&pool_released, 1);
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ virtual memory management
 *
 * cuMemAddressReserve reserves an inaccessible range of the process's address space; cuMemCreate
 * makes a handle standing for a physical allocation; cuMemMap makes part of a reserved range
 * accessible device memory (registered, so copies see device memory); cuMemUnmap and
 * cuMemSetAccess synchronize the device first, as cuda.h documents for both (\note_sync).
 * The stand-in keeps no physical memory behind a handle: a range unmapped and mapped again
 * reads zeros, where a GPU would show the handle's contents. */
struct vmm_handle {
	size_t size;
};

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	(void)alignment, (void)addr, (void)flags;
	if (!ptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	if (!ptr || size == 0 || munmap(dptr_to_ptr(ptr), size) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct vmm_handle *h;

	if (!handle || !prop || size == 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	h = malloc(sizeof(*h));
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	h->size = size;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	free((void *)(uintptr_t)handle);
	return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	const struct vmm_handle *h = (const struct vmm_handle *)(uintptr_t)handle;
	void *p = dptr_to_ptr(ptr);

	if (!ptr || !h || flags != 0 || offset + size > h->size)
		return CUDA_ERROR_INVALID_VALUE;
	if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!mem_insert(p, size, MEM_DEVICE, false)) {
		mprotect(p, size, PROT_NONE);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	void *p = dptr_to_ptr(ptr);
	struct mem_range r;

	if (!ptr)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_synchronize(); /* implicit sync (S6) */
	if (!mem_remove(p, &r))
		return CUDA_ERROR_INVALID_VALUE;
	madvise(p, size, MADV_DONTNEED);
	mprotect(p, size, PROT_NONE);
	return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	if (!ptr || size == 0 || !desc || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_synchronize(); /* implicit sync (S6) */
	return CUDA_SUCCESS;
}

static void pool_remap(void)
{
	static _Atomic long remap_us = -1;
	long us = atomic_load(&remap_us);

	if (us < 0) {
		const char *text = getenv("STANDIN_POOL_REMAP_US");
		us = text ? atol(text) : 0;
		atomic_store(&remap_us, us);
	}
	if (us > 0 && atomic_exchange(&pool_released, 0)) {
		struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
		while (nanosleep(&ts, &ts) != 0)
			;
	}
}

static void ctx_synchronize_traced(void)
{
	const struct standin_cupti_hooks *cupti = atomic_load(&g_cupti);
	uint64_t start = cupti ? cupti->now() : 0;
	uint32_t correlation = cupti ? cupti->api_begin() : 0;
	if (cupti)
		cupti->api_site(CBID_cuCtxSynchronize, 0, correlation);
	ctx_synchronize();
	pool_release_at_sync();
	if (cupti)
		cupti_sync(start, correlation, CBID_cuCtxSynchronize, 0, 4);
}

/* The context's limits (cuCtxSetLimit, cuCtxGetLimit), with the real driver's defaults on an
 * H100 for the stack size (1 KB), the printf FIFO (1 MB) and the malloc heap (8 MB). As the
 * driver documents for CU_LIMIT_STACK_SIZE, a new stack size waits for all preceding work ("if
 * necessary, the device will block until all preceding requested tasks are complete"): here
 * whenever the value changes. */
static _Atomic size_t g_limits[CU_LIMIT_MAX] = {
    [CU_LIMIT_STACK_SIZE] = 1024,
    [CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
    [CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
};

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	if ((unsigned)limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	if (limit == CU_LIMIT_STACK_SIZE && atomic_load(&g_limits[limit]) != value)
		ctx_synchronize(); /* implicit sync (S6) */
	atomic_store(&g_limits[limit], value);
	return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t *value, CUlimit limit)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned)limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	*value = atomic_load(&g_limits[limit]);
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
	ctx_synchronize_traced();
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	if (ctx && !is_context(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_synchronize_traced();
	return CUDA_SUCCESS;
}

/* The profiler API does nothing here but count, so that a test can see the calls reach the
 * driver through the shim (t035: capture ranges must not swallow them). */
static _Atomic int g_profiler_starts, g_profiler_stops;

CUresult cuProfilerStart(void)
{
	atomic_fetch_add(&g_profiler_starts, 1);
	return CUDA_SUCCESS;
}

CUresult cuProfilerStop(void)
{
	atomic_fetch_add(&g_profiler_stops, 1);
	return CUDA_SUCCESS;
}

/* Test programs: how many cuProfilerStart and cuProfilerStop calls reached the driver. */
__attribute__((visibility("default"))) void standin_cuda_profiler_calls(int *starts, int *stops)
{
	*starts = atomic_load(&g_profiler_starts);
	*stops = atomic_load(&g_profiler_stops);
}

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	/* private NVIDIA interfaces: nothing to offer, and syncspy passes them through */
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ================================================================== errors */

static const struct {
	CUresult code;
	const char *name;
	const char *text;
} error_table[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation is not permitted in the current state"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* cuGetErrorString and cuGetErrorName: the text or the name of error's entry; an unknown code
 * gives NULL and CUDA_ERROR_INVALID_VALUE, as the real driver does. */
static CUresult error_lookup(CUresult error, const char **pStr, bool want_name)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++) {
		if (error_table[i].code == error) {
			*pStr = want_name ? error_table[i].name : error_table[i].text;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	return error_lookup(error, pStr, false);
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	return error_lookup(error, pStr, true);
}

/* ================================================================== memory */

static CUresult alloc_registered(void **out, size_t size, enum mem_kind kind)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	void *p = mem_alloc(size, kind);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = p;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	void *p;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_synchronize(); /* implicit sync (S6) */
	CUresult rc = alloc_registered(&p, bytesize, MEM_DEVICE);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return rc;
}

CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t widthInBytes, size_t height,
			 unsigned int elementSizeBytes)
{
	if (!dptr || !pPitch || widthInBytes == 0 || height == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (elementSizeBytes != 4 && elementSizeBytes != 8 && elementSizeBytes != 16)
		return CUDA_ERROR_INVALID_VALUE;
	size_t pitch = (widthInBytes + 511) & ~(size_t)511;
	CUresult rc = cuMemAlloc(dptr, pitch * height);
	if (rc == CUDA_SUCCESS)
		*pPitch = pitch;
	return rc;
}

static CUresult free_registered(void *p, bool want_device, bool sync)
{
	struct mem_range r;

	if (!mem_lookup(p, &r) || r.base != (uintptr_t)p || !r.owned)
		return CUDA_ERROR_INVALID_VALUE;
	if (mem_is_device_side(r.kind) != want_device)
		return CUDA_ERROR_INVALID_VALUE;
	if (sync)
		ctx_synchronize(); /* implicit sync (S6): streams may still use the memory */
	if (!mem_remove(p, &r))
		return CUDA_ERROR_INVALID_VALUE;
	free(p);
	return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr dptr)
{
	if (dptr == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return free_registered(dptr_to_ptr(dptr), true, true);
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
	if (!pp)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_synchronize();
	return alloc_registered(pp, bytesize, MEM_PINNED);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	if (!pp)
		return CUDA_ERROR_INVALID_VALUE;
	if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
				CU_MEMHOSTALLOC_WRITECOMBINED))
		return CUDA_ERROR_INVALID_VALUE;
	ctx_synchronize();
	return alloc_registered(pp, bytesize, MEM_PINNED);
}

CUresult cuMemFreeHost(void *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return free_registered(p, false, true);
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	if (!p || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_synchronize();
	if (!mem_insert(p, bytesize, MEM_PINNED, false))
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
	struct mem_range r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (!mem_lookup(p, &r) || r.base != (uintptr_t)p || r.owned)
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	ctx_synchronize();
	mem_remove(p, NULL);
	return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	if (!pdptr || !p || Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (mem_kind_of(p) != MEM_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	*pdptr = (CUdeviceptr)(uintptr_t)p; /* one address space */
	return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	void *p;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = alloc_registered(&p, bytesize, MEM_MANAGED);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return rc;
}

static CUresult mem_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hStream,
				enum default_stream def)
{
	void *p;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	if (stream_is_capturing(s))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* no graph memory nodes */
	pool_remap();
	/* the memory is usable from this point of the stream on; host memory is usable now */
	CUresult rc = alloc_registered(&p, bytesize, MEM_ASYNC);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return rc;
}

/* clang-format off */ /* it would read the parameter list as a multiplication */
VARIANTS(cuMemAllocAsync, cuMemAllocAsync_ptsz,
	 (CUdeviceptr *dptr, size_t bytesize, CUstream hStream), mem_alloc_async, dptr, bytesize,
	 hStream)
/* clang-format on */

/* From a pool: the stand-in has one memory, so the pool only has to be given (the default
 * pool's behaviour, STANDIN_POOL_REMAP_US, applies to it as to cuMemAllocAsync). */
static CUresult mem_alloc_from_pool_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					  CUstream hStream, enum default_stream def)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	return mem_alloc_async(dptr, bytesize, hStream, def);
}

/* clang-format off */
VARIANTS(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz,
	 (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
	 mem_alloc_from_pool_async, dptr, bytesize, pool, hStream)
/* clang-format on */

static CUresult mem_free_async(CUdeviceptr dptr, CUstream hStream, enum default_stream def)
{
	struct mem_range r;
	void *p = dptr_to_ptr(dptr);

	RESOLVE_STREAM(s, hStream, def);
	if (!mem_lookup(p, &r) || r.base != (uintptr_t)p || !r.owned || !mem_is_device_side(r.kind))
		return CUDA_ERROR_INVALID_VALUE;
	if (stream_is_capturing(s))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	/* stream-ordered: freed when the stream reaches this point, no host wait */
	struct op *op = op_new(OP_FREE);
	op->free.ptr = p;
	stream_submit(s, op, NULL);
	return CUDA_SUCCESS;
}

VARIANTS(cuMemFreeAsync, cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), mem_free_async,
	 dptr, hStream)

/* A prefetch of managed memory: a hint to the driver about where pages should live; here, where
 * all memory is the host's, it checks its arguments as the driver does and moves nothing. */
static CUresult mem_prefetch_async(CUdeviceptr devPtr, size_t count, CUmemLocation location,
				   unsigned int flags, CUstream hStream, enum default_stream def)
{
	struct mem_range r;

	RESOLVE_STREAM(s, hStream, def);
	(void)s;
	if (flags != 0 || count == 0 || !mem_lookup(dptr_to_ptr(devPtr), &r))
		return CUDA_ERROR_INVALID_VALUE;
	if (location.type == CU_MEM_LOCATION_TYPE_DEVICE ? location.id != 0
							 : location.type < CU_MEM_LOCATION_TYPE_HOST)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

/* clang-format off */
VARIANTS(cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz,
	 (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
	  CUstream hStream), mem_prefetch_async, devPtr, count, location, flags, hStream)
/* clang-format on */

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	*free_bytes = STANDIN_TOTAL_MEM / 2;
	*total = STANDIN_TOTAL_MEM;
	return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct mem_range r;

	if (!mem_lookup(dptr_to_ptr(dptr), &r) || !mem_is_device_side(r.kind))
		return CUDA_ERROR_NOT_FOUND;
	if (pbase)
		*pbase = (CUdeviceptr)r.base;
	if (psize)
		*psize = r.size;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ pointer attributes */

/* Answers one attribute from the registry (E-MEM). Unregistered (pageable) pointers give
 * CUDA_ERROR_INVALID_VALUE, as the real driver does for plain host memory. */
static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr,
				  const struct mem_range *r, bool found)
{
	if (!found)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)&g_primary_ctx;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data =
		    r->kind == MEM_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (r->kind == MEM_DEVICE || r->kind == MEM_ASYNC)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = dptr_to_ptr(ptr);
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = r->kind == MEM_MANAGED; /* a bool in the real API, int-sized */
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = (CUdeviceptr)r->base;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = r->size;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = 1;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = (unsigned long long)r->base;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = 1;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct mem_range r;

	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	bool found = mem_lookup(dptr_to_ptr(ptr), &r);
	return pointer_attribute(data, attribute, ptr, &r, found);
}

/* The plural form never fails for an unregistered pointer: as documented for the real one, it
 * leaves zeroed values (memory type 0) and returns CUDA_SUCCESS. */
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
				void **data, CUdeviceptr ptr)
{
	struct mem_range r;

	if (!attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	bool found = mem_lookup(dptr_to_ptr(ptr), &r);
	for (unsigned int i = 0; i < numAttributes; i++) {
		if (!data[i])
			return CUDA_ERROR_INVALID_VALUE;
		if (!found) {
			/* the largest attribute value is 8 bytes (a pointer or CUdeviceptr) */
			size_t sz = attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ||
					    attributes[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED ||
					    attributes[i] == CU_POINTER_ATTRIBUTE_MAPPED ||
					    attributes[i] == CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
					? sizeof(int)
					: sizeof(void *);
			if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
				*(int *)data[i] =
				    -2; /* what the real driver reports for host memory */
				continue;
			}
			memset(data[i], 0, sz);
			continue;
		}
		CUresult rc = pointer_attribute(data[i], attributes[i], ptr, &r, true);
		if (rc == CUDA_ERROR_INVALID_VALUE &&
		    attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
			*(void **)data[i] = NULL;
		else if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

/* ================================================================== streams */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	*phStream = (CUstream)stream_create(Flags, 0);
	return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	/* the priority range is [-5, 0] on current GPUs; out-of-range values are clamped */
	if (priority < -5)
		priority = -5;
	if (priority > 0)
		priority = 0;
	*phStream = (CUstream)stream_create(flags, priority);
	return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream)
{
	if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)
		return CUDA_ERROR_INVALID_HANDLE;
	RESOLVE_STREAM(s, hStream, DEF_LEGACY);
	/* returns at once: queued work still completes, then the worker exits (E-KEEP) */
	stream_retire(s);
	return CUDA_SUCCESS;
}

static CUresult stream_get_flags(CUstream hStream, unsigned int *flags, enum default_stream def)
{
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	*flags = s->flags;
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamGetFlags, cuStreamGetFlags_ptsz, (CUstream hStream, unsigned int *flags),
	 stream_get_flags, hStream, flags)

static CUresult stream_get_priority(CUstream hStream, int *priority, enum default_stream def)
{
	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	*priority = s->priority;
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamGetPriority, cuStreamGetPriority_ptsz, (CUstream hStream, int *priority),
	 stream_get_priority, hStream, priority)

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return CUDA_SUCCESS;
}

static CUresult stream_sync(CUstream hStream, enum default_stream def)
{
	RESOLVE_STREAM(s, hStream, def);
	if (stream_is_capturing(s))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	const struct standin_cupti_hooks *cupti = atomic_load(&g_cupti);
	uint64_t start = cupti ? cupti->now() : 0;
	uint32_t correlation = cupti ? cupti->api_begin() : 0;
	if (cupti)
		cupti->api_site(CBID_cuStreamSynchronize, 0, correlation);
	stream_synchronize(s);
	pool_release_at_sync();
	if (cupti)
		cupti_sync(start, correlation, CBID_cuStreamSynchronize, s->cupti_id, 3);
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamSynchronize, cuStreamSynchronize_ptsz, (CUstream hStream), stream_sync, hStream)

static CUresult stream_query(CUstream hStream, enum default_stream def)
{
	RESOLVE_STREAM(s, hStream, def);
	if (stream_is_capturing(s))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	return stream_idle(s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

VARIANTS(cuStreamQuery, cuStreamQuery_ptsz, (CUstream hStream), stream_query, hStream)

static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, unsigned int Flags,
				  enum default_stream def)
{
	RESOLVE_STREAM(s, hStream, def);
	if (!handles_check(hEvent, MAGIC_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	struct event *ev = (struct event *)hEvent;

	pthread_mutex_lock(&ev->mu);
	struct stream *src = ev->stream;
	uint64_t seq = ev->seq;
	pthread_mutex_unlock(&ev->mu);
	/* never recorded: nothing to wait for; in capture, cross-stream edges are not modelled */
	if (!src || stream_is_capturing(s))
		return CUDA_SUCCESS;
	struct op *op = op_new(OP_BARRIER);
	op->deps = malloc(sizeof(*op->deps));
	if (!op->deps)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->deps[0] = (struct dep){.stream = src, .seq = seq};
	op->ndeps = 1;
	stream_submit(s, op, NULL);
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamWaitEvent, cuStreamWaitEvent_ptsz,
	 (CUstream hStream, CUevent hEvent, unsigned int Flags), stream_wait_event, hStream, hEvent,
	 Flags)

static CUresult stream_add_callback(CUstream hStream, CUstreamCallback callback, void *userData,
				    unsigned int flags, enum default_stream def)
{
	if (!callback || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	struct op *op = op_new(OP_CALLBACK);
	op->callback.fn = callback;
	op->callback.handle = hStream;
	op->callback.user = userData;
	stream_submit(s, op, NULL);
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamAddCallback, cuStreamAddCallback_ptsz,
	 (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
	 stream_add_callback, hStream, callback, userData, flags)

/* ================================================================== stream capture, graphs */

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode, enum default_stream def)
{
	RESOLVE_STREAM(s, hStream, def);
	if (s->is_legacy)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (!stream_begin_capture(s))
		return CUDA_ERROR_ILLEGAL_STATE;
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz,
	 (CUstream hStream, CUstreamCaptureMode mode), begin_capture, hStream, mode)

static CUresult end_capture(CUstream hStream, CUgraph *phGraph, enum default_stream def)
{
	if (!phGraph)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	struct graph *g = stream_end_capture(s);
	if (!g)
		return CUDA_ERROR_ILLEGAL_STATE;
	*phGraph = (CUgraph)g;
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamEndCapture, cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph),
	 end_capture, hStream, phGraph)

static CUresult is_capturing(CUstream hStream, CUstreamCaptureStatus *status,
			     enum default_stream def)
{
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	*status = stream_is_capturing(s) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
					 : CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

VARIANTS(cuStreamIsCapturing, cuStreamIsCapturing_ptsz,
	 (CUstream hStream, CUstreamCaptureStatus *captureStatus), is_capturing, hStream,
	 captureStatus)

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
				     unsigned long long flags)
{
	if (!phGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	if (!handles_check(hGraph, MAGIC_GRAPH))
		return CUDA_ERROR_INVALID_VALUE;
	*phGraphExec = (CUgraphExec)graph_instantiate((struct graph *)hGraph);
	return CUDA_SUCCESS;
}

/* The 11.0 ABI: no flags, and where instantiation failed (never, here) a node and a log. */
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize)
{
	CUresult rc = cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
	if (rc == CUDA_SUCCESS && phErrorNode)
		*phErrorNode = NULL;
	if (rc == CUDA_SUCCESS && logBuffer && bufferSize)
		logBuffer[0] = 0;
	return rc;
}

/* With parameters: the flags as cuGraphInstantiateWithFlags takes them, an upload to the given
 * stream (nothing to upload here: the stream is only checked), and the result reported. */
static CUresult graph_instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph,
					 CUDA_GRAPH_INSTANTIATE_PARAMS *params,
					 enum default_stream def)
{
	if (!params)
		return CUDA_ERROR_INVALID_VALUE;
	if (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
		RESOLVE_STREAM(s, params->hUploadStream, def);
		(void)s;
	}
	CUresult rc = cuGraphInstantiateWithFlags(
	    phGraphExec, hGraph, params->flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
	params->hErrNode_out = NULL;
	params->result_out =
	    rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
	return rc;
}

/* clang-format off */ /* it would read the parameter list as a multiplication */
VARIANTS(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz,
	 (CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
	 graph_instantiate_params, phGraphExec, hGraph, instantiateParams)
/* clang-format on */

static CUresult graph_launch_on(CUgraphExec hGraphExec, CUstream hStream, enum default_stream def)
{
	if (!handles_check(hGraphExec, MAGIC_GRAPH_EXEC))
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	const struct standin_cupti_hooks *cupti = atomic_load(&g_cupti);
	uint64_t start = cupti ? cupti->now() : 0;
	uint32_t correlation = cupti ? cupti->api_begin() : 0;
	if (cupti)
		cupti->api_site(CBID_cuGraphLaunch, 0, correlation);
	CUresult rc = graph_launch((struct graph_exec *)hGraphExec, s,
				   cupti && cupti->kernels_traced() ? correlation : 0);
	if (cupti) {
		cupti->api_end(correlation, CBID_cuGraphLaunch, start, cupti->now());
		cupti->api_site(CBID_cuGraphLaunch, 1, correlation);
	}
	return rc;
}

VARIANTS(cuGraphLaunch, cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
	 graph_launch_on, hGraphExec, hStream)

static CUresult graph_upload(CUgraphExec hGraphExec, CUstream hStream, enum default_stream def)
{
	if (!handles_check(hGraphExec, MAGIC_GRAPH_EXEC))
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	(void)s; /* nothing to upload: the ops already live in host memory */
	return CUDA_SUCCESS;
}

VARIANTS(cuGraphUpload, cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
	 graph_upload, hGraphExec, hStream)

CUresult cuGraphDestroy(CUgraph hGraph)
{
	if (!handles_check(hGraph, MAGIC_GRAPH))
		return CUDA_ERROR_INVALID_VALUE;
	graph_free((struct graph *)hGraph);
	return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	if (!handles_check(hGraphExec, MAGIC_GRAPH_EXEC))
		return CUDA_ERROR_INVALID_VALUE;
	graph_exec_free((struct graph_exec *)hGraphExec);
	return CUDA_SUCCESS;
}

/* ================================================================== events */

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	if (Flags &
	    ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
		return CUDA_ERROR_INVALID_VALUE;
	if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	*phEvent = (CUevent)event_create(Flags);
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent)
{
	if (!handles_check(hEvent, MAGIC_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	handles_remove(hEvent);
	event_put((struct event *)hEvent); /* a pending record op keeps it alive until it runs */
	return CUDA_SUCCESS;
}

static CUresult event_record(CUevent hEvent, CUstream hStream, unsigned int flags,
			     enum default_stream def)
{
	if (!handles_check(hEvent, MAGIC_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	RESOLVE_STREAM(s, hStream, def);
	struct event *ev = (struct event *)hEvent;

	/* in capture, an event record is a graph edge, not a timestamp: not modelled */
	if (stream_is_capturing(s))
		return CUDA_SUCCESS;
	struct op *op = op_new(OP_EVENT_RECORD);
	uint64_t seq;

	atomic_fetch_add(&ev->refs, 1);
	pthread_mutex_lock(&ev->mu);
	ev->gen++;
	ev->stamped = false;
	op->record.ev = ev;
	op->record.gen = ev->gen;
	/* ev->mu is held across the enqueue so a query never sees the new generation with the
	 * old position; the record op itself takes ev->mu only when it runs */
	stream_submit(s, op, &seq);
	ev->stream = s;
	ev->seq = seq;
	pthread_mutex_unlock(&ev->mu);
	return CUDA_SUCCESS;
}

VARIANTS(cuEventRecord, cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream), event_record,
	 hEvent, hStream, 0)

VARIANTS(cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz,
	 (CUevent hEvent, CUstream hStream, unsigned int flags), event_record, hEvent, hStream,
	 flags)

/* Snapshot of where an event was last recorded; false if never recorded. */
static bool event_position(struct event *ev, struct stream **s, uint64_t *seq)
{
	pthread_mutex_lock(&ev->mu);
	*s = ev->stream;
	*seq = ev->seq;
	pthread_mutex_unlock(&ev->mu);
	return *s != NULL;
}

CUresult cuEventQuery(CUevent hEvent)
{
	struct stream *s;
	uint64_t seq;

	if (!handles_check(hEvent, MAGIC_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!event_position((struct event *)hEvent, &s, &seq))
		return CUDA_SUCCESS;
	return stream_reached(s, seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	struct stream *s;
	uint64_t seq;

	if (!handles_check(hEvent, MAGIC_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	if (event_position((struct event *)hEvent, &s, &seq))
		stream_wait_reached(s, seq);
	pool_release_at_sync();
	return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	if (!handles_check(hStart, MAGIC_EVENT) || !handles_check(hEnd, MAGIC_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	struct event *a = (struct event *)hStart, *b = (struct event *)hEnd;
	if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
		return CUDA_ERROR_INVALID_HANDLE;

	struct stream *sa, *sb;
	uint64_t qa, qb;
	if (!event_position(a, &sa, &qa) || !event_position(b, &sb, &qb))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!stream_reached(sa, qa) || !stream_reached(sb, qb))
		return CUDA_ERROR_NOT_READY;

	pthread_mutex_lock(&a->mu);
	bool ok = a->stamped;
	uint64_t ta = a->time_ns;
	pthread_mutex_unlock(&a->mu);
	pthread_mutex_lock(&b->mu);
	ok = ok && b->stamped;
	uint64_t tb = b->time_ns;
	pthread_mutex_unlock(&b->mu);
	if (!ok)
		return CUDA_ERROR_NOT_READY; /* re-recorded since the position was read */
	*pMilliseconds = (float)(((double)tb - (double)ta) / 1e6);
	return CUDA_SUCCESS;
}

/* ================================================================== launches */

/* The kernel convention of the stand-ins: a CUfunction is a host function void (*)(void *)
 * and is called with the value of the first kernel parameter, *(void **)kernelParams[0],
 * copied at launch so the caller's array may die right after the call. */
static CUresult launch(CUfunction f, CUstream hStream, void **kernelParams, enum default_stream def)
{
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	RESOLVE_STREAM(s, hStream, def);
	const struct standin_cupti_hooks *cupti = atomic_load(&g_cupti);
	uint64_t start = cupti ? cupti->now() : 0;
	uint32_t correlation = cupti ? cupti->api_begin() : 0;
	if (cupti)
		cupti->api_site(CBID_cuLaunchKernel, 0, correlation);
	struct op *op = op_new(OP_CALL);
	op->call.fn = (void (*)(void *))(void *)f;
	op->call.arg = kernelParams && kernelParams[0] ? *(void **)kernelParams[0] : NULL;
	op->cupti_correlation = cupti && cupti->kernels_traced() ? correlation : 0;
	if (op->cupti_correlation)
		cupti->kernel_queued(correlation, s->cupti_id);
	stream_submit(s, op, NULL);
	if (cupti) {
		cupti->api_end(correlation, CBID_cuLaunchKernel, start, cupti->now());
		cupti->api_site(CBID_cuLaunchKernel, 1, correlation);
	}
	return CUDA_SUCCESS;
}

static CUresult launch_checked(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			       unsigned int bx, unsigned int by, unsigned int bz, CUstream hStream,
			       void **kernelParams, enum default_stream def)
{
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned long long)bx * by * bz > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	return launch(f, hStream, kernelParams, def);
}

VARIANTS(cuLaunchKernel, cuLaunchKernel_ptsz,
	 (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
	  unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
	  unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),
	 launch_checked, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream,
	 kernelParams)

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			  enum default_stream def)
{
	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	return launch_checked(f, config->gridDimX, config->gridDimY, config->gridDimZ,
			      config->blockDimX, config->blockDimY, config->blockDimZ,
			      config->hStream, kernelParams, def);
}

VARIANTS(cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
	 (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra), launch_ex,
	 config, f, kernelParams)

VARIANTS(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz,
	 (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
	  unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
	  unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),
	 launch_checked, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream,
	 kernelParams)

static CUresult launch_host_func(CUstream hStream, CUhostFn fn, void *userData,
				 enum default_stream def)
{
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	struct op *op = op_new(OP_CALL);
	op->call.fn = fn;
	op->call.arg = userData;
	stream_submit(s, op, NULL);
	return CUDA_SUCCESS;
}

VARIANTS(cuLaunchHostFunc, cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData),
	 launch_host_func, hStream, fn, userData)

/* ================================================================== copies */

/* Synchronous copies run on the legacy stream (the per-thread one in _ptds entry points) and
 * return when done; async ones block only when their host side is pageable (engine_copy). */
static CUresult copy1d(CUdeviceptr dst, CUdeviceptr src, size_t n, enum copy_dir dir,
		       CUstream hStream, bool async, enum default_stream def)
{
	RESOLVE_STREAM(s, hStream, def);
	return engine_copy(s, dptr_to_ptr(dst), n, dptr_to_ptr(src), n, n, 1, dir, async);
}

#define HOST_PTR(p) ((CUdeviceptr)(uintptr_t)(p))

VARIANTS(cuMemcpy, cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), copy1d, dst,
	 src, ByteCount, DIR_INFER, NULL, false)

VARIANTS(cuMemcpyAsync, cuMemcpyAsync_ptsz,
	 (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), copy1d, dst, src,
	 ByteCount, DIR_INFER, hStream, true)

VARIANTS(cuMemcpyHtoD, cuMemcpyHtoD_v2_ptds,
	 (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount), copy1d, dstDevice,
	 HOST_PTR(srcHost), ByteCount, DIR_HTOD, NULL, false)

VARIANTS(cuMemcpyDtoH, cuMemcpyDtoH_v2_ptds,
	 (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount), copy1d, HOST_PTR(dstHost),
	 srcDevice, ByteCount, DIR_DTOH, NULL, false)

VARIANTS(cuMemcpyDtoD, cuMemcpyDtoD_v2_ptds,
	 (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount), copy1d, dstDevice,
	 srcDevice, ByteCount, DIR_DTOD, NULL, false)

VARIANTS(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2_ptsz,
	 (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream), copy1d,
	 dstDevice, HOST_PTR(srcHost), ByteCount, DIR_HTOD, hStream, true)

VARIANTS(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2_ptsz,
	 (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), copy1d,
	 HOST_PTR(dstHost), srcDevice, ByteCount, DIR_DTOH, hStream, true)

VARIANTS(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2_ptsz,
	 (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), copy1d,
	 dstDevice, srcDevice, ByteCount, DIR_DTOD, hStream, true)

/* Peer copies: one device, so a peer copy is a device-to-device copy. */
VARIANTS(cuMemcpyPeer, cuMemcpyPeer_ptds,
	 (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
	  size_t ByteCount),
	 copy1d, dstDevice, srcDevice, ByteCount, DIR_DTOD, NULL, false)

VARIANTS(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
	 (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
	  size_t ByteCount, CUstream hStream),
	 copy1d, dstDevice, srcDevice, ByteCount, DIR_DTOD, hStream, true)

/* One side of a CUDA_MEMCPY2D: its address and whether it is host (true) / device (false) /
 * to be inferred (returns -1). Arrays are not emulated. */
static int copy2d_side(CUmemorytype type, const void *host, CUdeviceptr dev, const void **out)
{
	switch (type) {
	case CU_MEMORYTYPE_HOST:
		*out = host;
		return 1;
	case CU_MEMORYTYPE_DEVICE:
		*out = dptr_to_ptr(dev);
		return 0;
	case CU_MEMORYTYPE_UNIFIED:
		*out = dptr_to_ptr(dev);
		return -1;
	default:
		return -2;
	}
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream hStream, bool async,
		       enum default_stream def)
{
	const void *src, *dst;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	int s_host = copy2d_side(p->srcMemoryType, p->srcHost, p->srcDevice, &src);
	int d_host = copy2d_side(p->dstMemoryType, p->dstHost, p->dstDevice, &dst);
	if (s_host == -2 || d_host == -2)
		return CUDA_ERROR_NOT_SUPPORTED;
	enum copy_dir dir = DIR_INFER;
	if (s_host >= 0 && d_host >= 0)
		dir = s_host ? (d_host ? DIR_HTOH : DIR_HTOD) : (d_host ? DIR_DTOH : DIR_DTOD);
	RESOLVE_STREAM(s, hStream, def);
	const char *sp = (const char *)src + p->srcY * p->srcPitch + p->srcXInBytes;
	char *dp = (char *)dst + p->dstY * p->dstPitch + p->dstXInBytes;
	return engine_copy(s, dp, p->dstPitch, sp, p->srcPitch, p->WidthInBytes, p->Height, dir,
			   async);
}

VARIANTS(cuMemcpy2D, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), copy2d, pCopy, NULL, false)

VARIANTS(cuMemcpy2DAsync, cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
	 copy2d, pCopy, hStream, true)

/* The unaligned 2D copy differs from cuMemcpy2D only in the alignment the real driver asks for:
 * the same copy here. */
VARIANTS(cuMemcpy2DUnaligned, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy), copy2d,
	 pCopy, NULL, false)

/* One side of a 3D copy (CUDA_MEMCPY3D or CUDA_MEMCPY3D_PEER): where its first byte is, and its
 * pitch and height to step rows and slices by. */
struct side3d {
	CUmemorytype type;
	const void *host;
	CUdeviceptr device;
	size_t x, y, z, pitch, height;
};

#define SIDE3D(p, which)                                                                           \
	((struct side3d){(p)->which##MemoryType, (p)->which##Host, (p)->which##Device,             \
			 (p)->which##XInBytes, (p)->which##Y, (p)->which##Z, (p)->which##Pitch,    \
			 (p)->which##Height})

/* A 3D copy is Depth 2D copies of Height rows, one slice after the other in the stream: an async
 * one queues them all; a synchronous one waits for the last, which the stream runs last. */
static CUresult copy3d(struct side3d src, struct side3d dst, size_t width, size_t height,
		       size_t depth, CUstream hStream, bool async, enum default_stream def)
{
	const void *sp0, *dp0;
	int s_host = copy2d_side(src.type, src.host, src.device, &sp0);
	int d_host = copy2d_side(dst.type, dst.host, dst.device, &dp0);
	if (s_host == -2 || d_host == -2)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (depth > 1 && (src.height < height || dst.height < height))
		return CUDA_ERROR_INVALID_VALUE;
	enum copy_dir dir = DIR_INFER;
	if (s_host >= 0 && d_host >= 0)
		dir = s_host ? (d_host ? DIR_HTOH : DIR_HTOD) : (d_host ? DIR_DTOH : DIR_DTOD);
	RESOLVE_STREAM(s, hStream, def);
	size_t sslice = src.pitch * src.height, dslice = dst.pitch * dst.height;
	const char *sp = (const char *)sp0 + src.z * sslice + src.y * src.pitch + src.x;
	char *dp = (char *)dp0 + dst.z * dslice + dst.y * dst.pitch + dst.x;
	CUresult rc = CUDA_SUCCESS;
	for (size_t z = 0; z < depth && rc == CUDA_SUCCESS; z++)
		rc = engine_copy(s, dp + z * dslice, dst.pitch, sp + z * sslice, src.pitch, width,
				 height, dir, z + 1 < depth || async);
	return rc;
}

static CUresult copy3d_params(const CUDA_MEMCPY3D *p, CUstream hStream, bool async,
			      enum default_stream def)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return copy3d(SIDE3D(p, src), SIDE3D(p, dst), p->WidthInBytes, p->Height, p->Depth, hStream,
		      async, def);
}

VARIANTS(cuMemcpy3D, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), copy3d_params, pCopy, NULL,
	 false)

VARIANTS(cuMemcpy3DAsync, cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
	 copy3d_params, pCopy, hStream, true)

/* Peer 3D copies: one device and one context, so the contexts are only checked. */
static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *p, CUstream hStream, bool async,
			    enum default_stream def)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if ((p->srcContext && !is_context(p->srcContext)) ||
	    (p->dstContext && !is_context(p->dstContext)))
		return CUDA_ERROR_INVALID_CONTEXT;
	return copy3d(SIDE3D(p, src), SIDE3D(p, dst), p->WidthInBytes, p->Height, p->Depth, hStream,
		      async, def);
}

VARIANTS(cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *pCopy), copy3d_peer, pCopy,
	 NULL, false)

VARIANTS(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz,
	 (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream), copy3d_peer, pCopy, hStream, true)

/* A batch runs its copies in stream order (the real driver may overlap them: nothing here can
 * tell); the attributes only hint at access order and locality. */
static CUresult copy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
			   CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
			   CUstream hStream, enum default_stream def)
{
	if (!dsts || !srcs || !sizes || count == 0 || !attrs || !attrsIdxs || numAttrs == 0 ||
	    numAttrs > count || attrsIdxs[0] != 0)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	CUresult rc = CUDA_SUCCESS;
	for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
		rc = engine_copy(s, dptr_to_ptr(dsts[i]), sizes[i], dptr_to_ptr(srcs[i]), sizes[i],
				 sizes[i], 1, DIR_INFER, true);
	return rc;
}

/* clang-format off */ /* it would read the parameter list as a multiplication */
VARIANTS(cuMemcpyBatchAsync, cuMemcpyBatchAsync_v2_ptsz,
	 (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
	  CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
	 copy_batch, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream)
/* clang-format on */

/* 3D batches: pointer-to-pointer operations only (arrays are not emulated), whose extent is in
 * bytes (cuda.h: the element size of a pointer-to-pointer copy is 1). */
static CUresult copy_batch3d(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
			     unsigned long long flags, CUstream hStream, enum default_stream def)
{
	if (numOps == 0 || !opList || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < numOps; i++)
		if (opList[i].src.type != CU_MEMCPY_OPERAND_TYPE_POINTER ||
		    opList[i].dst.type != CU_MEMCPY_OPERAND_TYPE_POINTER)
			return CUDA_ERROR_NOT_SUPPORTED;
	RESOLVE_STREAM(s, hStream, def);
	CUresult rc = CUDA_SUCCESS;
	for (size_t i = 0; i < numOps && rc == CUDA_SUCCESS; i++) {
		const CUDA_MEMCPY3D_BATCH_OP *op = &opList[i];
		size_t w = op->extent.width, h = op->extent.height, d = op->extent.depth;
		/* rows are rowLength elements apart (0: the width), slices layerHeight rows */
		size_t sp = op->src.op.ptr.rowLength ? op->src.op.ptr.rowLength : w;
		size_t dp = op->dst.op.ptr.rowLength ? op->dst.op.ptr.rowLength : w;
		size_t sh = op->src.op.ptr.layerHeight ? op->src.op.ptr.layerHeight : h;
		size_t dh = op->dst.op.ptr.layerHeight ? op->dst.op.ptr.layerHeight : h;
		char *dst = dptr_to_ptr(op->dst.op.ptr.ptr);
		const char *src = dptr_to_ptr(op->src.op.ptr.ptr);
		for (size_t z = 0; z < d && rc == CUDA_SUCCESS; z++)
			rc = engine_copy(s, dst + z * dh * dp, dp, src + z * sh * sp, sp, w, h,
					 DIR_INFER, true);
	}
	return rc;
}

VARIANTS(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_v2_ptsz,
	 (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
	  CUstream hStream),
	 copy_batch3d, numOps, opList, flags, hStream)

/* ================================================================== memsets */

static CUresult memset2d(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem, size_t width,
			 size_t height, CUstream hStream, bool async, enum default_stream def)
{
	RESOLVE_STREAM(s, hStream, def);
	return engine_memset(s, dptr_to_ptr(dst), pitch, value, elem, width, height, async);
}

#define MEMSET_1D(name, elem, type, async, def)                                                    \
	CUresult name(CUdeviceptr dstDevice, type value, size_t N)                                 \
	{                                                                                          \
		return memset2d(dstDevice, 0, value, elem, N, 1, NULL, false, def);                \
	}
#define MEMSET_1D_ASYNC(name, elem, type, def)                                                     \
	CUresult name(CUdeviceptr dstDevice, type value, size_t N, CUstream hStream)               \
	{                                                                                          \
		return memset2d(dstDevice, 0, value, elem, N, 1, hStream, true, def);              \
	}
#define MEMSET_2D(name, elem, type, def)                                                           \
	CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width,            \
		      size_t Height)                                                               \
	{                                                                                          \
		return memset2d(dstDevice, dstPitch, value, elem, Width, Height, NULL, false,      \
				def);                                                              \
	}
#define MEMSET_2D_ASYNC(name, elem, type, def)                                                     \
	CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width,            \
		      size_t Height, CUstream hStream)                                             \
	{                                                                                          \
		return memset2d(dstDevice, dstPitch, value, elem, Width, Height, hStream, true,    \
				def);                                                              \
	}

MEMSET_1D(cuMemsetD8, 1, unsigned char, false, DEF_LEGACY)
MEMSET_1D(cuMemsetD8_v2_ptds, 1, unsigned char, false, DEF_PTS)
MEMSET_1D(cuMemsetD16, 2, unsigned short, false, DEF_LEGACY)
MEMSET_1D(cuMemsetD16_v2_ptds, 2, unsigned short, false, DEF_PTS)
MEMSET_1D(cuMemsetD32, 4, unsigned int, false, DEF_LEGACY)
MEMSET_1D(cuMemsetD32_v2_ptds, 4, unsigned int, false, DEF_PTS)
MEMSET_1D_ASYNC(cuMemsetD8Async, 1, unsigned char, DEF_LEGACY)
MEMSET_1D_ASYNC(cuMemsetD8Async_ptsz, 1, unsigned char, DEF_PTS)
MEMSET_1D_ASYNC(cuMemsetD16Async, 2, unsigned short, DEF_LEGACY)
MEMSET_1D_ASYNC(cuMemsetD16Async_ptsz, 2, unsigned short, DEF_PTS)
MEMSET_1D_ASYNC(cuMemsetD32Async, 4, unsigned int, DEF_LEGACY)
MEMSET_1D_ASYNC(cuMemsetD32Async_ptsz, 4, unsigned int, DEF_PTS)
MEMSET_2D(cuMemsetD2D8, 1, unsigned char, DEF_LEGACY)
MEMSET_2D(cuMemsetD2D8_v2_ptds, 1, unsigned char, DEF_PTS)
MEMSET_2D(cuMemsetD2D16, 2, unsigned short, DEF_LEGACY)
MEMSET_2D(cuMemsetD2D16_v2_ptds, 2, unsigned short, DEF_PTS)
MEMSET_2D(cuMemsetD2D32, 4, unsigned int, DEF_LEGACY)
MEMSET_2D(cuMemsetD2D32_v2_ptds, 4, unsigned int, DEF_PTS)
MEMSET_2D_ASYNC(cuMemsetD2D8Async, 1, unsigned char, DEF_LEGACY)
MEMSET_2D_ASYNC(cuMemsetD2D8Async_ptsz, 1, unsigned char, DEF_PTS)
MEMSET_2D_ASYNC(cuMemsetD2D16Async, 2, unsigned short, DEF_LEGACY)
MEMSET_2D_ASYNC(cuMemsetD2D16Async_ptsz, 2, unsigned short, DEF_PTS)
MEMSET_2D_ASYNC(cuMemsetD2D32Async, 4, unsigned int, DEF_LEGACY)
MEMSET_2D_ASYNC(cuMemsetD2D32Async_ptsz, 4, unsigned int, DEF_PTS)

/* ================================================================== stream memory operations */

/* A wait holds the stream until the word compares (another stream's or the host's write); a
 * write stores it when the stream reaches it. The host returns at once either way. */
static CUresult value_op(CUstream hStream, enum op_kind kind, CUdeviceptr addr, uint64_t value,
			 unsigned int flags, bool is64, enum default_stream def)
{
	unsigned known = kind == OP_WAIT_VALUE ? 0x3u | CU_STREAM_WAIT_VALUE_FLUSH
					       : (unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
	if (flags & ~known)
		return CUDA_ERROR_INVALID_VALUE;
	RESOLVE_STREAM(s, hStream, def);
	return engine_value_op(s, kind, addr, value, flags, is64);
}

#define VALUE_OP(name, kind, type, is64)                                                           \
	CUresult name(CUstream stream, CUdeviceptr addr, type value, unsigned int flags)           \
	{                                                                                          \
		return value_op(stream, kind, addr, value, flags, is64, DEF_LEGACY);               \
	}                                                                                          \
	CUresult name##_ptsz(CUstream stream, CUdeviceptr addr, type value, unsigned int flags)    \
	{                                                                                          \
		return value_op(stream, kind, addr, value, flags, is64, DEF_PTS);                  \
	}

VALUE_OP(cuStreamWaitValue32_v2, OP_WAIT_VALUE, cuuint32_t, false)
VALUE_OP(cuStreamWaitValue64_v2, OP_WAIT_VALUE, cuuint64_t, true)
VALUE_OP(cuStreamWriteValue32_v2, OP_WRITE_VALUE, cuuint32_t, false)
VALUE_OP(cuStreamWriteValue64_v2, OP_WRITE_VALUE, cuuint64_t, true)

/* A batch of waits and writes, in order on the stream; barriers and flushes order nothing more
 * here (one address space, ops in order). Every operation is checked before any is queued. */
static CUresult batch_mem_op(CUstream hStream, unsigned int count,
			     CUstreamBatchMemOpParams *paramArray, unsigned int flags,
			     enum default_stream def)
{
	if (count == 0 || !paramArray || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < count; i++)
		switch (paramArray[i].operation) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		case CU_STREAM_MEM_OP_WAIT_VALUE_64:
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64:
		case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
		case CU_STREAM_MEM_OP_BARRIER:
			break;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	RESOLVE_STREAM(s, hStream, def);
	CUresult rc = CUDA_SUCCESS;
	for (unsigned i = 0; i < count && rc == CUDA_SUCCESS; i++) {
		const CUstreamBatchMemOpParams *p = &paramArray[i];
		switch (p->operation) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
			bool is64 = p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
			rc = engine_value_op(s, OP_WAIT_VALUE, p->waitValue.address,
					     is64 ? p->waitValue.value64 : p->waitValue.value,
					     p->waitValue.flags, is64);
			break;
		}
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
			bool is64 = p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
			rc = engine_value_op(s, OP_WRITE_VALUE, p->writeValue.address,
					     is64 ? p->writeValue.value64 : p->writeValue.value,
					     p->writeValue.flags, is64);
			break;
		}
		default:
			break;
		}
	}
	return rc;
}

VARIANTS(cuStreamBatchMemOp_v2, cuStreamBatchMemOp_v2_ptsz,
	 (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
	  unsigned int flags),
	 batch_mem_op, stream, count, paramArray, flags)

/* ================================================================== arrays */

/* A CUDA array (cuArrayCreate, cuArray3DCreate) or mipmapped array: a handle with its bytes in
 * host memory. Creating and destroying one synchronizes the context, as cuMemAlloc and cuMemFree
 * do (S6). The stand-in has no textures, so nothing reads the bytes but a later destroy. */
struct array {
	uint32_t magic;
	void *bytes;
	size_t size;
};

static size_t format_bytes(CUarray_format format)
{
	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 1;
	}
}

static CUresult array_create(void **out, uint32_t magic, size_t width, size_t height, size_t depth,
			     CUarray_format format, unsigned int channels)
{
	if (!out || width == 0 || (channels != 1 && channels != 2 && channels != 4))
		return CUDA_ERROR_INVALID_VALUE;
	struct array *a = malloc(sizeof(*a));
	size_t bytes =
	    width * (height ? height : 1) * (depth ? depth : 1) * channels * format_bytes(format);
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_synchronize(); /* implicit sync (S6) */
	a->magic = magic;
	a->size = bytes;
	a->bytes = calloc(1, bytes);
	if (!a->bytes) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	handles_add(a);
	*out = a;
	return CUDA_SUCCESS;
}

static CUresult array_destroy(void *h, uint32_t magic)
{
	if (!handles_check(h, magic))
		return CUDA_ERROR_INVALID_HANDLE;
	ctx_synchronize(); /* implicit sync (S6): streams may still read it */
	handles_remove(h);
	free(((struct array *)h)->bytes);
	free(h);
	return CUDA_SUCCESS;
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return array_create((void **)pHandle, MAGIC_ARRAY, d->Width, d->Height, 0, d->Format,
			    d->NumChannels);
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	const CUDA_ARRAY3D_DESCRIPTOR *d = pAllocateArray;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return array_create((void **)pHandle, MAGIC_ARRAY, d->Width, d->Height, d->Depth, d->Format,
			    d->NumChannels);
}

CUresult cuArrayDestroy(CUarray hArray)
{
	return array_destroy(hArray, MAGIC_ARRAY);
}

/* Every level in one block of the first level's size times two (what the levels add up to). */
CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
				const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
				unsigned int numMipmapLevels)
{
	const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
	if (!d || numMipmapLevels == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return array_create((void **)pHandle, MAGIC_MIPMAPPED, 2 * d->Width, d->Height, d->Depth,
			    d->Format, d->NumChannels);
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	return array_destroy(hMipmappedArray, MAGIC_MIPMAPPED);
}

/* The driver's array copies (cuMemcpyHtoA, cuMemcpyAtoH, ...): 1-D copies of an array's bytes
 * at an offset, as copy1d makes them (the array's bytes count as device memory). */
static CUdeviceptr array_at(CUarray h, size_t offset, size_t n)
{
	if (!handles_check(h, MAGIC_ARRAY))
		return 0;
	struct array *a = (struct array *)h;
	return offset <= a->size && n <= a->size - offset ? HOST_PTR((char *)a->bytes + offset) : 0;
}

static CUresult copy_array(CUarray dst_array, size_t dst_offset, CUdeviceptr dst,
			   CUarray src_array, size_t src_offset, CUdeviceptr src, size_t n,
			   enum copy_dir dir, CUstream hStream, bool async, enum default_stream def)
{
	if ((dst_array && !(dst = array_at(dst_array, dst_offset, n))) ||
	    (src_array && !(src = array_at(src_array, src_offset, n))))
		return CUDA_ERROR_INVALID_VALUE;
	return copy1d(dst, src, n, dir, hStream, async, def);
}

VARIANTS(cuMemcpyHtoA, cuMemcpyHtoA_v2_ptds,
	 (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount), copy_array,
	 dstArray, dstOffset, 0, NULL, 0, HOST_PTR(srcHost), ByteCount, DIR_HTOD, NULL, false)

VARIANTS(cuMemcpyAtoH, cuMemcpyAtoH_v2_ptds,
	 (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount), copy_array, NULL,
	 0, HOST_PTR(dstHost), srcArray, srcOffset, 0, ByteCount, DIR_DTOH, NULL, false)

VARIANTS(cuMemcpyDtoA, cuMemcpyDtoA_v2_ptds,
	 (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount), copy_array,
	 dstArray, dstOffset, 0, NULL, 0, srcDevice, ByteCount, DIR_DTOD, NULL, false)

VARIANTS(cuMemcpyAtoD, cuMemcpyAtoD_v2_ptds,
	 (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount), copy_array,
	 NULL, 0, dstDevice, srcArray, srcOffset, 0, ByteCount, DIR_DTOD, NULL, false)

VARIANTS(cuMemcpyAtoA, cuMemcpyAtoA_v2_ptds,
	 (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
	  size_t ByteCount),
	 copy_array, dstArray, dstOffset, 0, srcArray, srcOffset, 0, ByteCount, DIR_DTOD, NULL,
	 false)

VARIANTS(cuMemcpyHtoAAsync, cuMemcpyHtoAAsync_v2_ptsz,
	 (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
	  CUstream hStream),
	 copy_array, dstArray, dstOffset, 0, NULL, 0, HOST_PTR(srcHost), ByteCount, DIR_HTOD,
	 hStream, true)

VARIANTS(cuMemcpyAtoHAsync, cuMemcpyAtoHAsync_v2_ptsz,
	 (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream),
	 copy_array, NULL, 0, HOST_PTR(dstHost), srcArray, srcOffset, 0, ByteCount, DIR_DTOH,
	 hStream, true)

/* ================================================================== modules and libraries */

/* A module (cuModuleLoad*) or library (cuLibraryLoad*) holds no code: its functions and
 * kernels are the program's own host functions of the same name (the kernel convention),
 * found with dlsym(RTLD_DEFAULT), so a program that loads them exports them (-rdynamic). A load
 * takes STANDIN_MODULE_LOAD_US of real time, as parsing an image does. */
#define STANDIN_MODULE_LOAD_US 300

struct module {
	uint32_t magic;
};

static CUresult module_load(void **out, uint32_t magic, const void *image)
{
	if (!out || !image)
		return CUDA_ERROR_INVALID_VALUE;
	struct module *m = malloc(sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->magic = magic;
	usleep(STANDIN_MODULE_LOAD_US);
	handles_add(m);
	*out = m;
	return CUDA_SUCCESS;
}

static CUresult module_get(void **out, const void *h, uint32_t magic, const char *name)
{
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!handles_check(h, magic))
		return CUDA_ERROR_INVALID_HANDLE;
	void *fn = dlsym(RTLD_DEFAULT, name);
	if (!fn)
		return CUDA_ERROR_NOT_FOUND;
	*out = fn;
	return CUDA_SUCCESS;
}

static CUresult module_unload(void *h, uint32_t magic)
{
	if (!handles_check(h, magic))
		return CUDA_ERROR_INVALID_HANDLE;
	handles_remove(h);
	free(h);
	return CUDA_SUCCESS;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	return module_load((void **)module, MAGIC_MODULE, fname);
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	return module_load((void **)module, MAGIC_MODULE, image);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
			    CUjit_option *options, void **optionValues)
{
	return module_load((void **)module, MAGIC_MODULE, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return module_load((void **)module, MAGIC_MODULE, fatCubin);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	return module_get((void **)hfunc, hmod, MAGIC_MODULE, name);
}

CUresult cuModuleUnload(CUmodule hmod)
{
	return module_unload(hmod, MAGIC_MODULE);
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
			   void **jitOptionsValues, unsigned int numJitOptions,
			   CUlibraryOption *libraryOptions, void **libraryOptionValues,
			   unsigned int numLibraryOptions)
{
	return module_load((void **)library, MAGIC_LIBRARY, code);
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
			       void **jitOptionsValues, unsigned int numJitOptions,
			       CUlibraryOption *libraryOptions, void **libraryOptionValues,
			       unsigned int numLibraryOptions)
{
	return module_load((void **)library, MAGIC_LIBRARY, fileName);
}

/* A kernel of a library is launched as a function (CUkernel casts to CUfunction). */
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	return module_get((void **)pKernel, library, MAGIC_LIBRARY, name);
}

CUresult cuLibraryUnload(CUlibrary library)
{
	return module_unload(library, MAGIC_LIBRARY);
}

/* ================================================================== cuGetProcAddress */

/* What cuGetProcAddress can hand out: the name as callers ask for it (without _v2), the
 * oldest version that gets this ABI, the legacy-stream function and, for stream functions,
 * the per-thread-default-stream one. A name asked for at a version older than every entry
 * gets CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: older ABIs are not emulated. */
struct proc_entry {
	const char *name;
	int version;
	void *legacy;
	void *per_thread;
};

#define P(name, ver, fn)                                                                           \
	{                                                                                          \
		name, ver, (void *)(fn), NULL                                                      \
	}
#define PS(name, ver, fn, fn_pt)                                                                   \
	{                                                                                          \
		name, ver, (void *)(fn), (void *)(fn_pt)                                           \
	}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus);
CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags) __asm__("cuGetProcAddress");

static const struct proc_entry proc_table[] = {
    P("cuInit", 2000, cuInit),
    P("cuDriverGetVersion", 2020, cuDriverGetVersion),
    P("cuDeviceGet", 2000, cuDeviceGet),
    P("cuDeviceGetCount", 2000, cuDeviceGetCount),
    P("cuDeviceGetName", 2000, cuDeviceGetName),
    P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    P("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    P("cuCtxCreate", 3020, cuCtxCreate_v2),
    P("cuCtxCreate", 11040, cuCtxCreate_v3),
    P("cuCtxCreate", 12050, cuCtxCreate_v4),
    P("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    P("cuCtxGetDevice", 2000, cuCtxGetDevice),
    P("cuCtxSynchronize", 2000, cuCtxSynchronize),
    P("cuCtxSetLimit", 3010, cuCtxSetLimit),
    P("cuCtxGetLimit", 3010, cuCtxGetLimit),
    P("cuProfilerStart", 4000, cuProfilerStart),
    P("cuProfilerStop", 4000, cuProfilerStop),
    P("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange),
    P("cuGetErrorString", 6000, cuGetErrorString),
    P("cuGetErrorName", 6000, cuGetErrorName),
    P("cuGetExportTable", 3000, cuGetExportTable),
    P("cuGetProcAddress", 11030, get_proc_address_v1),
    P("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    P("cuMemAlloc", 3020, cuMemAlloc_v2),
    P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    P("cuMemFree", 3020, cuMemFree_v2),
    P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    P("cuMemFreeHost", 2000, cuMemFreeHost),
    P("cuMemHostAlloc", 2020, cuMemHostAlloc),
    P("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    P("cuMemHostUnregister", 4000, cuMemHostUnregister),
    P("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2),
    P("cuMemAllocManaged", 6000, cuMemAllocManaged),
    PS("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
    PS("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    PS("cuMemPrefetchAsync", 12020, cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz),
    PS("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
    P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    P("cuMemAddressReserve", 10020, cuMemAddressReserve),
    P("cuMemAddressFree", 10020, cuMemAddressFree),
    P("cuMemCreate", 10020, cuMemCreate),
    P("cuMemRelease", 10020, cuMemRelease),
    P("cuMemMap", 10020, cuMemMap),
    P("cuMemUnmap", 10020, cuMemUnmap),
    P("cuMemSetAccess", 10020, cuMemSetAccess),
    P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    P("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    P("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    P("cuStreamCreate", 2000, cuStreamCreate),
    P("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
    P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    PS("cuStreamGetFlags", 5050, cuStreamGetFlags, cuStreamGetFlags_ptsz),
    PS("cuStreamGetPriority", 5050, cuStreamGetPriority, cuStreamGetPriority_ptsz),
    PS("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    PS("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz),
    PS("cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz),
    PS("cuStreamAddCallback", 5000, cuStreamAddCallback, cuStreamAddCallback_ptsz),
    PS("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    PS("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    PS("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
    PS("cuStreamWaitValue32", 11070, cuStreamWaitValue32_v2, cuStreamWaitValue32_v2_ptsz),
    PS("cuStreamWaitValue64", 11070, cuStreamWaitValue64_v2, cuStreamWaitValue64_v2_ptsz),
    PS("cuStreamWriteValue32", 11070, cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz),
    PS("cuStreamWriteValue64", 11070, cuStreamWriteValue64_v2, cuStreamWriteValue64_v2_ptsz),
    PS("cuStreamBatchMemOp", 11070, cuStreamBatchMemOp_v2, cuStreamBatchMemOp_v2_ptsz),
    P("cuEventCreate", 2000, cuEventCreate),
    P("cuEventDestroy", 4000, cuEventDestroy_v2),
    PS("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz),
    PS("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz),
    P("cuEventQuery", 2000, cuEventQuery),
    P("cuEventSynchronize", 2000, cuEventSynchronize),
    P("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    PS("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
    PS("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    PS("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel,
       cuLaunchCooperativeKernel_ptsz),
    PS("cuLaunchHostFunc", 10000, cuLaunchHostFunc, cuLaunchHostFunc_ptsz),
    PS("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds),
    PS("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
    PS("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    PS("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    PS("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    PS("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
    PS("cuMemcpyHtoA", 3020, cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds),
    PS("cuMemcpyAtoH", 3020, cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds),
    PS("cuMemcpyDtoA", 3020, cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds),
    PS("cuMemcpyAtoD", 3020, cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds),
    PS("cuMemcpyAtoA", 3020, cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds),
    PS("cuMemcpyHtoAAsync", 3020, cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz),
    PS("cuMemcpyAtoHAsync", 3020, cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz),
    PS("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
    PS("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
    PS("cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds),
    PS("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz),
    PS("cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds),
    PS("cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds),
    PS("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz),
    PS("cuMemcpy3DPeer", 4000, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds),
    PS("cuMemcpy3DPeerAsync", 4000, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz),
    PS("cuMemcpyBatchAsync", 13000, cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz),
    PS("cuMemcpy3DBatchAsync", 13000, cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz),
    PS("cuMemcpyPeer", 4000, cuMemcpyPeer, cuMemcpyPeer_ptds),
    PS("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz),
    PS("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
    PS("cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds),
    PS("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
    PS("cuMemsetD2D8", 3020, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds),
    PS("cuMemsetD2D16", 3020, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds),
    PS("cuMemsetD2D32", 3020, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds),
    PS("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz),
    PS("cuMemsetD16Async", 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz),
    PS("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz),
    PS("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz),
    PS("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz),
    PS("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz),
    P("cuGraphInstantiate", 11000, cuGraphInstantiate_v2),
    P("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    PS("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams,
       cuGraphInstantiateWithParams_ptsz),
    P("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    PS("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    PS("cuGraphUpload", 11010, cuGraphUpload, cuGraphUpload_ptsz),
    P("cuGraphDestroy", 10000, cuGraphDestroy),
    P("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    P("cuArrayCreate", 3020, cuArrayCreate_v2),
    P("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    P("cuArrayDestroy", 2000, cuArrayDestroy),
    P("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate),
    P("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy),
    P("cuModuleLoad", 2000, cuModuleLoad),
    P("cuModuleLoadData", 2000, cuModuleLoadData),
    P("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    P("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary),
    P("cuModuleGetFunction", 2000, cuModuleGetFunction),
    P("cuModuleUnload", 2000, cuModuleUnload),
    P("cuLibraryLoadData", 12000, cuLibraryLoadData),
    P("cuLibraryLoadFromFile", 12000, cuLibraryLoadFromFile),
    P("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
    P("cuLibraryUnload", 12000, cuLibraryUnload),
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	const struct proc_entry *best = NULL;
	bool name_known = false;

	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
				  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(proc_table) / sizeof(proc_table[0]); i++) {
		const struct proc_entry *e = &proc_table[i];
		if (strcmp(e->name, symbol) != 0)
			continue;
		name_known = true;
		if (e->version <= cudaVersion && (!best || e->version > best->version))
			best = e;
	}
	*pfn = NULL;
	if (!best) {
		if (symbolStatus)
			*symbolStatus = name_known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
						   : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_ERROR_NOT_FOUND;
	}
	bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	*pfn = per_thread && best->per_thread ? best->per_thread : best->legacy;
	if (symbolStatus)
		*symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

/* The pre-12.0 entry point (no status argument), still exported by the real driver and still
 * asked for by name at version 11030. cuda.h maps the name cuGetProcAddress to _v2, so the C
 * identifier differs and an asm label gives the symbol its real name. */
CUresult get_proc_address_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
