/*
 * interpose/ranges.h: the memory ranges the process has allocated or registered through the
 * calls the shim sees (pinned host memory, device memory, managed memory, stream-ordered
 * allocations), so that a copy's host memory kind is decided at call time without asking the
 * driver (docs/sync-model.md). Lookups are lock-free (a sequence lock); changes happen only
 * in allocation calls, which are implicit syncs anyway.
 */
#ifndef SYNCSPY_RANGES_H
#define SYNCSPY_RANGES_H

#include <stddef.h>
#include <stdint.h>

#define SS_RANGE_ASYNC 0x80 /* flag on a kind: from cudaMallocAsync/cudaMallocFromPoolAsync */

void ss_range_add(const void *base, uint64_t size, int kind);
/* Removes the range starting at base; returns its kind (0 if unknown), *size its size. */
int ss_range_remove(const void *base, uint64_t *size);
/* Kind of the range holding ptr (with SS_RANGE_ASYNC), or 0 when ptr is in no known range. */
int ss_range_lookup(const void *ptr);
void ss_range_reset(void);	   /* fork child */
extern uint64_t ss_range_overflow; /* ranges not kept (table full) */

#endif
