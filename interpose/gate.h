/*
 * interpose/gate.h: which threads are inside a wrapped call, and a gate that holds new calls
 * back while CUPTI is detached (CUPTI-10 in cupti/cupti.c; the module is gate.c).
 *
 * A CUDA call that entered while CUPTI was attached runs CUPTI's code again at its exit; a
 * cuptiFinalize made meanwhile on another thread frees what that code reads (SIGSEGV in
 * libcupti.so.13 inside cudaStreamSynchronize, four threads each waiting for its own stream:
 * tests/gpu/results/2026-12-06-h100-session22). So CUPTI is detached only while no other
 * thread is inside a wrapped call, and no thread enters one until the finalize returned.
 *
 * Invariants (cited in code as GATE-n):
 *   GATE-1  A thread's slot says `inside` from before its real call to after it, written with
 *           plain stores and no fence (SHIM-1's budget): the closer orders them with
 *           membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full barrier on every
 *           thread of the process. A thread that set `inside` before the closer's barrier is
 *           seen inside; one that reads ss_hot.gate_closed after it sees the gate closed and
 *           waits. Without that system call there is no gate (ss_gate_supported is 0) and
 *           CUPTI is never finalized (CUPTI-8 pauses by disabling kinds).
 *   GATE-2  Only the outermost call of a thread (depth 0: SHIM-3) passes the gate; calls
 *           nested inside it are covered by its `inside`. A thread that could get no slot
 *           (memory) makes every close fail from then on: an unseen thread is never assumed
 *           outside.
 *   GATE-3  The gate is closed only from a CUPTI callback at an API exit (the closer's own
 *           call is inside, and excluded) and only for the finalize: a thread waiting at it
 *           holds no lock of the shim, and the closer takes none of the program's.
 *   GATE-4  Each slot keeps the attach epoch (ss_gate_epoch, bumped at every attach of CUPTI)
 *           of its thread's last wait for the GPU (S1-S5). c109's shared build still crashed
 *           in libcupti inside cudaStreamSynchronize with the gate (12 runs of 12 on the H100;
 *           its static build no longer did, 0 of 12), on threads that had waited for their
 *           streams while CUPTI was attached and waited again after the finalize: CUPTI is not
 *           finalized while another thread waited for the GPU since the last attach
 *           (ss_gate_others_synced). With it, c109's shared build ran 6 runs of 6 (session 22
 *           run 7).
 */
#ifndef SYNCSPY_GATE_H
#define SYNCSPY_GATE_H

#include <stdatomic.h>

#include "hot.h"
#include "shim.h"

struct ss_gate_slot {
	_Atomic int inside; /* the owning thread is inside a wrapped call (GATE-1) */
	_Atomic int in_use; /* a living thread owns it; 0: free for the next new thread */
	_Atomic unsigned synced_epoch; /* GATE-4: ss_gate_epoch at its last sync point */
	struct ss_gate_slot *next;
} __attribute__((aligned(64)));

/* Slow paths (gate.c): the thread's first slot; waiting while the gate is closed. */
struct ss_gate_slot *ss_gate_attach(struct ss_tls *tls);
void ss_gate_wait(struct ss_gate_slot *slot);
/* Fork child: the other threads' slots are free again, the gate open. */
void ss_gate_fork_child(void);

/* Wrapper, before the real call (depth 0). */
static inline void ss_gate_enter(struct ss_tls *tls)
{
	struct ss_gate_slot *slot = tls->gate;
	if (ss_unlikely(slot == NULL) && (slot = ss_gate_attach(tls)) == NULL)
		return; /* GATE-2: counted, every close fails */
	atomic_store_explicit(&slot->inside, 1, memory_order_relaxed);
	/* GATE-1: a compiler barrier only; the closer's membarrier does the rest */
	atomic_signal_fence(memory_order_seq_cst);
	if (ss_unlikely(atomic_load_explicit(&ss_hot.gate_closed, memory_order_relaxed)))
		ss_gate_wait(slot);
}

extern _Atomic unsigned ss_gate_epoch;

/* Wrapper, at a sync point's end (GATE-4): the waits for the GPU (S1-S5: device, stream and
 * event syncs, blocking copies), not allocations and frees (S6: PyTorch's autograd thread makes
 * those and no wait, and its loops detached without a crash in every corpus run) nor queries. */
static inline void ss_gate_note_sync(struct ss_tls *tls, int cls)
{
	if (tls->gate && cls >= SS_S1 && cls <= SS_S5)
		atomic_store_explicit(&tls->gate->synced_epoch,
				      atomic_load_explicit(&ss_gate_epoch, memory_order_relaxed),
				      memory_order_relaxed);
}

/* Wrapper, after the real call returned. */
static inline void ss_gate_leave(struct ss_tls *tls)
{
	if (tls->gate)
		atomic_store_explicit(&tls->gate->inside, 0, memory_order_release);
}

#endif
