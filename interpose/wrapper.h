/*
 * interpose/wrapper.h: the one wrapper body every entry point is generated with (runtime:
 * cudart.c, driver: driver.c, NCCL: nccl.c), and the table vocabulary the layers share.
 *
 * A wrapper: SHIM-3 guard, pre (reads the arguments), clock, real call, clock (sync points
 * only: ss_needs_end_time), post (reads what the call produced), the record appended to the
 * thread's ring (SHIM-1), a sync point's count for the guards (GUARD-1), its stacks and the GPU
 * timeline's sampler, return (SHIM-2).
 * The fast path touches nothing that sets errno; each helper that may (a driver query, the range
 * table's allocations, a ring's first attach) restores it itself.
 *
 * Success is 0 in every layer (cudaSuccess, CUDA_SUCCESS, ncclSuccess).
 */
#ifndef SYNCSPY_WRAPPER_H
#define SYNCSPY_WRAPPER_H

#include "capture.h"
#include "clock.h"
#include "describe.h"
#include "gate.h"
#include "guard.h"
#include "lifecycle.h"
#include "native.h"
#include "ranges.h"
#include "resolve.h"
#include "ring.h"
#include "shim.h"
#include "cupti/cupti.h" /* ss_cupti_sample_tick (CUPTI-4); a no-op in cupti/stub.c */

/* ------------------------------------------------------------------ shared vocabulary */

#define STREAM(s) rec.stream = ss_stream_id((const void *)(uintptr_t)(s), per_thread_variant);
#define EVENT(e)  rec.obj = (uintptr_t)(e);
#define BYTES(n)  rec.bytes = (n);
#define AUX(x)	  rec.aux = (uint64_t)(uintptr_t)(x);
/* The range is forgotten before the real free runs (another thread may get the same address as
 * soon as it returns) and put back if the free fails. Freeing stream-ordered memory with a
 * synchronous free is not an implicit sync (docs/sync-model.md, S6). */
#define FREE(ptr)                                                                                  \
	freed_ptr = (const void *)(uintptr_t)(ptr);                                                \
	freed_kind = ss_range_remove(freed_ptr, &freed_bytes); /* keeps errno */                   \
	rec.obj = (uintptr_t)freed_ptr;                                                            \
	rec.bytes = freed_bytes;                                                                   \
	rec.host_mem = freed_kind & ~SS_RANGE_ASYNC;                                               \
	if ((freed_kind & SS_RANGE_ASYNC) && rec.cls == SS_S6)                                     \
		rec.cls = SS_X1;
/* A limit set (cudaDeviceSetLimit, cuCtxSetLimit): aux the limit, bytes the value. Only the stack
 * size (cudaLimitStackSize and CU_LIMIT_STACK_SIZE are both 0) waits for the device: "Setting
 * this value will take effect immediately, and if necessary, the device will block until all
 * preceding requested tasks are complete" (cuCtxSetLimit); the stack reserved for every resident
 * thread changes. The other limits are X1 (docs/sync-model.md, S6). */
#define LIMIT(limit, value)                                                                        \
	rec.aux = (uint64_t)(limit);                                                               \
	rec.bytes = (value);                                                                       \
	if ((int)(limit) != 0)                                                                     \
		rec.cls = SS_X1;
/* A stream-ordered allocation (SS_RANGE_ASYNC) is an enqueue, timed all the same: a pool that
 * gave its memory back at a sync maps it again inside the call (the rule async-alloc-slow). */
#define ALLOC(ptr, n, kind)                                                                        \
	if (((kind) & SS_RANGE_ASYNC) && rec.t_end == rec.t_start)                                 \
		rec.t_end = ss_now();                                                              \
	if (ret == 0) {                                                                            \
		rec.bytes = (n);                                                                   \
		rec.obj = (uintptr_t)(ptr);                                                        \
		rec.host_mem = (kind) & ~SS_RANGE_ASYNC;                                           \
		ss_range_add((const void *)(uintptr_t)(ptr), rec.bytes, (kind));                   \
	}
#define CREATED_STREAM(s, flags, priority)                                                         \
	if (ret == 0) {                                                                            \
		rec.stream = ss_stream_id((const void *)(s), 0);                                   \
		rec.aux = (uint64_t)(flags) | ((uint64_t)(uint32_t)(priority) << 32);              \
	}
#define CREATED_EVENT(e, flags)                                                                    \
	if (ret == 0) {                                                                            \
		rec.obj = (uintptr_t)(e);                                                          \
		rec.aux = (flags);                                                                 \
	}
/* A graph: the one a capture made (post, CAPTURED_GRAPH) and the one an instantiation reads
 * (pre, GRAPH), in calls.ptr: the rule host-func-blocks-stream follows a host function captured
 * into a graph to the launches of the executable graphs made from it. */
#define GRAPH(g) rec.obj = (uintptr_t)(g);
#define CAPTURED_GRAPH(g)                                                                          \
	if (ret == 0)                                                                              \
		rec.obj = (uintptr_t)(g);
/* The executable graph an instantiation made, in aux as graph launches and destroys name theirs:
 * the rule graph-instantiate-in-loop pairs a destroy with its instantiation by it. */
#define CREATED_GRAPH_EXEC(exec)                                                                   \
	if (ret == 0)                                                                              \
		rec.aux = (uint64_t)(uintptr_t)(exec);

/* The module or library a load made (cuModuleLoad*, cuLibraryLoad*, cudaLibraryLoad*), in aux
 * as the lookups of its functions (cuModuleGetFunction, cu/cudaLibraryGetKernel) and its unload
 * name theirs: the rule module-load-in-loop pairs a lookup with its load by it. */
#define CREATED_MODULE(m)                                                                          \
	if (ret == 0)                                                                              \
		rec.aux = (uint64_t)(uintptr_t)(m);

/* Contexts (cuCtxCreate*, cuDevicePrimaryCtxRetain and Release, cuCtxDestroy, cuCtxPushCurrent,
 * cuCtxPopCurrent, cuCtxSetCurrent): the context made, retained, destroyed, pushed, popped or
 * made current in aux, the device of a creation, retain or release in calls.ptr (writer.c: stored
 * for device 0 too). The rule private-context replays each thread's current context from them
 * (docs/rules.md). A pop into NULL leaves aux NULL: the replay pops all the same. */
#define DEVICE(dev) rec.obj = (uintptr_t)(dev);
#define CREATED_CONTEXT(ctx)                                                                       \
	if (ret == 0)                                                                              \
		rec.aux = (uint64_t)(uintptr_t)(ctx);
#define POPPED_CONTEXT(pctx)                                                                       \
	if (ret == 0 && (pctx))                                                                    \
		rec.aux = (uint64_t)(uintptr_t) * (pctx);

/* A prefetch of managed memory (cudaMemPrefetchAsync, cuMemPrefetchAsync): the range's start in
 * calls.ptr, where it goes in aux: the location's type (1 device, 2 host, 3 host NUMA node, 4
 * the calling thread's NUMA node) in the high 32 bits, its id (device ordinal, NUMA node) in the
 * low ones. The rule managed-round-trip pairs a range's moves to the host and back by them. */
#define PREFETCH(ptr, location)                                                                    \
	rec.obj = (uintptr_t)(ptr);                                                                \
	rec.aux = ((uint64_t)(uint32_t)(location).type << 32) | (uint32_t)(location).id;

/* Stream captures begun (post, on success) and ended (post: a failed end ends the capture too),
 * counted for CUPTI-9 (hot.h: ss_open_captures). */
#define CAPTURE_BEGUN                                                                              \
	if (ret == 0)                                                                              \
		atomic_fetch_add_explicit(&ss_open_captures, 1, memory_order_relaxed);
#define CAPTURE_ENDED                                                                              \
	if (atomic_load_explicit(&ss_open_captures, memory_order_relaxed) > 0)                     \
		atomic_fetch_sub_explicit(&ss_open_captures, 1, memory_order_relaxed);

/* cudaProfilerStart/Stop, cuProfilerStart/Stop: a capture range's trigger in cudaProfilerApi
 * mode (capture.h). Start switches in `pre`, stop in `post`: both rows are recorded, since a
 * call is when the range was on as it started. */
#define PROFILER(on) ss_capture_profiler(on);

/* The runtime's launch functions that nvcc's host stub of a <<<>>> calls, right after popping
 * the configuration the launching line pushed (cudart.c): the site of such a launch is that
 * line, kept by the push, instead of the return address into the stub. A constant per
 * wrapper: the compiler drops the test from every other one. */
static inline int ss_is_stub_launch(int api)
{
	return api == SS_API___cudaLaunchKernel || api == SS_API___cudaLaunchKernel_ptsz ||
	       api == SS_API_cudaLaunchKernel || api == SS_API_cudaLaunchKernel_ptsz;
}

/* A layer's own rule for an enqueue's site, after the record is made (driver.c's); none by
 * default. */
#ifndef SS_ENQUEUE_SITE
#define SS_ENQUEUE_SITE(cls_)
#endif

/* ------------------------------------------------------------------ the body */

#define SS_WRAPPER(ret_type, missing, fname, id, cls_, per_thread, params, args, pre, post)        \
	SS_EXPORT ret_type fname params                                                            \
	{                                                                                          \
		typedef ret_type(*real_fn_t) params;                                               \
		real_fn_t real = (real_fn_t)ss_real(id);                                           \
		if (ss_unlikely(real == NULL))                                                     \
			return (missing); /* SHIM-2 */                                             \
		if (ss_context_call(id) &&                                                         \
		    atomic_load_explicit(&ss_hot.state, memory_order_relaxed) <= SS_STATE_READY)   \
			return real args; /* SHIM-9 */                                             \
		struct ss_tls *tls = &ss_tls;                                                      \
		if (!ss_should_record(tls))                                                        \
			return real args; /* SHIM-3 */                                             \
		ss_prefetch_slot(tls);                                                             \
		const int per_thread_variant = (per_thread);                                       \
		(void)per_thread_variant;                                                          \
		const void *freed_ptr = NULL;                                                      \
		int freed_kind = 0;                                                                \
		uint64_t freed_bytes = 0;                                                          \
		struct ss_rec rec = {.api = (id), .cls = SS_##cls_, .aux = UINT64_MAX};            \
		tls->depth++;                                                                      \
		ss_gate_enter(tls); /* GATE-1: inside until the last nested query below */         \
		pre rec.t_start = ss_now();                                                        \
		/* SHIM-6: recorded when a capture range was on as the call started */             \
		const int capture_bits =                                                           \
		    atomic_load_explicit(&ss_hot.capture, memory_order_relaxed);                   \
		ret_type ret = real args;                                                          \
		rec.t_end = ss_needs_end_time(rec.cls) ? ss_now() : rec.t_start;                   \
		post if (freed_kind && ret != 0) ss_range_add(freed_ptr, freed_bytes, freed_kind); \
		rec.ret = (int32_t)ret;                                                            \
		rec.caller = (uint64_t)(uintptr_t)__builtin_return_address(0);                     \
		if (ss_is_stub_launch(id) && tls->launch_site) {                                   \
			rec.caller = tls->launch_site; /* the <<<>>> line, not nvcc's stub */      \
			tls->launch_site = 0;                                                      \
		}                                                                                  \
		SS_ENQUEUE_SITE(cls_)                                                              \
		ss_emit(tls, &rec, capture_bits);                                                  \
		/* one class test for an enqueue, as before the guard (GUARD-1) */                 \
		if (ss_unlikely(ss_is_sync_point(rec.cls))) {                                      \
			ss_guard_count(tls, &rec);                                                 \
			ss_gate_note_sync(tls, rec.cls); /* GATE-4 */                              \
			if (ss_wants_stack(rec.cls) && !(capture_bits & SS_CAPTURE_OFF)) {         \
				ss_stacks_attach(tls, rec.caller);                                 \
				ss_cupti_sample_tick(); /* a window switches after a sync          \
							   (CUPTI-4) */                            \
			}                                                                          \
		} else if (SS_##cls_ == SS_X1 && ss_stacked_context_call(id) &&                    \
			   !(capture_bits & SS_CAPTURE_OFF)) {                                     \
			ss_stacks_attach(tls, rec.caller);                                         \
		}                                                                                  \
		/* CUPTI-9: a window no sync point closed, closed on this thread */                \
		if (ss_unlikely(                                                                   \
			atomic_load_explicit(&ss_hot.cupti_close_wanted, memory_order_relaxed)) && \
		    !atomic_load_explicit(&ss_open_captures, memory_order_relaxed)) {              \
			atomic_store_explicit(&ss_hot.cupti_close_wanted, 0,                       \
					      memory_order_relaxed);                               \
			ss_cupti_unsynced_close();                                                 \
		}                                                                                  \
		ss_gate_leave(tls);                                                                \
		tls->depth--;                                                                      \
		return ret;                                                                        \
	}

/* A table line's wrapper and, per its variant column, its _ptsz/_ptds twin, which shares the
 * prototype and takes stream 0 as the per-thread default stream. */
#define SS_VARIANT_NONE(ret_type, missing, name, cls, params, args, pre, post)
#define SS_VARIANT_PTSZ(ret_type, missing, name, cls, params, args, pre, post)                     \
	extern __typeof__(name) name##_ptsz;                                                       \
	SS_WRAPPER(ret_type, missing, name##_ptsz, SS_API_##name##_ptsz, cls, 1, params, args,     \
		   pre, post)
#define SS_VARIANT_PTDS(ret_type, missing, name, cls, params, args, pre, post)                     \
	extern __typeof__(name) name##_ptds;                                                       \
	SS_WRAPPER(ret_type, missing, name##_ptds, SS_API_##name##_ptds, cls, 1, params, args,     \
		   pre, post)
#define SS_DEFINE_WRAPPERS(ret_type, missing, name, variant, cls, params, args, pre, post)         \
	SS_WRAPPER(ret_type, missing, name, SS_API_##name, cls, 0, params, args, pre, post)        \
	SS_VARIANT_##variant(ret_type, missing, name, cls, params, args, pre, post)

#endif
