/*
 * cupti/cupti.h: the CUPTI module's interface to the rest of libsyncspy.so.
 *
 * What only the GPU knows: when kernels, copies and memsets really ran, and on the host, which
 * driver/runtime call (correlation id) caused them. Built with --enable-cupti, started by the
 * process's first call unless SYNCSPY_CUPTI=0 (docs/cupti.md, which has its validation on the
 * H200 and its cost). CUPTI is loaded privately (dlopen RTLD_LOCAL), never linked.
 */
#ifndef SYNCSPY_CUPTI_H
#define SYNCSPY_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#include "syncspy/model.h" /* enum ss_layer */

/* One activity record, as the writer stores it (gpu_activity, gpu_api). */
struct ss_gpu_rec {
	uint8_t kind;		    /* enum ss_gpu_kind */
	uint8_t copy_kind;	    /* CUpti_ActivityMemcpyKind */
	uint8_t src_kind, dst_kind; /* CUpti_ActivityMemoryKind (1 pageable, 2 pinned, 3 device) */
	uint32_t device, stream, detail; /* detail: sync type, callback id, memory kind */
	uint64_t correlation; /* CUPTI's id, with the attach it came from above bit 32 (CUPTI-8) */
	uint64_t start_ns, end_ns, bytes;
	int32_t grid[3], block[3];
	uint32_t thread;      /* host thread of an API record */
	char *name;	      /* kernel name as CUPTI gives it (mangled; malloc'd) or NULL */
	const char *api_name; /* an API record's function name (CUPTI's static string) or NULL */
};

enum ss_gpu_kind {
	SS_GPU_KERNEL = 1,
	SS_GPU_MEMCPY,
	SS_GPU_MEMSET,
	SS_GPU_SYNC,
	SS_GPU_RUNTIME_API,
	SS_GPU_DRIVER_API,
	SS_GPU_EVENT, /* an event record as the GPU reached it (CUPTI_ACTIVITY_KIND_CUDA_EVENT) */
};

/* ------------------------------------------------------------------ what interpose/ calls */

/* App thread, first recorded call: loads CUPTI and enables the activities KINDS names
 * (SYNCSPY_CUPTI_KINDS), sampled as SAMPLE says (SYNCSPY_CUPTI_SAMPLE, CUPTI-4), turned off as
 * PAUSE says (SYNCSPY_CUPTI_PAUSE: "disable" or "detach", CUPTI-8); the strings live as long as
 * the process. Never fails the program: the reason it did not start is in ss_cupti_status()
 * (meta.cupti). */
void ss_cupti_start(const char *kinds, const char *sample, const char *pause);
/* SAMPLE in aggregate mode where SYNCSPY_CUPTI_SAMPLE is auto: windows spaced ever wider
 * (CUPTI-7); meta.cupti_sample then says "aggregate". */
#define SS_CUPTI_SAMPLE_AGGREGATE "aggregate"
/* App thread, at exit or exec: asks CUPTI for what it still buffers. */
void ss_cupti_flush(void);
/* The thread that called exit, at the exit notice (SHIM-8): CUPTI's buffers flushed, and no
 * CUPTI call from here (CUPTI-14). */
void ss_cupti_exit_notice(void);
/* Fork child: CUPTI's session and threads stay with the parent; the child records host data
 * only, and never flushes (a flush there could wait for a thread that is not there). */
void ss_cupti_fork_child(void);
/* syncspy_gpu_trace (CUPTI-3): 0 pauses the GPU timeline, 1 resumes it; returns 1 when it is
 * recording after the call. */
int ss_cupti_trace(int on);
/* App thread, at a switch of a capture range (interpose/capture.h, SHIM-6): 0 turns the GPU
 * timeline off outside the range, 1 back on; counted and stored as a pause (CUPTI-3). */
void ss_cupti_capture(int on);
/* App thread, at the end of a sync point (S1-S6): switches SYNCSPY_CUPTI_SAMPLE's window when
 * its time has come (CUPTI-4); one relaxed load when not sampling. */
void ss_cupti_sample_tick(void);
/* Writer, after each drain: how many ring records it has drained since the start, from which
 * SYNCSPY_CUPTI_SAMPLE=auto estimates what tracing costs and samples above its budget
 * (CUPTI-5). Returns 1 when a window no sync point closed is due to close (CUPTI-9): the writer
 * asks an app thread to (hot.h), as it makes no CUPTI call itself. */
int ss_cupti_calls_drained(uint64_t records);
/* App thread, at a wrapped call's exit when the writer asked and no stream capture is open:
 * closes the window CUPTI-9 found due, unless a sync point closed it meanwhile. */
void ss_cupti_unsynced_close(void);
/* Writer, for meta: the sampler's windows closed without a sync point (CUPTI-9). */
unsigned ss_cupti_unsynced_closes(void);
/* Writer, for meta (auto only, else 0): the highest estimate auto made of what tracing every
 * call would cost, in permille of the run time (CUPTI-5). */
unsigned ss_cupti_auto_peak(void);
/* CUPTI-6: the highest cost the windows measured (permille of the step time; 0 before enough
 * sync points were seen on and off: ON_TICKS and OFF_TICKS say how many) */
unsigned ss_cupti_auto_measured(unsigned *on_ticks, unsigned *off_ticks);
/* Writer, for meta.cupti_sample: "auto", or the SYNCSPY_CUPTI_SAMPLE windows it was given. */
const char *ss_cupti_sample_text(void);
/* Writer, for meta: how long the timeline was paused in all, by the program or the sampler
 * (an open pause counts to now, in ns), how many pauses there were, how many windows the
 * sampler traced, and how long the timeline was on (from CUPTI's start). */
void ss_cupti_pauses(uint64_t *paused_ns, unsigned *count, unsigned *windows, uint64_t *traced_ns);
/* Writer: the timeline's off intervals from the FROM-th on, [start, end) ns pairs in time
 * order, and last, when the timeline is off now, the open one ending now (*open set);
 * *intervals is malloc'd, the caller frees it. Returns how many. */
size_t ss_cupti_off_intervals(size_t from, uint64_t (**intervals)[2], int *open);
/* Writer, for meta (CUPTI-8): whether SYNCSPY_CUPTI_PAUSE=detach was asked for (*asked), how
 * often CUPTI was detached and attached again, and how long that took in all (ns: the flush and
 * subscription at each pause and cuptiFinalize; the callbacks registered and kinds enabled at
 * each resume). Returns why detaching was given up for pausing by disabling kinds, or NULL. */
const char *ss_cupti_detach_stats(int *asked, unsigned *detaches, unsigned *attaches,
				  uint64_t *detach_ns, uint64_t *attach_ns);
/* Writer, for meta (CUPTI-10): the API exits at which a detach waited because another thread
 * was inside a CUDA call; the pauses that were not detached because another thread had made a
 * wait for the GPU since the last attach (GATE-4). */
unsigned ss_cupti_detach_deferrals(void);
unsigned ss_cupti_detach_skips(void);
/* Writer, for meta.cupti_correlation (CUPTI-11): how GPU rows were tied to host calls, copied
 * into BUF: "callbacks", "api records" (asked for), "stream order" (no hook, the default: the
 * report ties them, CUPTI-12), the fallback's reason, or "" (no GPU rows to tie). */
void ss_cupti_correlation(char *buf, size_t size);
/* Writer: takes every record queued so far (the caller frees names and the array). */
size_t ss_cupti_take(struct ss_gpu_rec **records);
/* Writer, for meta.cupti: "on", or why the timeline is off (docs/cupti.md), copied into BUF
 * under the lock its writers hold: its text may be rewritten in place meanwhile. It is never
 * longer than SS_CUPTI_STATUS_MAX bytes, its NUL included. */
#define SS_CUPTI_STATUS_MAX 256
void ss_cupti_status(char *buf, size_t size);

/* ------------------------------------------------------------------ what cupti/ calls */

/* interpose/driver.c: the real dlsym, past the shim's own (DRIVER-2). */
void *ss_dlsym(void *handle, const char *name);
/* interpose/resolve.c: the functions the shim wraps (ss_apis), as the API records are narrowed
 * to them: entry point I's name (NULL if none) and its layer, for 0 <= I < ss_api_total. */
extern const int ss_api_total;
const char *ss_api_name(int i, enum ss_layer *layer);
/* interpose/gate.c (CUPTI-10, GATE-n in interpose/gate.h): whether the gate can be closed
 * (membarrier), checked once; closing it: 1 when no other thread is inside a wrapped call, and
 * then none enters one until ss_gate_open; 0, gate open, when one is. */
int ss_gate_supported(void);
int ss_gate_close(void);
void ss_gate_open(void);
/* GATE-4: a new attach of CUPTI began; whether a thread other than the caller waited for the
 * GPU (S1-S5) since the last one. */
void ss_gate_new_epoch(void);
int ss_gate_others_synced(void);

#endif
