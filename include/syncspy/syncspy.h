/* SPDX-License-Identifier: MIT */
/*
 * include/syncspy/syncspy.h: the functions libsyncspy.so exports to the profiled program, the
 * one public header (`make install` puts it in $(includedir)/syncspy/). A program that must also
 * run without the shim looks them up with dlsym(RTLD_DEFAULT, "syncspy_step") rather than
 * linking against libsyncspy.so; from Python, ctypes.CDLL(None).syncspy_step(b"train").
 *
 * Every function here is safe to call from any thread, at any time, also when syncspy records
 * nothing (SYNCSPY_DISABLE=1): it then does nothing and returns its documented "off" value.
 * docs/cli.md ("The program's own calls") and docs/cupti.md describe them for users.
 */
#ifndef SYNCSPY_SYNCSPY_H
#define SYNCSPY_SYNCSPY_H

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the start of a step on the calling thread, named NAME ("step" when NULL); a step lasts
 * until the thread's next call (or the end of the recording). For programs without NVTX. */
void syncspy_step(const char *name);

/* Pauses (ON 0) or resumes (ON 1) the GPU timeline (cupti/cupti.c, CUPTI-3); host-side
 * recording goes on. Returns 1 when the GPU timeline records after the call, 0 when it does not
 * (paused, SYNCSPY_CUPTI=0, CUPTI unavailable or held by another client). */
int syncspy_gpu_trace(int on);

/* ------------------------------------------------------------------ capture ranges */

/* Start (syncspy_start) or stop (syncspy_stop) the recording, in every SYNCSPY_CAPTURE_RANGE
 * mode: calls made while it is stopped have no row, only a count per class, and the GPU
 * timeline is off (docs/recording.md, "Capture ranges"). Return 1 when calls are recorded
 * after the call, 0 when not (stopped, outside SYNCSPY_DELAY/SYNCSPY_DURATION's window, or
 * SYNCSPY_DISABLE=1). From Python: ctypes.CDLL(None).syncspy_start(). */
int syncspy_start(void);
int syncspy_stop(void);
/* ------------------------------------------------------------------ the sync guard
 * (interpose/guard.c, docs/python.md): per thread, nestable. A guard counts the sync points
 * (classes S1-S7, docs/sync-model.md) that the calling thread makes while it is open, by class,
 * and names each: API, class, count and the user's line. Other threads are not affected. The
 * Python package's syncspy.no_sync() and syncspy.expect_syncs() are made of these. */

/* The classes as bits of a guard's CLASSES: bit N-1 for SN. */
#define SYNCSPY_S1	  0x01u /* device synchronize */
#define SYNCSPY_S2	  0x02u /* stream synchronize */
#define SYNCSPY_S3	  0x04u /* event synchronize */
#define SYNCSPY_S4	  0x08u /* blocking copy */
#define SYNCSPY_S5	  0x10u /* degraded (pageable) async copy */
#define SYNCSPY_S6	  0x20u /* implicit sync: allocation, free, registration, stack size */
#define SYNCSPY_S7	  0x40u /* polling: stream and event queries */
#define SYNCSPY_ALL_SYNCS 0x7fu

/* One sync point of a guard: the same API, class and user line, COUNT times. The strings stay
 * valid until the guard is closed. */
struct syncspy_sync_point {
	const char *api;	  /* "cudaStreamSynchronize" */
	int sync_class;		  /* 1..7 for S1..S7 */
	unsigned long long count; /* times it was made while the guard was open */
	const char *file;	  /* the user's Python file; else the native module ("" unknown) */
	int line;		  /* the line in that file; 0 for a native site */
	const char *function;	  /* the Python function; else "symbol+0xOFF" (or "") */
	unsigned long long address; /* the native return address; 0 for a Python frame */
};

/* Called on the guarded thread at each sync point the guard counts, after the real call
 * returned (inside the wrapper: CUDA calls made here are not recorded). POINT, with the count
 * so far, is valid during the call only. It must return: no longjmp, no C++ exception. */
typedef void (*syncspy_sync_fn)(void *arg, const struct syncspy_sync_point *point);

/* Opens a guard on the calling thread, inside the thread's open ones, counting the classes of
 * CLASSES (SYNCSPY_S1 | ...; 0 for all); ON_SYNC may be NULL. Returns the guard's id, its
 * nesting depth (1 for the outermost), or 0 when the shim records nothing in this process (not
 * preloaded: the lookup fails; SYNCSPY_DISABLE=1; an unwritable output) or has no memory. */
int syncspy_guard_open(unsigned classes, syncspy_sync_fn on_sync, void *arg);

/* The sync points open guard GUARD of the calling thread has counted so far, in the order first
 * made: copies up to MAX of them into POINTS and returns how many it has (-1: no such guard).
 * A guard names 256 points at most; count(0) minus their counts is the rest, unnamed. */
int syncspy_guard_points(int guard, struct syncspy_sync_point *points, int max);

/* How many sync points of class SYNC_CLASS (1..7; 0 for all) open guard GUARD of the calling
 * thread has counted so far; -1 when there is no such guard or class. */
long long syncspy_guard_count(int guard, int sync_class);

/* An ON_SYNC for Python programs (the package's no_sync(at_first=True)): ARG is a Python
 * exception class, raised in the calling thread as soon as it is back in Python code, right
 * after the call that synced (PyThreadState_SetAsyncExc). It takes the GIL to do so: the one
 * place the shim does (docs/python.md). */
void syncspy_python_raise(void *arg, const struct syncspy_sync_point *point);

/* Closes GUARD, the calling thread's innermost open guard: returns how many sync points it
 * counted, or -1 (and closes nothing) when GUARD is not the innermost open guard. */
long long syncspy_guard_close(int guard);

/* Fills COUNTS[0..N-1] with the sync points of classes S1..SN the calling thread has made since
 * it started (live counters, guard or none); returns how many classes it filled (7 at most), 0
 * when the shim records nothing in this process. */
int syncspy_sync_counts(unsigned long long *counts, int n);

/* 1 while the shim records this process's calls (guards count), 0 when they pass through
 * unrecorded: SYNCSPY_DISABLE=1, an output it could not write, or the database finished at exit.
 */
int syncspy_recording(void);

/* ------------------------------------------------------------------ end of the sync guard */

#ifdef __cplusplus
}
#endif

#endif /* SYNCSPY_SYNCSPY_H */
