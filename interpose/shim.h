/*
 * interpose/shim.h: the vocabulary the parts of libsyncspy.so share: the API registry generated
 * from the tables, the fixed-size event record, the per-thread state, the recording's states,
 * and the class tests every wrapper makes. It declares no module's functions: each module has
 * its own header (lifecycle.h, resolve.h, writer.h, native.h, python.h, ...; cupti/cupti.h
 * for cupti/).
 *
 * Invariants (cited in code as SHIM-n):
 *   SHIM-1  The hot path (a wrapper between its entry and its return) takes no lock, makes no
 *           system call, allocates nothing and never touches SQLite. The exceptions are the
 *           first call of a thread (buffer attach) and the first call of the process (start).
 *   SHIM-2  A wrapper returns exactly what the real function returned, leaves errno as the
 *           real function left it, and never calls a NULL pointer: an entry point whose real
 *           function cannot be found returns the layer's "not available" error.
 *   SHIM-3  Calls made while this thread is already inside a wrapper (depth > 0) pass straight
 *           through unrecorded: a call is recorded once, as the call the program made.
 *   SHIM-4  The writer thread makes no CUDA or NCCL call (a call from another thread can
 *           invalidate a stream capture) and runs with every signal blocked.
 *   SHIM-5  Events are never lost silently: a full buffer and a thread that could get no
 *           buffer under the memory cap each count into a dropped counter that reaches the
 *           database's meta table. (Calls made after the database was closed, during the
 *           program's own teardown, pass through unrecorded: docs/recording.md.)
 *   SHIM-6  Outside a capture range (capture.h: SYNCSPY_CAPTURE_RANGE, SYNCSPY_DELAY,
 *           SYNCSPY_DURATION, syncspy_start/stop) no row is written: every call made there
 *           is counted, per class, into meta.capture_skipped_calls, the GPU timeline is off,
 *           and the capture table says which intervals were recorded. The real call runs
 *           either way (SHIM-2).
 *   SHIM-7  SYNCSPY_MODE=aggregate changes only what the writer makes of the records
 *           (aggregate.c): the wrappers and rings do exactly what they do in trace mode. Every
 *           sync point (S1-S7), N1 and X1 call keeps its row, stacks and site; every enqueue
 *           (E1-E3, N2) is counted into its (thread, API, class, stream, direction, host
 *           memory kind, site) aggregate instead of a row, and into the syncspy_step step it
 *           started in; aggregates and step figures reach the file at every commit, so a
 *           killed process keeps them as of its last commit.
 *   SHIM-8  The shim's exit notice is the newest exit handler of the process: the shim
 *           exports __cxa_atexit (atexit goes through it too) and registers the notice again
 *           after every handler another object registers, so that it runs before all of them
 *           and before the destructors (lifecycle.c). The libraries' exit handlers tear CUDA
 *           and CUPTI down and still call CUDA; the notice is where syncspy leaves CUPTI
 *           (CUPTI-14). The program's handlers run as registered, in the same order.
 *   SHIM-9  A context call (ss_context_call) never starts the recording: a runtime retains the
 *           primary context and makes it current in its own lazy set-up, from runtime calls
 *           the shim does not wrap, and the shim's start (the versions it asks for, CUPTI's
 *           attach) must not run inside that set-up (the stand-in's is a pthread_once that
 *           cudaDriverGetVersion waits for: t244 hung). Before the start they pass through
 *           unrecorded; after it they are recorded as every call is.
 */
#ifndef SYNCSPY_SHIM_H
#define SYNCSPY_SHIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hot.h"
#include "syncspy/model.h"

#define SS_EXPORT      __attribute__((visibility("default")))
#define ss_likely(x)   __builtin_expect(!!(x), 1)
#define ss_unlikely(x) __builtin_expect(!!(x), 0)

/* DRIVER-5: in a sanitizer build (configure --enable-sanitizers), the functions a sanitizer
 * runtime calls while it initializes (the exported dlsym and sigaction: ASan looks up its
 * interceptors, TSan also installs its signal handlers), before it can run instrumented code,
 * are not instrumented. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__) || defined(__SANITIZE_THREAD__)
#define SS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer) ||             \
    __has_feature(thread_sanitizer)
#define SS_SANITIZED 1
#endif
#endif
#ifdef SS_SANITIZED
#define SS_PRE_INIT __attribute__((no_sanitize("address", "undefined", "thread")))
#else
#define SS_PRE_INIT
#endif

/* ------------------------------------------------------------------ API registry */

#include "cudart_table.h"
#include "driver_table.h"
#include "nccl_table.h"

/* One id per exported entry point, variants included: SS_API_cudaMemcpy, SS_API_cudaMemcpy_ptds */
enum ss_api {
#define SS_ID_NONE(name)
#define SS_ID_PTSZ(name) SS_API_##name##_ptsz,
#define SS_ID_PTDS(name) SS_API_##name##_ptds,
#define SS_CUDART_ID(name, variant, cls, params, args, pre, post)                                  \
	SS_API_##name, SS_ID_##variant(name)
#define SS_NCCL_ID(name, cls, params, args, pre, post) SS_API_##name,
	SS_CUDART_FUNCS(SS_CUDART_ID) SS_DRIVER_FUNCS(SS_CUDART_ID) SS_NCCL_FUNCS(SS_NCCL_ID)
#undef SS_CUDART_ID
#undef SS_NCCL_ID
	    SS_API_COUNT
};

struct ss_api_info {
	const char *name;
	unsigned char layer; /* enum ss_layer */
	unsigned char cls;   /* enum ss_class: the static class; copies may be upgraded per call */
};
extern const struct ss_api_info ss_apis[SS_API_COUNT]; /* resolve.c */

/* Records that are not calls: they follow the call they belong to in the same ring. */
#define SS_REC_PYSTACK                                                                             \
	0xffff /* obj: malloc'd frames text, bytes: its length, aux: its hash,                     \
		  stream: the number of frames (python.c) */
/* nvtx.c: obj a malloc'd name (push, start, step) or NULL, aux the depth or the range id */
#define SS_REC_NVTX_PUSH  0xfffe
#define SS_REC_NVTX_POP	  0xfffd
#define SS_REC_NVTX_START 0xfffc
#define SS_REC_NVTX_END	  0xfffb
#define SS_REC_STEP	  0xfffa
/* python.c: the call before it waits for Python frames that will come later (cls 1 on a
 * SS_REC_PYSTACK marks those deferred frames) */
#define SS_REC_PYSTACK_WAIT 0xfff8
/* native.c: aux the stack's hash; obj NULL or a malloc'd array of `stream` return addresses */
#define SS_REC_NATIVE_STACK 0xfff9

/* ------------------------------------------------------------------ the event record */

/* One intercepted call; 64 bytes, written by the calling thread into its own ring. Times are
 * raw clock ticks (clock.h), converted to CLOCK_MONOTONIC ns by the writer. */
struct ss_rec {
	uint64_t t_start;
	uint64_t t_end;
	uint64_t stream; /* SCHEMA-4 encoding; 0 = the call has no stream */
	uint64_t obj;	 /* event, communicator, graph exec or created handle */
	uint64_t bytes;
	uint64_t aux;	      /* per API: flags, peer, nranks<<32|rank, polling count... */
	uint64_t caller;      /* return address into the caller of the entry point */
	uint16_t api;	      /* enum ss_api */
	uint8_t cls;	      /* enum ss_class, decided at call time */
	uint8_t dir : 4;      /* enum ss_dir */
	uint8_t host_mem : 4; /* enum ss_memkind */
	int32_t ret;
};
_Static_assert(sizeof(struct ss_rec) == 64, "one record per cache line");

/* ------------------------------------------------------------------ per-thread state */

struct ss_ring;
struct ss_gate_slot;
struct ss_guard;	  /* guard.c */
#define SS_PUSHED_SITES 4 /* nested <<<>>> in the arguments of a <<<>>>: rare */
struct ss_tls {
	int depth;	      /* SHIM-3 */
	unsigned generation;  /* ring belongs to this process generation (fork resets) */
	struct ss_ring *ring; /* NULL until the thread's first recorded call */
	struct ss_gate_slot *gate; /* gate.h: NULL until its first recorded call (GATE-1) */
	/* <<<>>> launches through a shared runtime (cudart.c): the lines that pushed a launch
	 * configuration, innermost last, and the one whose configuration was popped last, the
	 * site of the launch that follows */
	uint64_t launch_site;
	uint64_t pushed_sites[SS_PUSHED_SITES];
	unsigned pushed;
	/* guard.c (GUARD-1): the sync points this thread made, per class S1..S7, and its innermost
	 * open guard (NULL while none is open) */
	uint64_t syncs[SS_S7];
	struct ss_guard *guard;
};
extern __thread struct ss_tls ss_tls __attribute__((tls_model("initial-exec"))); /* lifecycle.c */

/* ------------------------------------------------------------------ the recording's state */

/* ss_hot.state (hot.h); lifecycle.c moves it */
enum ss_state {
	SS_STATE_UNLOADED = 0, /* configuration not read yet */
	SS_STATE_READY,	       /* recording; writer starts with the first recorded call */
	SS_STATE_RUNNING,      /* writer running */
	SS_STATE_CLOSED,       /* database closed (exit, exec) or disabled: pass through */
};

/* A clock read costs 16 ns on the target machine (docs/architecture.md F10, bench/results): more
 * than half the budget of an enqueue wrapper. Sync points (S1-S7), NCCL and context calls get
 * both ends; enqueues (E1-E3) only their start unless SYNCSPY_ENQUEUE_TIMING=1. The class is
 * the one decided before the call, so an async copy found pageable (S5) is timed in full. */
static inline int ss_needs_end_time(int cls)
{
	return cls < SS_E1 || cls > SS_E3 || ss_hot.enqueue_timing;
}

static inline int ss_wants_stack(int cls)
{
	return cls >= SS_S1 && cls <= SS_S6; /* S7: polling loops are counted, not stacked */
}

/* The calls that make, retain, destroy or change a thread's current context (SHIM-9). The id is a
 * constant of each wrapper (wrapper.h): every other wrapper compiles without the test. */
static inline int ss_context_call(int id)
{
	switch (id) {
	case SS_API_cuCtxCreate_v2:
	case SS_API_cuCtxCreate_v3:
	case SS_API_cuCtxCreate_v4:
	case SS_API_cuCtxDestroy_v2:
	case SS_API_cuDevicePrimaryCtxRetain:
	case SS_API_cuDevicePrimaryCtxRelease_v2:
	case SS_API_cuCtxPushCurrent_v2:
	case SS_API_cuCtxPopCurrent_v2:
	case SS_API_cuCtxSetCurrent:
		return 1;
	default:
		return 0;
	}
}

/* The context calls (X1) whose site a rule names as a line to fix (graph-instantiate-in-loop)
 * and that a framework makes for its user (torch.cuda.graph instantiates and destroys in
 * libtorch): stacked as sync points are, so that their site is the user's line, a Python one
 * included (SCHEMA-6). Rare (a step's at most); the table's class and the id are constants
 * of each wrapper (wrapper.h), so every other wrapper compiles without the test. */
static inline int ss_stacked_context_call(int id)
{
	switch (id) {
	case SS_API_cudaGraphInstantiate:
	case SS_API_cudaGraphInstantiateWithFlags:
	case SS_API_cudaGraphInstantiateWithParams:
	case SS_API_cudaGraphInstantiateWithParams_ptsz:
	case SS_API_cudaGraphExecDestroy:
	case SS_API_cuGraphInstantiateWithFlags:
	case SS_API_cuGraphInstantiate_v2:
	case SS_API_cuGraphInstantiateWithParams:
	case SS_API_cuGraphInstantiateWithParams_ptsz:
	case SS_API_cuGraphExecDestroy:
		return 1;
	default:
		return 0;
	}
}

#endif
