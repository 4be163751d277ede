/*
 * interpose/shim.h: what the parts of libsyncspy.so share: the fixed-size event record, the
 * per-thread state, the global life-cycle state, the API registry generated from the tables,
 * and the hot-path helpers every wrapper uses.
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
 */
#ifndef SYNCSPY_SHIM_H
#define SYNCSPY_SHIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hot.h"
#include "syncspy/env.h"
#include "syncspy/model.h"

#define SS_EXPORT      __attribute__((visibility("default")))
#define ss_likely(x)   __builtin_expect(!!(x), 1)
#define ss_unlikely(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------ configuration (env.c) */

struct ss_config {
#define SS_CONFIG_FIELD_INT(name, def)	      long name;
#define SS_CONFIG_FIELD_BOOL(name, def)	      int name;
#define SS_CONFIG_FIELD_STR(name, def)	      const char *name;
#define SS_CONFIG_FIELD(name, type, def, doc) SS_CONFIG_FIELD_##type(name, def)
	SS_ENV_VARS(SS_CONFIG_FIELD)
#undef SS_CONFIG_FIELD
};
extern struct ss_config ss_config;
void ss_config_load(void);

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
extern const struct ss_api_info ss_apis[SS_API_COUNT];

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
#define SS_PUSHED_SITES 4 /* nested <<<>>> in the arguments of a <<<>>>: rare */
struct ss_tls {
	int depth;	      /* SHIM-3 */
	unsigned generation;  /* ring belongs to this process generation (fork resets) */
	struct ss_ring *ring; /* NULL until the thread's first recorded call */
	/* <<<>>> launches through a shared runtime (cudart.c): the lines that pushed a launch
	 * configuration, innermost last, and the one whose configuration was popped last, the
	 * site of the launch that follows */
	uint64_t launch_site;
	uint64_t pushed_sites[SS_PUSHED_SITES];
	unsigned pushed;
};
extern __thread struct ss_tls ss_tls __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------------ life cycle (lifecycle.c) */

enum ss_state {
	SS_STATE_UNLOADED = 0, /* configuration not read yet */
	SS_STATE_READY,	       /* recording; writer starts with the first recorded call */
	SS_STATE_RUNNING,      /* writer running */
	SS_STATE_CLOSED,       /* database closed (exit, exec) or disabled: pass through */
};

void ss_load(void);  /* idempotent: reads the configuration, sets READY or CLOSED */
void ss_start(void); /* idempotent: starts the writer (first recorded call of the process) */
/* Slow path of ss_should_record: loads and starts recording (writer, CUPTI) before the first
 * real call runs, so that CUPTI sees that call's GPU work too. errno kept (SHIM-2); the
 * thread counts as inside a wrapper meanwhile, so that calls CUPTI makes are not recorded. */
void ss_first_call(struct ss_tls *tls);

/* What the process is, for the meta table: filled by the app threads (versions, NCCL rank),
 * read by the writer. */
struct ss_process {
	_Atomic int rank, world_size, local_rank; /* -1 while unknown */
	_Atomic int rank_source;		  /* 0 unknown, 1 environment, 2 NCCL */
	_Atomic int cudart_version, driver_version, nccl_version; /* 0 while unknown */
	char cudart_path[512], nccl_path[512];
	uint64_t start_mono_ns, start_realtime_ns;
};
extern struct ss_process ss_process;
void ss_note_versions(void); /* app thread: asks the libraries for their versions, once */

/* The writer thread (writer.c). */
int ss_writer_start(void);		     /* 0, or -1 with the reason printed */
void ss_writer_finalize(const char *reason); /* app thread: final drain, close, rename, join */
void ss_writer_signal_flush(int finalize);   /* async-signal-safe: commit (or finalize), wait */
void ss_writer_fork_prepare(void);
void ss_writer_fork_parent(void);
void ss_writer_fork_child(void);

static inline int ss_should_record(struct ss_tls *tls)
{
	int state = atomic_load_explicit(&ss_hot.state, memory_order_relaxed);
	if (ss_unlikely(state <= SS_STATE_READY) && tls->depth == 0) {
		ss_first_call(tls);
		state = atomic_load_explicit(&ss_hot.state, memory_order_relaxed);
	}
	return state != SS_STATE_CLOSED && tls->depth == 0;
}

/* A clock read costs 16 ns on the target machine (docs/architecture.md F10, bench/results): more
 * than half the budget of an enqueue wrapper. Sync points (S1-S7), NCCL and context calls get
 * both ends; enqueues (E1-E3) only their start unless SYNCSPY_ENQUEUE_TIMING=1. The class is
 * the one decided before the call, so an async copy found pageable (S5) is timed in full. */
static inline int ss_needs_end_time(int cls)
{
	return cls < SS_E1 || cls > SS_E3 || ss_hot.enqueue_timing;
}

/* ------------------------------------------------------------------ real functions (resolve.c) */

extern void *_Atomic ss_real_fns[SS_API_COUNT];
void *ss_resolve(int api);

static inline void *ss_real(int api)
{
	void *fn = atomic_load_explicit(&ss_real_fns[api], memory_order_relaxed);
	return ss_likely(fn != NULL) ? fn : ss_resolve(api);
}

/* native.c: after a sync point's record, its stacks: native (libunwind, loaded privately),
 * then Python (python.c), timed (meta.stack_cost_*_ns: SHIM-1). */
void ss_stacks_attach(struct ss_tls *tls, uint64_t caller);
/* python.c: the Python frames of the calling thread, if it holds the GIL (or, on the main
 * thread, as soon as it has it back). */
void ss_python_attach(struct ss_tls *tls);
void ss_native_fork_child(void);
void ss_python_fork_child(void);
extern const char *ss_native_stacks_status;
/* native.c: the site of a driver enqueue, CALLER the return address the wrapper was called
 * with, SLOT where it is stored on the stack: CALLER itself when that is the user's code, the
 * user's return address further up when CALLER is inside a statically linked runtime or an
 * nvcc stub (docs/attribution.md). */
uint64_t ss_enqueue_site(uint64_t caller, const uint64_t *slot);
/* writer.c: a module of the shim, CUDA, NCCL, the frameworks or the interpreter (by path) */
int ss_framework_module(const char *path);
int ss_static_runtime_frame(const char *module_path, uintptr_t module_base, uintptr_t ip);
void ss_elfsyms_fork_child(void); /* elfsyms.c: its lock, as a fork child must find it */
extern _Atomic unsigned ss_native_libgcc_sites; /* native.c: sites that chose libgcc's unwinder */

static inline int ss_wants_stack(int cls)
{
	return cls >= SS_S1 && cls <= SS_S6; /* S7: polling loops are counted, not stacked */
}

/* driver.c: the modules that looked driver functions up through dlsym/cuGetProcAddress
 * (comma-separated basenames, for meta.driver_clients); returns the length written. */
size_t ss_driver_clients(char *out, size_t len);

/* cudart.c: the runtime table's wrappers by API, for dlsym to hand out (driver.c). */
struct ss_wrapper_ref {
	int api;
	void *wrapper;
};
extern const struct ss_wrapper_ref ss_cudart_wrappers[];
extern const size_t ss_cudart_wrapper_count;

/* Functions the shim calls but does not intercept (memory kind, versions, NCCL rank). */
void *ss_resolve_helper(enum ss_layer layer, const char *name);

/* ------------------------------------------------------------------ misc */

uint64_t ss_hash64(const void *data, size_t len);

#endif
