/*
 * interpose/capture.h: capture ranges (capture.c): which part of a run is recorded, as users
 * know it from nsys. SYNCSPY_DELAY and SYNCSPY_DURATION give a window of time;
 * SYNCSPY_CAPTURE_RANGE=cudaProfilerApi records between cudaProfilerStart and cudaProfilerStop
 * (or cuProfilerStart/Stop), =nvtx inside the NVTX ranges SYNCSPY_NVTX_CAPTURE names; the
 * program's syncspy_start()/syncspy_stop() switch it in every mode (docs/recording.md,
 * "Capture ranges").
 *
 * SHIM-6 (shim.h): outside a capture range no row is written, every call made there is counted
 * (meta.capture_skipped_calls, per class), and the GPU timeline is off (cupti.h,
 * ss_cupti_capture): what was recorded is what the `capture` table's intervals say.
 */
#ifndef SYNCSPY_CAPTURE_H
#define SYNCSPY_CAPTURE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hot.h"
#include "shim.h"

/* ss_hot.capture's bits: 0 while recording (the wrappers test the word once) */
enum {
	SS_CAPTURE_BEFORE = 1,	     /* SYNCSPY_DELAY has not elapsed */
	SS_CAPTURE_AFTER = 2,	     /* SYNCSPY_DURATION has */
	SS_CAPTURE_STOPPED = 4,	     /* the trigger is off: not started yet, or stopped */
	SS_CAPTURE_CUPTI_PENDING = 8 /* the writer closed the window: the next call of an app
					thread switches CUPTI off (SHIM-4: not the writer) */
};
#define SS_CAPTURE_OFF (SS_CAPTURE_BEFORE | SS_CAPTURE_AFTER | SS_CAPTURE_STOPPED)

/* At load, after the configuration: the first state (a bad setting warns once and records
 * everything, as a bad value of any variable falls back to its default). */
void ss_capture_load(void);
/* Whether calls are recorded now. */
static inline int ss_capturing(void)
{
	return !(atomic_load_explicit(&ss_hot.capture, memory_order_relaxed) & SS_CAPTURE_OFF);
}
/* The hot path's slow path, taken when ss_hot.capture was not 0 as the call started (BITS, its
 * value then; ring.h's ss_emit): opens the window when SYNCSPY_DELAY has elapsed, makes CUPTI
 * follow a switch the writer made, and counts a call it does not record (SHIM-6). 1: record
 * REC (NULL: a marker, not counted). errno kept (SHIM-2). */
int ss_capture_slow(struct ss_tls *tls, const struct ss_rec *rec, int bits);
/* App threads: the trigger switched on or off (syncspy_start/stop, the profiler API in
 * cudaProfilerApi mode, an NVTX capture range). TRIGGER names it in the capture table. */
void ss_capture_trigger(int on, const char *trigger);
/* cudaProfilerStart/Stop, cuProfilerStart/Stop (the tables' PROFILER(on)): a trigger in
 * cudaProfilerApi mode, nothing otherwise (the real call runs either way). */
void ss_capture_profiler(int on);
/* nvtx.c, in nvtx mode: a range opens (1 when it is a capture range: close it with
 * ss_capture_nvtx_close), or a capture range closes. */
int ss_capture_nvtx_open(const char *name);
void ss_capture_nvtx_close(void);
/* Writer, every pass: closes the window when SYNCSPY_DURATION has elapsed. */
void ss_capture_writer_tick(void);

/* One switch between recording and not, for the capture table (the writer takes them). */
struct ss_capture_switch {
	uint64_t ns; /* CLOCK_MONOTONIC */
	int on;
	const char *trigger; /* static text */
};
/* Writer: the switches since the last call (malloc'd, the caller frees); how many. */
size_t ss_capture_take(struct ss_capture_switch **switches);
/* For meta.capture_range: how the range was set, or NULL when the whole run is recorded. */
const char *ss_capture_setting(void);
/* Calls made outside the capture ranges by threads that have no ring, per class. */
extern _Atomic uint64_t ss_capture_skipped_no_ring[SS_CLASS_COUNT];
/* Fork child: the parent's pending switches are the parent's. */
void ss_capture_fork_child(void);

#endif
