/*
 * interpose/gate.c: the slots of the threads that make wrapped calls, and the gate CUPTI-10
 * closes around a cuptiFinalize (gate.h has the why and the invariants GATE-n).
 *
 * Slots live in one list, newest first, never freed: a thread that exits gives its slot back
 * (a pthread key's destructor) for the next new thread to take, so the list is as long as the
 * most threads that made CUDA calls at once. The closer reads every slot; the hot path touches
 * only its own, on its own cache line.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cupti/cupti.h" /* ss_gate_supported, ss_gate_close, ss_gate_open */
#include "gate.h"

static _Atomic(struct ss_gate_slot *) slots;
_Atomic unsigned ss_gate_epoch = 1; /* GATE-4: 0 in a slot is "never synced" */
/* GATE-2: threads that could get no slot; from the first, every close fails */
static _Atomic int slotless_threads;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* GATE-1: membarrier registered (1), unavailable (-1), not tried yet (0) */
static int membarrier_state;
static pthread_mutex_t membarrier_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_thread_exit(void *arg)
{
	struct ss_gate_slot *slot = arg;
	atomic_store_explicit(&slot->inside, 0, memory_order_relaxed);
	if (ss_tls.gate == slot)
		ss_tls.gate = NULL;
	atomic_store_explicit(&slot->in_use, 0, memory_order_release);
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* SHIM-2: allocation and the key may set errno. */
struct ss_gate_slot *ss_gate_attach(struct ss_tls *tls)
{
	int saved_errno = errno;
	pthread_once(&key_once, make_exit_key);
	struct ss_gate_slot *slot;
	for (slot = atomic_load_explicit(&slots, memory_order_acquire); slot; slot = slot->next) {
		int free_slot = 0;
		if (atomic_compare_exchange_strong(&slot->in_use, &free_slot, 1)) {
			atomic_store(&slot->synced_epoch, 0); /* not the exited thread's */
			break;
		}
	}
	if (!slot) {
		slot = aligned_alloc(sizeof(*slot), sizeof(*slot));
		if (!slot) {
			atomic_fetch_add(&slotless_threads, 1);
			errno = saved_errno;
			return NULL;
		}
		atomic_init(&slot->inside, 0);
		atomic_init(&slot->in_use, 1);
		atomic_init(&slot->synced_epoch, 0);
		slot->next = atomic_load_explicit(&slots, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(
		    &slots, &slot->next, slot, memory_order_release, memory_order_relaxed))
			;
	}
	pthread_setspecific(exit_key, slot);
	tls->gate = slot;
	errno = saved_errno;
	return slot;
}

/* The gate was closed as this thread reached it: it steps back out and waits for the finalize
 * (milliseconds) to end. SHIM-1's exception: the only time a wrapper yields. */
void ss_gate_wait(struct ss_gate_slot *slot)
{
	int saved_errno = errno;
	do {
		atomic_store_explicit(&slot->inside, 0, memory_order_release);
		while (atomic_load_explicit(&ss_hot.gate_closed, memory_order_acquire))
			sched_yield();
		atomic_store_explicit(&slot->inside, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst); /* the slow path can afford a real one */
	} while (atomic_load_explicit(&ss_hot.gate_closed, memory_order_relaxed));
	errno = saved_errno;
}

int ss_gate_supported(void)
{
	pthread_mutex_lock(&membarrier_lock);
	if (membarrier_state == 0) {
		int saved_errno = errno;
		long commands = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		membarrier_state =
		    commands >= 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
			    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
				    0) == 0
			? 1
			: -1;
		errno = saved_errno;
	}
	int supported = membarrier_state == 1;
	pthread_mutex_unlock(&membarrier_lock);
	return supported;
}

/* Whether a thread other than the caller is inside a wrapped call, or unseen (GATE-2). */
static int others_inside(void)
{
	if (atomic_load_explicit(&slotless_threads, memory_order_relaxed))
		return 1;
	const struct ss_gate_slot *self = ss_tls.gate;
	for (struct ss_gate_slot *slot = atomic_load_explicit(&slots, memory_order_acquire); slot;
	     slot = slot->next)
		if (slot != self && atomic_load_explicit(&slot->inside, memory_order_relaxed))
			return 1;
	return 0;
}

int ss_gate_close(void)
{
	if (membarrier_state != 1 || others_inside()) /* a look first: no system call in vain */
		return 0;
	int saved_errno = errno;
	atomic_store_explicit(&ss_hot.gate_closed, 1, memory_order_relaxed);
	/* GATE-1: every thread passes a full barrier: its `inside` is seen, or it sees the gate */
	int fenced = syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
	errno = saved_errno;
	if (fenced && !others_inside())
		return 1;
	atomic_store_explicit(&ss_hot.gate_closed, 0, memory_order_release);
	return 0;
}

void ss_gate_new_epoch(void)
{
	atomic_fetch_add(&ss_gate_epoch, 1);
}

int ss_gate_others_synced(void)
{
	unsigned epoch = atomic_load(&ss_gate_epoch);
	const struct ss_gate_slot *self = ss_tls.gate;
	for (struct ss_gate_slot *slot = atomic_load_explicit(&slots, memory_order_acquire); slot;
	     slot = slot->next)
		if (slot != self && atomic_load_explicit(&slot->in_use, memory_order_relaxed) &&
		    atomic_load_explicit(&slot->synced_epoch, memory_order_relaxed) == epoch)
			return 1;
	return 0;
}

void ss_gate_open(void)
{
	atomic_store_explicit(&ss_hot.gate_closed, 0, memory_order_release);
}

/* Fork child: only the forking thread is left; the other slots are free again. */
void ss_gate_fork_child(void)
{
	for (struct ss_gate_slot *slot = atomic_load(&slots); slot; slot = slot->next)
		if (slot != ss_tls.gate) {
			atomic_store(&slot->inside, 0);
			atomic_store(&slot->in_use, 0);
		}
	atomic_store(&slotless_threads, 0);
	atomic_store(&ss_hot.gate_closed, 0);
}
