/*
 * syncspy/model.h: the sync model shared by the shim (libsyncspy.so) and the command
 * (syncspy). Classes, host memory kinds and copy directions, each declared once as an X-macro
 * so that enums, names and the database's lookup tables come from the same lines.
 *
 * The classes are those of docs/sync-model.md (S1-S7, E1-E3, N1-N2) plus X1, for calls that
 * are recorded only to interpret the others (stream and event creation, capture begin/end).
 * docs/sync-model.md explains each one in the words of the host/device model.
 */
#ifndef SYNCSPY_MODEL_H
#define SYNCSPY_MODEL_H

/* X(class, is_sync_point, description) */
#define SS_CLASSES(X)                                                                              \
	X(S1, 1, "device/context synchronize: the host waits for all work of the device")          \
	X(S2, 1, "stream synchronize: the host waits for all work queued in one stream")           \
	X(S3, 1, "event synchronize: the host waits for one recorded event")                       \
	X(S4, 1,                                                                                   \
	  "blocking copy: a memcpy that returns after the copy (non-async, or host-to-host)")      \
	X(S5, 1, "degraded async copy: an *Async copy from/to pageable memory stages and blocks")  \
	X(S6, 1,                                                                                   \
	  "implicit sync: allocation/free/registration, a stack size change, memset to pinned "    \
	  "or managed memory, legacy default stream use while blocking streams have work")         \
	X(S7, 1, "polling: stream/event queries (one row per uninterrupted polling loop)")         \
	X(E1, 0, "enqueue: kernel launches, async copies and memsets, graphs, host functions")     \
	X(E2, 0, "event record: marks a point in a stream for others to wait on")                  \
	X(E3, 0, "stream wait event: orders one stream after an event, without the host")          \
	X(N1, 0, "NCCL communicator lifecycle: init, split, shrink, finalize, destroy, abort")     \
	X(N2, 0, "NCCL operation: collectives, send/recv, group start/end")                        \
	X(X1, 0,                                                                                   \
	  "context call: stream/event creation and destruction, capture begin/end, graph "         \
	  "instantiation")

enum ss_class {
	SS_CLASS_NONE = 0,
#define SS_CLASS_ENUM(c, sync, desc) SS_##c,
	SS_CLASSES(SS_CLASS_ENUM)
#undef SS_CLASS_ENUM
	    SS_CLASS_COUNT
};

/* Host memory kind of a copy's or memset's host-side buffer, decided at call time.
 * X(id, name) */
#define SS_MEMKINDS(X)                                                                             \
	X(0, NONE, NULL)                                                                           \
	X(1, PAGEABLE, "pageable")                                                                 \
	X(2, PINNED, "pinned")                                                                     \
	X(3, DEVICE, "device")                                                                     \
	X(4, MANAGED, "managed")                                                                   \
	X(5, UNKNOWN, "unknown")

enum ss_memkind {
#define SS_MEMKIND_ENUM(id, n, s) SS_MEM_##n = id,
	SS_MEMKINDS(SS_MEMKIND_ENUM)
#undef SS_MEMKIND_ENUM
};

/* Copy direction. X(id, name, text) */
#define SS_DIRS(X)                                                                                 \
	X(0, NONE, NULL)                                                                           \
	X(1, H2D, "H2D")                                                                           \
	X(2, D2H, "D2H")                                                                           \
	X(3, D2D, "D2D")                                                                           \
	X(4, H2H, "H2H")                                                                           \
	X(5, PEER, "peer")                                                                         \
	X(6, MEMSET, "memset")

enum ss_dir {
#define SS_DIR_ENUM(id, n, s) SS_DIR_##n = id,
	SS_DIRS(SS_DIR_ENUM)
#undef SS_DIR_ENUM
};

/* Stream handles as stored: the two default streams get fixed small values, every other
 * stream is its handle value. (cudaStreamLegacy is 0x1 and cudaStreamPerThread 0x2 in the
 * runtime too; stream 0 is mapped to one of them depending on the entry point's variant.) */
#define SS_STREAM_LEGACY     1
#define SS_STREAM_PER_THREAD 2

/* API layers: which family of entry points a call came through. */
#define SS_LAYERS(X)                                                                               \
	X(RUNTIME, "runtime")                                                                      \
	X(DRIVER, "driver")                                                                        \
	X(NCCL, "nccl")

enum ss_layer {
#define SS_LAYER_ENUM(n, s) SS_LAYER_##n,
	SS_LAYERS(SS_LAYER_ENUM)
#undef SS_LAYER_ENUM
	    SS_LAYER_COUNT
};

#endif
