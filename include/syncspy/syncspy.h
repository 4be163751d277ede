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

#ifdef __cplusplus
}
#endif

#endif /* SYNCSPY_SYNCSPY_H */
