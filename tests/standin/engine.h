/* SPDX-License-Identifier: MIT */
/*
 * engine.h: internal interface of the libcuda.so.1 CPU stand-in (the "engine").
 *
 * The engine emulates a GPU with host threads so that syncspy can be tested on a machine
 * without one: "device memory" is host memory kept in a registry of ranges (E-MEM), every
 * stream is a FIFO of operations run by its own worker thread (E-STREAM), and the ordering
 * rules of the legacy default stream are kept with per-stream sequence numbers (E-LEGACY).
 * cuda.c holds the exported driver API and is the only user of this header.
 *
 * Invariants, cited in the code:
 *   E-MEM     A pointer is "device" memory when it lies in a range registered as DEVICE,
 *             MANAGED or ASYNC, "pinned" host memory when registered as PINNED, and pageable
 *             host memory when it is in no range at all (exactly what the real driver's
 *             pointer attributes tell a profiler).
 *   E-SEQ     Each stream numbers its operations 1, 2, 3... at enqueue (enq_seq) and publishes
 *             the number of the last finished one (done_seq). Ops finish in order, so "the
 *             stream has reached position n" is done_seq >= n. Stream, event and context
 *             syncs are all waits for such positions.
 *   E-ORDER   Every enqueue takes g_order_lock, so enqueues on all streams are totally ordered;
 *             the dependencies a new op takes (E-LEGACY) are snapshots under that lock and can
 *             never form a cycle.
 *   E-LEGACY  An op on the legacy default stream depends on the current tail of every other
 *             blocking stream (including per-thread default streams); an op on a blocking
 *             stream depends on the current tail of the legacy stream. Streams created with
 *             CU_STREAM_NON_BLOCKING take no such dependency.
 *   E-KEEP    Stream structs are never freed (a destroyed stream's worker exits once its queue
 *             is drained): events and other streams' dependencies may still point at them.
 *             The cost is a few hundred bytes per destroyed stream, fine for tests.
 *   E-GRAPH   Launches of one executable graph never run at the same time: a launch on another
 *             stream than the previous launch's waits for that launch's last op (cuGraphLaunch:
 *             "Each launch is ordered behind ... any previous launches of hGraphExec").
 */
#ifndef SYNCSPY_STANDIN_ENGINE_H
#define SYNCSPY_STANDIN_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "cupti_hooks.h"

#pragma GCC visibility push(hidden)

/* The libcupti.so.13 stand-in's hooks (cupti_hooks.h), NULL while it is not loaded. */
extern const struct standin_cupti_hooks *_Atomic g_cupti;

/* ------------------------------------------------------------------ memory registry (E-MEM) */

enum mem_kind {
	MEM_PAGEABLE = 0, /* not registered: plain malloc'ed or stack memory */
	MEM_DEVICE,	  /* cuMemAlloc, cuMemAllocPitch */
	MEM_PINNED,	  /* cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister */
	MEM_MANAGED,	  /* cuMemAllocManaged */
	MEM_ASYNC,	  /* cuMemAllocAsync (stream-ordered, device memory) */
};

struct mem_range {
	uintptr_t base;
	size_t size;
	enum mem_kind kind;
	bool owned; /* allocated by the engine (freed by it); false for cuMemHostRegister */
};

/* Finds the range holding p; returns false (and kind MEM_PAGEABLE in *out) when none does. */
bool mem_lookup(const void *p, struct mem_range *out);
enum mem_kind mem_kind_of(const void *p);
bool mem_is_device_side(enum mem_kind kind);
/* Registers [base, base+size); false if it overlaps a registered range. */
bool mem_insert(void *base, size_t size, enum mem_kind kind, bool owned);
/* Removes the range that starts exactly at base; false if there is none. */
bool mem_remove(const void *base, struct mem_range *out);
/* Allocates size bytes of registered memory of the given kind (256-byte aligned), or NULL. */
void *mem_alloc(size_t size, enum mem_kind kind);

/* ------------------------------------------------------------------ handles */

/* Magic numbers at the start of every handle struct: a live handle is in the handle set and
 * carries the right magic, so a stale or foreign pointer gives CUDA_ERROR_INVALID_HANDLE
 * instead of a crash. */
enum handle_magic {
	MAGIC_STREAM = 0x5354524d,
	MAGIC_EVENT = 0x45564e54,
	MAGIC_GRAPH = 0x47525048,
	MAGIC_GRAPH_EXEC = 0x47455845,
	MAGIC_ARRAY = 0x41525259,
	MAGIC_MIPMAPPED = 0x4d495041,
	MAGIC_MODULE = 0x4d4f444c,
	MAGIC_LIBRARY = 0x4c494252,
};

void handles_add(void *h);
void handles_remove(void *h);
/* True when h is a live handle whose first field is magic. */
bool handles_check(const void *h, uint32_t magic);

/* ------------------------------------------------------------------ operations */

enum op_kind {
	OP_CALL,	 /* kernel or host function: fn(arg) */
	OP_CALLBACK,	 /* cuStreamAddCallback: fn(stream handle, CUDA_SUCCESS, user) */
	OP_COPY,	 /* memcpy (1D is a 2D copy of height 1), takes bytes / bandwidth */
	OP_MEMSET,	 /* memset of 1, 2 or 4-byte elements */
	OP_EVENT_RECORD, /* stamps an event */
	OP_BARRIER,	 /* no work: only its dependencies (cuStreamWaitEvent) */
	OP_FREE,	 /* cuMemFreeAsync: unregister and free when reached */
	OP_WAIT_VALUE,	 /* cuStreamWaitValue32/64: holds the stream until a word compares */
	OP_WRITE_VALUE,	 /* cuStreamWriteValue32/64: stores a word when reached */
};

struct stream;
struct event;

struct dep {
	struct stream *stream;
	uint64_t seq;
};

struct op {
	struct op *next;
	enum op_kind kind;
	uint64_t seq;	  /* position in its stream (E-SEQ), set at enqueue */
	struct dep *deps; /* positions of other streams to wait for before running */
	int ndeps;
	uint32_t cupti_correlation; /* a kernel or copy CUPTI traces (cupti_hooks.h); 0: none */
	union {
		struct {
			void (*fn)(void *);
			void *arg;
		} call;
		struct {
			CUstreamCallback fn;
			CUstream handle;
			void *user;
		} callback;
		struct {
			char *dst;
			const char *src;
			size_t width, height, dpitch, spitch;
			double bytes_per_ns;
			uint8_t cupti_kind; /* CUpti_ActivityMemcpyKind, with cupti_correlation */
			bool pageable;
		} copy;
		struct {
			char *dst;
			uint32_t value;
			unsigned elem_size;
			size_t width_elems, height, pitch;
			double bytes_per_ns;
		} memset;
		struct {
			struct event *ev;
			uint64_t gen;
		} record;
		struct {
			void *ptr;
		} free;
		struct {
			void *addr;
			uint64_t value;
			unsigned flags; /* CU_STREAM_WAIT_VALUE_GEQ, EQ, AND, NOR */
			bool is64;
		} value;
	};
};

struct op *op_new(enum op_kind kind);

/* ------------------------------------------------------------------ graphs (stream capture) */

/* A captured graph is just the list of ops enqueued on the capturing stream, in order. */
struct graph {
	uint32_t magic;
	struct op *head, *tail;
};

struct graph_exec {
	uint32_t magic;
	struct op *head;
	/* the previous launch's last op (E-GRAPH): a launch on another stream waits for it */
	pthread_mutex_t mu;
	struct dep last;
};

struct graph *graph_new(void);
void graph_free(struct graph *g);
struct graph_exec *graph_instantiate(const struct graph *g);
void graph_exec_free(struct graph_exec *x);
/* Enqueues a copy of every op of x on s (or into s's capture). */
/* Enqueues the executable graph's ops on s; its kernels traced (CUPTI) carry correlation, the
 * launch's API record's (0: untraced), as a GPU's graph replay reports them. E-GRAPH: "Each
 * launch is ordered behind both any previous work in hStream and any previous launches of
 * hGraphExec" (cuGraphLaunch): a launch on another stream than the previous one's first waits
 * for the previous one's end. */
CUresult graph_launch(struct graph_exec *x, struct stream *s, uint32_t correlation);

/* ------------------------------------------------------------------ streams (E-STREAM) */

struct stream {
	uint32_t magic;
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* signalled when an op is queued or the stream retires */
	pthread_cond_t done_cv; /* broadcast when done_seq advances */
	struct op *head, *tail;
	_Atomic uint64_t enq_seq;  /* E-SEQ: number given to the last enqueued op */
	_Atomic uint64_t done_seq; /* E-SEQ: number of the last finished op */
	unsigned flags;		   /* CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING */
	int priority;
	bool is_legacy;
	uint32_t cupti_id;     /* its stream id in CUPTI's records: 1, 2, 3... by creation */
	bool retiring;	       /* destroyed: the worker exits when the queue is empty (E-KEEP) */
	struct graph *capture; /* non-NULL while capturing; guarded by g_order_lock */
	struct stream *next_all;
};

/* Which stream the NULL handle means: the legacy one, or (in _ptsz/_ptds entry points and with
 * CU_STREAM_PER_THREAD) the calling thread's per-thread default stream. */
enum default_stream {
	DEFAULT_LEGACY,
	DEFAULT_PER_THREAD,
};

void engine_init(void);
struct stream *stream_create(unsigned flags, int priority);
void stream_retire(struct stream *s);
/* Maps a handle to its stream; NULL when the handle is not a live stream. */
struct stream *stream_resolve(CUstream h, enum default_stream def);
/* Queues op on s (or records it into s's capture). *seq_out gets the op's position, or 0 when
 * it was captured and will not run now. */
void stream_submit(struct stream *s, struct op *op, uint64_t *seq_out);
/* Blocks until s has reached position seq. */
void stream_wait_reached(struct stream *s, uint64_t seq);
bool stream_reached(struct stream *s, uint64_t seq);
/* Stream sync / query; for the legacy stream they also cover the blocking streams (E-LEGACY). */
void stream_synchronize(struct stream *s);
bool stream_idle(struct stream *s);
/* cuCtxSynchronize: waits until every stream has finished what was enqueued before the call. */
void ctx_synchronize(void);
bool stream_is_capturing(struct stream *s);
/* Starts / ends capture under g_order_lock; begin fails (false) if s is legacy or capturing. */
bool stream_begin_capture(struct stream *s);
struct graph *stream_end_capture(struct stream *s);

/* ------------------------------------------------------------------ events */

struct event {
	uint32_t magic;
	pthread_mutex_t mu;
	unsigned flags;
	struct stream *stream; /* where it was last recorded, NULL if never */
	uint64_t seq;	       /* position of the record op in that stream */
	uint64_t gen;	       /* bumped at every record: a stale record op does not stamp */
	bool stamped;
	uint64_t time_ns;
	atomic_int refs; /* the handle + one per pending record op */
};

struct event *event_create(unsigned flags);
void event_put(struct event *ev);

/* ------------------------------------------------------------------ copies and memsets */

enum copy_dir {
	DIR_HTOD,
	DIR_DTOH,
	DIR_DTOD,
	DIR_HTOH,
	DIR_INFER, /* cuMemcpy / CU_MEMORYTYPE_UNIFIED: decided from the registry (E-MEM) */
};

/* A 2D copy of height rows of width bytes. Blocks the caller until the copy is done when it is
 * synchronous or when the host side is pageable memory (a degraded async copy). */
CUresult engine_copy(struct stream *s, void *dst, size_t dpitch, const void *src, size_t spitch,
		     size_t width, size_t height, enum copy_dir dir, bool async);
/* A 2D memset of height rows of width_elems elements of elem_size bytes. A synchronous memset
 * returns after completion when the target is pinned or managed memory. */
CUresult engine_memset(struct stream *s, void *dst, size_t pitch, uint32_t value,
		       unsigned elem_size, size_t width_elems, size_t height, bool async);

/* A stream memory operation (OP_WAIT_VALUE or OP_WRITE_VALUE) on the 4- or 8-byte word at addr,
 * which must be registered memory (device, pinned or managed, E-MEM), as the real driver wants
 * it mapped for the device. Queued: the host never waits for it. */
CUresult engine_value_op(struct stream *s, enum op_kind kind, CUdeviceptr addr, uint64_t value,
			 unsigned flags, bool is64);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

#pragma GCC visibility pop

#endif
