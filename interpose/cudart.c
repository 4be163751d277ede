/*
 * interpose/cudart.c: the CUDA runtime module. Generates one wrapper per line of
 * cudart_table.h (plus its _ptsz/_ptds twin) and holds the helpers that turn a call's arguments
 * into a record: stream, event, bytes, copy direction and host memory kind.
 *
 * The wrapper body and the vocabulary shared with the driver layer are in wrapper.h.
 */
#include <errno.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "wrapper.h"

/* Not in the C headers (crt/device_functions.h declares them for C++ only): what nvcc's <<<>>>
 * launches call in CUDA 13 (docs/architecture.md F2). */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
			       size_t sharedMem, cudaStream_t stream);

/* ------------------------------------------------------------------ describing a call */

uint64_t ss_stream_id(const void *stream, int per_thread_variant)
{
	uintptr_t handle = (uintptr_t)stream;
	if (handle ==
	    0) /* SCHEMA-4: 0 is the legacy stream, or the per-thread one in _ptsz/_ptds */
		return per_thread_variant ? SS_STREAM_PER_THREAD : SS_STREAM_LEGACY;
	return handle; /* cudaStreamLegacy (0x1) and cudaStreamPerThread (0x2) map to themselves */
}

/* The driver's view of a pointer, for memory the shim has not seen allocated. The driver is
 * asked first: cuPointerGetAttributes answers for any pointer (zeros for pageable memory) and
 * has no sticky error to disturb. Without a loaded driver, the runtime is asked, which must not
 * disturb the program's pending error (cudaGetLastError): it stays out when one is pending and
 * clears only an error it caused itself. */
static int query_memkind_driver(const void *ptr)
{
	static CUresult (*_Atomic get_attributes)(unsigned, CUpointer_attribute *, void **,
						  CUdeviceptr);
	if (!get_attributes)
		get_attributes = ss_resolve_helper(SS_LAYER_DRIVER, "cuPointerGetAttributes");
	if (!get_attributes)
		return SS_MEM_UNKNOWN;
	CUpointer_attribute which[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					CU_POINTER_ATTRIBUTE_IS_MANAGED};
	unsigned int type = 0, managed = 0;
	void *values[2] = {&type, &managed};
	if (get_attributes(2, which, values, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS)
		return SS_MEM_UNKNOWN;
	if (managed)
		return SS_MEM_MANAGED;
	switch (type) {
	case 0:
		return SS_MEM_PAGEABLE;
	case CU_MEMORYTYPE_HOST:
		return SS_MEM_PINNED;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_ARRAY:
		return SS_MEM_DEVICE;
	}
	return SS_MEM_UNKNOWN;
}

static int query_memkind_runtime(const void *ptr)
{
	static cudaError_t (*_Atomic get_attributes)(struct cudaPointerAttributes *, const void *);
	static cudaError_t (*_Atomic peek_error)(void);
	static cudaError_t (*_Atomic take_error)(void);
	if (!get_attributes) {
		peek_error = ss_resolve_helper(SS_LAYER_RUNTIME, "cudaPeekAtLastError");
		take_error = ss_resolve_helper(SS_LAYER_RUNTIME, "cudaGetLastError");
		get_attributes = ss_resolve_helper(SS_LAYER_RUNTIME, "cudaPointerGetAttributes");
	}
	if (!get_attributes || !peek_error || !take_error)
		return SS_MEM_UNKNOWN;
	struct cudaPointerAttributes attributes;
	cudaError_t status = peek_error();
	if (status == cudaSuccess) {
		status = get_attributes(&attributes, ptr);
		if (status != cudaSuccess)
			take_error();
	}
	if (status != cudaSuccess)
		return SS_MEM_UNKNOWN;
	switch (attributes.type) {
	case cudaMemoryTypeUnregistered:
		return SS_MEM_PAGEABLE;
	case cudaMemoryTypeHost:
		return SS_MEM_PINNED;
	case cudaMemoryTypeDevice:
		return SS_MEM_DEVICE;
	case cudaMemoryTypeManaged:
		return SS_MEM_MANAGED;
	}
	return SS_MEM_UNKNOWN;
}

static int query_memkind(const void *ptr)
{
	int saved_errno = errno; /* SHIM-2 */
	int kind = query_memkind_driver(ptr);
	if (kind == SS_MEM_UNKNOWN)
		kind = query_memkind_runtime(ptr);
	errno = saved_errno;
	return kind;
}

/* Memory kind of ptr; NULL stands for a device-side object (a symbol or an array). */
static int memkind(const void *ptr)
{
	if (ptr == NULL)
		return SS_MEM_DEVICE;
	int kind = ss_range_lookup(ptr) & ~SS_RANGE_ASYNC;
	return kind ? kind : query_memkind(ptr);
}

static inline int is_host_kind(int kind)
{
	return kind == SS_MEM_PAGEABLE || kind == SS_MEM_PINNED;
}

/* A copy: direction, bytes, host memory kind, and the class an async copy really has: S5 when
 * the pageable host side turns it into a staged, blocking one; S4 from host to host, which the
 * runtime runs "fully synchronous with respect to the host" (the runtime API's notes on
 * synchronization), after the stream's earlier work. dst/src NULL = device side (symbol,
 * array). */
void ss_describe_copy(struct ss_rec *rec, const void *dst, const void *src, uint64_t bytes,
		      int kind, int async)
{
	const void *host = NULL;
	rec->bytes = bytes;
	switch (kind) {
	case cudaMemcpyHostToDevice:
		rec->dir = SS_DIR_H2D;
		host = src;
		break;
	case cudaMemcpyDeviceToHost:
		rec->dir = SS_DIR_D2H;
		host = dst;
		break;
	case cudaMemcpyDeviceToDevice:
		rec->dir = SS_DIR_D2D;
		break;
	case cudaMemcpyHostToHost:
		rec->dir = SS_DIR_H2H;
		host = src;
		break;
	case cudaMemcpyDefault:
	default: {
		int src_kind = memkind(src), dst_kind = memkind(dst);
		int src_host = is_host_kind(src_kind), dst_host = is_host_kind(dst_kind);
		if (src_host && dst_host) {
			rec->dir = SS_DIR_H2H;
			rec->host_mem = src_kind == SS_MEM_PAGEABLE ? src_kind : dst_kind;
		} else if (src_host) {
			rec->dir = SS_DIR_H2D;
			rec->host_mem = src_kind;
		} else if (dst_host) {
			rec->dir = SS_DIR_D2H;
			rec->host_mem = dst_kind;
		} else {
			rec->dir = SS_DIR_D2D;
			if (src_kind == SS_MEM_UNKNOWN || dst_kind == SS_MEM_UNKNOWN)
				rec->host_mem = SS_MEM_UNKNOWN;
		}
		goto classify;
	}
	}
	if (host)
		rec->host_mem = memkind(host);
classify:
	if (async && rec->dir == SS_DIR_H2H)
		rec->cls = SS_S4;
	else if (async && rec->host_mem == SS_MEM_PAGEABLE)
		rec->cls = SS_S5;
}

static void describe_copy3d(struct ss_rec *rec, const struct cudaMemcpy3DParms *p, int async)
{
	if (p == NULL)
		return;
	ss_describe_copy(
	    rec, p->dstArray ? NULL : p->dstPtr.ptr, p->srcArray ? NULL : p->srcPtr.ptr,
	    (uint64_t)p->extent.width * p->extent.height * p->extent.depth, p->kind, async);
}

void ss_describe_batch(struct ss_rec *rec, const void *dst0, const void *src0, const size_t *sizes,
		       size_t count)
{
	if (!sizes || count == 0)
		return;
	uint64_t total = 0;
	for (size_t i = 0; i < count; i++)
		total += sizes[i];
	ss_describe_copy(rec, dst0, src0, total, cudaMemcpyDefault, 1);
}

/* Non-async memsets to pinned or managed memory are implicit syncs (S6). */
void ss_describe_memset(struct ss_rec *rec, const void *ptr, uint64_t bytes, int async)
{
	rec->dir = SS_DIR_MEMSET;
	rec->bytes = bytes;
	rec->host_mem = memkind(ptr);
	if (!async && (rec->host_mem == SS_MEM_PINNED || rec->host_mem == SS_MEM_MANAGED))
		rec->cls = SS_S6;
}

static uint64_t ss_sum_sizes(const size_t *sizes, size_t count)
{
	uint64_t total = 0;
	for (size_t i = 0; sizes && i < count; i++)
		total += sizes[i];
	return total;
}

/* ------------------------------------------------------------------ the table's vocabulary */

#define COPY(dst, src, n, kind, async) ss_describe_copy(&rec, dst, src, n, kind, async);
#define COPY3D(p, async)	       describe_copy3d(&rec, p, async);
#define COPY_SYMBOL(host, n, kind, to_device, async)                                               \
	ss_describe_copy(&rec, (to_device) ? NULL : (host), (to_device) ? (host) : NULL, n, kind,  \
			 async);
#define COPY_PEER(n)                                                                               \
	rec.dir = SS_DIR_PEER;                                                                     \
	rec.bytes = (n);
#define COPY_D2D(n)                                                                                \
	rec.dir = SS_DIR_D2D;                                                                      \
	rec.bytes = (n);
#define COPY_BATCH(dsts, srcs, sizes, count)                                                       \
	if ((dsts) && (srcs))                                                                      \
		ss_describe_batch(&rec, (dsts)[0], (srcs)[0], sizes, count);
#define MEMSET(ptr, n, async)		     ss_describe_memset(&rec, ptr, n, async);

/* ------------------------------------------------------------------ the wrappers */

#define DEFINE_WRAPPERS(name, variant, cls, params, args, pre, post)                               \
	SS_DEFINE_WRAPPERS(cudaError_t, cudaErrorSharedObjectSymbolNotFound, name, variant, cls,   \
			   params, args, pre, post)

SS_CUDART_FUNCS(DEFINE_WRAPPERS)

/* Each wrapper by its API, for dlsym to hand out to callers that look the runtime up by name
 * (driver.c). */
#define REF_NONE(name)
#define REF_PTSZ(name) {SS_API_##name##_ptsz, (void *)name##_ptsz},
#define REF_PTDS(name) {SS_API_##name##_ptds, (void *)name##_ptds},
#define WRAPPER_REF(name, variant, cls, params, args, pre, post)                                   \
	{SS_API_##name, (void *)name}, REF_##variant(name)
const struct ss_wrapper_ref ss_cudart_wrappers[] = {SS_CUDART_FUNCS(WRAPPER_REF)};
const size_t ss_cudart_wrapper_count = sizeof(ss_cudart_wrappers) / sizeof(ss_cudart_wrappers[0]);

/* ------------------------------------------------------------------ <<<>>> launch sites */

/* nvcc compiles `kernel<<<grid, block, shm, stream>>>(args)` into a call of
 * __cudaPushCallConfiguration from the launching line, then a call of the kernel's host stub
 * (`__device_stub__...`), which pops the configuration and calls __cudaLaunchKernel (or
 * cudaLaunchKernel with __NV_LEGACY_LAUNCH) (crt/host_runtime.h). The launch's own return
 * address is inside the stub; the push's is the user's line. With a shared runtime both are
 * calls into libcudart that the shim can take: the push keeps its return address, the pop
 * hands the innermost one to the launch that follows (wrapper.h), mirroring the runtime's own
 * stack of configurations. No unwinding: two thread-local stores a launch. Neither is a call
 * of the program's that gets a record. A statically linked runtime keeps both calls inside the
 * program (docs/attribution.md). */
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
				     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
				       void *stream);

SS_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
					       struct CUstream_st *stream)
{
	static unsigned (*_Atomic real)(dim3, dim3, size_t, struct CUstream_st *);
	if (ss_unlikely(!real)) {
		int saved_errno = errno; /* SHIM-2: the lookup may set it */
		real = ss_resolve_helper(SS_LAYER_RUNTIME, "__cudaPushCallConfiguration");
		errno = saved_errno;
		if (!real)
			return 1; /* not zero: the generated code then skips the launch */
	}
	unsigned status = real(gridDim, blockDim, sharedMem, stream);
	struct ss_tls *tls = &ss_tls;
	if (status == 0) {
		if (tls->pushed < SS_PUSHED_SITES)
			tls->pushed_sites[tls->pushed] =
			    (uint64_t)(uintptr_t)__builtin_return_address(0);
		tls->pushed++;
	}
	return status;
}

SS_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
						 void *stream)
{
	static cudaError_t (*_Atomic real)(dim3 *, dim3 *, size_t *, void *);
	if (ss_unlikely(!real)) {
		int saved_errno = errno;
		real = ss_resolve_helper(SS_LAYER_RUNTIME, "__cudaPopCallConfiguration");
		errno = saved_errno;
		if (!real)
			return cudaErrorSharedObjectSymbolNotFound;
	}
	cudaError_t status = real(gridDim, blockDim, sharedMem, stream);
	struct ss_tls *tls = &ss_tls;
	uint64_t site = 0;
	if (tls->pushed) { /* the runtime's stack popped, or found empty: ours follows it */
		tls->pushed--;
		if (tls->pushed < SS_PUSHED_SITES)
			site = tls->pushed_sites[tls->pushed];
	}
	/* a failed pop returns from the stub without a launch: none takes this site */
	tls->launch_site = status == cudaSuccess ? site : 0;
	return status;
}
