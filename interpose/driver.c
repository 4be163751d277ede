/*
 * interpose/driver.c: the CUDA driver module. Generates one wrapper per line of
 * driver_table.h (plus its _ptsz/_ptds twin), and makes sure code that never calls libcudart.so
 * reaches them: the static cudart that nvcc links by default, cuBLAS, torch's c10 and NCCL get
 * driver functions from dlsym(libcuda handle, name) and from cuGetProcAddress (docs/architecture.md
 * F4). The shim's dlsym, cuGetProcAddress (exported, for programs that link libcuda and
 * call it directly, and handed out by dlsym) and cudaGetDriverEntryPoint hand out the wrapper of
 * a table function instead of the real pointer, and anything else untouched (cuGetExportTable
 * included). dlsym does the same for the runtime's table functions (ctypes-style callers that
 * dlopen libcudart.so.13 and look its functions up by name).
 *
 * A pointer is wrapped only when it is exactly the function the table describes: the real
 * pointer a lookup returned is compared with the real function of each table entry of that
 * name (cuMemcpyHtoD: cuMemcpyHtoD_v2 and cuMemcpyHtoD_v2_ptds; cuCtxCreate: cuCtxCreate_v2,
 * _v3 and _v4, each the version of the ABI it names). An older ABI version asked for through
 * cuGetProcAddress's version argument that the table has no entry for matches none and is
 * handed out as it is.
 *
 * Invariants:
 *   DRIVER-1  dlsym(RTLD_NEXT, ...) reaches glibc as a tail call, so glibc sees the program's
 *             return address and searches after the program's object, not after the shim
 *             (another preloaded library's own RTLD_NEXT lookup would otherwise find itself).
 *   DRIVER-2  The shim's own lookups (resolve.c) use ss_dlsym, the real dlsym, never the
 *             interposed one: a wrapper whose "real" function were its own wrapper would recurse.
 *   DRIVER-3  A call the runtime makes to the driver from inside a runtime wrapper is not
 *             recorded again (SHIM-3): one call of the program, one row.
 *   DRIVER-4  A lookup that finds one of the shim's own exports (dlsym(RTLD_DEFAULT) and
 *             dlopen(NULL) search the preloaded shim first) answers as it would without the
 *             shim where it can: NULL when no loaded library defines the name (a program that
 *             probes for the driver must not believe one is loaded), else the wrapper.
 *   DRIVER-5  In a sanitizer build (configure --enable-sanitizers), dlsym is safe to call before
 *             the shim's constructors ran: ASan's start-up looks its interceptors' real
 *             functions up through the exported dlsym before its shadow memory exists. Until
 *             then dlsym, ss_dlsym and the real dlsym's lookup are not instrumented and pass
 *             every lookup through unwrapped (t856).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_runtime_api.h>

/* A driver call is where a statically linked runtime launches, copies, waits and builds
 * (nvcc's default): its return address is then inside that runtime, and the user's line
 * further out (native.c, docs/attribution.md). A sync point's stack finds that line after the
 * fact (the first user frame, sites.c); every other call takes no stack (ss_wants_stack:
 * enqueues, edges, polling loops, context calls such as a graph's instantiation or destroy, a
 * free that rec.cls turned X1), so its wrapper's frame pointer says where the return address
 * lies and ss_enqueue_site reads the user's one from the path it learnt, a few loads once the
 * path is known. The class decided at call time counts: an async copy found pageable (S5) is
 * stacked, and is not named here. */
#define SS_ENQUEUE_SITE(cls_)                                                                      \
	if (!ss_wants_stack(rec.cls))                                                              \
		rec.caller =                                                                       \
		    ss_enqueue_site(rec.caller, (const uint64_t *)__builtin_frame_address(0) + 1);

#include "driver.h"
#include "env.h"
#include "wrapper.h"

/* ------------------------------------------------------------------ the real dlsym */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn _Atomic real_dlsym;

/* DRIVER-5: lookups pass through until the shim's constructors ran (before_init), and what may
 * run before then is not instrumented (SS_PRE_INIT, shim.h). Without sanitizers neither
 * applies: a lookup made by a library's constructor is handed out as any other. */
#ifdef SS_SANITIZED
static volatile int constructors_ran;
__attribute__((constructor)) static void note_constructors_ran(void)
{
	constructors_ran = 1;
}
#define before_init() (!constructors_ran)
#else
#define before_init() 0
#endif

SS_PRE_INIT static dlsym_fn load_real_dlsym(void)
{
	dlsym_fn fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!fn)
		fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	atomic_store(&real_dlsym, fn);
	return fn;
}

SS_PRE_INIT void *ss_dlsym(void *handle, const char *name) /* DRIVER-2 */
{
	dlsym_fn fn = atomic_load_explicit(&real_dlsym, memory_order_relaxed);
	if (ss_unlikely(!fn))
		fn = load_real_dlsym();
	return fn(handle, name);
}

/* ------------------------------------------------------------------ describing a call */

#define COPY_HTOD(src, n, async)                                                                   \
	ss_describe_copy(&rec, NULL, (src), (n), cudaMemcpyHostToDevice, async);
#define COPY_DTOH(dst, n, async)                                                                   \
	ss_describe_copy(&rec, (dst), NULL, (n), cudaMemcpyDeviceToHost, async);
#define COPY_DTOD(n)                                                                               \
	rec.dir = SS_DIR_D2D;                                                                      \
	rec.bytes = (n);
#define COPY_ANY(dst, src, n, async)                                                               \
	ss_describe_copy(&rec, (const void *)(uintptr_t)(dst), (const void *)(uintptr_t)(src),     \
			 (n), cudaMemcpyDefault, async);
#define MEMSET(ptr, n, async) ss_describe_memset(&rec, (const void *)(uintptr_t)(ptr), (n), async);
#define COPY_2D(p, async)                                                                          \
	if (p)                                                                                     \
		describe_sides(&rec, (p)->srcMemoryType, (p)->srcHost, (p)->srcDevice,             \
			       (p)->dstMemoryType, (p)->dstHost, (p)->dstDevice,                   \
			       (uint64_t)(p)->WidthInBytes *(p)->Height, async);
#define COPY_3D(p, async)                                                                          \
	if (p)                                                                                     \
		describe_sides(&rec, (p)->srcMemoryType, (p)->srcHost, (p)->srcDevice,             \
			       (p)->dstMemoryType, (p)->dstHost, (p)->dstDevice,                   \
			       (uint64_t)(p)->WidthInBytes *(p)->Height *(p)->Depth, async);
/* Between devices, as the runtime's cudaMemcpyPeer* records them (cudart.c): no host side. */
#define COPY_PEER(n)                                                                               \
	rec.dir = SS_DIR_PEER;                                                                     \
	rec.bytes = (n);
#define COPY_BATCH(dsts, srcs, sizes, count)                                                       \
	if ((dsts) && (srcs))                                                                      \
		ss_describe_batch(&rec, (const void *)(uintptr_t)(dsts)[0],                        \
				  (const void *)(uintptr_t)(srcs)[0], sizes, count);
#define MEM_OPS(count, ops)		     describe_mem_ops(&rec, count, ops);

/* The host side of a CUDA_MEMCPY2D's or CUDA_MEMCPY3D's source or destination: its host
 * pointer for host memory, the address for unified memory (the ranges tell its kind), none for
 * device memory or arrays. */
static const void *copy_host_side(CUmemorytype type, const void *host, CUdeviceptr device)
{
	return type == CU_MEMORYTYPE_HOST	 ? host
	       : type == CU_MEMORYTYPE_UNIFIED ? (const void *)(uintptr_t)device
					       : NULL;
}

/* A 2D or 3D copy's direction from its memory types (unified: inferred from the pointers, as
 * cudaMemcpyDefault), its bytes (WidthInBytes x Height [x Depth]) and host memory kind. */
static void describe_sides(struct ss_rec *rec, CUmemorytype src_type, const void *src_host,
			   CUdeviceptr src_device, CUmemorytype dst_type, const void *dst_host,
			   CUdeviceptr dst_device, uint64_t bytes, int async)
{
	int src_is_host = src_type == CU_MEMORYTYPE_HOST;
	int dst_is_host = dst_type == CU_MEMORYTYPE_HOST;
	int kind = src_type == CU_MEMORYTYPE_UNIFIED || dst_type == CU_MEMORYTYPE_UNIFIED
		       ? cudaMemcpyDefault
		   : src_is_host ? (dst_is_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
		   : dst_is_host ? cudaMemcpyDeviceToHost
				 : cudaMemcpyDeviceToDevice;
	ss_describe_copy(rec, copy_host_side(dst_type, dst_host, dst_device),
			 copy_host_side(src_type, src_host, src_device), bytes, kind, async);
}


/* cuStreamBatchMemOp: its operations' count; a batch that waits for a value is a stream wait
 * (E3), one that only writes values or flushes is a signal other streams wait for (E2). */
static void describe_mem_ops(struct ss_rec *rec, unsigned count,
			     const CUstreamBatchMemOpParams *ops)
{
	rec->aux = count;
	int waits = 0;
	for (unsigned i = 0; ops && i < count && !waits; i++)
		waits = ops[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
			ops[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
	if (!waits)
		rec->cls = SS_E2;
}

/* The 11.0 ABI that libcuda.so.1 still exports as cuGraphInstantiate_v2 (and hands out for
 * cuGetProcAddress("cuGraphInstantiate", 11000)): cuda.h since 12.0 maps the name
 * cuGraphInstantiate to cuGraphInstantiateWithFlags and declares this one no more. The
 * prototype is cudaTypedefs.h's PFN_cuGraphInstantiate_v11000. */
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize);

/* ------------------------------------------------------------------ the wrappers */

#define DEFINE_WRAPPERS(name, variant, cls, params, args, pre, post)                               \
	SS_DEFINE_WRAPPERS(CUresult, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, name, variant,     \
			   cls, params, args, pre, post)

SS_DRIVER_FUNCS(DEFINE_WRAPPERS)

/* ------------------------------------------------------------------ handing out wrappers */

/* cuda.h turns the name cuGetProcAddress into cuGetProcAddress_v2 (the 12.0 prototype with a
 * status argument); libcuda.so.1 still exports the 11.3 one (no status) as cuGetProcAddress, and
 * an asm label gives it that name. Those two are all the names the driver exports for it
 * (cuGetProcAddress_v2_ptsz is an inline function of cuda.h that calls _v2). */
SS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
				       cuuint64_t flags, CUdriverProcAddressQueryResult *status);
SS_EXPORT CUresult get_proc_address_v1(const char *symbol, void **pfn, int version,
				       cuuint64_t flags) __asm__("cuGetProcAddress");

struct wrap_entry {
	int api;	  /* -1 for the cuGetProcAddress entries */
	const char *name; /* exported name: cuMemcpyHtoD_v2_ptds */
	void *wrapper;
	char base[48]; /* the name programs ask for: cuMemcpyHtoD (filled at first use) */
};

static struct wrap_entry wraps[] = {
#define WRAP_NONE(name)
#define WRAP_PTSZ(name) {SS_API_##name##_ptsz, #name "_ptsz", (void *)name##_ptsz, ""},
#define WRAP_PTDS(name) {SS_API_##name##_ptds, #name "_ptds", (void *)name##_ptds, ""},
#define WRAP_ENTRY(name, variant, cls, params, args, pre, post)                                    \
	{SS_API_##name, #name, (void *)name, ""}, WRAP_##variant(name)
    SS_DRIVER_FUNCS(WRAP_ENTRY)
#undef WRAP_ENTRY
	{-1, "cuGetProcAddress_v2", (void *)cuGetProcAddress_v2, ""},
    {-1, "cuGetProcAddress", (void *)get_proc_address_v1, ""},
};
#define WRAP_COUNT (sizeof(wraps) / sizeof(wraps[0]))

static void *_Atomic real_get_proc_address[2]; /* [0] v2, [1] v1 */
static pthread_once_t bases_once = PTHREAD_ONCE_INIT;

static void strip_suffix(char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	if (n > m && !strcmp(s + n - m, suffix))
		s[n - m] = 0;
}

static void fill_bases(void)
{
	for (size_t i = 0; i < WRAP_COUNT; i++) {
		snprintf(wraps[i].base, sizeof(wraps[i].base), "%s", wraps[i].name);
		strip_suffix(wraps[i].base, "_ptsz");
		strip_suffix(wraps[i].base, "_ptds");
		strip_suffix(wraps[i].base, "_v2");
		strip_suffix(wraps[i].base, "_v3");
		strip_suffix(wraps[i].base, "_v4");
	}
}

static void *real_of(const struct wrap_entry *w)
{
	if (w->api >= 0)
		return ss_real(w->api);
	int v1 = !strcmp(w->name, "cuGetProcAddress");
	void *fn = atomic_load(&real_get_proc_address[v1]);
	if (!fn) {
		fn = ss_resolve_helper(SS_LAYER_DRIVER, w->name);
		atomic_store(&real_get_proc_address[v1], fn);
	}
	return fn;
}

/* The modules that bootstrapped the driver through cuGetProcAddress, as a CUDA runtime does
 * (meta.driver_clients; those other than libcudart.so carry a static runtime: static_cudart). */
#define MAX_CLIENTS 32
static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static char clients[MAX_CLIENTS][64];
static int client_count;

static void note_client(const void *return_address)
{
	Dl_info info;
	if (!dladdr(return_address, &info) || !info.dli_fname)
		return;
	const char *base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	if (!*base)
		base = "(main program)";
	pthread_mutex_lock(&clients_lock);
	int known = 0;
	for (int i = 0; i < client_count; i++)
		known |= !strcmp(clients[i], base);
	if (!known && client_count < MAX_CLIENTS)
		snprintf(clients[client_count++], sizeof(clients[0]), "%s", base);
	pthread_mutex_unlock(&clients_lock);
}

size_t ss_driver_clients(char *out, size_t len)
{
	size_t used = 0;
	out[0] = 0;
	pthread_mutex_lock(&clients_lock);
	for (int i = 0; i < client_count && used < len; i++)
		used += snprintf(out + used, len - used, "%s%s", i ? "," : "", clients[i]);
	pthread_mutex_unlock(&clients_lock);
	return used;
}

/* The runtime functions dlsym hands out wrappers for besides the table's (cudart.c): the
 * runtime's ways to the driver, defined at the end of this file. */
extern __typeof__(cudaGetDriverEntryPoint) cudaGetDriverEntryPoint_ptsz;
extern __typeof__(cudaGetDriverEntryPointByVersion) cudaGetDriverEntryPointByVersion_ptsz;
static const struct {
	const char *name;
	void *wrapper;
} entry_point_wraps[] = {
    {"cudaGetDriverEntryPoint", (void *)cudaGetDriverEntryPoint},
    {"cudaGetDriverEntryPoint_ptsz", (void *)cudaGetDriverEntryPoint_ptsz},
    {"cudaGetDriverEntryPointByVersion", (void *)cudaGetDriverEntryPointByVersion},
    {"cudaGetDriverEntryPointByVersion_ptsz", (void *)cudaGetDriverEntryPointByVersion_ptsz},
};

/* A runtime function is looked up by its exact exported name (no versions to strip), and
 * wrapped only when it is the function the wrapper calls: a libcudart other than the one the
 * shim resolves (another soname, another copy) is handed out as it is. */
static void *wrap_runtime(const char *name, void *fn)
{
	for (size_t i = 0; i < ss_cudart_wrapper_count; i++) {
		int api = ss_cudart_wrappers[i].api;
		if (!strcmp(ss_apis[api].name, name))
			return ss_real(api) == fn ? ss_cudart_wrappers[i].wrapper : fn;
	}
	for (size_t i = 0; i < sizeof(entry_point_wraps) / sizeof(entry_point_wraps[0]); i++)
		if (!strcmp(entry_point_wraps[i].name, name))
			return ss_resolve_helper(SS_LAYER_RUNTIME, name) == fn
				   ? entry_point_wraps[i].wrapper
				   : fn;
	return fn;
}

/* Names the driver answers with a table function of another name (the only such #define of
 * cuda.h 13.0: `#define cuGraphInstantiate cuGraphInstantiateWithFlags`): a static runtime's
 * cudaGraphInstantiate asks for cuGraphInstantiate at version 12000 or later and gets
 * cuGraphInstantiateWithFlags, whose wrapper calls exactly that pointer. Only these names are
 * compared by pointer with another entry: resolving every entry's real function for any name
 * would leave the failed lookups of functions an older driver lacks in the program's dlerror(). */
static const struct {
	const char *name, *function;
} aliases[] = {
    {"cuGraphInstantiate", "cuGraphInstantiateWithFlags"},
};

/* The wrapper for real function fn looked up as name, or fn itself. */
static void *wrap(const char *name, void *fn, const void *caller)
{
	if (!fn || !name || name[0] != 'c' || name[1] != 'u')
		return fn;
	ss_load();
	if (ss_config.SYNCSPY_DISABLE)
		return fn;
	if (!strncmp(name, "cuda", 4))
		return wrap_runtime(name, fn);
	pthread_once(&bases_once, fill_bases);
	for (size_t i = 0; i < WRAP_COUNT; i++) {
		struct wrap_entry *w = &wraps[i];
		if (strcmp(w->base, name) != 0 && strcmp(w->name, name) != 0)
			continue;
		if (real_of(w) != fn)
			continue; /* another version or variant of the same name */
		if (w->api < 0)
			note_client(caller);
		return w->wrapper;
	}
	for (size_t a = 0; a < sizeof(aliases) / sizeof(aliases[0]); a++) {
		if (strcmp(aliases[a].name, name) != 0)
			continue;
		for (size_t i = 0; i < WRAP_COUNT; i++)
			if (!strcmp(wraps[i].name, aliases[a].function) && real_of(&wraps[i]) == fn)
				return wraps[i].wrapper;
	}
	return fn;
}

/* Whether fn is a function of the shim itself (DRIVER-4). */
static int is_own(const void *fn)
{
	static const void *_Atomic own_base;
	const void *base = atomic_load_explicit(&own_base, memory_order_relaxed);
	Dl_info info;
	if (!base) {
		if (!dladdr((const void *)is_own, &info))
			return 0;
		base = info.dli_fbase;
		atomic_store(&own_base, base);
	}
	return dladdr(fn, &info) && info.dli_fbase == base;
}

/* What dlsym hands out for the function found as name. DRIVER-4: a lookup that found the
 * shim's own export stands for the library's function, which is then handed out as a lookup
 * that found it would be (its wrapper, the client noted), or for nothing. A name the shim
 * exports that no loaded library defines is NULL, as without the shim; one that a library
 * loaded RTLD_LOCAL outside the caller's scope defines stays the shim's (documented). */
static void *hand_out(const char *name, void *found, const void *caller)
{
	if (!found || !name || name[0] != 'c' || name[1] != 'u')
		return wrap(name, found, caller);
	int saved_errno = errno; /* the real dlsym's; dladdr and the lookups below keep it */
	if (!is_own(found)) {
		errno = saved_errno;
		return wrap(name, found, caller);
	}
	enum ss_layer layer = strncmp(name, "cuda", 4) ? SS_LAYER_DRIVER : SS_LAYER_RUNTIME;
	void *real = ss_resolve_helper(layer, name), *out = NULL;
	if (real) {
		void *wrapper = wrap(name, real, caller);
		out = wrapper != real ? wrapper : found;
	} else {
		/* failing last, so that dlerror() tells of it as glibc would (naming the shim,
		 * not the caller): a failed dlopen(RTLD_NOLOAD) above leaves no error */
		(void)ss_dlsym(RTLD_NEXT, name);
	}
	errno = saved_errno;
	return out;
}

/* DRIVER-1 rests on the tail call below: asked for even where the build is not optimized. */
__attribute__((optimize("O2"))) SS_PRE_INIT SS_EXPORT void *dlsym(void *handle, const char *name)
{
	dlsym_fn fn = atomic_load_explicit(&real_dlsym, memory_order_relaxed);
	if (ss_unlikely(!fn))
		fn = load_real_dlsym();
	if (handle == RTLD_NEXT || before_init())
		return fn(handle, name); /* DRIVER-1: a tail call; DRIVER-5 */
	return hand_out(name, fn(handle, name), __builtin_return_address(0));
}

/* Reached by a program that links libcuda (the shim's export comes first) and through the
 * pointers dlsym and cuGetProcAddress hand out. Only a lookup of cuGetProcAddress through dlsym
 * names its caller in meta.driver_clients: that is how a CUDA runtime bootstraps the driver; a
 * program that calls cuGetProcAddress directly carries none. */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *status)
{
	CUresult (*real)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
	    real_of(&wraps[WRAP_COUNT - 2]);
	if (!real)
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	CUresult ret = real(symbol, pfn, version, flags, status);
	if (ret == CUDA_SUCCESS && pfn)
		*pfn = wrap(symbol, *pfn, __builtin_return_address(0));
	return ret;
}

CUresult get_proc_address_v1(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	CUresult (*real)(const char *, void **, int, cuuint64_t) = real_of(&wraps[WRAP_COUNT - 1]);
	if (!real)
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	CUresult ret = real(symbol, pfn, version, flags);
	if (ret == CUDA_SUCCESS && pfn)
		*pfn = wrap(symbol, *pfn, __builtin_return_address(0));
	return ret;
}

/* The runtime's way to the driver (torch imports cudaGetDriverEntryPointByVersion). Not
 * recorded calls: they only hand out wrappers. */
#define ENTRY_POINT_WRAPPER(fname, params, args, symbol, pfn)                                      \
	SS_EXPORT cudaError_t fname params                                                         \
	{                                                                                          \
		cudaError_t(*real) params = ss_resolve_helper(SS_LAYER_RUNTIME, #fname);           \
		if (!real)                                                                         \
			return cudaErrorSharedObjectSymbolNotFound;                                \
		cudaError_t ret = real args;                                                       \
		if (ret == cudaSuccess && (pfn))                                                   \
			*(pfn) = wrap((symbol), *(pfn), __builtin_return_address(0));              \
		return ret;                                                                        \
	}

ENTRY_POINT_WRAPPER(cudaGetDriverEntryPoint,
		    (const char *symbol, void **funcPtr, unsigned long long flags,
		     enum cudaDriverEntryPointQueryResult *driverStatus),
		    (symbol, funcPtr, flags, driverStatus), symbol, funcPtr)
ENTRY_POINT_WRAPPER(cudaGetDriverEntryPoint_ptsz,
		    (const char *symbol, void **funcPtr, unsigned long long flags,
		     enum cudaDriverEntryPointQueryResult *driverStatus),
		    (symbol, funcPtr, flags, driverStatus), symbol, funcPtr)
ENTRY_POINT_WRAPPER(cudaGetDriverEntryPointByVersion,
		    (const char *symbol, void **funcPtr, unsigned int cudaVersion,
		     unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus),
		    (symbol, funcPtr, cudaVersion, flags, driverStatus), symbol, funcPtr)
ENTRY_POINT_WRAPPER(cudaGetDriverEntryPointByVersion_ptsz,
		    (const char *symbol, void **funcPtr, unsigned int cudaVersion,
		     unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus),
		    (symbol, funcPtr, cudaVersion, flags, driverStatus), symbol, funcPtr)
