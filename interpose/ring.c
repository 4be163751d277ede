/*
 * interpose/ring.c: giving threads their rings under the memory cap, and taking them back.
 *
 * A thread's first recorded call attaches a ring (the one slow path of a thread, SHIM-1).
 * Ring size: 1/32 of SYNCSPY_BUFFER_MB, at most 4 MiB (65536 records): 32 threads get a full
 * ring under the default cap; later ones get halves down to 64 KiB while the cap is short; past
 * that the thread records nothing and its calls count as dropped_no_buffer (SHIM-5). A pthread
 * key's destructor marks the ring orphaned when the thread exits; the writer drains it and gives
 * its storage back to the cap.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "env.h"
#include "lifecycle.h"
#include "ring.h"

#define RING_MAX_BYTES ((size_t)4 << 20)
#define RING_MIN_BYTES ((size_t)64 << 10)

static struct ss_ring *_Atomic ring_list;
static _Atomic size_t bytes_in_use;
_Atomic uint64_t ss_dropped_no_buffer;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *arg)
{
	struct ss_ring *ring = arg;
	ss_ring_close_poll(ring);
	atomic_store_explicit(&ring->orphaned, 1, memory_order_release);
	if (ss_tls.ring == ring)
		ss_tls.ring = NULL;
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* Takes `want` bytes (or a smaller power of two, not under RING_MIN_BYTES) from the cap. */
static size_t reserve_bytes(size_t want)
{
	size_t cap = (size_t)ss_config.SYNCSPY_BUFFER_MB << 20;
	size_t cur = atomic_load(&bytes_in_use);
	for (;;) {
		size_t size = want;
		while (cur + size > cap && size > RING_MIN_BYTES)
			size /= 2;
		if (cur + size > cap)
			return 0;
		if (atomic_compare_exchange_weak(&bytes_in_use, &cur, cur + size))
			return size;
	}
}

static struct ss_ring *attach(struct ss_tls *tls);

/* SHIM-2: starting the writer and allocating a ring make system calls that may set errno. */
struct ss_ring *ss_ring_attach(struct ss_tls *tls)
{
	int saved_errno = errno;
	struct ss_ring *ring = attach(tls);
	errno = saved_errno;
	return ring;
}

static struct ss_ring *attach(struct ss_tls *tls)
{
	ss_start();
	unsigned generation = atomic_load(&ss_hot.generation);
	if (atomic_load(&ss_hot.state) != SS_STATE_RUNNING)
		return NULL;
	pthread_once(&exit_key_once, make_exit_key);

	size_t want = ((size_t)ss_config.SYNCSPY_BUFFER_MB << 20) / 32;
	if (want > RING_MAX_BYTES)
		want = RING_MAX_BYTES;
	size_t pow2 = RING_MIN_BYTES;
	while (pow2 * 2 <= want)
		pow2 *= 2;
	size_t bytes = reserve_bytes(pow2);
	struct ss_ring *ring = bytes ? calloc(1, sizeof(*ring)) : NULL;
	struct ss_rec *recs = ring ? aligned_alloc(64, bytes) : NULL;
	if (recs == NULL) {
		free(ring);
		if (bytes)
			atomic_fetch_sub(&bytes_in_use, bytes);
		atomic_fetch_add_explicit(&ss_dropped_no_buffer, 1, memory_order_relaxed);
		return NULL;
	}
	ring->recs = recs;
	ring->bytes = bytes;
	ring->mask = bytes / sizeof(struct ss_rec) - 1;
	ring->tid = (pid_t)syscall(SYS_gettid);
	ring->pthread_id = (uint32_t)(uintptr_t)pthread_self();
	ring->next = atomic_load(&ring_list);
	while (!atomic_compare_exchange_weak(&ring_list, &ring->next, ring))
		;
	tls->ring = ring;
	tls->generation = generation;
	pthread_setspecific(exit_key, ring);
	return ring;
}

struct ss_ring *ss_ring_list(void)
{
	return atomic_load_explicit(&ring_list, memory_order_acquire);
}

void ss_ring_release(struct ss_ring *ring)
{
	if (ring->recs == NULL)
		return;
	free(ring->recs);
	ring->recs = NULL;
	atomic_fetch_sub(&bytes_in_use, ring->bytes);
}

void ss_ring_forget_all(void)
{
	struct ss_ring *ring = atomic_exchange(&ring_list, NULL);
	while (ring) {
		struct ss_ring *next = ring->next;
		free(ring->recs);
		free(ring->writer_state);
		free(ring);
		ring = next;
	}
	atomic_store(&bytes_in_use, 0);
	ss_tls.ring = NULL;
	if (exit_key_once != PTHREAD_ONCE_INIT) /* the key's value would name a freed ring */
		pthread_setspecific(exit_key, NULL);
}

/* ------------------------------------------------------------------ polling loops */

static void poll_write_begin(struct ss_ring *ring)
{
	atomic_store_explicit(&ring->poll_seq, ring->poll_seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void poll_write_end(struct ss_ring *ring)
{
	atomic_store_explicit(&ring->poll_seq, ring->poll_seq + 1, memory_order_release);
}

static int same_loop(const struct ss_rec *a, const struct ss_rec *b)
{
	return a->api == b->api && a->obj == b->obj && a->stream == b->stream;
}

void ss_ring_close_poll(struct ss_ring *ring)
{
	if (!atomic_load_explicit(&ring->poll_open, memory_order_relaxed))
		return;
	ss_ring_push(ring, &ring->poll);
	poll_write_begin(ring);
	atomic_store_explicit(&ring->poll_open, 0, memory_order_relaxed);
	poll_write_end(ring);
}

void ss_emit_poll(struct ss_ring *ring, const struct ss_rec *rec)
{
	if (atomic_load_explicit(&ring->poll_open, memory_order_relaxed)) {
		if (rec->cls == SS_S7 && same_loop(&ring->poll, rec)) {
			poll_write_begin(ring);
			ring->poll.t_end = rec->t_end;
			ring->poll.ret = rec->ret;
			ring->poll.aux++;
			poll_write_end(ring);
			return;
		}
		ss_ring_close_poll(ring);
	}
	if (rec->cls != SS_S7) {
		ss_ring_push(ring, rec);
		return;
	}
	poll_write_begin(ring);
	ring->poll = *rec;
	ring->poll.aux = 1; /* the loop's query count */
	atomic_store_explicit(&ring->poll_open, 1, memory_order_relaxed);
	poll_write_end(ring);
}

int ss_ring_peek_poll(struct ss_ring *ring, struct ss_rec *out)
{
	for (int attempt = 0; attempt < 1000; attempt++) {
		unsigned s1 = atomic_load_explicit(&ring->poll_seq, memory_order_acquire);
		if (s1 & 1)
			continue;
		int open = atomic_load_explicit(&ring->poll_open, memory_order_relaxed);
		struct ss_rec copy;
		__builtin_memcpy(&copy, (const void *)&ring->poll, sizeof(copy));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&ring->poll_seq, memory_order_relaxed) != s1)
			continue;
		if (open)
			*out = copy;
		return open;
	}
	return 0; /* the owner is busy folding: the next commit will see it */
}
