/*
 * cupti/cupti.c: GPU-side activity through CUPTI's activity API.
 *
 * - CUPTI is dlopen()ed RTLD_LOCAL (libcupti.so.13, already loaded by torch if it is there);
 *   none of its symbols enter the program's scope.
 * - Timestamps: a timestamp callback returning CLOCK_MONOTONIC ns is registered before any
 *   activity is enabled, so GPU and host rows share one time axis (SCHEMA-3).
 * - Buffers complete on CUPTI's own thread; their records are converted and queued under a
 *   mutex (not the calls' hot path), and the writer stores them with the host calls.
 * - CUPTI's activity buffers have one owner per process: whoever called
 *   cuptiActivityRegisterCallbacks last gets every buffer, also those another client asked for.
 *   So syncspy gives way to any other client (CUPTI-1, CUPTI-2), and when anything fails,
 *   recording goes on with host data only and ss_cupti_status() says why
 *   (docs/architecture.md F8).
 *
 * Invariants:
 *   CUPTI-1  syncspy never starts CUPTI when another client got there first: Nsight's injection
 *            (CUDA_INJECTION64_PATH set) or a program's own cuptiActivityRegisterCallbacks
 *            call, which the shim sees because it exports that function.
 *   CUPTI-2  When another client registers while syncspy records (torch.profiler starting
 *            mid-run), syncspy first flushes its own buffers to its own callbacks, then stops
 *            and lets the call through unchanged: the other client never receives a buffer it
 *            did not ask for, and meta.cupti says from when GPU rows are missing.
 *   CUPTI-3  The program may pause the GPU timeline (syncspy_gpu_trace(0), docs/cupti.md):
 *            every kind syncspy enabled is disabled until syncspy_gpu_trace(1) enables them
 *            again, narrowing included, and meta.cupti_paused_ns/cupti_pauses say for how
 *            long. Each interval the timeline was off goes to the gpu_paused table, and the
 *            analyses measure no GPU idle time across one (report/analysis.c,
 *            timeline_off_between): work may have run unrecorded there.
 *   CUPTI-4  SYNCSPY_CUPTI_SAMPLE=ON/PERIOD traces ON ms of every PERIOD ms, for long runs
 *            where tracing every kernel costs too much (a launch-bound loop: docs/cupti.md).
 *            The sampler switches only at the end of a host sync point (S1-S6), where the
 *            host has just waited for the GPU, so a window starts and ends at work the host
 *            saw finish. A window closes only after a sync point inside it (the one that
 *            opened it does not count), so that a step longer than the window still has a
 *            sync measured whole, and the gap after a window held open so grows in
 *            proportion. It pauses as CUPTI-3 does (the same kinds, the same meta, counted
 *            together: the GPU timeline is on when neither the program nor the sampler has
 *            paused it); meta.cupti_sample and meta.cupti_windows say it sampled.
 *   CUPTI-5  SYNCSPY_CUPTI_SAMPLE=auto, the default, keeps CUPTI's cost near a budget
 *            (AUTO_BUDGET_PERMILLE of the run time) by itself: the writer tells the sampler
 *            how many records it drained (ss_cupti_calls_drained); every AUTO_EVAL_NS the
 *            sampler estimates what tracing the calls behind them costs (AUTO_NS_PER_CALL
 *            each: docs/architecture.md F14) and, above the budget, traces windows of
 *            AUTO_ON_NS with a duty cycle of budget / estimate (CUPTI-4's windows, switched
 *            at sync points the same way; detached, CUPTI-8, the gap also pays for the
 *            attach and detach each window costs, AUTO_SWITCH_PRIOR_NS until measured); a
 *            higher estimate lengthens the gap already begun; below two thirds of the budget
 *            for AUTO_QUIET_NS it traces continuously again (a pause between two bursts, an
 *            A/B's block with the recording stopped, is no quiet program: in a loop with few
 *            sync points the continuous trace lasts until one, CUPTI-9 at worst). A program
 *            that makes few calls is traced whole; `all` traces every run whole. The report
 *            scales what it measured in the windows to the steps it did not see
 *            (report/gpu.c, GPU-IDLE-4).
 *   CUPTI-6  What tracing costs is also measured, by the program itself: while auto samples,
 *            the sync points per second in the on windows against the off ones (a loop's
 *            steps slow down while traced) give the cost in permille of the step time; past
 *            AUTO_MEASURE_ON_TICKS sync points on (about one window of a launch-bound loop)
 *            and AUTO_MEASURE_TICKS off it replaces the estimate where higher.
 *            On the H200 the estimate (3 us a record) said 9-10% for issue 17's torch loop
 *            where tracing it cost 25-40%: CUPTI also sees the API calls syncspy does not
 *            wrap. The continuous start (setup included) and phases the program or a
 *            capture range held off are not measured.
 *   CUPTI-7  In aggregate mode (SYNCSPY_MODE=aggregate, interpose/aggregate.c) `auto` becomes
 *            windows of AGG_ON_NS whose gaps double, from AGG_FIRST_OFF_NS: the GPU rows of a
 *            run grow with the logarithm of its length (13 windows in an hour, 16 in ten),
 *            not with its enqueues; CUPTI-4's windows otherwise (switched at sync points,
 *            paused and counted the same way). `all` and ON/PERIOD keep their meaning.
 *   CUPTI-8  SYNCSPY_CUPTI_PAUSE=detach (the default): wherever CUPTI-3 to CUPTI-7 turn the
 *            timeline off, syncspy also detaches CUPTI from the process (cuptiFinalize), and
 *            attaches it again where the timeline comes back on; everything else is as for a pause
 *            (gpu_paused, meta, the report's scaling). On the H200 a loop stayed slow while CUPTI's
 *            kinds were disabled (tests/gpu/results/2026-12-04-h200-session8); a detached CUPTI
 *            costs nothing. How: at the pause (owner_lock held, on the thread that paused) the
 *            kinds are disabled, CUPTI's buffers flushed to syncspy, and a callback subscriber made
 *            for the runtime and driver domains; the callback, at the next API exit of any thread
 *            (where cuptiFinalize is documented to be safe), calls cuptiFinalize, which drops the
 *            subscriber, the kinds and the callbacks. It only trylocks owner_lock (a thread holding
 *            it may be inside CUPTI: the next exit will do) and calls nothing but cuptiFinalize.
 *            While detached syncspy calls no CUPTI function (any call would attach CUPTI again).
 *            The resume registers the timestamp and buffer callbacks again and enables the kinds
 *            (start_locked's steps); a resume before any API exit only unsubscribes. Only one
 *            subscriber may exist: where cuptiSubscribe fails (torch.profiler, Nsight) or CUPTI
 *            lacks the functions, syncspy pauses as CUPTI-3 does for the rest of the run and meta
 *            says why. A client that registers while syncspy is detached gets CUPTI (CUPTI-2:
 *            syncspy has nothing to flush and never attaches again). meta.cupti_detaches,
 *            _attaches, _detach_ns, _attach_ns give what it cost. After a finalize CUPTI numbers
 *            its correlation ids from 1 again (on the H200: tests/gpu/results/
 *            2026-12-04-h200-session11, run 2): the stored correlation_id is the attach count above
 *            bit 32 and CUPTI's id below, unique over the run.
 *   CUPTI-9  A window that no sync point closes (a loop that only launches: the host never
 *            waits, as in 12_stream_prefetcher's bad variant, and CUPTI-4 would trace it whole
 *            at the cost sampling is there to avoid) is closed once UNSYNCED_HOLD_WINDOWS
 *            windows' length has passed since it was due and since the last sync point (at
 *            least twice the longest interval seen between two sync points, so that a loop of
 *            long steps keeps its windows; at most UNSYNCED_HOLD_MAX_NS). The writer finds it
 *            due after a drain (ss_cupti_calls_drained) and asks; the next wrapped call of any
 *            thread closes it (ss_cupti_unsynced_close) while no stream capture is open: the
 *            writer makes no CUPTI call (SHIM-4). It closes as at a sync point (the gap
 *            after it grows with how long it was held, the duty cycle stays), and counts in
 *            meta.cupti_unsynced_closes. Work still queued when it closes may miss its GPU
 *            rows; no sync point lies near to be measured wrongly. A gap ends only at a sync
 *            point, as before: a window starts at work the host saw finish.
 *   CUPTI-10 CUPTI-8's finalize runs only while no other thread is inside a wrapped call, and
 *            no thread enters one until it returned (interpose/gate.h, GATE-1..3): a call
 *            that entered while CUPTI was attached runs CUPTI's code again at its exit, and
 *            a finalize meanwhile freed what that code reads (SIGSEGV in libcupti.so.13
 *            inside cudaStreamSynchronize: four threads each waiting for its own stream, 7
 *            runs of 8 on the H100, tests/gpu/results/2026-12-06-h100-session22). An exit
 *            that finds another thread inside leaves the detach to a later exit
 *            (meta.cupti_detach_deferrals); a resume first calls it off, as before. Calls
 *            the shim does not wrap are not seen (short queries, in practice). Without
 *            membarrier there is no gate, and pauses disable the kinds (CUPTI-8's fallback).
 *            Nor is CUPTI finalized while another thread waited for the GPU since the last
 *            attach (GATE-4): that pause disables the kinds only (meta.cupti_detach_skips).
 *   CUPTI-11 The correlation ids come from a callback on the wrapped functions (`correlate`),
 *            written as gpu_api rows; the subscriber goes at every pause and makes way for the
 *            program's own (docs/architecture.md).
 *   CUPTI-12 By default no API hook is made at all: the kernel, copy, memset, sync and event
 *            records alone (`correlate` and `api` on demand). The API records and the callbacks
 *            cost a launch-bound loop 12-19% where these records cost 4% (docs/cupti.md), and
 *            they were there only to say which call queued which GPU row. The report ties them
 *            itself (CUPTI-13, report/gpu_order.c): CUPTI numbers correlation ids in the order
 *            the process makes its calls and each stream runs its work in the order it was
 *            queued. meta.cupti_correlation says `stream order`.
 *   CUPTI-14 At exit syncspy leaves CUPTI before anything tears it down: the exit notice
 *            (ss_cupti_exit_notice, the newest exit handler of the process: SHIM-8 in
 *            interpose/lifecycle.c) leaves CUPTI as CUPTI-2 does for another client (its kinds
 *            off, its buffers flushed to syncspy, no subscriber, started cleared, the traced
 *            time ending there) and stops the sampler: no CUPTI call from then on. The exit
 *            handlers that run after it still make CUDA calls (cuBLASLt's unloads its
 *            kernels' libraries); on the H100 one of them, where the writer had asked for
 *            CUPTI-9's close, disabled the kinds of a CUPTI that an earlier exit handler had
 *            torn down: SIGSEGV in cuptiActivityDisable under cuLibraryUnload, 4 processes of
 *            168 (tests/gpu/results/2026-12-06-session26, run 1). Their GPU work is not
 *            recorded; their host calls are.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "cupti/cupti.h" /* all this file knows of the rest of the shim */
#include "syncspy/sample.h"

/* meta.cupti: "on", or why not. Written and read under owner_lock (ss_cupti_status): some of
 * its texts are rewritten in place (status_text) while the writer thread may be reading. */
static const char *cupti_status = "off (SYNCSPY_CUPTI=0)";

#define BUFFER_BYTES (8u << 20)

static struct {
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
					  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*disable)(CUpti_ActivityKind);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*result_string)(CUptiResult, const char **);
	CUptiResult (*callback_name)(CUpti_CallbackDomain, uint32_t, const char **);
	CUptiResult (*event_device_timestamps)(uint8_t); /* optional (CUPTI 12.8 and later) */
	CUptiResult (*enable_runtime_api)(CUpti_CallbackId, uint8_t); /* optional: per function */
	CUptiResult (*enable_driver_api)(CUpti_CallbackId, uint8_t);
	/* CUPTI-8, SYNCSPY_CUPTI_PAUSE=detach only */
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	/* optional: names the other subscriber where there is one */
	CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
				    CUpti_SubscriberParams *);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
	CUptiResult (*finalize)(void);
	/* CUPTI-11: callbacks per function, for the correlation ids */
	CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
				       CUpti_CallbackId);
} api;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ss_gpu_rec *queue;
static size_t queued, queue_capacity;
static int started;
static int exiting; /* CUPTI-14: the exit notice ran (owner_lock) */
/* syncspy_gpu_trace (CUPTI-3): paused, since when, for how long in all, how often */
static int paused;
static uint64_t paused_since_ns, paused_total_ns;
static unsigned pauses;
/* SYNCSPY_CUPTI_SAMPLE (CUPTI-4): the sampler's own pause, its phases, the next switch (0:
 * not sampling; read without the lock at every sync point) and the traced windows. */
static int sample_off;
/* How long the timeline was on (started, not paused): meta.cupti_traced_ns, from which the
 * report says how much of the run a sampled or paused timeline covers. */
static uint64_t traced_total_ns, traced_since_ns;
/* When it was off, as [start, end) pairs in time order: the gpu_paused table, so that the
 * analyses know where GPU activity went unrecorded (CUPTI-3). */
static uint64_t (*off_intervals)[2];
static size_t noff_intervals, off_intervals_capacity;
static uint64_t sample_on_ns, sample_off_ns;
static _Atomic uint64_t sample_next_ns;
static unsigned sample_windows;
/* CUPTI-4: when the window now on opened, and the sync points counted by then (owner_lock) */
static uint64_t window_open_ns, window_open_ticks;
/* CUPTI-5: when the gap now on began and how much longer than sample_off_ns a window held open
 * made it (owner_lock), so that a higher estimate can lengthen it */
static uint64_t gap_open_ns;
static double gap_scale;
/* CUPTI-9: the last sync point seen while sampling, the longest interval between two, and the
 * windows closed without one; a window waits UNSYNCED_HOLD_WINDOWS windows' length for a sync
 * point (at least twice the longest interval, at most UNSYNCED_HOLD_MAX_NS) */
static _Atomic uint64_t last_tick_ns, longest_tick_gap_ns;
static unsigned unsynced_closes;
#define UNSYNCED_HOLD_WINDOWS 4
#define UNSYNCED_HOLD_MAX_NS  (10000 * 1000000ull)
/* CUPTI-5 (auto): on, sampling now, the last evaluation (time, records drained by then) and
 * the estimate it made (permille of the run time that tracing every call would cost). */
#define AUTO_EVAL_NS	     (25 * 1000000ull)
#define AUTO_ON_NS	     (50 * 1000000ull)
#define AUTO_MAX_OFF_NS	     (10000 * 1000000ull)
#define AUTO_BUDGET_PERMILLE 10
#define AUTO_NS_PER_CALL     3000
/* CUPTI-6: the sync points seen off, and on (a window of a launch-bound loop holds about 8),
 * before the measure counts */
#define AUTO_MEASURE_TICKS    20
#define AUTO_MEASURE_ON_TICKS 8
/* CUPTI-5: what one attach and one detach cost before this run measured them (H100 and H200:
 * 10-15 ms and 3-7 ms, tests/gpu/results/2026-12-06-h100-session25) */
#define AUTO_SWITCH_PRIOR_NS (15 * 1000000ull)
/* CUPTI-5: how long the estimate stays below two thirds of the budget before auto traces
 * continuously again (a pause of the program's between two bursts is not a quiet program) */
#define AUTO_QUIET_NS (1000 * 1000000ull)
/* sample_auto: set once at the start (owner_lock), read without it by the writer's fast path */
static _Atomic int sample_auto;
static int auto_sampling;
/* CUPTI-7: aggregate mode's windows, the gap after each twice the one before */
#define AGG_ON_NS	 (50 * 1000000ull)
#define AGG_FIRST_OFF_NS (1000 * 1000000ull)
#define AGG_MAX_OFF_NS	 (1ull << 50) /* no overflow in a run of any length */
static int sample_growing;
static uint64_t auto_eval_ns, auto_eval_records;
static unsigned auto_estimate_permille, auto_peak_permille;
/* CUPTI-5: since when the estimate has been below two thirds of the budget (0: it is not) */
static uint64_t auto_quiet_since_ns;
/* CUPTI-6: what tracing costs, measured: the program's sync points per second while the
 * sampler's windows were on and while they were off (the rate of a loop's steps). */
static _Atomic uint64_t sample_ticks; /* sync points seen while sampling */
static uint64_t measure_since_ns, measure_since_ticks;
static uint64_t measured_on_ns, measured_on_ticks, measured_off_ns, measured_off_ticks;
static unsigned measured_permille, measured_peak_permille;
/* Outside a capture range (interpose/capture.h, SHIM-6): a third reason to be off, counted as
 * the other two (CUPTI-3). */
static int capture_off;

/* The GPU timeline is on when neither the program, the sampler nor a capture range holds it off. */
static int timeline_off(void)
{
	return paused || sample_off || capture_off;
}
static unsigned enabled_kinds; /* KIND_* of SYNCSPY_CUPTI_KINDS, once started */
/* CUPTI-8: SYNCSPY_CUPTI_PAUSE=detach asked for (detach_asked) and not given up (detach_mode);
 * where CUPTI is (attach_state: read by the API callback without the lock, written under
 * owner_lock); the subscriber while a detach waits for an API exit; what detaching cost. */
enum { ATTACHED, DETACH_PENDING, DETACHED };
static int detach_asked, detach_mode;
static _Atomic int attach_state;
static CUpti_SubscriberHandle subscriber;
static unsigned detaches, attaches;
/* CUPTI-8: CUPTI numbers correlation ids from 1 again after each cuptiFinalize; the records of
 * attach N carry N above bit 32 (convert), so that each GPU row ties to its own window's API
 * record. Written at an attach (owner_lock, no records in flight: the pause flushed them and
 * the finalize dropped the rest), read by convert on CUPTI's threads. */
static _Atomic uint32_t attach_epoch;
static uint64_t detach_total_ns, attach_total_ns;
static char detach_fallback[224]; /* why detach_mode was given up, empty if it was not */
static unsigned detach_deferrals, detach_skips; /* CUPTI-10 (owner_lock) */
/* CUPTI-11: the subscriber is the correlation's (owner_lock; correlate_on is read by the
 * callback without it), and why the API records replace it where it could not be made */
static int correlating, correlate_blocked; /* blocked: the program subscribed */
static _Atomic int correlate_on;
static char correlate_fallback[160];
static char status_text[SS_CUPTI_STATUS_MAX];

static uint64_t CUPTIAPI now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_status(const char *what, CUptiResult result)
{
	const char *text = NULL;
	if (api.result_string)
		api.result_string(result, &text);
	snprintf(status_text, sizeof(status_text), "off: %s: %s (%d); host data only", what,
		 text ? text : "?", (int)result);
	cupti_status = status_text;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void enqueue(const struct ss_gpu_rec *rec)
{
	pthread_mutex_lock(&queue_lock);
	if (queued == queue_capacity) {
		size_t capacity = queue_capacity ? queue_capacity * 2 : 4096;
		struct ss_gpu_rec *grown = realloc(queue, capacity * sizeof(*grown));
		if (!grown) {
			pthread_mutex_unlock(&queue_lock);
			free(rec->name);
			return;
		}
		queue = grown;
		queue_capacity = capacity;
	}
	queue[queued++] = *rec;
	pthread_mutex_unlock(&queue_lock);
}

static void convert(const CUpti_Activity *record)
{
	struct ss_gpu_rec rec = {0};
	uint64_t epoch = (uint64_t)atomic_load_explicit(&attach_epoch, memory_order_relaxed) << 32;
	switch (record->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_KERNEL,
					  .device = k->deviceId,
					  .stream = k->streamId,
					  .correlation = epoch | k->correlationId,
					  .start_ns = k->start,
					  .end_ns = k->end,
					  .grid = {k->gridX, k->gridY, k->gridZ},
					  .block = {k->blockX, k->blockY, k->blockZ},
					  .name = k->name ? strdup(k->name) : NULL};
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_MEMCPY,
					  .copy_kind = m->copyKind,
					  .src_kind = m->srcKind,
					  .dst_kind = m->dstKind,
					  .device = m->deviceId,
					  .stream = m->streamId,
					  .correlation = epoch | m->correlationId,
					  .start_ns = m->start,
					  .end_ns = m->end,
					  .bytes = m->bytes};
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_MEMSET,
					  .device = m->deviceId,
					  .stream = m->streamId,
					  .correlation = epoch | m->correlationId,
					  .detail = m->memoryKind,
					  .start_ns = m->start,
					  .end_ns = m->end,
					  .bytes = m->bytes};
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s =
		    (const CUpti_ActivitySynchronization2 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_SYNC,
					  .stream = s->streamId,
					  .correlation = epoch | s->correlationId,
					  .detail = s->type,
					  .start_ns = s->start,
					  .end_ns = s->end};
		break;
	}
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
		/* deviceTimestamp: when the GPU reached the event (0 when CUPTI does not collect
		 * it) */
		const CUpti_ActivityCudaEvent2 *e = (const CUpti_ActivityCudaEvent2 *)record;
		rec = (struct ss_gpu_rec){.kind = SS_GPU_EVENT,
					  .device = e->deviceId,
					  .stream = e->streamId,
					  .correlation = epoch | e->correlationId,
					  .detail = e->eventId,
					  .start_ns = e->deviceTimestamp,
					  .end_ns = e->deviceTimestamp};
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)record;
		int runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
		const char *name = NULL; /* CUPTI's own string, valid for the process's life */
		if (api.callback_name)
			api.callback_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API
						  : CUPTI_CB_DOMAIN_DRIVER_API,
					  a->cbid, &name);
		rec = (struct ss_gpu_rec){.kind = runtime ? SS_GPU_RUNTIME_API : SS_GPU_DRIVER_API,
					  .correlation = epoch | a->correlationId,
					  .detail = a->cbid,
					  .thread = a->threadId,
					  .start_ns = a->start,
					  .end_ns = a->end,
					  .api_name = name};
		break;
	}
	default:
		return;
	}
	/* a forced flush (at every pause, CUPTI-8; at a window closed without a sync point,
	 * CUPTI-9) hands over the records of work not finished yet with their timestamps still 0:
	 * no time to place them at (an event's 0 means no device timestamp, kept) */
	if (rec.kind != SS_GPU_EVENT &&
	    (!rec.start_ns || !rec.end_ns || rec.end_ns < rec.start_ns)) {
		free(rec.name);
		return;
	}
	enqueue(&rec);
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *record = NULL;
	while (valid && api.next_record(buffer, valid, &record) == CUPTI_SUCCESS)
		convert(record);
	free(buffer);
}

/* SYNCSPY_CUPTI_SAMPLE: anything but ON/PERIOD (syncspy/sample.h) is ignored with one warning,
 * and CUPTI traces everything (a profiler never stops the program for its own configuration). */
static void parse_sample(const char *text)
{
	unsigned long long on = 0, period = 0;
	if (strcmp(text, SS_CUPTI_SAMPLE_AGGREGATE) == 0) { /* CUPTI-7 */
		sample_on_ns = AGG_ON_NS;
		sample_off_ns = AGG_FIRST_OFF_NS;
		sample_growing = 1;
		return;
	}
	switch (ss_parse_sample(text, &on, &period)) {
	case SS_SAMPLE_ALL:
		return;
	case SS_SAMPLE_WINDOWS:
		sample_on_ns = on * 1000000ull;
		sample_off_ns = (period - on) * 1000000ull;
		return;
	case SS_SAMPLE_BAD:
		fprintf(stderr,
			"syncspy: ignoring SYNCSPY_CUPTI_SAMPLE='%s' (" SS_SAMPLE_SYNTAX
			"): sampling as 'auto' does\n",
			text);
		/* fall through */
	case SS_SAMPLE_AUTO:
		sample_auto = 1;
		return;
	}
}

static void start_locked(unsigned wanted);
static void uncorrelate_locked(void);
static void disable_kinds(unsigned kinds_on);
static unsigned wanted_kinds(const char *list);
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER; /* started, other_client */
static char other_client[160]; /* CUPTI-1/2: who else registered, non-empty once someone did */
/* CUPTI-8: when a resume's attach began, until its kinds are on (attach_total_ns) */
static uint64_t attaching_since_ns;

static int attempted; /* start_once ran in this process or in the parent before a fork */
static const char *kinds_setting, *sample_setting, *pause_setting; /* ss_cupti_start's */

static void start_once(void)
{
	pthread_mutex_lock(&owner_lock);
	attempted = 1;
	/* read here, so that a bad value is warned of even where CUPTI does not start */
	parse_sample(sample_setting);
	/* CUPTI-8: anything but disable detaches, the default; a bad value says so once */
	detach_asked = detach_mode = strcmp(pause_setting, "disable") != 0;
	if (detach_asked && strcmp(pause_setting, "detach") != 0)
		fprintf(stderr,
			"syncspy: ignoring SYNCSPY_CUPTI_PAUSE='%s' (disable or detach): pausing "
			"as 'detach', the default, does\n",
			pause_setting);
	const char *injection = getenv("CUDA_INJECTION64_PATH");
	if (other_client[0]) { /* CUPTI-1 */
		snprintf(status_text, sizeof(status_text),
			 "off: another CUPTI client (%s) registered first; host data only",
			 other_client);
		cupti_status = status_text;
	} else if (injection && injection[0]) { /* CUPTI-1: Nsight Systems/Compute, or a tool */
		snprintf(
		    status_text, sizeof(status_text),
		    "off: CUDA_INJECTION64_PATH is set (%.96s): another tool holds CUPTI; host "
		    "data only",
		    injection);
		cupti_status = status_text;
	} else if (exiting) { /* CUPTI-14: the first CUDA call came from an exit handler */
		cupti_status = "off: the program first called CUDA while exiting; host data only";
	} else {
		unsigned wanted = wanted_kinds(kinds_setting);
		if (wanted)
			start_locked(wanted);
		else
			cupti_status = "off: SYNCSPY_CUPTI_KINDS names no kind; host data only";
	}
	pthread_mutex_unlock(&owner_lock);
}

/* CUPTI-2, CUPTI-14 (owner_lock held): syncspy leaves CUPTI, for another client or at exit.
 * Attached, its kinds go off (the other client gets the kinds it enables, not also syncspy's)
 * and its records are flushed to it; detached (CUPTI-8), they were flushed at the pause and
 * CUPTI is the other client's to attach; a detach still waiting is called off; no subscriber
 * of syncspy's stays (CUPTI-11: room for the other client's). No CUPTI call after this. */
static void leave_locked(void)
{
	int state = atomic_load(&attach_state);
	uncorrelate_locked();
	if (state == DETACH_PENDING)
		api.unsubscribe(subscriber);
	if (state != DETACHED) {
		if (!timeline_off())
			disable_kinds(enabled_kinds);
		api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
	atomic_store(&attach_state, ATTACHED);
	subscriber = NULL;
	started = 0;
	if (!timeline_off())
		traced_total_ns += now_ns() - traced_since_ns;
}

/* Exported: the program's own CUPTI clients (torch.profiler's Kineto, ...) reach CUPTI through
 * here (CUPTI-1, CUPTI-2). */
__attribute__((visibility("default"))) CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete)
{
	typedef CUptiResult (*register_fn)(CUpti_BuffersCallbackRequestFunc,
					   CUpti_BuffersCallbackCompleteFunc);
	int saved_errno = errno; /* SHIM-2: the lookups below are ours, not the caller's */
	register_fn real = (register_fn)ss_dlsym(RTLD_NEXT, "cuptiActivityRegisterCallbacks");
	if (!real)
		real = api.register_callbacks;
	if (!real)
		return CUPTI_ERROR_NOT_INITIALIZED;
	Dl_info info;
	const char *caller = "unknown module";
	if (dladdr(__builtin_return_address(0), &info) && info.dli_fname && info.dli_fname[0]) {
		const char *base = strrchr(info.dli_fname, '/');
		caller = base ? base + 1 : info.dli_fname;
	}
	pthread_mutex_lock(&owner_lock);
	if (!other_client[0])
		snprintf(other_client, sizeof(other_client), "%s", caller);
	if (started) { /* CUPTI-2 */
		leave_locked();
		snprintf(
		    status_text, sizeof(status_text),
		    "yielded: another CUPTI client (%s) took CUPTI at %llu ns (CLOCK_MONOTONIC); "
		    "no GPU rows after that",
		    other_client, (unsigned long long)now_ns());
		cupti_status = status_text;
	}
	pthread_mutex_unlock(&owner_lock);
	errno = saved_errno;
	return real(request, complete);
}

/* "cudaMemcpyAsync_ptsz_v7000", "__cudaLaunchKernel", "cuMemcpyHtoD_v2" -> the function's base
 * name ("cudaMemcpyAsync", "cudaLaunchKernel", "cuMemcpyHtoD"), into out. */
static void base_name(const char *name, char *out, size_t size)
{
	while (*name == '_')
		name++;
	snprintf(out, size, "%s", name);
	for (;;) {
		char *tail = strrchr(out, '_');
		if (!tail)
			return;
		int version = tail[1] == 'v' && tail[2] >= '0' && tail[2] <= '9';
		if (!version && strcmp(tail, "_ptsz") != 0 && strcmp(tail, "_ptds") != 0)
			return;
		*tail = '\0';
	}
}

static int wraps(enum ss_layer layer, const char *cupti_name)
{
	char want[64], wrapped[64];
	base_name(cupti_name, want, sizeof(want));
	for (int i = 0; i < ss_api_total; i++) {
		enum ss_layer wrapped_layer;
		const char *name = ss_api_name(i, &wrapped_layer);
		if (wrapped_layer != layer || !name)
			continue;
		base_name(name, wrapped, sizeof(wrapped));
		if (strcmp(want, wrapped) == 0)
			return 1;
	}
	return 0;
}

/* The runtime and driver functions by callback id, sorted once (sort_api_functions): those
 * syncspy does not wrap, disabled at every narrowing of the API records (the start, each resume
 * of syncspy_gpu_trace), and those it wraps, CUPTI-11's callbacks. */
static struct api_function {
	uint8_t runtime; /* 1: runtime API, 0: driver API */
	uint32_t cbid;
} * unwrapped, *wrapped; /* wrapped: the others (CUPTI-11's callbacks) */
static size_t nunwrapped, nwrapped;

static void sort_api_functions(void)
{
	static const struct {
		CUpti_CallbackDomain domain;
		uint32_t size;
		enum ss_layer layer;
	} domains[] = {
	    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, SS_LAYER_RUNTIME},
	    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, SS_LAYER_DRIVER},
	};
	size_t total = CUPTI_RUNTIME_TRACE_CBID_SIZE + CUPTI_DRIVER_TRACE_CBID_SIZE;
	unwrapped = malloc(total * sizeof(*unwrapped));
	wrapped = malloc(total * sizeof(*wrapped));
	if (!unwrapped || !wrapped) {
		free(unwrapped);
		free(wrapped);
		unwrapped = wrapped = NULL;
		return;
	}
	for (size_t d = 0; d < sizeof(domains) / sizeof(domains[0]); d++)
		for (uint32_t cbid = 1; cbid < domains[d].size; cbid++) {
			const char *name = NULL;
			if (api.callback_name(domains[d].domain, cbid, &name) != CUPTI_SUCCESS ||
			    !name)
				continue;
			struct api_function one = {domains[d].layer == SS_LAYER_RUNTIME, cbid};
			if (wraps(domains[d].layer, name))
				wrapped[nwrapped++] = one;
			else
				unwrapped[nunwrapped++] = one;
		}
}

/* API records tie GPU rows to host calls (docs/cupti.md), but recording every runtime and
 * driver call costs a host-bound program dearly (torch makes several unrelated calls per
 * kernel). Only the functions syncspy wraps are needed. CUPTI's documented way: enable the
 * RUNTIME and DRIVER kinds (done by the caller, first: a kind enabled later overrides this),
 * then disable every other function by callback id. (Enabling single functions without the
 * kinds gave no API records at all on the H200: tests/gpu/results/2026-12-02-h200-cupti.) */
static void disable_unwrapped_apis(void)
{
	if (!api.enable_runtime_api || !api.enable_driver_api || !api.callback_name)
		return;
	if (!unwrapped)
		sort_api_functions();
	for (size_t i = 0; i < nunwrapped; i++)
		if (unwrapped[i].runtime)
			api.enable_runtime_api(unwrapped[i].cbid, 0);
		else
			api.enable_driver_api(unwrapped[i].cbid, 0);
}

/* What SYNCSPY_CUPTI_KINDS can name, and the CUPTI activity kinds each one enables. */
enum {
	KIND_KERNEL = 1,
	KIND_MEMCPY = 2,
	KIND_MEMSET = 4,
	KIND_SYNC = 8,
	KIND_EVENT = 16,
	KIND_RUNTIME_API = 32,
	KIND_DRIVER_API = 64,
	KIND_API = KIND_RUNTIME_API | KIND_DRIVER_API,
	KIND_CORRELATE = 128, /* CUPTI-11: no records of its own, the callbacks' correlation ids */
	KIND_GPU = KIND_KERNEL | KIND_MEMCPY | KIND_MEMSET | KIND_SYNC | KIND_EVENT
};
static const struct {
	CUpti_ActivityKind kind;
	const char *name;	 /* CUPTI's, for meta.cupti when enabling it fails */
	unsigned option;	 /* KIND_* */
	const char *option_name; /* SYNCSPY_CUPTI_KINDS's */
} kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", KIND_KERNEL, "kernel"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", KIND_MEMCPY, "memcpy"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", KIND_MEMSET, "memset"},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", KIND_SYNC, "sync"},
    {CUPTI_ACTIVITY_KIND_CUDA_EVENT, "CUDA_EVENT", KIND_EVENT, "event"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", KIND_RUNTIME_API, "runtime-api"}, /* narrowed */
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", KIND_DRIVER_API, "driver-api"},
    {CUPTI_ACTIVITY_KIND_INVALID, "", KIND_CORRELATE, "correlate"}, /* no activity kind */
};

/* Disables the activity kinds of KINDS_ON (KIND_*): at a pause, and where another client takes
 * CUPTI (CUPTI-2). */
static void disable_kinds(unsigned kinds_on)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((kinds_on & kinds[i].option) && kinds[i].kind != CUPTI_ACTIVITY_KIND_INVALID)
			api.disable(kinds[i].kind);
}

/* "kernel,memcpy,api" -> KIND_* bits ("api": both layers' records); an unknown name is ignored
 * with one warning (a profiler never stops the program for its own configuration). */
static unsigned wanted_kinds(const char *list)
{
	unsigned wanted = 0;
	char copy[256];
	snprintf(copy, sizeof(copy), "%s", list ? list : "");
	char *save = NULL;
	for (char *name = strtok_r(copy, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
		unsigned bit = strcmp(name, "api") == 0 ? KIND_API : 0;
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (strcmp(name, kinds[i].option_name) == 0)
				bit = kinds[i].option;
		if (!bit)
			fprintf(stderr,
				"syncspy: ignoring '%s' in SYNCSPY_CUPTI_KINDS (kinds: kernel, "
				"memcpy, memset, sync, event, correlate, api, runtime-api, "
				"driver-api)\n",
				name);
		wanted |= bit;
	}
	if ((wanted & KIND_API) == KIND_API) /* API records carry the correlation ids themselves */
		wanted &= ~(unsigned)KIND_CORRELATE;
	return wanted;
}

static void CUPTIAPI on_api_callback(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const void *data);

/* A subscriber for on_api_callback (CUPTI-8's, CUPTI-11's: one at a time), named where CUPTI
 * can; on failure OTHER names the subscriber that holds CUPTI, where CUPTI says. */
static CUptiResult subscribe_locked(char *other, size_t size)
{
	if (api.subscribe_v2) {
		CUpti_SubscriberParams params = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
						 .subscriberName = "syncspy",
						 .oldSubscriberName = other,
						 .oldSubscriberSize = size};
		return api.subscribe_v2(&subscriber, on_api_callback, NULL, &params);
	}
	return api.subscribe(&subscriber, on_api_callback, NULL);
}

/* Why a subscriber could not be made, into OUT: "WHAT: CUPTI's text (N) (subscriber: OTHER):
 * INSTEAD", OTHER the subscriber that holds CUPTI where CUPTI named it. */
static void say_subscriber_failed(char *out, size_t size, const char *what, CUptiResult result,
				  char *other, size_t other_size, const char *instead)
{
	const char *text = NULL;
	if (api.result_string)
		api.result_string(result, &text);
	other[other_size - 1] = '\0';
	snprintf(out, size, "%s: %s (%d)%s%s%s: %s", what, text ? text : "?", (int)result,
		 other[0] ? " (subscriber: " : "", other, other[0] ? ")" : "", instead);
}

/* CUPTI-11: the correlation ids of the calls syncspy wraps, from a callback on those functions
 * alone, instead of CUPTI's API records: on the H100 those cost 12_stream_prefetcher's step
 * 13 points while traced against 0 for the copies' and memsets' records (tests/gpu/results/
 * 2026-12-06-h100-session23, runs 1-2). Returns 0 where the subscriber or a callback cannot be
 * made; correlate_fallback says why. owner_lock held. */
static int correlate_locked(void)
{
	if (correlating)
		return 1;
	if (correlate_blocked) /* make_way_for_subscriber said why */
		return 0;
	const char *what = "cuptiSubscribe";
	char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	if (!api.subscribe || !api.unsubscribe || !api.enable_callback || !api.callback_name) {
		snprintf(correlate_fallback, sizeof(correlate_fallback),
			 "libcupti.so.13 lacks cuptiSubscribe, cuptiEnableCallback or "
			 "cuptiGetCallbackName: API records");
		return 0;
	}
	if (!wrapped)
		sort_api_functions();
	CUptiResult result =
	    wrapped ? subscribe_locked(other, sizeof(other)) : CUPTI_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; result == CUPTI_SUCCESS && i < nwrapped; i++) {
		what = "cuptiEnableCallback";
		result = api.enable_callback(1, subscriber,
					     wrapped[i].runtime ? CUPTI_CB_DOMAIN_RUNTIME_API
								: CUPTI_CB_DOMAIN_DRIVER_API,
					     wrapped[i].cbid);
		if (result != CUPTI_SUCCESS)
			api.unsubscribe(subscriber);
	}
	if (result != CUPTI_SUCCESS) {
		say_subscriber_failed(correlate_fallback, sizeof(correlate_fallback), what, result,
				      other, sizeof(other), "API records");
		subscriber = NULL;
		return 0;
	}
	correlating = 1;
	atomic_store(&correlate_on, 1);
	return 1;
}

/* CUPTI-11, where the timeline goes off (owner_lock held): the correlation's subscriber goes,
 * so that no callback runs while off and CUPTI-8 can make its own. */
static void uncorrelate_locked(void)
{
	if (!correlating)
		return;
	atomic_store(&correlate_on, 0);
	api.unsubscribe(subscriber);
	subscriber = NULL;
	correlating = 0;
}

/* Enables the activity kinds of WANTED (KIND_*), narrows the API records and asks for the
 * events' GPU times: at start, and again at each resume (syncspy_gpu_trace). Returns 0 and
 * sets cupti_status when CUPTI refuses. Called with owner_lock held. */
static int enable_kinds(unsigned wanted)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!(wanted & kinds[i].option) || kinds[i].kind == CUPTI_ACTIVITY_KIND_INVALID)
			continue;
		CUptiResult result = api.enable(kinds[i].kind);
		if (result != CUPTI_SUCCESS) {
			char what[64];
			snprintf(what, sizeof(what), "cuptiActivityEnable(%s)", kinds[i].name);
			set_status(what, result);
			return 0;
		}
	}
	if (wanted & KIND_API) /* after the kinds: enabling a kind undoes the narrowing */
		disable_unwrapped_apis();
	/* When the GPU reached each recorded event; without it CUDA_EVENT rows carry no time. */
	if ((wanted & KIND_EVENT) && api.event_device_timestamps)
		api.event_device_timestamps(1);
	if ((wanted & KIND_CORRELATE) && !correlate_locked()) {
		/* CUPTI-11: the API records instead, for the rest of the run (correlate_fallback)
		 */
		enabled_kinds = (enabled_kinds & ~(unsigned)KIND_CORRELATE) | KIND_API;
		return enable_kinds(KIND_API);
	}
	return 1;
}

static void start_locked(unsigned wanted)
{
	void *library = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!library)
		library = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!library) {
		snprintf(status_text, sizeof(status_text),
			 "off: libcupti.so.13 not found (%s); host data only", dlerror());
		cupti_status = status_text;
		return;
	}
#define FIND(field, name) *(void **)&api.field = ss_dlsym(library, name)
	FIND(register_callbacks, "cuptiActivityRegisterCallbacks");
	FIND(register_timestamp, "cuptiActivityRegisterTimestampCallback");
	FIND(enable, "cuptiActivityEnable");
	FIND(disable, "cuptiActivityDisable");
	FIND(next_record, "cuptiActivityGetNextRecord");
	FIND(flush_all, "cuptiActivityFlushAll");
	FIND(result_string, "cuptiGetResultString");
	FIND(callback_name, "cuptiGetCallbackName");
	FIND(event_device_timestamps, "cuptiActivityEnableCudaEventDeviceTimestamps");
	FIND(enable_runtime_api, "cuptiActivityEnableRuntimeApi");
	FIND(enable_driver_api, "cuptiActivityEnableDriverApi");
	FIND(subscribe, "cuptiSubscribe");
	FIND(subscribe_v2, "cuptiSubscribe_v2");
	FIND(unsubscribe, "cuptiUnsubscribe");
	FIND(enable_domain, "cuptiEnableDomain");
	FIND(finalize, "cuptiFinalize");
	FIND(enable_callback, "cuptiEnableCallback");
#undef FIND
	if (detach_mode && (!api.subscribe || !api.unsubscribe || !api.enable_domain ||
			    !api.finalize)) { /* CUPTI-8 */
		detach_mode = 0;
		snprintf(
		    detach_fallback, sizeof(detach_fallback),
		    "libcupti.so.13 lacks cuptiSubscribe, cuptiEnableDomain, cuptiUnsubscribe or "
		    "cuptiFinalize: paused by disabling kinds");
	}
	if (detach_mode && !ss_gate_supported()) { /* CUPTI-10 */
		detach_mode = 0;
		snprintf(detach_fallback, sizeof(detach_fallback),
			 "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) unavailable: no safe moment "
			 "to finalize while other threads make CUDA calls: paused by disabling "
			 "kinds");
	}
	if (!api.register_callbacks || !api.register_timestamp || !api.enable || !api.disable ||
	    !api.next_record || !api.flush_all) {
		cupti_status = "off: libcupti.so.13 lacks the activity API; host data only";
		return;
	}
	CUptiResult result = api.register_timestamp(now_ns); /* before any activity */
	if (result != CUPTI_SUCCESS) {
		set_status("cuptiActivityRegisterTimestampCallback", result);
		return;
	}
	result = api.register_callbacks(buffer_requested, buffer_completed);
	if (result != CUPTI_SUCCESS) {
		set_status("cuptiActivityRegisterCallbacks", result);
		return;
	}
	enabled_kinds = wanted;
	if (!paused && !capture_off && !enable_kinds(wanted)) /* paused first: syncspy_gpu_trace(0),
								  or outside a capture range */
		return;
	started = 1;
	/* when paused first, from the resume on */
	traced_since_ns = now_ns();
	/* CUPTI-4: the first window starts now */
	if (sample_on_ns) {
		sample_windows = 1;
		atomic_store_explicit(&sample_next_ns, now_ns() + sample_on_ns,
				      memory_order_relaxed);
	}
	if ((wanted & KIND_GPU) == KIND_GPU) {
		/* every record; the ties by stream order (CUPTI-12) or by either hook */
		cupti_status = "on";
	} else {
		char list[128] = "";
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			const char *name = kinds[i].option_name;
			if (!(wanted & kinds[i].option))
				continue;
			if ((wanted & KIND_API) == KIND_API) /* both layers: named "api", once */
				name = kinds[i].option == KIND_RUNTIME_API  ? "api"
				       : kinds[i].option == KIND_DRIVER_API ? NULL
									    : name;
			if (name)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 list[0] ? "," : "", name);
		}
		snprintf(status_text, sizeof(status_text), "on: only %s (SYNCSPY_CUPTI_KINDS)",
			 list[0] ? list : "nothing");
		cupti_status = status_text;
	}
}

/* CUPTI-11: the program makes a callback subscriber of its own (a tool, torch.profiler's Kineto),
 * and CUPTI 13.0 allows one per process: syncspy's correlation subscriber, and CUPTI-8's while a
 * detach waits, make way first, so that the program's call returns what it would without the
 * shim. The correlation ids come from CUPTI's API records from here, and pauses disable the
 * kinds (CUPTI-8's fallback). */
static void make_way_for_subscriber(const char *function)
{
	pthread_mutex_lock(&owner_lock);
	correlate_blocked = 1;
	if (enabled_kinds & KIND_CORRELATE) {
		snprintf(correlate_fallback, sizeof(correlate_fallback),
			 "the program called %s: API records", function);
		enabled_kinds = (enabled_kinds & ~(unsigned)KIND_CORRELATE) | KIND_API;
		if (correlating) { /* on now: the records from here */
			uncorrelate_locked();
			if (started && !timeline_off() && !enable_kinds(KIND_API))
				started = 0;
		}
	}
	if (atomic_load(&attach_state) == DETACH_PENDING) {
		api.unsubscribe(subscriber);
		subscriber = NULL;
		atomic_store(&attach_state, ATTACHED);
	}
	if (detach_mode) {
		detach_mode = 0;
		snprintf(detach_fallback, sizeof(detach_fallback),
			 "the program called %s: paused by disabling kinds", function);
	}
	pthread_mutex_unlock(&owner_lock);
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiSubscribe(CUpti_SubscriberHandle *handle, CUpti_CallbackFunc callback, void *userdata)
{
	int saved_errno = errno;
	CUptiResult (*real)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *) =
	    (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))ss_dlsym(
		RTLD_NEXT, "cuptiSubscribe");
	if (!real)
		real = api.subscribe;
	if (!real)
		return CUPTI_ERROR_NOT_INITIALIZED;
	make_way_for_subscriber("cuptiSubscribe");
	errno = saved_errno;
	return real(handle, callback, userdata);
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiSubscribe_v2(CUpti_SubscriberHandle *handle, CUpti_CallbackFunc callback, void *userdata,
		  CUpti_SubscriberParams *params)
{
	int saved_errno = errno;
	CUptiResult (*real)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
			    CUpti_SubscriberParams *) =
	    (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
			    CUpti_SubscriberParams *))ss_dlsym(RTLD_NEXT, "cuptiSubscribe_v2");
	if (!real)
		real = api.subscribe_v2;
	if (!real)
		return CUPTI_ERROR_NOT_INITIALIZED;
	make_way_for_subscriber("cuptiSubscribe_v2");
	errno = saved_errno;
	return real(handle, callback, userdata, params);
}

/* CUPTI-11: the calls of this thread inside which the callback is, innermost last (a runtime
 * call and the driver call it makes), with their correlation ids and when they entered */
#define OPEN_CALLS_MAX 4
static __thread struct open_call {
	uint32_t correlation;
	uint64_t start_ns;
} open_calls[OPEN_CALLS_MAX] __attribute__((tls_model("initial-exec")));
static __thread unsigned nopen_calls __attribute__((tls_model("initial-exec")));

/* CUPTI-11, at the entry and exit of a wrapped function while traced: at the exit, the record
 * CUPTI's API records would have made (gpu_api: correlation id, thread, entry and exit), queued
 * as convert queues those. On the program's thread, inside its call: one clock read at each
 * end and, at the exit, queue_lock (held only to append, also by CUPTI's buffer thread). */
static void correlate_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			   const CUpti_CallbackData *call)
{
	uint64_t now = now_ns();
	if (call->callbackSite == CUPTI_API_ENTER) {
		if (nopen_calls < OPEN_CALLS_MAX)
			open_calls[nopen_calls] = (struct open_call){call->correlationId, now};
		nopen_calls++;
		return;
	}
	/* the exit of the innermost call open; one that entered before the subscriber was made
	 * has no entry (its start is its exit), one whose exit came after it went is dropped */
	uint64_t start = now;
	while (nopen_calls > 0) {
		nopen_calls--;
		if (nopen_calls < OPEN_CALLS_MAX &&
		    open_calls[nopen_calls].correlation == call->correlationId) {
			start = open_calls[nopen_calls].start_ns;
			break;
		}
	}
	uint64_t epoch = (uint64_t)atomic_load_explicit(&attach_epoch, memory_order_relaxed) << 32;
	struct ss_gpu_rec rec = {.kind = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? SS_GPU_RUNTIME_API
									       : SS_GPU_DRIVER_API,
				 .correlation = epoch | call->correlationId,
				 .detail = cbid,
				 .thread = (uint32_t)(uintptr_t)pthread_self(), /* as CUPTI's */
				 .start_ns = start,
				 .end_ns = now,
				 .api_name = call->functionName}; /* CUPTI's constant string */
	enqueue(&rec);
}

/* CUPTI-11 while traced: the correlation of the wrapped calls. CUPTI-8, at API exits while a
 * detach waits: detaches CUPTI (cuptiFinalize) on the program's thread. Short, and never waits
 * for owner_lock: where it is taken (its holder may be in CUPTI, or be this thread), the next
 * API exit detaches. */
static void CUPTIAPI on_api_callback(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	if (atomic_load_explicit(&correlate_on, memory_order_relaxed)) {
		if (data && (domain == CUPTI_CB_DOMAIN_RUNTIME_API ||
			     domain == CUPTI_CB_DOMAIN_DRIVER_API)) {
			int saved_errno = errno; /* SHIM-2: inside the program's call */
			correlate_call(domain, cbid, data);
			errno = saved_errno;
		}
		return;
	}
	if (atomic_load_explicit(&attach_state, memory_order_relaxed) != DETACH_PENDING)
		return;
	if ((domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) ||
	    !data || ((const CUpti_CallbackData *)data)->callbackSite != CUPTI_API_EXIT)
		return;
	int saved_errno = errno; /* SHIM-2: inside the program's call */
	if (pthread_mutex_trylock(&owner_lock) != 0) {
		errno = saved_errno;
		return;
	}
	if (atomic_load(&attach_state) == DETACH_PENDING && ss_gate_others_synced()) {
		/* GATE-4: this pause disables the kinds only, as CUPTI-8's fallback does */
		api.unsubscribe(subscriber);
		subscriber = NULL;
		atomic_store(&attach_state, ATTACHED);
		detach_skips++;
	} else if (atomic_load(&attach_state) == DETACH_PENDING && !ss_gate_close()) {
		detach_deferrals++; /* CUPTI-10: another thread is inside a call; a later exit */
	} else if (atomic_load(&attach_state) == DETACH_PENDING) {
		uint64_t start = now_ns();
		CUptiResult result = api.finalize(); /* the subscriber goes with it */
		ss_gate_open();
		if (result == CUPTI_SUCCESS) {
			atomic_store(&attach_state, DETACHED);
			detaches++;
		} else { /* still attached, the kinds disabled: pause as CUPTI-3 from here */
			/* no callback at every call, and room for another subscriber */
			api.unsubscribe(subscriber);
			const char *text = NULL;
			if (api.result_string)
				api.result_string(result, &text);
			snprintf(detach_fallback, sizeof(detach_fallback),
				 "cuptiFinalize: %s (%d): paused by disabling kinds",
				 text ? text : "?", (int)result);
			detach_mode = 0;
			atomic_store(&attach_state, ATTACHED);
		}
		subscriber = NULL;
		detach_total_ns += now_ns() - start;
	}
	pthread_mutex_unlock(&owner_lock);
	errno = saved_errno;
}

/* CUPTI-8, at a pause (owner_lock held, the kinds just disabled): hands syncspy what CUPTI
 * buffers and asks the next API exit to detach CUPTI; where no subscriber can be made (another
 * one exists), pauses as CUPTI-3 for the rest of the run and says why. */
static void request_detach_locked(uint64_t now)
{
	if (atomic_load(&attach_state) != ATTACHED)
		return;
	api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* finalizing would drop them */
	char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	CUptiResult result = subscribe_locked(other, sizeof(other));
	const char *what = "cuptiSubscribe";
	if (result == CUPTI_SUCCESS) {
		what = "cuptiEnableDomain";
		result = api.enable_domain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
		if (result == CUPTI_SUCCESS)
			result = api.enable_domain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
		if (result != CUPTI_SUCCESS)
			api.unsubscribe(subscriber);
	}
	if (result != CUPTI_SUCCESS) {
		say_subscriber_failed(detach_fallback, sizeof(detach_fallback), what, result, other,
				      sizeof(other), "paused by disabling kinds");
		detach_mode = 0;
		subscriber = NULL;
		return;
	}
	atomic_store(&attach_state, DETACH_PENDING);
	detach_total_ns += now_ns() - now;
}

/* CUPTI-8, at a resume (owner_lock held): CUPTI attached again where the pause detached it, as
 * start_locked attached it (the kinds are the caller's); a detach still waiting for an API exit
 * is called off. Returns 0 and sets cupti_status when CUPTI refuses. */
static int attach_locked(void)
{
	int state = atomic_load(&attach_state);
	if (state == DETACH_PENDING) {
		atomic_store(&attach_state, ATTACHED);
		api.unsubscribe(subscriber);
		subscriber = NULL;
		return 1;
	}
	if (state != DETACHED)
		return 1;
	attaching_since_ns = now_ns(); /* to the kinds enabled: attach_total_ns */
	atomic_store(&attach_state, ATTACHED);
	ss_gate_new_epoch(); /* GATE-4: the syncs of the previous attach are another CUPTI's */
	attaches++;
	atomic_store(&attach_epoch, attaches);
	CUptiResult result = api.register_timestamp(now_ns); /* before any activity */
	if (result != CUPTI_SUCCESS) {
		set_status("cuptiActivityRegisterTimestampCallback (attaching again)", result);
		return 0;
	}
	result = api.register_callbacks(buffer_requested, buffer_completed);
	if (result != CUPTI_SUCCESS) {
		set_status("cuptiActivityRegisterCallbacks (attaching again)", result);
		return 0;
	}
	return 1;
}

/* After the program (paused) or the sampler (sample_off) changed its mind, owner_lock held:
 * the enabled kinds follow the two together, and the time off is counted (CUPTI-3, CUPTI-4). */
static void follow_pauses_locked(int was_off)
{
	int off = timeline_off();
	if (off == was_off)
		return;
	uint64_t now = now_ns();
	if (off) {
		pauses++;
		paused_since_ns = now;
		if (started) {
			traced_total_ns += now - traced_since_ns;
			disable_kinds(enabled_kinds);
			uncorrelate_locked(); /* CUPTI-11: no callbacks while off */
			if (detach_mode)
				request_detach_locked(now); /* CUPTI-8 */
		}
	} else {
		/* CUPTI-8: attached again first, where the pause detached it */
		if (started && (!attach_locked() || !enable_kinds(enabled_kinds)))
			started = 0; /* CUPTI refused: host data only from here, status says why */
		if (atomic_load(&attach_state) == ATTACHED && attaching_since_ns) {
			attach_total_ns += now_ns() - attaching_since_ns;
			attaching_since_ns = 0;
		}
		traced_since_ns = now;
		paused_total_ns += now - paused_since_ns;
		if (noff_intervals == off_intervals_capacity) {
			size_t capacity = off_intervals_capacity ? 2 * off_intervals_capacity : 64;
			void *grown = realloc(off_intervals, capacity * sizeof(*off_intervals));
			if (grown) {
				off_intervals = grown;
				off_intervals_capacity = capacity;
			}
		}
		if (noff_intervals < off_intervals_capacity) {
			off_intervals[noff_intervals][0] = paused_since_ns;
			off_intervals[noff_intervals++][1] = now;
		}
	}
}

int ss_cupti_trace(int on)
{
	pthread_mutex_lock(&owner_lock);
	int was_off = timeline_off();
	paused = !on; /* before the start too: CUPTI then starts paused */
	follow_pauses_locked(was_off);
	int recording = started && !timeline_off();
	pthread_mutex_unlock(&owner_lock);
	return recording;
}

void ss_cupti_capture(int on)
{
	pthread_mutex_lock(&owner_lock);
	int was_off = timeline_off();
	capture_off = !on; /* before the start too: CUPTI then starts off */
	follow_pauses_locked(was_off);
	pthread_mutex_unlock(&owner_lock);
}

/* CUPTI-6: the phase that just ended adds its time and sync points to its side; the first
 * window of auto (the continuous trace from the start, setup included) and any phase the
 * program or a capture range held off are left out. */
static void measure_phase_locked(uint64_t now, int was_sample_off)
{
	uint64_t ticks = atomic_load_explicit(&sample_ticks, memory_order_relaxed);
	if (sample_auto && measure_since_ns && !paused && !capture_off) {
		if (was_sample_off) {
			measured_off_ns += now - measure_since_ns;
			measured_off_ticks += ticks - measure_since_ticks;
		} else {
			measured_on_ns += now - measure_since_ns;
			measured_on_ticks += ticks - measure_since_ticks;
		}
	}
	measure_since_ns = now;
	measure_since_ticks = ticks;
}

/* CUPTI-4: the sampler's switch, owner_lock held, at NOW with TICKS sync points seen: a window
 * closes (the gap after a window held open past its length grows alike, so that the duty cycle
 * stays) or a gap ends. */
static void sample_switch_locked(uint64_t now, uint64_t ticks)
{
	int was_off = timeline_off();
	measure_phase_locked(now, sample_off);
	sample_off = !sample_off;
	sample_windows += !sample_off;
	if (!sample_off && sample_growing && sample_off_ns < AGG_MAX_OFF_NS)
		sample_off_ns *= 2; /* CUPTI-7: the next gap */
	follow_pauses_locked(was_off);
	uint64_t phase = sample_off ? sample_off_ns : sample_on_ns;
	if (sample_off && window_open_ns && now - window_open_ns > sample_on_ns && sample_on_ns &&
	    phase < AUTO_MAX_OFF_NS)
		phase = (uint64_t)((double)phase * (double)(now - window_open_ns) /
				   (double)sample_on_ns);
	if (!sample_off) {
		window_open_ns = now;
		window_open_ticks = ticks;
		gap_open_ns = 0;
	} else {
		window_open_ns = 0;
		gap_open_ns = now;
		gap_scale = sample_off_ns ? (double)phase / (double)sample_off_ns : 1;
	}
	/* CUPTI-5: back on after auto stopped sampling, it stays on */
	int again = started && (!sample_auto || auto_sampling);
	atomic_store_explicit(&sample_next_ns, again ? now + phase : 0, memory_order_relaxed);
}

void ss_cupti_sample_tick(void)
{
	uint64_t next = atomic_load_explicit(&sample_next_ns, memory_order_relaxed);
	if (!next)
		return;
	atomic_fetch_add_explicit(&sample_ticks, 1, memory_order_relaxed);
	uint64_t now = now_ns();
	/* CUPTI-9: the longest interval between two sync points, which a window waits for */
	uint64_t last = atomic_exchange_explicit(&last_tick_ns, now, memory_order_relaxed);
	uint64_t longest = atomic_load_explicit(&longest_tick_gap_ns, memory_order_relaxed);
	while (last && now - last > longest &&
	       !atomic_compare_exchange_weak_explicit(&longest_tick_gap_ns, &longest, now - last,
						      memory_order_relaxed, memory_order_relaxed))
		;
	if (now < next)
		return;
	pthread_mutex_lock(&owner_lock);
	next = atomic_load_explicit(&sample_next_ns, memory_order_relaxed);
	/* CUPTI-4: a window closes only after a sync point inside it, so that one sync at least
	 * has its gap to the next work on the timeline (the one that opened it waited behind an
	 * attach; the one that closes it has its gap off): steps longer than a window are
	 * measured too */
	uint64_t ticks = atomic_load_explicit(&sample_ticks, memory_order_relaxed);
	int window_short = !sample_off && window_open_ns && ticks - window_open_ticks < 2;
	if (next && now >= next && !window_short) /* not switched by another thread meanwhile */
		sample_switch_locked(now, ticks);
	pthread_mutex_unlock(&owner_lock);
}

/* CUPTI-9, owner_lock held: a window that no sync point has closed UNSYNCED_HOLD past its
 * time (and past the last sync point) is due to close. Not a gap: the next window still opens at
 * a sync point. */
static int unsynced_close_due_locked(uint64_t now)
{
	uint64_t next = atomic_load_explicit(&sample_next_ns, memory_order_relaxed);
	if (!next || sample_off || !started)
		return 0;
	uint64_t hold = UNSYNCED_HOLD_WINDOWS * sample_on_ns;
	uint64_t longest = atomic_load_explicit(&longest_tick_gap_ns, memory_order_relaxed);
	if (hold < 2 * longest)
		hold = 2 * longest; /* a loop of long steps keeps its windows (CUPTI-4) */
	if (hold > UNSYNCED_HOLD_MAX_NS)
		hold = UNSYNCED_HOLD_MAX_NS;
	uint64_t last = atomic_load_explicit(&last_tick_ns, memory_order_relaxed);
	uint64_t since = last > next ? last : next;
	return now >= since + hold;
}

void ss_cupti_unsynced_close(void)
{
	pthread_mutex_lock(&owner_lock);
	uint64_t now = now_ns();
	if (unsynced_close_due_locked(now)) { /* not closed by a sync point meanwhile */
		unsynced_closes++;
		sample_switch_locked(now,
				     atomic_load_explicit(&sample_ticks, memory_order_relaxed));
	}
	pthread_mutex_unlock(&owner_lock);
}

int ss_cupti_calls_drained(uint64_t records)
{
	if (!sample_auto && !atomic_load_explicit(&sample_next_ns, memory_order_relaxed))
		return 0;
	uint64_t now = now_ns();
	pthread_mutex_lock(&owner_lock);
	if (!started) {
		pthread_mutex_unlock(&owner_lock);
		return 0;
	}
	int close = unsynced_close_due_locked(now); /* CUPTI-9 */
	if (!sample_auto) {
		pthread_mutex_unlock(&owner_lock);
		return close;
	}
	if (!auto_eval_ns || records < auto_eval_records) { /* the first call, or after a fork */
		auto_eval_ns = now;
		auto_eval_records = records;
	} else if (now - auto_eval_ns >= AUTO_EVAL_NS) {
		/* records per second x AUTO_NS_PER_CALL, as permille of the time */
		uint64_t permille = (records - auto_eval_records) * AUTO_NS_PER_CALL * 1000 /
				    (now - auto_eval_ns);
		auto_eval_ns = now;
		auto_eval_records = records;
		auto_estimate_permille = permille > 100000 ? 100000 : (unsigned)permille;
		if (auto_estimate_permille > auto_peak_permille)
			auto_peak_permille = auto_estimate_permille;
		/* CUPTI-6: once the windows measured it, the cost the program's own sync points
		 * show, where it exceeds the estimate (F14's 3 us a call is CUPTI's cost per
		 * record; a torch step also pays for the API calls CUPTI sees and syncspy does not
		 * wrap) */
		if (measured_on_ticks >= AUTO_MEASURE_ON_TICKS &&
		    measured_off_ticks >= AUTO_MEASURE_TICKS && measured_on_ns && measured_off_ns) {
			double on_rate = (double)measured_on_ticks / (double)measured_on_ns;
			double off_rate = (double)measured_off_ticks / (double)measured_off_ns;
			double cost = off_rate / on_rate - 1;
			measured_permille = cost <= 0	  ? 0
					    : cost >= 100 ? 100000
							  : (unsigned)(cost * 1000);
			if (measured_permille > measured_peak_permille)
				measured_peak_permille = measured_permille;
			if (measured_permille > auto_estimate_permille)
				auto_estimate_permille = measured_permille;
		}
		if (auto_estimate_permille > AUTO_BUDGET_PERMILLE) {
			/* duty = budget / estimate: off = on x (estimate / budget - 1); detached
			 * (CUPTI-8), a window also pays for one attach and one detach, as measured
			 * so far (~16 ms on the H200: tests/gpu/results/2026-12-04-h200-session10):
			 * off = (on x (estimate - budget) + switch x 1000) / budget */
			uint64_t switch_ns = detach_mode ? AUTO_SWITCH_PRIOR_NS : 0;
			if (detach_mode && attaches && detaches)
				switch_ns = attach_total_ns / attaches + detach_total_ns / detaches;
			uint64_t off = (AUTO_ON_NS * (auto_estimate_permille - AUTO_BUDGET_PERMILLE) +
					switch_ns * 1000) /
				       AUTO_BUDGET_PERMILLE;
			sample_on_ns = AUTO_ON_NS;
			sample_off_ns = off > AUTO_MAX_OFF_NS ? AUTO_MAX_OFF_NS : off;
			auto_quiet_since_ns = 0;
			/* a gap begun on a lower estimate ends where this one says */
			uint64_t next = atomic_load_explicit(&sample_next_ns, memory_order_relaxed);
			if (auto_sampling && sample_off && gap_open_ns && next) {
				uint64_t due =
				    gap_open_ns + (uint64_t)((double)sample_off_ns * gap_scale);
				if (due > next)
					atomic_store_explicit(&sample_next_ns, due,
							      memory_order_relaxed);
			}
			if (!auto_sampling) { /* the next sync point ends the continuous trace */
				auto_sampling = 1;
				measure_since_ns = 0; /* CUPTI-6 leaves the continuous trace out */
				if (!sample_windows) /* the continuous trace was the first window */
					sample_windows = 1;
				atomic_store_explicit(&sample_next_ns, now, memory_order_relaxed);
			}
		} else if (auto_sampling && auto_estimate_permille * 3 < AUTO_BUDGET_PERMILLE * 2) {
			if (!auto_quiet_since_ns)
				auto_quiet_since_ns = now;
			if (now - auto_quiet_since_ns >= AUTO_QUIET_NS) { /* quiet for a while */
				auto_quiet_since_ns = 0;
				auto_sampling = 0;
				/* off now: the next sync point turns the timeline on for good; on:
				 * it stays */
				atomic_store_explicit(&sample_next_ns, sample_off ? now : 0,
						      memory_order_relaxed);
			}
		} else {
			auto_quiet_since_ns = 0;
		}
	}
	pthread_mutex_unlock(&owner_lock);
	return close;
}

/* meta.cupti_auto_permille: the highest of the estimates and of what the windows measured
 * (CUPTI-6), which the report's note gives */
unsigned ss_cupti_auto_peak(void)
{
	pthread_mutex_lock(&owner_lock);
	unsigned peak = auto_peak_permille > measured_peak_permille ? auto_peak_permille
								    : measured_peak_permille;
	pthread_mutex_unlock(&owner_lock);
	return sample_auto ? peak : 0;
}

unsigned ss_cupti_unsynced_closes(void)
{
	pthread_mutex_lock(&owner_lock);
	unsigned n = unsynced_closes;
	pthread_mutex_unlock(&owner_lock);
	return n;
}

unsigned ss_cupti_auto_measured(unsigned *on_ticks, unsigned *off_ticks)
{
	pthread_mutex_lock(&owner_lock);
	*on_ticks = (unsigned)measured_on_ticks;
	*off_ticks = (unsigned)measured_off_ticks;
	unsigned peak = measured_peak_permille;
	pthread_mutex_unlock(&owner_lock);
	return sample_auto ? peak : 0;
}

void ss_cupti_status(char *buf, size_t size)
{
	pthread_mutex_lock(&owner_lock);
	snprintf(buf, size, "%s", cupti_status);
	pthread_mutex_unlock(&owner_lock);
}

const char *ss_cupti_sample_text(void)
{
	return sample_auto ? "auto" : sample_setting;
}

void ss_cupti_pauses(uint64_t *paused_ns, unsigned *count, unsigned *windows, uint64_t *traced_ns)
{
	pthread_mutex_lock(&owner_lock);
	uint64_t now = now_ns();
	int off = timeline_off();
	*paused_ns = paused_total_ns + (off ? now - paused_since_ns : 0);
	*count = pauses;
	*windows = sample_windows;
	*traced_ns = traced_total_ns + (started && !off ? now - traced_since_ns : 0);
	pthread_mutex_unlock(&owner_lock);
}

size_t ss_cupti_off_intervals(size_t from, uint64_t (**intervals)[2], int *open)
{
	pthread_mutex_lock(&owner_lock);
	*open = timeline_off();
	size_t closed = from < noff_intervals ? noff_intervals - from : 0;
	size_t n = closed + (size_t)*open;
	*intervals = n ? malloc(n * sizeof(**intervals)) : NULL;
	if (*intervals) {
		if (closed) /* none yet: off_intervals may be NULL (off since the start) */
			memcpy(*intervals, off_intervals + from, closed * sizeof(**intervals));
		if (*open) {
			(*intervals)[n - 1][0] = paused_since_ns;
			(*intervals)[n - 1][1] = now_ns();
		}
	} else {
		n = 0;
		*open = 0;
	}
	pthread_mutex_unlock(&owner_lock);
	return n;
}

void ss_cupti_start(const char *kinds, const char *sample, const char *pause)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	kinds_setting = kinds;
	sample_setting = sample;
	pause_setting = pause;
	pthread_once(&once, start_once);
}

/* CUPTI-14 */
void ss_cupti_exit_notice(void)
{
	pthread_mutex_lock(&owner_lock);
	if (started) {
		leave_locked(); /* no finalize at a later API exit either */
		atomic_store_explicit(&sample_next_ns, 0, memory_order_relaxed);
	}
	exiting = 1;
	pthread_mutex_unlock(&owner_lock);
}

void ss_cupti_flush(void)
{
	pthread_mutex_lock(&owner_lock);
	/* not after CUPTI-2: the buffers are another client's then; not detached (CUPTI-8): they
	 * were flushed at the pause, and a call would attach CUPTI again */
	if (started && atomic_load(&attach_state) != DETACHED)
		api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_unlock(&owner_lock);
}

void ss_cupti_fork_child(void)
{
	pthread_mutex_init(&owner_lock, NULL);
	pthread_mutex_init(&queue_lock, NULL);
	free(queue); /* the parent's records, the parent stores them */
	atomic_store_explicit(&sample_next_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&last_tick_ns, 0, memory_order_relaxed); /* CUPTI-9 */
	atomic_store_explicit(&longest_tick_gap_ns, 0, memory_order_relaxed);
	unsynced_closes = 0;
	auto_sampling = 0; /* CUPTI-5: the child is not traced (below) */
	/* CUPTI-8: the child never detaches nor attaches (the callback does nothing) */
	atomic_store(&attach_state, ATTACHED);
	subscriber = NULL;
	detach_mode = 0;
	atomic_store(&correlate_on, 0); /* CUPTI-11: the child records no GPU rows */
	correlating = 0;
	nopen_calls = 0;
	noff_intervals = 0; /* the parent's timeline */
	queue = NULL;
	queued = queue_capacity = 0;
	if (attempted) { /* the parent started CUPTI, or tried: its once-control has run */
		started = 0;
		cupti_status = "off: a forked child (CUPTI stays with the parent); host data only";
	}
}

const char *ss_cupti_detach_stats(int *asked, unsigned *detach_count, unsigned *attach_count,
				  uint64_t *detach_ns, uint64_t *attach_ns)
{
	pthread_mutex_lock(&owner_lock);
	*asked = detach_asked;
	*detach_count = detaches;
	*attach_count = attaches;
	*detach_ns = detach_total_ns;
	*attach_ns = attach_total_ns;
	pthread_mutex_unlock(&owner_lock);
	return detach_fallback[0] ? detach_fallback : NULL;
}

unsigned ss_cupti_detach_deferrals(void)
{
	pthread_mutex_lock(&owner_lock);
	unsigned n = detach_deferrals;
	pthread_mutex_unlock(&owner_lock);
	return n;
}

unsigned ss_cupti_detach_skips(void)
{
	pthread_mutex_lock(&owner_lock);
	unsigned n = detach_skips;
	pthread_mutex_unlock(&owner_lock);
	return n;
}

void ss_cupti_correlation(char *buf, size_t size)
{
	pthread_mutex_lock(&owner_lock);
	if (correlate_fallback[0])
		snprintf(buf, size, "%s", correlate_fallback);
	else if (enabled_kinds & KIND_CORRELATE)
		snprintf(buf, size, "callbacks");
	else if (enabled_kinds & KIND_API)
		snprintf(buf, size, "api records");
	else if (enabled_kinds & (KIND_KERNEL | KIND_MEMCPY | KIND_MEMSET))
		snprintf(buf, size, "stream order"); /* CUPTI-12: the report ties them (CUPTI-13) */
	else if (size)
		buf[0] = '\0';
	pthread_mutex_unlock(&owner_lock);
}

size_t ss_cupti_take(struct ss_gpu_rec **records)
{
	pthread_mutex_lock(&queue_lock);
	*records = queue;
	size_t n = queued;
	queue = NULL;
	queued = queue_capacity = 0;
	pthread_mutex_unlock(&queue_lock);
	return n;
}
