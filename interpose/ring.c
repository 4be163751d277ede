/*
 * interpose/ring.c: giving threads their rings under the memory cap, growing and shrinking
 * them, and taking them back.
 *
 * All rings share one region of SYNCSPY_BUFFER_MB, mapped at the first attach (MAP_NORESERVE:
 * a page costs memory only once written) and cut into 4 KiB blocks of 63 records. Free
 * blocks are a lock-free stack (a Treiber stack, its top tagged against ABA) in front of the
 * never-used rest of the region (a bump index), so that a thread takes a block with one
 * compare-and-swap: no lock, no system call, no allocation (SHIM-1). A thread's first recorded
 * call attaches a ring with one block (the one slow path of a thread); when a block is full
 * the thread takes the next, so a busy thread's ring grows to whatever the cap has free
 * without waiting for the writer; the writer gives each block it has consumed back, most
 * recently freed first (its cache lines are warm). With no block free, the record is counted
 * as dropped (dropped_full_buffer, SHIM-5); a thread that gets no first block counts its calls
 * as dropped_no_buffer. A live thread holds at least its current block: SYNCSPY_BUFFER_MB *
 * 256 threads can record at once (262,144 under the default cap), a limit that scales with the
 * cap. A pthread key's destructor marks the ring orphaned when the thread exits; the writer
 * drains it and gives all its blocks back. When nothing has been recorded for a while the
 * writer gives the pages of the free blocks back to the system (MADV_DONTNEED); while the
 * rings grow it faults in the next never-used blocks ahead of the threads (ss_ring_prefault).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "env.h"
#include "lifecycle.h"
#include "ring.h"

#define BLOCK_BYTES ((size_t)4096)

static struct ss_ring *_Atomic ring_list;
_Atomic uint64_t ss_dropped_no_buffer;
_Atomic uint64_t ss_dropped_no_buffer_calls[SS_CLASS_COUNT];

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------------ the blocks */

static char *region; /* NULL until the first attach, or when it could not be mapped */
/* The free lists' links, one per block, after the blocks: outside them, so that a block whose
 * pages went back to the system is not touched (and brought back) by the list it waits in. */
static _Atomic uint32_t *links;
static uint32_t nblocks;
static _Atomic uint32_t bump; /* blocks from here on were never used */
/* Lock-free stacks of free blocks, each tag << 32 | (index + 1) of its top block, 0 when empty:
 * the blocks given back (warm: their lines were just read) and the ones whose pages went back
 * to the system (cold, ss_ring_trim). */
static _Atomic uint64_t free_top, cold_top;
static _Atomic uint64_t blocks_out; /* handed out to rings */
static _Atomic uint64_t blocks_peak;
static _Atomic uint64_t trimmed_bytes; /* pages given back to the system, in all */
static _Atomic int trimmed = 1; /* the free blocks' pages went back since they were last used */
/* Set (release) once region, links and nblocks are: an attaching thread reads them after the
 * region_once that mapped them, the writer's own looks (ss_ring_prefault, ss_ring_trim,
 * ss_ring_region_bytes) after this flag (acquire), so that none sees a half-published region. */
static _Atomic int region_mapped;

/* The cap as address space; halved where the system refuses that much (a strict overcommit
 * policy counts even MAP_NORESERVE): meta.buffer_region_mb says what was mapped. */
static void map_region(void)
{
	size_t bytes = ((size_t)ss_config.SYNCSPY_BUFFER_MB << 20) / BLOCK_BYTES * BLOCK_BYTES;
	for (; bytes >= ((size_t)1 << 20); bytes /= 2) {
		size_t n = bytes / BLOCK_BYTES, link_bytes = n * sizeof(*links);
		void *p = mmap(NULL, bytes + link_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED) {
			nblocks = (uint32_t)n;
			region = p;
			links = (_Atomic uint32_t *)((char *)p + bytes);
			atomic_store_explicit(&region_mapped, 1, memory_order_release);
			return;
		}
	}
}

size_t ss_ring_region_bytes(void)
{
	if (!atomic_load_explicit(&region_mapped, memory_order_acquire))
		return 0;
	return (size_t)nblocks * BLOCK_BYTES;
}

static struct ss_seg *block_at(uint32_t index)
{
	return (struct ss_seg *)(region + (size_t)index * BLOCK_BYTES);
}

static uint32_t block_index(const struct ss_seg *seg)
{
	return (uint32_t)(((const char *)seg - region) / BLOCK_BYTES);
}

/* Pops the top block, or NULL. Any thread: a stale link, read for a block another thread
 * took first, fails the compare-and-swap through the tag. */
static struct ss_seg *stack_pop(_Atomic uint64_t *stack)
{
	uint64_t top = atomic_load_explicit(stack, memory_order_acquire);
	while ((uint32_t)top != 0) {
		struct ss_seg *candidate = block_at((uint32_t)top - 1);
		uint32_t next =
		    atomic_load_explicit(&links[(uint32_t)top - 1], memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(
			stack, &top, ((top >> 32) + 1) << 32 | next, memory_order_acquire,
			memory_order_acquire))
			return candidate;
	}
	return NULL;
}

static void stack_push(_Atomic uint64_t *stack, struct ss_seg *seg)
{
	uint32_t index = block_index(seg);
	uint64_t top = atomic_load_explicit(stack, memory_order_relaxed);
	do
		atomic_store_explicit(&links[index], (uint32_t)top, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(stack, &top,
						      ((top >> 32) + 1) << 32 | (index + 1),
						      memory_order_release, memory_order_relaxed));
}

/* Any thread, lock-free: a free block (warm, then cold, then never used), or NULL when the cap
 * is reached. */
static struct ss_seg *block_take(void)
{
	if (region == NULL)
		return NULL;
	struct ss_seg *seg = stack_pop(&free_top);
	if (seg == NULL)
		seg = stack_pop(&cold_top);
	if (seg == NULL) {
		if (atomic_load_explicit(&bump, memory_order_relaxed) >= nblocks)
			return NULL;
		uint32_t index = atomic_fetch_add_explicit(&bump, 1, memory_order_relaxed);
		if (index >= nblocks)
			return NULL;
		seg = block_at(index);
	}
	atomic_store_explicit(&seg->next, NULL, memory_order_relaxed);
	seg->cap = (BLOCK_BYTES - sizeof(*seg)) / sizeof(struct ss_rec);
	uint64_t out = atomic_fetch_add_explicit(&blocks_out, 1, memory_order_relaxed) + 1;
	uint64_t peak = atomic_load_explicit(&blocks_peak, memory_order_relaxed);
	while (out > peak &&
	       !atomic_compare_exchange_weak_explicit(&blocks_peak, &peak, out,
						      memory_order_relaxed, memory_order_relaxed))
		;
	return seg;
}

/* Writer (and a thread whose attach failed half-way): gives a block back. */
static void block_give(struct ss_seg *seg)
{
	stack_push(&free_top, seg);
	atomic_fetch_sub_explicit(&blocks_out, 1, memory_order_relaxed);
	atomic_store_explicit(&trimmed, 0, memory_order_relaxed);
}

size_t ss_ring_bytes_in_use(void)
{
	return (size_t)atomic_load(&blocks_out) * BLOCK_BYTES;
}

uint64_t ss_ring_bytes_trimmed(void)
{
	return atomic_load(&trimmed_bytes);
}

size_t ss_ring_bytes_peak(void)
{
	return (size_t)atomic_load(&blocks_peak) * BLOCK_BYTES;
}

/* Never-used blocks the writer has faulted in ahead of the threads (MADV_POPULATE_WRITE: it
 * maps the pages without writing them, so a thread may already be writing into one): a thread
 * that moves into a fresh block then takes no page fault on its hot path. */
#define PREFAULT_BLOCKS 1024u
/* only for a ring system that grew by this much since the writer's last look: a program that
 * makes a few calls gets no resident memory it does not write */
#define PREFAULT_AFTER 16u
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
static uint32_t prefaulted; /* writer-private: blocks below this index were faulted in */
static uint32_t bump_seen;  /* writer-private: bump at its last look */
static int prefault_unsupported;

void ss_ring_prefault(void)
{
	if (!atomic_load_explicit(&region_mapped, memory_order_acquire) || prefault_unsupported)
		return;
	uint32_t from = atomic_load_explicit(&bump, memory_order_relaxed);
	uint32_t grew = from - bump_seen;
	bump_seen = from;
	if (from >= nblocks || grew < PREFAULT_AFTER)
		return;
	uint32_t to = nblocks - from > PREFAULT_BLOCKS ? from + PREFAULT_BLOCKS : nblocks;
	if (prefaulted >= to)
		return;
	if (prefaulted > from)
		from = prefaulted;
	if (madvise(block_at(from), (size_t)(to - from) * BLOCK_BYTES, MADV_POPULATE_WRITE) != 0)
		prefault_unsupported = errno == EINVAL; /* an older kernel */
	prefaulted = to;
}

/* The warm blocks' pages go back to the system one block at a time, each moved to the cold
 * stack: a thread that needs a block meanwhile finds one on either. */
void ss_ring_trim(void)
{
	if (!atomic_load_explicit(&region_mapped, memory_order_acquire) ||
	    atomic_exchange(&trimmed, 1))
		return;
	for (struct ss_seg *seg; (seg = stack_pop(&free_top)) != NULL;) {
		atomic_fetch_add_explicit(&trimmed_bytes, BLOCK_BYTES, memory_order_relaxed);
		madvise(seg, BLOCK_BYTES, MADV_DONTNEED); /* reads zeros from now on */
		stack_push(&cold_top, seg);
	}
}

/* ------------------------------------------------------------------ attach */

static pthread_once_t region_once = PTHREAD_ONCE_INIT;

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

static struct ss_ring *attach(struct ss_tls *tls, int cls);

/* SHIM-2: starting the writer and mapping the region make system calls that may set errno. */
struct ss_ring *ss_ring_attach(struct ss_tls *tls)
{
	int saved_errno = errno;
	struct ss_ring *ring = attach(tls, -1);
	errno = saved_errno;
	return ring;
}

struct ss_ring *ss_ring_attach_call(struct ss_tls *tls, int cls)
{
	int saved_errno = errno;
	struct ss_ring *ring = attach(tls, cls);
	errno = saved_errno;
	return ring;
}

static struct ss_ring *attach(struct ss_tls *tls, int cls)
{
	ss_start();
	unsigned generation = atomic_load(&ss_hot.generation);
	if (atomic_load(&ss_hot.state) != SS_STATE_RUNNING)
		return NULL;
	pthread_once(&exit_key_once, make_exit_key);
	pthread_once(&region_once, map_region);

	struct ss_seg *seg = block_take();
	struct ss_ring *ring = seg ? calloc(1, sizeof(*ring)) : NULL;
	if (ring == NULL) {
		if (seg)
			block_give(seg);
		atomic_fetch_add_explicit(&ss_dropped_no_buffer, 1, memory_order_relaxed);
		if (cls >= 0 && cls < SS_CLASS_COUNT)
			atomic_fetch_add_explicit(&ss_dropped_no_buffer_calls[cls], 1,
						  memory_order_relaxed);
		return NULL;
	}
	seg->base = 0;
	ring->cur = ring->rseg = seg;
	ring->cur_recs = seg->recs;
	ring->cur_base = 0;
	ring->cur_end = seg->cap;
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

/* ------------------------------------------------------------------ growing, draining */

int ss_ring_next_segment(struct ss_ring *ring, const struct ss_rec *rec)
{
	struct ss_seg *seg = block_take();
	if (seg == NULL) {
		atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
		if (rec->api < SS_API_COUNT && rec->cls < SS_CLASS_COUNT)
			atomic_fetch_add_explicit(&ring->dropped_calls[rec->cls], 1,
						  memory_order_relaxed);
		return 0;
	}
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	seg->base = head;
	/* before any record past the old block is published (ss_ring_push's release) */
	atomic_store_explicit(&ring->cur->next, seg, memory_order_release);
	ring->cur = seg;
	ring->cur_recs = seg->recs;
	ring->cur_base = head;
	ring->cur_end = head + seg->cap;
	return 1;
}

const struct ss_rec *ss_ring_peek(struct ss_ring *ring, uint64_t tail, uint64_t head)
{
	if (tail == head)
		return NULL;
	struct ss_seg *seg = ring->rseg;
	while (tail >= seg->base + seg->cap) {
		/* the producer linked the next block before it published `head` past this one */
		struct ss_seg *next = atomic_load_explicit(&seg->next, memory_order_acquire);
		if (next == NULL)
			return NULL; /* not reached: head > tail says it is there */
		block_give(seg);
		ring->rseg = seg = next;
	}
	return &seg->recs[tail - seg->base];
}

void ss_ring_release(struct ss_ring *ring)
{
	if (ring->released)
		return;
	for (struct ss_seg *seg = ring->rseg; seg;) {
		struct ss_seg *next = atomic_load_explicit(&seg->next, memory_order_acquire);
		block_give(seg);
		seg = next;
	}
	ring->rseg = ring->cur = NULL;
	ring->cur_recs = NULL;
	ring->cur_base = ring->cur_end = 0;
	ring->released = 1;
}

/* Fork child: the region is the child's own copy; every block is free again. */
void ss_ring_forget_all(void)
{
	struct ss_ring *ring = atomic_exchange(&ring_list, NULL);
	while (ring) {
		struct ss_ring *next = ring->next;
		free(ring->writer_state);
		free(ring);
		ring = next;
	}
	atomic_store(&free_top, 0);
	atomic_store(&cold_top, 0);
	atomic_store(&bump, 0);
	prefaulted = bump_seen = 0;
	atomic_store(&blocks_out, 0);
	atomic_store(&blocks_peak, 0);
	atomic_store(&trimmed_bytes, 0);
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
