/*
 * interpose/ring.h: per-thread event buffers. Each recording thread owns one single-producer
 * single-consumer ring: the thread appends records (SHIM-1: no lock, no system call, no
 * allocation), the writer thread consumes them. A ring is a chain of 4 KiB blocks taken from
 * one region of SYNCSPY_BUFFER_MB that all rings share (ring.c): the thread writes into its
 * current block and, when it is full, takes a free one (a lock-free pop) and links it; with
 * none free (the cap reached), the record is counted as dropped (SHIM-5). The writer consumes
 * blocks in order and gives each one it has left back to the free list. So a busy thread's
 * ring grows to whatever the cap has free, without waiting for the writer, and shrinks as it
 * drains. Rings hang on one global list that only grows; a ring whose thread has exited is
 * drained, then its blocks are given back.
 */
#ifndef SYNCSPY_RING_H
#define SYNCSPY_RING_H

#include "hot.h"
#include "shim.h"

/* capture.h's slow path, declared here so that ring.h needs no more of capture.h */
int ss_capture_slow(struct ss_tls *tls, const struct ss_rec *rec, int capture_bits);

/* One block of a ring, in the shared region (ring.c). */
struct ss_seg {
	struct ss_seg *_Atomic next; /* set by the producer before it publishes a record past it */
	uint64_t base;		     /* ring index of recs[0] */
	uint64_t cap;		     /* records */
	char pad[40];
	struct ss_rec recs[]; /* 64-byte aligned: one record per cache line */
};
_Static_assert(sizeof(struct ss_seg) == 64, "records stay cache-line aligned");

struct ss_ring {
	/* producer side: its own cache lines */
	_Atomic uint64_t head;	   /* records published */
	uint64_t cur_base;	   /* the current segment's first index */
	uint64_t cur_end;	   /* and one past its last */
	struct ss_rec *cur_recs;   /* its records */
	struct ss_seg *cur;	   /* the current segment */
	_Atomic int poll_open;	   /* a polling loop is being folded into `poll` */
	_Atomic unsigned poll_seq; /* sequence lock over poll/poll_open, for the writer's peek */
	char pad0[24];
	struct ss_rec poll; /* the open S7 loop: first query, last end and ret, aux = count */
	/* SHIM-5: records lost to a full ring, and of those the calls, per class (the rest are
	 * stacks and markers). Written by the producer only when it drops. */
	_Atomic uint64_t dropped;
	_Atomic uint64_t dropped_calls[SS_CLASS_COUNT];
	/* SHIM-6: calls made outside the capture ranges, per class (capture.c) */
	_Atomic uint64_t skipped_calls[SS_CLASS_COUNT];
	/* consumer side (writer-private) */
	_Atomic uint64_t tail; /* records consumed by the writer */
	struct ss_seg *rseg;   /* the block the writer reads */
	/* fixed at attach */
	pid_t tid;
	uint32_t pthread_id;  /* (uint32_t)pthread_self(): CUPTI's threadId (gpu_tables.c) */
	_Atomic int orphaned; /* the owning thread exited (or forked away) */
	int released;	      /* its segments were given back (writer) */
	struct ss_ring *next; /* global list */
	/* writer-private */
	void *writer_state;
	/* producer-written, read by the writer for meta (SHIM-1: what the stacks cost) */
	_Atomic uint64_t
	    stack_ticks[2];	       /* clock ticks spent taking native [0], Python [1] stacks */
	_Atomic uint64_t stacks_taken; /* sync points whose stacks were taken */
	/* of those, the ones whose native stack the thread had sent before (a loop's steady
	 * state), and the ticks they took, native and Python (deferred frames: when keyed) */
	_Atomic uint64_t stacks_repeated, stack_ticks_repeated;
};

/* Slow path: gives the calling thread a ring (NULL under the memory cap: counted dropped). */
struct ss_ring *ss_ring_attach(struct ss_tls *tls);
/* The same for a call of class CLS, which is counted per class when no ring can be had. */
struct ss_ring *ss_ring_attach_call(struct ss_tls *tls, int cls);
/* The global list, newest first. */
struct ss_ring *ss_ring_list(void);
/* Writer: the next record to consume (NULL when the ring is empty up to `head`); moving past
 * a block the producer has left gives it back to the free list. */
const struct ss_rec *ss_ring_peek(struct ss_ring *ring, uint64_t tail, uint64_t head);
/* Writer: faults in the next never-used blocks before a thread needs them. */
void ss_ring_prefault(void);
/* Writer, while nothing is being recorded: the pages of free blocks go back to the system. */
void ss_ring_trim(void);
/* Writer: gives the blocks of an orphaned, drained ring back. */
void ss_ring_release(struct ss_ring *ring);
/* Fork child: forgets every ring of the parent (their threads do not exist here). */
void ss_ring_forget_all(void);
/* Calls of threads that could get no ring at all, per class (SHIM-5). */
extern _Atomic uint64_t ss_dropped_no_buffer;
extern _Atomic uint64_t ss_dropped_no_buffer_calls[SS_CLASS_COUNT];
/* The bytes all rings hold now, and the most they held at once (blocks handed out). */
size_t ss_ring_bytes_in_use(void);
size_t ss_ring_bytes_peak(void);
uint64_t ss_ring_bytes_trimmed(void); /* pages of free blocks given back to the system */
size_t ss_ring_region_bytes(void);    /* the cap as mapped (0 before the first attach) */

/* Producer, out of line: moves into a free block; 0 (counted) when there is none. */
int ss_ring_next_segment(struct ss_ring *ring, const struct ss_rec *rec);

/* Appends one record; 0 when the ring is full (the record is counted as dropped). */
__attribute__((always_inline)) static inline int ss_ring_push(struct ss_ring *ring,
							      const struct ss_rec *rec)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	if (ss_unlikely(head >= ring->cur_end) && !ss_ring_next_segment(ring, rec))
		return 0;
	ring->cur_recs[head - ring->cur_base] = *rec;
	atomic_store_explicit(&ring->head, head + 1, memory_order_release);
	return 1;
}

/* Each record fills a fresh cache line, which the writer's core read on the last lap: a store
 * to it must first fetch it for ownership. A wrapper asks for its line on entry, so the fetch
 * overlaps the real call instead of stalling the append (a prefetch past the segment's end is
 * harmless: it never faults). */
__attribute__((always_inline)) static inline void ss_prefetch_slot(const struct ss_tls *tls)
{
	const struct ss_ring *ring = tls->ring;
	if (ss_likely(ring != NULL))
		__builtin_prefetch(
		    ring->cur_recs +
			(atomic_load_explicit(&ring->head, memory_order_relaxed) - ring->cur_base),
		    1, 3);
}

/* S7 calls, and the first call after a polling loop (ring.c). */
void ss_emit_poll(struct ss_ring *ring, const struct ss_rec *rec);
/* Producer: publishes the open polling loop, if any (thread exit). */
void ss_ring_close_poll(struct ss_ring *ring);
/* Writer: a consistent copy of the open polling loop; 0 when none is open. */
int ss_ring_peek_poll(struct ss_ring *ring, struct ss_rec *out);

/* The hot-path append (SHIM-1). A polling loop (SCHEMA-5) is folded in place, in the ring's
 * `poll` record, and reaches the ring once, when the thread makes any other call: a loop of a
 * million cudaEventQuery calls costs one record, not a full ring. CAPTURE_BITS: ss_hot.capture
 * as the call started (SHIM-6). */
__attribute__((always_inline)) static inline void
ss_emit(struct ss_tls *tls, const struct ss_rec *rec, int capture_bits)
{
	/* SHIM-6: CAPTURE_BITS, ss_hot.capture as the call started, is not 0 only around a
	 * capture range (capture.c) */
	if (ss_unlikely(capture_bits != 0) && !ss_capture_slow(tls, rec, capture_bits))
		return;
	struct ss_ring *ring = tls->ring;
	if (ss_unlikely(ring == NULL ||
			tls->generation !=
			    atomic_load_explicit(&ss_hot.generation, memory_order_relaxed))) {
		ring = ss_ring_attach_call(tls, rec->cls);
		if (ring == NULL)
			return;
	}
	if (ss_unlikely(rec->cls == SS_S7 ||
			atomic_load_explicit(&ring->poll_open, memory_order_relaxed))) {
		ss_emit_poll(ring, rec);
		return;
	}
	ss_ring_push(ring, rec);
}

#endif
