/*
 * interpose/resolve.h: the real functions behind the wrappers (resolve.c): looked up on an entry
 * point's first call and cached (ss_real, on every wrapper's path), and the library functions
 * the shim calls without wrapping them. The registry itself (ss_apis) is in shim.h.
 */
#ifndef SYNCSPY_RESOLVE_H
#define SYNCSPY_RESOLVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shim.h"

extern void *_Atomic ss_real_fns[SS_API_COUNT];
void *ss_resolve(int api);

static inline void *ss_real(int api)
{
	void *fn = atomic_load_explicit(&ss_real_fns[api], memory_order_relaxed);
	return ss_likely(fn != NULL) ? fn : ss_resolve(api);
}

/* Functions the shim calls but does not intercept (memory kind, versions, NCCL rank). */
void *ss_resolve_helper(enum ss_layer layer, const char *name);

/* A 64-bit hash of bytes: the keys of stacks, sites and modules. */
uint64_t ss_hash64(const void *data, size_t len);

#endif
