/*
 * interpose/lifecycle.h: the process around the recording (lifecycle.c): load, lazy start and
 * its test on every wrapper's path (ss_should_record), what the process is (ss_process).
 */
#ifndef SYNCSPY_LIFECYCLE_H
#define SYNCSPY_LIFECYCLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "hot.h"
#include "shim.h"

void ss_load(void);  /* idempotent: reads the configuration, sets READY or CLOSED */
void ss_start(void); /* idempotent: starts the writer (first recorded call of the process) */
/* Slow path of ss_should_record: loads and starts recording (writer, CUPTI) before the first
 * real call runs, so that CUPTI sees that call's GPU work too. errno kept (SHIM-2); the
 * thread counts as inside a wrapper meanwhile, so that calls CUPTI makes are not recorded. */
void ss_first_call(struct ss_tls *tls);

/* What the process is, for the meta table: filled by the app threads (versions, NCCL rank),
 * read by the writer. */
struct ss_process {
	_Atomic int rank, world_size, local_rank; /* -1 while unknown */
	_Atomic int rank_source;		  /* 0 unknown, 1 environment, 2 NCCL */
	_Atomic int cudart_version, driver_version, nccl_version; /* 0 while unknown */
	char cudart_path[512], nccl_path[512];
	uint64_t start_mono_ns, start_realtime_ns;
};
extern struct ss_process ss_process;
void ss_note_versions(void); /* app thread: asks the libraries for their versions, once */

/* nccl.c: the rank NCCL gives, which takes precedence over the environment's */
void ss_rank_from_comm(int rank, int nranks);

static inline int ss_should_record(struct ss_tls *tls)
{
	int state = atomic_load_explicit(&ss_hot.state, memory_order_relaxed);
	if (ss_unlikely(state <= SS_STATE_READY) && tls->depth == 0) {
		ss_first_call(tls);
		state = atomic_load_explicit(&ss_hot.state, memory_order_relaxed);
	}
	return state != SS_STATE_CLOSED && tls->depth == 0;
}

#endif
