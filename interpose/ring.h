/*
 * interpose/ring.h: per-thread event buffers. Each recording thread owns one single-producer
 * single-consumer ring: the thread appends records (SHIM-1: no lock, no system call), the
 * writer thread consumes them. Rings hang on one global list that only grows; a ring whose
 * thread has exited is drained, then its storage is given back to the memory cap.
 */
#ifndef SYNCSPY_RING_H
#define SYNCSPY_RING_H

#include "shim.h"

struct ss_ring {
	/* producer side: its own cache lines */
	_Atomic uint64_t head;	   /* records published */
	uint64_t tail_seen;	   /* producer's last view of tail (saves a shared read) */
	_Atomic uint64_t dropped;  /* SHIM-5: records lost to a full ring */
	_Atomic int poll_open;	   /* a polling loop is being folded into `poll` */
	_Atomic unsigned poll_seq; /* sequence lock over poll/poll_open, for the writer's peek */
	char pad0[32];
	struct ss_rec poll; /* the open S7 loop: first query, last end and ret, aux = count */
	/* consumer side */
	_Atomic uint64_t tail; /* records consumed by the writer */
	char pad1[56];
	/* fixed at attach */
	uint64_t mask; /* capacity - 1, capacity a power of two */
	size_t bytes;  /* storage size, counted against the cap */
	pid_t tid;
	uint32_t pthread_id;  /* (uint32_t)pthread_self(): CUPTI's threadId (gpu_tables.c) */
	_Atomic int orphaned; /* the owning thread exited (or forked away) */
	struct ss_ring *next; /* global list */
	struct ss_rec *recs;  /* NULL once released */
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
/* The global list, newest first. */
struct ss_ring *ss_ring_list(void);
/* Writer: frees the storage of an orphaned, drained ring. */
void ss_ring_release(struct ss_ring *ring);
/* Fork child: forgets every ring of the parent (their threads do not exist here). */
void ss_ring_forget_all(void);
extern _Atomic uint64_t ss_dropped_no_buffer;

/* Appends one record; 0 when the ring is full (the record is counted as dropped). */
__attribute__((always_inline)) static inline int ss_ring_push(struct ss_ring *ring,
							      const struct ss_rec *rec)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	if (ss_unlikely(head - ring->tail_seen > ring->mask)) {
		ring->tail_seen = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (head - ring->tail_seen > ring->mask) {
			atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
			return 0;
		}
	}
	ring->recs[head & ring->mask] = *rec;
	atomic_store_explicit(&ring->head, head + 1, memory_order_release);
	return 1;
}

/* Each record fills a fresh cache line, which the writer's core read on the last lap: a store
 * to it must first fetch it for ownership. A wrapper asks for its line on entry, so the fetch
 * overlaps the real call instead of stalling the append. */
__attribute__((always_inline)) static inline void ss_prefetch_slot(const struct ss_tls *tls)
{
	const struct ss_ring *ring = tls->ring;
	if (ss_likely(ring != NULL))
		__builtin_prefetch(
		    &ring->recs[atomic_load_explicit(&ring->head, memory_order_relaxed) &
				ring->mask],
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
 * million cudaEventQuery calls costs one record, not a full ring. */
__attribute__((always_inline)) static inline void ss_emit(struct ss_tls *tls,
							  const struct ss_rec *rec)
{
	struct ss_ring *ring = tls->ring;
	if (ss_unlikely(ring == NULL ||
			tls->generation !=
			    atomic_load_explicit(&ss_hot.generation, memory_order_relaxed))) {
		ring = ss_ring_attach(tls);
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
