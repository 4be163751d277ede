/*
 * interpose/hot.h: the process-wide values every wrapper reads on its hot path.
 */
#ifndef SYNCSPY_HOT_H
#define SYNCSPY_HOT_H

/* What every wrapper reads, in one cache line: a heavy real call (a kernel launch runs
 * microseconds of driver code) evicts the wrapper's data from L1, and each line it must fetch
 * back costs nanoseconds against a budget of 25 (bench/results). */
struct ss_hot {
	_Atomic int state;	     /* enum ss_state */
	_Atomic unsigned generation; /* bumped in a fork child: rings of the parent are stale */
	int clock_is_tsc;	     /* clock.h */
	int enqueue_timing;	     /* SYNCSPY_ENQUEUE_TIMING */
	/* 0 while calls are recorded; else why not, and what waits (capture.h, SHIM-6) */
	_Atomic int capture;
	/* CUPTI-9: the writer asks the thread of the next call to close a sampling window that no
	 * sync point closed; it does so while no stream capture is open (ss_open_captures) */
	_Atomic int cupti_close_wanted;
	/* GATE-1 (gate.h): CUPTI is being detached; a thread reaching a wrapped call waits */
	_Atomic int gate_closed;
} __attribute__((aligned(64)));
extern struct ss_hot ss_hot;

/* Stream captures begun and not ended, any thread (a capture in global mode forbids unsafe
 * calls everywhere): written at every capture, read only when a close is wanted, so kept off
 * the line every wrapper reads. */
extern _Atomic int ss_open_captures;

#endif
