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
	/* producer side: its own cache line */
	_Atomic uint64_t head;      /* records published */
	uint64_t tail_seen;         /* producer's last view of tail (saves a shared read) */
	_Atomic uint64_t dropped;   /* SHIM-5: records lost to a full ring */
	char pad0[40];
	/* consumer side */
	_Atomic uint64_t tail;      /* records consumed by the writer */
	char pad1[56];
	/* fixed at attach */
	uint64_t mask;              /* capacity - 1, capacity a power of two */
	size_t bytes;               /* storage size, counted against the cap */
	pid_t tid;
	_Atomic int orphaned;       /* the owning thread exited (or forked away) */
	struct ss_ring *next;       /* global list */
	struct ss_rec *recs;        /* NULL once released */
	/* writer-private */
	void *writer_state;
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

/* The hot-path append (SHIM-1). */
static inline void ss_emit(struct ss_tls *tls, const struct ss_rec *rec)
{
	struct ss_ring *ring = tls->ring;
	if (ss_unlikely(ring == NULL ||
			tls->generation != atomic_load_explicit(&ss_generation,
								memory_order_relaxed))) {
		ring = ss_ring_attach(tls);
		if (ring == NULL)
			return;
	}
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	if (ss_unlikely(head - ring->tail_seen > ring->mask)) {
		ring->tail_seen = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (head - ring->tail_seen > ring->mask) {
			atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
			return;
		}
	}
	ring->recs[head & ring->mask] = *rec;
	atomic_store_explicit(&ring->head, head + 1, memory_order_release);
}

#endif
