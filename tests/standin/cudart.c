/* SPDX-License-Identifier: MIT */
/*
 * cudart.c: the libcudart.so.13 CPU stand-in, a thin runtime over the driver stand-in.
 *
 * It reaches the driver exactly as NVIDIA's runtime does (docs/architecture.md F4): it does not
 * link libcuda, it dlopen()s libcuda.so.1, dlsym()s cuGetProcAddress_v2 and asks that for
 * every driver function, once with the legacy-stream flag and once with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM for its own _ptsz/_ptds entry points. So a
 * preloaded shim that wraps cuGetProcAddress sees the runtime's driver calls, as on a GPU.
 *
 * Semantics kept from the real runtime: a per-thread sticky last error (cudaGetLastError),
 * stream 0 = legacy default stream, cudaStreamLegacy = 0x1, cudaStreamPerThread = 0x2,
 * synchronous cudaMemcpy, blocking async copies from pageable memory and implicit syncs in
 * allocation calls (the last two are decided by the driver stand-in).
 *
 * Exports only names the real libcudart.so.13 has (cudart.map versions them like the real one).
 * Every helper is static.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#define STANDIN_DEVICE_NAME "syncspy CPU stand-in"

/* Declared by crt/device_functions.h for C++ only: what nvcc's <<<>>> calls in CUDA 13. The
 * kernel handle of the stand-ins is the host function itself (see README.md). */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
			       size_t sharedMem, cudaStream_t stream);
extern __typeof__(__cudaLaunchKernel) __cudaLaunchKernel_ptsz;
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
				     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
				       void *stream);

/* Per-thread-default-stream variants with the real prototypes (cuda_runtime_api.h declares
 * them only under CUDA_API_PER_THREAD_DEFAULT_STREAM, which renames the plain ones). */
#define PTSZ(fn) extern __typeof__(fn) fn##_ptsz
#define PTDS(fn) extern __typeof__(fn) fn##_ptds
PTSZ(cudaStreamSynchronize);
PTSZ(cudaStreamQuery);
PTSZ(cudaStreamGetFlags);
PTSZ(cudaStreamWaitEvent);
PTSZ(cudaStreamAddCallback);
PTSZ(cudaStreamBeginCapture);
PTSZ(cudaStreamEndCapture);
PTSZ(cudaEventRecord);
PTSZ(cudaEventRecordWithFlags);
PTSZ(cudaLaunchKernel);
PTSZ(cudaLaunchKernelExC);
PTSZ(cudaLaunchCooperativeKernel);
PTSZ(cudaLaunchHostFunc);
PTSZ(cudaGraphLaunch);
PTSZ(cudaGraphUpload);
PTSZ(cudaGraphInstantiateWithParams);
PTSZ(cudaMallocAsync);
PTSZ(cudaFreeAsync);
PTSZ(cudaMemcpyAsync);
PTSZ(cudaMemcpy2DAsync);
PTSZ(cudaMemcpyToSymbolAsync);
PTSZ(cudaMemcpyFromSymbolAsync);
PTSZ(cudaMemsetAsync);
PTSZ(cudaMemPrefetchAsync);
PTSZ(cudaMemset2DAsync);
PTDS(cudaMemcpy);
PTDS(cudaMemcpy2D);
PTDS(cudaMemcpyToSymbol);
PTDS(cudaMemcpyFromSymbol);
PTDS(cudaMemset);
PTDS(cudaMemset2D);

/* ================================================================== the driver, via
 * cuGetProcAddress */

/* Every driver function the runtime uses: field, name asked for, prototype (the symbol whose
 * type the pointer has). */
#define DRIVER_FUNCS(X)                                                                            \
	X(Init, "cuInit", cuInit)                                                                  \
	X(DriverGetVersion, "cuDriverGetVersion", cuDriverGetVersion)                              \
	X(DeviceGetCount, "cuDeviceGetCount", cuDeviceGetCount)                                    \
	X(DeviceGet, "cuDeviceGet", cuDeviceGet)                                                   \
	X(DeviceGetName, "cuDeviceGetName", cuDeviceGetName)                                       \
	X(DeviceTotalMem, "cuDeviceTotalMem", cuDeviceTotalMem_v2)                                 \
	X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain)            \
	X(CtxSetCurrent, "cuCtxSetCurrent", cuCtxSetCurrent)                                       \
	X(CtxSynchronize, "cuCtxSynchronize", cuCtxSynchronize)                                    \
	X(CtxSetLimit, "cuCtxSetLimit", cuCtxSetLimit)                                             \
	X(CtxGetLimit, "cuCtxGetLimit", cuCtxGetLimit)                                             \
	X(ProfilerStart, "cuProfilerStart", cuProfilerStart)                                       \
	X(ProfilerStop, "cuProfilerStop", cuProfilerStop)                                          \
	X(StreamCreate, "cuStreamCreate", cuStreamCreate)                                          \
	X(StreamCreateWithPriority, "cuStreamCreateWithPriority", cuStreamCreateWithPriority)      \
	X(StreamDestroy, "cuStreamDestroy", cuStreamDestroy_v2)                                    \
	X(StreamSynchronize, "cuStreamSynchronize", cuStreamSynchronize)                           \
	X(StreamQuery, "cuStreamQuery", cuStreamQuery)                                             \
	X(StreamGetFlags, "cuStreamGetFlags", cuStreamGetFlags)                                    \
	X(StreamWaitEvent, "cuStreamWaitEvent", cuStreamWaitEvent)                                 \
	X(StreamAddCallback, "cuStreamAddCallback", cuStreamAddCallback)                           \
	X(StreamBeginCapture, "cuStreamBeginCapture", cuStreamBeginCapture_v2)                     \
	X(StreamEndCapture, "cuStreamEndCapture", cuStreamEndCapture)                              \
	X(EventCreate, "cuEventCreate", cuEventCreate)                                             \
	X(EventDestroy, "cuEventDestroy", cuEventDestroy_v2)                                       \
	X(EventRecord, "cuEventRecord", cuEventRecord)                                             \
	X(EventRecordWithFlags, "cuEventRecordWithFlags", cuEventRecordWithFlags)                  \
	X(EventQuery, "cuEventQuery", cuEventQuery)                                                \
	X(EventSynchronize, "cuEventSynchronize", cuEventSynchronize)                              \
	X(EventElapsedTime, "cuEventElapsedTime", cuEventElapsedTime_v2)                           \
	X(LaunchKernel, "cuLaunchKernel", cuLaunchKernel)                                          \
	X(LaunchKernelEx, "cuLaunchKernelEx", cuLaunchKernelEx)                                    \
	X(LaunchCooperativeKernel, "cuLaunchCooperativeKernel", cuLaunchCooperativeKernel)         \
	X(LaunchHostFunc, "cuLaunchHostFunc", cuLaunchHostFunc)                                    \
	X(MemAlloc, "cuMemAlloc", cuMemAlloc_v2)                                                   \
	X(MemAllocPitch, "cuMemAllocPitch", cuMemAllocPitch_v2)                                    \
	X(MemFree, "cuMemFree", cuMemFree_v2)                                                      \
	X(MemAllocHost, "cuMemAllocHost", cuMemAllocHost_v2)                                       \
	X(MemHostAlloc, "cuMemHostAlloc", cuMemHostAlloc)                                          \
	X(MemFreeHost, "cuMemFreeHost", cuMemFreeHost)                                             \
	X(MemHostRegister, "cuMemHostRegister", cuMemHostRegister_v2)                              \
	X(MemHostUnregister, "cuMemHostUnregister", cuMemHostUnregister)                           \
	X(MemAllocManaged, "cuMemAllocManaged", cuMemAllocManaged)                                 \
	X(MemAllocAsync, "cuMemAllocAsync", cuMemAllocAsync)                                       \
	X(MemFreeAsync, "cuMemFreeAsync", cuMemFreeAsync)                                          \
	X(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool)         \
	X(MemPoolTrimTo, "cuMemPoolTrimTo", cuMemPoolTrimTo)                                       \
	X(MemPrefetchAsync, "cuMemPrefetchAsync", cuMemPrefetchAsync_v2)                           \
	X(PointerGetAttributes, "cuPointerGetAttributes", cuPointerGetAttributes)                  \
	X(Memcpy, "cuMemcpy", cuMemcpy)                                                            \
	X(MemcpyAsync, "cuMemcpyAsync", cuMemcpyAsync)                                             \
	X(MemcpyHtoD, "cuMemcpyHtoD", cuMemcpyHtoD_v2)                                             \
	X(MemcpyDtoH, "cuMemcpyDtoH", cuMemcpyDtoH_v2)                                             \
	X(MemcpyDtoD, "cuMemcpyDtoD", cuMemcpyDtoD_v2)                                             \
	X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2)                              \
	X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2)                              \
	X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", cuMemcpyDtoDAsync_v2)                              \
	X(Memcpy2D, "cuMemcpy2D", cuMemcpy2D_v2)                                                   \
	X(Memcpy2DAsync, "cuMemcpy2DAsync", cuMemcpy2DAsync_v2)                                    \
	X(MemcpyPeer, "cuMemcpyPeer", cuMemcpyPeer)                                                \
	X(MemcpyPeerAsync, "cuMemcpyPeerAsync", cuMemcpyPeerAsync)                                 \
	X(MemsetD8, "cuMemsetD8", cuMemsetD8_v2)                                                   \
	X(MemsetD8Async, "cuMemsetD8Async", cuMemsetD8Async)                                       \
	X(MemsetD2D8, "cuMemsetD2D8", cuMemsetD2D8_v2)                                             \
	X(MemsetD2D8Async, "cuMemsetD2D8Async", cuMemsetD2D8Async)                                 \
	X(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags)   \
	X(GraphInstantiateWithParams, "cuGraphInstantiateWithParams",                              \
	  cuGraphInstantiateWithParams)                                                            \
	X(GraphLaunch, "cuGraphLaunch", cuGraphLaunch)                                             \
	X(GraphUpload, "cuGraphUpload", cuGraphUpload)                                             \
	X(GraphDestroy, "cuGraphDestroy", cuGraphDestroy)                                          \
	X(GraphExecDestroy, "cuGraphExecDestroy", cuGraphExecDestroy)                              \
	X(LibraryLoadData, "cuLibraryLoadData", cuLibraryLoadData)                                 \
	X(LibraryLoadFromFile, "cuLibraryLoadFromFile", cuLibraryLoadFromFile)                     \
	X(LibraryGetKernel, "cuLibraryGetKernel", cuLibraryGetKernel)                              \
	X(LibraryUnload, "cuLibraryUnload", cuLibraryUnload)

struct driver {
#define DRIVER_FIELD(field, name, fn) __typeof__(&fn) field;
	DRIVER_FUNCS(DRIVER_FIELD)
#undef DRIVER_FIELD
};

/* Two views of the driver: legacy default stream (plain entry points) and per-thread default
 * stream (_ptsz/_ptds entry points), filled once by driver_load. */
static struct driver drv_legacy, drv_per_thread;
static __typeof__(&cuGetProcAddress_v2) drv_get_proc_address;
static CUcontext primary_ctx;
static bool driver_ok;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void driver_load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);

	if (!h)
		return;
	drv_get_proc_address = (__typeof__(drv_get_proc_address))dlsym(h, "cuGetProcAddress_v2");
	if (!drv_get_proc_address)
		return;

	bool all = true;
	CUdriverProcAddressQueryResult status;
#define DRIVER_RESOLVE(field, name, fn)                                                            \
	all &= drv_get_proc_address(name, (void **)&drv_legacy.field, CUDART_VERSION,              \
				    CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) == CUDA_SUCCESS;   \
	all &= drv_get_proc_address(name, (void **)&drv_per_thread.field, CUDART_VERSION,          \
				    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,                 \
				    &status) == CUDA_SUCCESS;
	DRIVER_FUNCS(DRIVER_RESOLVE)
#undef DRIVER_RESOLVE
	if (!all)
		return;

	/* the runtime's implicit initialisation: driver, primary context of device 0 */
	CUdevice dev;
	if (drv_legacy.Init(0) != CUDA_SUCCESS || drv_legacy.DeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    drv_legacy.DevicePrimaryCtxRetain(&primary_ctx, dev) != CUDA_SUCCESS)
		return;
	driver_ok = true;
}

/* The driver view for a plain (per_thread false) or _ptsz/_ptds (true) entry point, or NULL
 * when there is no usable driver. */
static const struct driver *driver(bool per_thread)
{
	pthread_once(&driver_once, driver_load);
	if (!driver_ok)
		return NULL;
	/* like the real runtime, make the primary context current in each thread it serves */
	static __thread bool ctx_set;
	if (!ctx_set) {
		drv_legacy.CtxSetCurrent(primary_ctx);
		ctx_set = true;
	}
	return per_thread ? &drv_per_thread : &drv_legacy;
}

/* ================================================================== errors */

static __thread cudaError_t tls_last_error = cudaSuccess;

/* Every exported function returns through here: a failure becomes the thread's sticky last
 * error, as in the real runtime. cudaErrorNotReady (a query's answer) is not an error. */
static cudaError_t ret(cudaError_t e)
{
	if (e != cudaSuccess && e != cudaErrorNotReady)
		tls_last_error = e;
	return e;
}

/* CUresult and cudaError_t share their numbers for every code the driver stand-in returns
 * (1 invalid value, 2 out of memory, 3 not initialized, 101 invalid device, 400 invalid
 * handle, 500 not found, 600 not ready, 712/713 host memory registration, 801 not supported,
 * 900 capture unsupported, ...). */
static cudaError_t from_cu(CUresult r)
{
	return ret((cudaError_t)r);
}

/* Defines an entry point and its per-thread-default-stream twin (_ptsz / _ptds): the same
 * prototype and the same static body, which takes first whether to use the driver functions
 * fetched for the per-thread default stream. */
#define VARIANTS(fn, fn_pt, params, body, ...)                                                     \
	cudaError_t fn params                                                                      \
	{                                                                                          \
		return body(false, __VA_ARGS__);                                                   \
	}                                                                                          \
	cudaError_t fn_pt params                                                                   \
	{                                                                                          \
		return body(true, __VA_ARGS__);                                                    \
	}

#define GET_DRIVER(d, per_thread)                                                                  \
	const struct driver *d = driver(per_thread);                                               \
	if (!d)                                                                                    \
	return ret(cudaErrorInsufficientDriver)

static const struct {
	cudaError_t code;
	const char *name;
	const char *text;
} error_table[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation is not permitted in the current state"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

/* The name or the text of error's entry, or what the real runtime answers for an unknown code. */
static const char *error_lookup(cudaError_t error, bool want_name, const char *unknown)
{
	for (size_t i = 0; i < sizeof(error_table) / sizeof(error_table[0]); i++)
		if (error_table[i].code == error)
			return want_name ? error_table[i].name : error_table[i].text;
	return unknown;
}

const char *cudaGetErrorString(cudaError_t error)
{
	return error_lookup(error, false, "unrecognized error code");
}

const char *cudaGetErrorName(cudaError_t error)
{
	return error_lookup(error, true, "cudaErrorUnknown");
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = tls_last_error;

	tls_last_error = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return tls_last_error;
}

/* ================================================================== device, versions */

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return ret(cudaErrorInvalidValue);
	*runtimeVersion = CUDART_VERSION;
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return ret(cudaErrorInvalidValue);
	const struct driver *d = driver(false);
	if (!d) {
		*driverVersion = 0; /* what the real runtime answers without a driver */
		return cudaSuccess;
	}
	return from_cu(d->DriverGetVersion(driverVersion));
}

cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	return from_cu(d->DeviceGetCount(count));
}

cudaError_t cudaSetDevice(int device)
{
	GET_DRIVER(d, false);
	return device == 0 ? cudaSuccess : ret(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *device)
{
	if (!device)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	*device = 0;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	if (!prop)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	if (device != 0)
		return ret(cudaErrorInvalidDevice);
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "%s", STANDIN_DEVICE_NAME);
	d->DeviceTotalMem(&prop->totalGlobalMem, 0);
	prop->major = 9;
	prop->minor = 0;
	prop->multiProcessorCount = 1;
	prop->warpSize = 32;
	prop->maxThreadsPerBlock = 1024;
	prop->maxThreadsDim[0] = 1024;
	prop->maxThreadsDim[1] = 1024;
	prop->maxThreadsDim[2] = 64;
	prop->maxGridSize[0] = 0x7fffffff;
	prop->maxGridSize[1] = 65535;
	prop->maxGridSize[2] = 65535;
	prop->sharedMemPerBlock = 48 << 10;
	prop->regsPerBlock = 65536;
	prop->memPitch = 0x7fffffff;
	prop->totalConstMem = 64 << 10;
	prop->textureAlignment = 512;
	prop->asyncEngineCount = 2;
	prop->unifiedAddressing = 1;
	prop->managedMemory = 1;
	prop->concurrentKernels = 1;
	prop->canMapHostMemory = 1;
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	GET_DRIVER(d, false);
	return from_cu(d->CtxSynchronize());
}

/* cudaLimit and CUlimit number the limits alike (cudaLimitStackSize = CU_LIMIT_STACK_SIZE = 0). */
cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
	GET_DRIVER(d, false);
	return from_cu(d->CtxSetLimit((CUlimit)limit, value));
}

cudaError_t cudaDeviceGetLimit(size_t *value, enum cudaLimit limit)
{
	GET_DRIVER(d, false);
	return from_cu(d->CtxGetLimit(value, (CUlimit)limit));
}

/* As the real runtime: the profiler API is the driver's, for the current context. */
cudaError_t cudaProfilerStart(void)
{
	GET_DRIVER(d, false);
	return from_cu(d->ProfilerStart());
}

cudaError_t cudaProfilerStop(void)
{
	GET_DRIVER(d, false);
	return from_cu(d->ProfilerStop());
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
					     unsigned int cudaVersion, unsigned long long flags,
					     enum cudaDriverEntryPointQueryResult *driverStatus)
{
	CUdriverProcAddressQueryResult status;

	if (!symbol || !funcPtr)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	cuuint64_t cu_flags =
	    flags == cudaEnableDefault ? CU_GET_PROC_ADDRESS_LEGACY_STREAM : (cuuint64_t)flags;
	CUresult r = drv_get_proc_address(symbol, funcPtr, (int)cudaVersion, cu_flags, &status);
	if (driverStatus)
		*driverStatus = (enum cudaDriverEntryPointQueryResult)status;
	if (r == CUDA_ERROR_NOT_FOUND)
		return driverStatus ? cudaSuccess : ret(cudaErrorSymbolNotFound);
	return from_cu(r);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
				    enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags,
						driverStatus);
}

/* ================================================================== streams */

/* The three creators share one path: the driver's stream with a priority (0: the default). */
static cudaError_t create_stream(cudaStream_t *pStream, unsigned int flags, int priority)
{
	if (!pStream)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	return from_cu(d->StreamCreateWithPriority(pStream, flags, priority));
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return create_stream(pStream, CU_STREAM_DEFAULT, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	return create_stream(pStream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
	return create_stream(pStream, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	GET_DRIVER(d, false);
	return from_cu(d->StreamDestroy(stream));
}

static cudaError_t stream_synchronize(bool per_thread, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->StreamSynchronize(stream));
}

VARIANTS(cudaStreamSynchronize, cudaStreamSynchronize_ptsz, (cudaStream_t stream),
	 stream_synchronize, stream)

static cudaError_t stream_query(bool per_thread, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->StreamQuery(stream));
}

VARIANTS(cudaStreamQuery, cudaStreamQuery_ptsz, (cudaStream_t stream), stream_query, stream)

static cudaError_t stream_get_flags(bool per_thread, cudaStream_t stream, unsigned int *flags)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->StreamGetFlags(stream, flags));
}

VARIANTS(cudaStreamGetFlags, cudaStreamGetFlags_ptsz, (cudaStream_t hStream, unsigned int *flags),
	 stream_get_flags, hStream, flags)

static cudaError_t stream_wait_event(bool per_thread, cudaStream_t stream, cudaEvent_t event,
				     unsigned int flags)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->StreamWaitEvent(stream, event, flags));
}

VARIANTS(cudaStreamWaitEvent, cudaStreamWaitEvent_ptsz,
	 (cudaStream_t stream, cudaEvent_t event, unsigned int flags), stream_wait_event, stream,
	 event, flags)

static cudaError_t stream_add_callback(bool per_thread, cudaStream_t stream,
				       cudaStreamCallback_t callback, void *userData,
				       unsigned int flags)
{
	GET_DRIVER(d, per_thread);
	/* same ABI: (stream, status enum, user data) */
	return from_cu(
	    d->StreamAddCallback(stream, (CUstreamCallback)(void *)callback, userData, flags));
}

VARIANTS(cudaStreamAddCallback, cudaStreamAddCallback_ptsz,
	 (cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags),
	 stream_add_callback, stream, callback, userData, flags)

/* ================================================================== events */

/* A helper rather than one API calling the other: calls inside the library stay internal, as in
 * the real runtime (an exported call would go through the PLT, to the shim). */
static cudaError_t create_event(cudaEvent_t *event, unsigned int flags)
{
	if (!event)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	return from_cu(d->EventCreate(event, flags)); /* same bits as CU_EVENT_* */
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return create_event(event, CU_EVENT_DEFAULT);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	return create_event(event, flags);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	GET_DRIVER(d, false);
	return from_cu(d->EventDestroy(event));
}

static cudaError_t event_record(bool per_thread, cudaEvent_t event, cudaStream_t stream,
				unsigned int flags)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->EventRecordWithFlags(event, stream, flags));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	GET_DRIVER(d, false);
	return from_cu(d->EventRecord(event, stream));
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	GET_DRIVER(d, true);
	return from_cu(d->EventRecord(event, stream));
}

VARIANTS(cudaEventRecordWithFlags, cudaEventRecordWithFlags_ptsz,
	 (cudaEvent_t event, cudaStream_t stream, unsigned int flags), event_record, event, stream,
	 flags)

cudaError_t cudaEventQuery(cudaEvent_t event)
{
	GET_DRIVER(d, false);
	return from_cu(d->EventQuery(event));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	GET_DRIVER(d, false);
	return from_cu(d->EventSynchronize(event));
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	GET_DRIVER(d, false);
	return from_cu(d->EventElapsedTime(ms, start, end));
}

/* ================================================================== launches */

static cudaError_t launch_kernel(bool per_thread, const void *func, dim3 grid, dim3 block,
				 void **args, size_t sharedMem, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	if (!func)
		return ret(cudaErrorInvalidDeviceFunction);
	return from_cu(d->LaunchKernel((CUfunction)func, grid.x, grid.y, grid.z, block.x, block.y,
				       block.z, (unsigned int)sharedMem, stream, args, NULL));
}

VARIANTS(cudaLaunchKernel, cudaLaunchKernel_ptsz,
	 (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
	  cudaStream_t stream),
	 launch_kernel, func, gridDim, blockDim, args, sharedMem, stream)

VARIANTS(__cudaLaunchKernel, __cudaLaunchKernel_ptsz,
	 (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
	  cudaStream_t stream),
	 launch_kernel, (const void *)kernel, gridDim, blockDim, args, sharedMem, stream)

/* nvcc's <<<g, b, shm, s>>> pushes the launch configuration from the launching line, then calls
 * the kernel's host stub, which pops it and launches (crt/host_runtime.h). The real runtime
 * keeps a per-thread stack of configurations; so does this one (a launch inside the arguments
 * of another nests). Push returns 0 on success, as the generated `push(...) ? (void)0 :
 * kernel(args)` expects. */
#define CALL_CONFIGURATIONS 8
static __thread struct call_configuration {
	dim3 grid, block;
	size_t shared_mem;
	cudaStream_t stream;
} call_configurations[CALL_CONFIGURATIONS];
static __thread int call_configuration_count;

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
				     struct CUstream_st *stream)
{
	if (call_configuration_count == CALL_CONFIGURATIONS)
		return 1;
	call_configurations[call_configuration_count++] =
	    (struct call_configuration){gridDim, blockDim, sharedMem, stream};
	return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
				       void *stream)
{
	if (call_configuration_count == 0)
		return ret(cudaErrorMissingConfiguration);
	const struct call_configuration *c = &call_configurations[--call_configuration_count];
	*gridDim = c->grid;
	*blockDim = c->block;
	*sharedMem = c->shared_mem;
	*(cudaStream_t *)stream = c->stream;
	return cudaSuccess;
}

static cudaError_t launch_kernel_ex(bool per_thread, const cudaLaunchConfig_t *config,
				    const void *func, void **args)
{
	if (!config)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, per_thread);
	if (!func)
		return ret(cudaErrorInvalidDeviceFunction);
	/* launch attributes (clusters, priorities...) change nothing on a CPU: not passed on */
	CUlaunchConfig cfg = {
	    .gridDimX = config->gridDim.x,
	    .gridDimY = config->gridDim.y,
	    .gridDimZ = config->gridDim.z,
	    .blockDimX = config->blockDim.x,
	    .blockDimY = config->blockDim.y,
	    .blockDimZ = config->blockDim.z,
	    .sharedMemBytes = (unsigned int)config->dynamicSmemBytes,
	    .hStream = config->stream,
	};
	return from_cu(d->LaunchKernelEx(&cfg, (CUfunction)func, args, NULL));
}

VARIANTS(cudaLaunchKernelExC, cudaLaunchKernelExC_ptsz,
	 (const cudaLaunchConfig_t *config, const void *func, void **args), launch_kernel_ex,
	 config, func, args)

static cudaError_t launch_cooperative(bool per_thread, const void *func, dim3 grid, dim3 block,
				      void **args, size_t sharedMem, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	if (!func)
		return ret(cudaErrorInvalidDeviceFunction);
	return from_cu(d->LaunchCooperativeKernel((CUfunction)func, grid.x, grid.y, grid.z, block.x,
						  block.y, block.z, (unsigned int)sharedMem, stream,
						  args));
}

VARIANTS(cudaLaunchCooperativeKernel, cudaLaunchCooperativeKernel_ptsz,
	 (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
	  cudaStream_t stream),
	 launch_cooperative, func, gridDim, blockDim, args, sharedMem, stream)

static cudaError_t launch_host_func(bool per_thread, cudaStream_t stream, cudaHostFn_t fn,
				    void *userData)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->LaunchHostFunc(stream, fn, userData));
}

VARIANTS(cudaLaunchHostFunc, cudaLaunchHostFunc_ptsz,
	 (cudaStream_t stream, cudaHostFn_t fn, void *userData), launch_host_func, stream, fn,
	 userData)

/* ================================================================== memory */

static CUdeviceptr dptr(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	CUdeviceptr p;

	if (!devPtr)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	if (size == 0) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	CUresult r = d->MemAlloc(&p, size);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return from_cu(r);
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	CUdeviceptr p;

	if (!devPtr || !pitch)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	CUresult r = d->MemAllocPitch(&p, pitch, width, height, 4);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return from_cu(r);
}

cudaError_t cudaFree(void *devPtr)
{
	GET_DRIVER(d, false);
	if (!devPtr)
		return cudaSuccess;
	/* waits for all streams first (cuMemFree's implicit sync), even for cudaMallocAsync
	 * memory: simpler, and close enough to the real behaviour */
	return from_cu(d->MemFree(dptr(devPtr)));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	if (!ptr)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	return from_cu(d->MemAllocHost(ptr, size));
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	if (!pHost)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	return from_cu(d->MemHostAlloc(pHost, size, flags)); /* same bits as CU_MEMHOSTALLOC_* */
}

cudaError_t cudaFreeHost(void *ptr)
{
	GET_DRIVER(d, false);
	if (!ptr)
		return cudaSuccess;
	return from_cu(d->MemFreeHost(ptr));
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	GET_DRIVER(d, false);
	return from_cu(d->MemHostRegister(ptr, size, flags));
}

cudaError_t cudaHostUnregister(void *ptr)
{
	GET_DRIVER(d, false);
	return from_cu(d->MemHostUnregister(ptr));
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	CUdeviceptr p;

	if (!devPtr)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	CUresult r = d->MemAllocManaged(&p, size, flags);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return from_cu(r);
}

static cudaError_t malloc_async(bool per_thread, void **devPtr, size_t size, cudaStream_t stream)
{
	CUdeviceptr p;

	if (!devPtr)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, per_thread);
	CUresult r = d->MemAllocAsync(&p, size, stream);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return from_cu(r);
}

VARIANTS(cudaMallocAsync, cudaMallocAsync_ptsz, (void **devPtr, size_t size, cudaStream_t hStream),
	 malloc_async, devPtr, size, hStream)

static cudaError_t free_async(bool per_thread, void *devPtr, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->MemFreeAsync(dptr(devPtr), stream));
}

VARIANTS(cudaFreeAsync, cudaFreeAsync_ptsz, (void *devPtr, cudaStream_t hStream), free_async,
	 devPtr, hStream)

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	GET_DRIVER(d, false);
	return from_cu(d->DeviceGetDefaultMemPool((CUmemoryPool *)memPool, device));
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	GET_DRIVER(d, false);
	return from_cu(d->MemPoolTrimTo((CUmemoryPool)memPool, minBytesToKeep));
}

/* Memory type of p from the driver's pointer attributes (0 = unregistered / pageable). */
static enum cudaMemoryType memory_type(const struct driver *d, const void *p)
{
	CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					CU_POINTER_ATTRIBUTE_IS_MANAGED};
	unsigned int type = 0;
	int managed = 0;
	void *data[2] = {&type, &managed};

	if (d->PointerGetAttributes(2, attrs, data, dptr(p)) != CUDA_SUCCESS)
		return cudaMemoryTypeUnregistered;
	if (managed)
		return cudaMemoryTypeManaged;
	if (type == CU_MEMORYTYPE_DEVICE)
		return cudaMemoryTypeDevice;
	if (type == CU_MEMORYTYPE_HOST)
		return cudaMemoryTypeHost;
	return cudaMemoryTypeUnregistered;
}

static bool is_device_memory(const struct driver *d, const void *p)
{
	enum cudaMemoryType t = memory_type(d, p);

	return t == cudaMemoryTypeDevice || t == cudaMemoryTypeManaged;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
	if (!attributes)
		return ret(cudaErrorInvalidValue);
	GET_DRIVER(d, false);
	memset(attributes, 0, sizeof(*attributes));
	attributes->type = memory_type(d, ptr);
	switch (attributes->type) {
	case cudaMemoryTypeUnregistered:
		/* CUDA 11+: not an error for plain host memory */
		attributes->device = -2;
		break;
	case cudaMemoryTypeHost:
	case cudaMemoryTypeManaged:
		attributes->devicePointer = (void *)ptr;
		attributes->hostPointer = (void *)ptr;
		break;
	case cudaMemoryTypeDevice:
		attributes->devicePointer = (void *)ptr;
		break;
	}
	return cudaSuccess;
}

/* ================================================================== copies */

/* One 1D copy of the given kind. cudaMemcpyHostToHost and cudaMemcpyDefault go through the
 * driver's unified cuMemcpy(Async), which tells the sides apart from its registry. */
static cudaError_t copy(const struct driver *d, void *dst, const void *src, size_t count,
			enum cudaMemcpyKind kind, bool async, cudaStream_t stream)
{
	CUresult r;

	switch (kind) {
	case cudaMemcpyHostToDevice:
		r = async ? d->MemcpyHtoDAsync(dptr(dst), src, count, stream)
			  : d->MemcpyHtoD(dptr(dst), src, count);
		break;
	case cudaMemcpyDeviceToHost:
		r = async ? d->MemcpyDtoHAsync(dst, dptr(src), count, stream)
			  : d->MemcpyDtoH(dst, dptr(src), count);
		break;
	case cudaMemcpyDeviceToDevice:
		r = async ? d->MemcpyDtoDAsync(dptr(dst), dptr(src), count, stream)
			  : d->MemcpyDtoD(dptr(dst), dptr(src), count);
		break;
	case cudaMemcpyHostToHost:
	case cudaMemcpyDefault:
		r = async ? d->MemcpyAsync(dptr(dst), dptr(src), count, stream)
			  : d->Memcpy(dptr(dst), dptr(src), count);
		break;
	default:
		return ret(cudaErrorInvalidMemcpyDirection);
	}
	return from_cu(r);
}

static cudaError_t memcpy_any(bool per_thread, void *dst, const void *src, size_t count,
			      enum cudaMemcpyKind kind, bool async, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	return copy(d, dst, src, count, kind, async, stream);
}

VARIANTS(cudaMemcpy, cudaMemcpy_ptds,
	 (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind), memcpy_any, dst, src,
	 count, kind, false, NULL)

VARIANTS(cudaMemcpyAsync, cudaMemcpyAsync_ptsz,
	 (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),
	 memcpy_any, dst, src, count, kind, true, stream)

/* A symbol is the address of a host variable standing for a __device__ one: device memory.
 * With cudaMemcpyDefault the other side's kind decides the direction. */
static cudaError_t to_symbol(bool per_thread, const void *symbol, const void *src, size_t count,
			     size_t offset, enum cudaMemcpyKind kind, bool async,
			     cudaStream_t stream)
{
	if (!symbol)
		return ret(cudaErrorInvalidSymbol);
	GET_DRIVER(d, per_thread);
	if (kind == cudaMemcpyDefault)
		kind = is_device_memory(d, src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
	if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice)
		return ret(cudaErrorInvalidMemcpyDirection);
	return copy(d, (char *)symbol + offset, src, count, kind, async, stream);
}

static cudaError_t from_symbol(bool per_thread, void *dst, const void *symbol, size_t count,
			       size_t offset, enum cudaMemcpyKind kind, bool async,
			       cudaStream_t stream)
{
	if (!symbol)
		return ret(cudaErrorInvalidSymbol);
	GET_DRIVER(d, per_thread);
	if (kind == cudaMemcpyDefault)
		kind = is_device_memory(d, dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
	if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice)
		return ret(cudaErrorInvalidMemcpyDirection);
	return copy(d, dst, (const char *)symbol + offset, count, kind, async, stream);
}

VARIANTS(cudaMemcpyToSymbol, cudaMemcpyToSymbol_ptds,
	 (const void *symbol, const void *src, size_t count, size_t offset,
	  enum cudaMemcpyKind kind),
	 to_symbol, symbol, src, count, offset, kind, false, NULL)

VARIANTS(cudaMemcpyToSymbolAsync, cudaMemcpyToSymbolAsync_ptsz,
	 (const void *symbol, const void *src, size_t count, size_t offset,
	  enum cudaMemcpyKind kind, cudaStream_t stream),
	 to_symbol, symbol, src, count, offset, kind, true, stream)

VARIANTS(cudaMemcpyFromSymbol, cudaMemcpyFromSymbol_ptds,
	 (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind),
	 from_symbol, dst, symbol, count, offset, kind, false, NULL)

VARIANTS(cudaMemcpyFromSymbolAsync, cudaMemcpyFromSymbolAsync_ptsz,
	 (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind,
	  cudaStream_t stream),
	 from_symbol, dst, symbol, count, offset, kind, true, stream)

static cudaError_t memcpy2d(bool per_thread, void *dst, size_t dpitch, const void *src,
			    size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
			    bool async, cudaStream_t stream)
{
	CUDA_MEMCPY2D p = {0};
	bool src_host, dst_host;

	GET_DRIVER(d, per_thread);
	if (width > dpitch || width > spitch)
		return ret(cudaErrorInvalidPitchValue);
	switch (kind) {
	case cudaMemcpyHostToHost:
		src_host = dst_host = true;
		break;
	case cudaMemcpyHostToDevice:
		src_host = true;
		dst_host = false;
		break;
	case cudaMemcpyDeviceToHost:
		src_host = false;
		dst_host = true;
		break;
	case cudaMemcpyDeviceToDevice:
		src_host = dst_host = false;
		break;
	case cudaMemcpyDefault:
		p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
		p.srcDevice = dptr(src);
		p.dstDevice = dptr(dst);
		goto submit;
	default:
		return ret(cudaErrorInvalidMemcpyDirection);
	}
	p.srcMemoryType = src_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	p.srcHost = src;
	p.srcDevice = dptr(src);
	p.dstMemoryType = dst_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	p.dstHost = dst;
	p.dstDevice = dptr(dst);
submit:
	p.srcPitch = spitch;
	p.dstPitch = dpitch;
	p.WidthInBytes = width;
	p.Height = height;
	return from_cu(async ? d->Memcpy2DAsync(&p, stream) : d->Memcpy2D(&p));
}

VARIANTS(cudaMemcpy2D, cudaMemcpy2D_ptds,
	 (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
	  enum cudaMemcpyKind kind),
	 memcpy2d, dst, dpitch, src, spitch, width, height, kind, false, NULL)

VARIANTS(cudaMemcpy2DAsync, cudaMemcpy2DAsync_ptsz,
	 (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
	  enum cudaMemcpyKind kind, cudaStream_t stream),
	 memcpy2d, dst, dpitch, src, spitch, width, height, kind, true, stream)

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
	GET_DRIVER(d, false);
	if (dstDevice != 0 || srcDevice != 0)
		return ret(cudaErrorInvalidDevice);
	return from_cu(d->MemcpyPeer(dptr(dst), primary_ctx, dptr(src), primary_ctx, count));
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
				size_t count, cudaStream_t stream)
{
	GET_DRIVER(d, false);
	if (dstDevice != 0 || srcDevice != 0)
		return ret(cudaErrorInvalidDevice);
	return from_cu(
	    d->MemcpyPeerAsync(dptr(dst), primary_ctx, dptr(src), primary_ctx, count, stream));
}

/* ================================================================== managed memory */

static cudaError_t mem_prefetch(bool per_thread, const void *devPtr, size_t count,
				struct cudaMemLocation location, unsigned int flags,
				cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	CUmemLocation where = {(CUmemLocationType)location.type, location.id};
	return from_cu(d->MemPrefetchAsync(dptr(devPtr), count, where, flags, stream));
}

VARIANTS(cudaMemPrefetchAsync, cudaMemPrefetchAsync_ptsz,
	 (const void *devPtr, size_t count, struct cudaMemLocation location, unsigned int flags,
	  cudaStream_t stream),
	 mem_prefetch, devPtr, count, location, flags, stream)

/* ================================================================== memsets */

static cudaError_t memset_any(bool per_thread, void *devPtr, int value, size_t count, bool async,
			      cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	return from_cu(async ? d->MemsetD8Async(dptr(devPtr), (unsigned char)value, count, stream)
			     : d->MemsetD8(dptr(devPtr), (unsigned char)value, count));
}

VARIANTS(cudaMemset, cudaMemset_ptds, (void *devPtr, int value, size_t count), memset_any, devPtr,
	 value, count, false, NULL)

VARIANTS(cudaMemsetAsync, cudaMemsetAsync_ptsz,
	 (void *devPtr, int value, size_t count, cudaStream_t stream), memset_any, devPtr, value,
	 count, true, stream)

static cudaError_t memset2d(bool per_thread, void *devPtr, size_t pitch, int value, size_t width,
			    size_t height, bool async, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	unsigned char v = (unsigned char)value;
	return from_cu(async ? d->MemsetD2D8Async(dptr(devPtr), pitch, v, width, height, stream)
			     : d->MemsetD2D8(dptr(devPtr), pitch, v, width, height));
}

VARIANTS(cudaMemset2D, cudaMemset2D_ptds,
	 (void *devPtr, size_t pitch, int value, size_t width, size_t height), memset2d, devPtr,
	 pitch, value, width, height, false, NULL)

VARIANTS(cudaMemset2DAsync, cudaMemset2DAsync_ptsz,
	 (void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream),
	 memset2d, devPtr, pitch, value, width, height, true, stream)

/* ================================================================== capture and graphs */

static cudaError_t begin_capture(bool per_thread, cudaStream_t stream,
				 enum cudaStreamCaptureMode mode)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->StreamBeginCapture(stream, (CUstreamCaptureMode)mode));
}

VARIANTS(cudaStreamBeginCapture, cudaStreamBeginCapture_ptsz,
	 (cudaStream_t stream, enum cudaStreamCaptureMode mode), begin_capture, stream, mode)

static cudaError_t end_capture(bool per_thread, cudaStream_t stream, cudaGraph_t *pGraph)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->StreamEndCapture(stream, pGraph));
}

VARIANTS(cudaStreamEndCapture, cudaStreamEndCapture_ptsz,
	 (cudaStream_t stream, cudaGraph_t *pGraph), end_capture, stream, pGraph)

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
				 unsigned long long flags)
{
	GET_DRIVER(d, false);
	return from_cu(d->GraphInstantiateWithFlags(pGraphExec, graph, flags));
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					  unsigned long long flags)
{
	return cudaGraphInstantiate(pGraphExec, graph, flags);
}

/* The runtime's parameters are the driver's, field by field; the upload stream is a _ptsz
 * variant's only stream argument, hence the two entry points. */
static cudaError_t graph_instantiate_params(bool per_thread, cudaGraphExec_t *pGraphExec,
					    cudaGraph_t graph, cudaGraphInstantiateParams *params)
{
	GET_DRIVER(d, per_thread);
	if (!params)
		return ret(cudaErrorInvalidValue);
	CUDA_GRAPH_INSTANTIATE_PARAMS p = {.flags = params->flags,
					   .hUploadStream = params->uploadStream};
	cudaError_t rc = from_cu(d->GraphInstantiateWithParams(pGraphExec, graph, &p));
	params->errNode_out = p.hErrNode_out;
	params->result_out = (cudaGraphInstantiateResult)p.result_out;
	return rc;
}

VARIANTS(cudaGraphInstantiateWithParams, cudaGraphInstantiateWithParams_ptsz,
	 (cudaGraphExec_t * pGraphExec, cudaGraph_t graph,
	  cudaGraphInstantiateParams *instantiateParams),
	 graph_instantiate_params, pGraphExec, graph, instantiateParams)

static cudaError_t graph_launch(bool per_thread, cudaGraphExec_t exec, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->GraphLaunch(exec, stream));
}

VARIANTS(cudaGraphLaunch, cudaGraphLaunch_ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream),
	 graph_launch, graphExec, stream)

static cudaError_t graph_upload(bool per_thread, cudaGraphExec_t exec, cudaStream_t stream)
{
	GET_DRIVER(d, per_thread);
	return from_cu(d->GraphUpload(exec, stream));
}

VARIANTS(cudaGraphUpload, cudaGraphUpload_ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream),
	 graph_upload, graphExec, stream)

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	GET_DRIVER(d, false);
	return from_cu(d->GraphDestroy(graph));
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	GET_DRIVER(d, false);
	return from_cu(d->GraphExecDestroy(graphExec));
}

/* ================================================================== libraries */

/* The runtime's libraries are the driver's (cudaLibrary_t is a CUlibrary, cudaKernel_t a
 * CUkernel); the options' enums are passed through as the driver's. */
cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code,
				enum cudaJitOption *jitOptions, void **jitOptionsValues,
				unsigned int numJitOptions, enum cudaLibraryOption *libraryOptions,
				void **libraryOptionValues, unsigned int numLibraryOptions)
{
	GET_DRIVER(d, false);
	return from_cu(d->LibraryLoadData(
	    library, code, (CUjit_option *)jitOptions, jitOptionsValues, numJitOptions,
	    (CUlibraryOption *)libraryOptions, libraryOptionValues, numLibraryOptions));
}

cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t *library, const char *fileName,
				    enum cudaJitOption *jitOptions, void **jitOptionsValues,
				    unsigned int numJitOptions,
				    enum cudaLibraryOption *libraryOptions,
				    void **libraryOptionValues, unsigned int numLibraryOptions)
{
	GET_DRIVER(d, false);
	return from_cu(d->LibraryLoadFromFile(
	    library, fileName, (CUjit_option *)jitOptions, jitOptionsValues, numJitOptions,
	    (CUlibraryOption *)libraryOptions, libraryOptionValues, numLibraryOptions));
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library, const char *name)
{
	GET_DRIVER(d, false);
	return from_cu(d->LibraryGetKernel(pKernel, library, name));
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library)
{
	GET_DRIVER(d, false);
	return from_cu(d->LibraryUnload(library));
}
