/*
 * interpose/native.h: native stacks (native.c): a sync point's stack after its record, and
 * the user's line of a driver enqueue.
 */
#ifndef SYNCSPY_NATIVE_H
#define SYNCSPY_NATIVE_H

#include <stdint.h>

#include "shim.h"

/* After a sync point's record, its stacks: native (libunwind, loaded privately), then Python
 * (python.c), timed (meta.stack_cost_*_ns: SHIM-1). */
void ss_stacks_attach(struct ss_tls *tls, uint64_t caller);
/* The site of a driver enqueue, CALLER the return address the wrapper was called with, SLOT
 * where it is stored on the stack: CALLER itself when that is the user's code, the user's
 * return address further up when CALLER is inside a statically linked runtime or an nvcc stub
 * (docs/attribution.md). */
uint64_t ss_enqueue_site(uint64_t caller, const uint64_t *slot);
void ss_native_fork_child(void);
extern const char *_Atomic ss_native_stacks_status; /* meta.native_stacks */
extern _Atomic unsigned ss_native_libgcc_sites; /* sites that chose libgcc's unwinder */
/* meta.enqueue_path_*: the paths walked (ss_enqueue_site), their time in clock ticks, and the
 * frames whose module was looked up */
extern _Atomic uint64_t ss_enqueue_path_walks, ss_enqueue_path_ticks, ss_enqueue_path_lookups;

#endif
