/*
 * syncspy/env.h: every SYNCSPY_* environment variable, declared once.
 *
 * The shim reads them once, at load (interpose/env.c); `syncspy help env` prints this table and
 * README.md's list is checked against it by tests/e2e/t003-env-doc.sh. Add a variable here and
 * nowhere else.
 *
 * X(NAME, type, default, description); type is INT, BOOL or STR.
 */
#ifndef SYNCSPY_ENV_H
#define SYNCSPY_ENV_H

/* Where the databases go unless SYNCSPY_OUTPUT says otherwise: the shim's default (below) and
 * `syncspy run`'s default -o (report/cmd_run.c), one definition for both halves. */
#define SS_DEFAULT_OUTPUT_DIR "./syncspy-out"

#define SS_ENV_VARS(X)                                                                             \
	X(SYNCSPY_OUTPUT, STR, SS_DEFAULT_OUTPUT_DIR,                                              \
	  "directory for the per-process databases (created if missing)")                          \
	X(SYNCSPY_DISABLE, BOOL, "0", "1: pass every call straight through and record nothing")    \
	X(SYNCSPY_QUIET, BOOL, "0",                                                                \
	  "1: no summary line on stderr at exit (and no warning from `import syncspy` in a "       \
	  "program that is not recorded: docs/python.md)")                                         \
	X(SYNCSPY_BUFFER_MB, INT, "1024",                                                          \
	  "memory cap for all per-thread event buffers (used only while records wait for the "     \
	  "writer); events past it are counted as dropped")                                        \
	X(SYNCSPY_DRAIN_MS, INT, "10", "how often the writer thread drains the buffers")           \
	X(SYNCSPY_COMMIT_MS, INT, "500",                                                           \
	  "longest time between commits (a killed process loses at most this much, max 1000)")     \
	X(SYNCSPY_FORK, STR, "child",                                                              \
	  "child: a forked child that uses CUDA writes its own database; off: children record "    \
	  "nothing")                                                                               \
	X(SYNCSPY_MODE, STR, "trace",                                                              \
	  "trace: a row per recorded call; aggregate: for runs of hours, sync points keep their "  \
	  "rows, enqueues (E1-E3, N2) are counted per site with a log2 histogram of their host "   \
	  "times, and each syncspy_step step gets one row of figures: the database grows with "    \
	  "syncs and steps, not enqueues (docs/recording.md, \"Aggregate mode\")")                 \
	X(SYNCSPY_ENQUEUE_TIMING, BOOL, "0",                                                       \
	  "1: also time the end of enqueue calls (E1-E3); 0: enqueue rows carry their start "      \
	  "time only (end_ns = start_ns), which halves their clock reads")                         \
	X(SYNCSPY_STACK_DEPTH, INT, "32",                                                          \
	  "most frames of a sync point's Python stack (0: no stacks)")                             \
	X(SYNCSPY_CLOCK, STR, "auto",                                                              \
	  "auto: the invariant TSC where the CPU has one, else clock_gettime; mono: always "       \
	  "clock_gettime(CLOCK_MONOTONIC)")                                                        \
	X(SYNCSPY_CUPTI, BOOL, "1",                                                                \
	  "0: host side only, no GPU-side activity through CUPTI (kernels, copies, memsets, "      \
	  "syncs, events; docs/cupti.md, which gives its cost)")                                   \
	X(SYNCSPY_CUPTI_KINDS, STR, "kernel,memcpy,memset,sync,event",                             \
	  "what CUPTI records, a comma list: kernel, memcpy, memset, sync, event (with the GPU's " \
	  "time of each; the report ties these to the host calls by stream order, CUPTI-12, "      \
	  "CUPTI-13), correlate (the ties from a callback on the functions syncspy wraps: "        \
	  "CUPTI-11), api (the same by CUPTI's API records of both layers, runtime-api and "       \
	  "driver-api); the two hook every API call and cost a launch-bound loop 12-19% "          \
	  "(docs/cupti.md)")                                                                       \
	X(SYNCSPY_CUPTI_SAMPLE, STR, "auto",                                                       \
	  "auto: trace the whole run while that is cheap, else windows sized to keep CUPTI's "     \
	  "cost near 1.5% of the run; all: the whole run; ON/PERIOD in ms: trace ON ms of every "  \
	  "PERIOD ms; windows switch at sync points (docs/cupti.md)")                              \
	X(SYNCSPY_CUPTI_PAUSE, STR, "detach",                                                      \
	  "how the GPU timeline is turned off between sampled windows, by syncspy_gpu_trace(0) "   \
	  "and outside a capture range: detach, CUPTI detached (cuptiFinalize) and attached "      \
	  "again at the resume (CUPTI-8, docs/cupti.md: on the H200 a launch-bound loop costs "    \
	  "7% instead of 25%); disable, CUPTI's kinds disabled, CUPTI staying attached")           \
	X(SYNCSPY_CAPTURE_RANGE, STR, "",                                                          \
	  "what starts and stops the recording (docs/recording.md, \"Capture ranges\"): empty, "   \
	  "from the start; cudaProfilerApi, between cudaProfilerStart/cuProfilerStart and "        \
	  "cudaProfilerStop/cuProfilerStop; nvtx, inside the NVTX ranges SYNCSPY_NVTX_CAPTURE "    \
	  "names; syncspy_start()/syncspy_stop() switch it in every mode")                         \
	X(SYNCSPY_NVTX_CAPTURE, STR, "",                                                           \
	  "with SYNCSPY_CAPTURE_RANGE=nvtx: the NVTX range name (push/pop or start/end) inside "   \
	  "which calls are recorded")                                                              \
	X(SYNCSPY_DELAY, STR, "0",                                                                 \
	  "seconds (a decimal) from the process's start before anything is recorded")              \
	X(SYNCSPY_DURATION, STR, "0",                                                              \
	  "seconds (a decimal) the recording lasts after SYNCSPY_DELAY; 0: to the end")

#endif
