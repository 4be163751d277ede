/*
 * interpose/guard.h: the in-process sync guard (guard.c): what every wrapper does for a sync
 * point, kept to a counter and a test while no guard is open (GUARD-1).
 */
#ifndef SYNCSPY_GUARD_H
#define SYNCSPY_GUARD_H

#include "shim.h"

/* Out of line: a sync point counted in the thread's open guards and named (guard.c). */
void ss_guard_note(struct ss_tls *tls, const struct ss_rec *rec);

static inline int ss_is_sync_point(int cls)
{
	return cls >= SS_S1 && cls <= SS_S7;
}

/* After a sync point's record (wrapper.h): the thread's per-class counter, and the open guards
 * when there are any. An enqueue never gets here: the wrapper's one class test, which chose
 * whether to take a sync point's stacks before the guard existed, now chooses this too, the
 * stacks (S1-S6) inside it (GUARD-1). */
__attribute__((always_inline)) static inline void ss_guard_count(struct ss_tls *tls,
								 const struct ss_rec *rec)
{
	tls->syncs[rec->cls - SS_S1]++;
	if (ss_unlikely(tls->guard != NULL))
		ss_guard_note(tls, rec);
}

#endif
