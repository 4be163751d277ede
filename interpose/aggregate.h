/*
 * interpose/aggregate.h: aggregate mode (SYNCSPY_MODE=aggregate, SHIM-7), on the writer thread
 * only (aggregate.c): the enqueues folded per site instead of a row each, and the figures of
 * each syncspy_step step. writer.c calls these while it turns records into rows; nothing here
 * runs on an application thread.
 */
#ifndef SYNCSPY_AGGREGATE_H
#define SYNCSPY_AGGREGATE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim.h"

/* With the database open, in its first transaction: the tables (SS_AGGREGATE_SQL) and the
 * statements. 0, or -1 (the error noted: aggregate mode then records sync points only). */
int ss_agg_open(void);
/* An enqueue record (E1-E3, N2) of thread TID, its times in ns and its site's id (0: none):
 * 0, or -1 when it could not be counted (out of memory, no tables: the caller counts it as
 * dropped, SHIM-5). */
int ss_agg_enqueue(pid_t tid, const struct ss_rec *r, uint64_t start_ns, uint64_t end_ns,
		   int64_t site_id);
/* A sync point's row (S7: a finished polling loop of QUERIES queries): into its step. */
void ss_agg_sync(uint64_t start_ns, uint64_t end_ns, uint64_t queries);
/* A syncspy_step mark of thread TID at NS: the stepping thread's next step (the first thread
 * to mark a step is the process's stepping thread; other threads' marks are ranges only). */
void ss_agg_step(pid_t tid, const char *name, uint64_t ns);
/* Thread TID's current step ends at NS without a next one (a capture range's end, the end). */
void ss_agg_step_end(pid_t tid, uint64_t ns);
/* The stepping thread (0: none yet): writer.c drains its ring before the others' (aggregate.c
 * says why). */
pid_t ss_agg_stepper(void);
/* The first thread that marked a step (syncspy_step), set by it (nvtx.c: the one thing here an
 * application thread touches, once, outside the CUDA wrappers) before its mark is in its ring:
 * the process's stepping thread. */
extern _Atomic pid_t ss_stepping_tid;
/* At every commit, in its transaction: the aggregates and steps that changed, and meta. */
void ss_agg_flush(void);
/* The open transaction was lost (a full disk): everything is written again at the next. */
void ss_agg_lost(void);
/* Enqueues folded so far (the summary line at exit). */
uint64_t ss_agg_enqueues(void);
/* Before the connection closes: the statements and the memory. */
void ss_agg_close(void);
/* Fork child: the parent's state is not the child's (nothing of SQLite is touched). */
void ss_agg_fork_child(void);

#endif
