/*
 * interpose/capture.c: capture ranges (capture.h; docs/recording.md, "Capture ranges"): whether
 * calls are recorded now, one word every wrapper tests (ss_hot.capture, 0 while recording), and
 * the switches between recording and not, which the writer stores in the capture table.
 *
 * The word is moved under one lock, by the thread that causes a switch: an app thread
 * (syncspy_start/stop, the profiler API, an NVTX capture range, the first call after
 * SYNCSPY_DELAY) or the writer (the window's start and end, found on its passes). A switch is
 * rare (a few per step at most) and not on the hot path of the calls SHIM-1 protects: the lock
 * and the allocation of the switch list are allowed there (docs/recording.md). CUPTI follows
 * every switch (SHIM-6), on an app thread: a switch the writer made waits for the next call
 * (SS_CAPTURE_CUPTI_PENDING), since the writer makes no CUDA or CUPTI call (SHIM-4).
 *
 * A call is recorded when the word was 0 as it started (read right after its start time, in
 * wrapper.h), so a call that starts a range (cudaProfilerStart) and one that stops it both
 * have their rows. A switch on is timed before the word moves and a switch off after, so that
 * the calls recorded lie inside the intervals the capture table gives.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "clock.h"
#include "env.h"
#include "lifecycle.h"
#include "ring.h"
#include "cupti/cupti.h"

enum capture_mode { MODE_ALL, MODE_PROFILER, MODE_NVTX };

static enum capture_mode mode;
static const char *nvtx_name;			/* SYNCSPY_NVTX_CAPTURE in MODE_NVTX */
static uint64_t window_start_ns, window_end_ns; /* end 0: none */
static char setting[160];			/* meta.capture_range; "" when all */
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER; /* what follows */
static struct ss_capture_switch *switches;			 /* not yet taken */
static size_t nswitches, switches_capacity;
static int nvtx_open; /* capture ranges open now, over all threads */
static _Atomic int switched; /* a switch happened: the program used syncspy_start/stop (read by
			      * the writer without capture_lock) */
_Atomic uint64_t ss_capture_skipped_no_ring[SS_CLASS_COUNT];

/* The most switches waiting for the writer (a program that switches without ever making a
 * CUDA call starts no writer): past it, switches go unlisted, the word still moves. */
#define SWITCHES_MAX (1u << 20)

/* SYNCSPY_DELAY, SYNCSPY_DURATION: decimal seconds; a bad value warns once and counts 0. */
static uint64_t seconds_ns(const char *name, const char *text)
{
	char *end;
	errno = 0;
	double s = strtod(text, &end);
	if (errno || end == text || *end || !isfinite(s) || s < 0 || s > 1e9) {
		fprintf(stderr, "syncspy: ignoring %s=%s (not a number of seconds), using 0\n",
			name, text);
		return 0;
	}
	return (uint64_t)(s * 1e9);
}

static void append_setting(const char *fmt, const char *a, double b)
{
	size_t used = strlen(setting);
	if (used)
		snprintf(setting + used, sizeof(setting) - used, ", ");
	used = strlen(setting);
	if (a)
		snprintf(setting + used, sizeof(setting) - used, fmt, a);
	else
		snprintf(setting + used, sizeof(setting) - used, fmt, b);
}

void ss_capture_load(void)
{
	const char *range = ss_config.SYNCSPY_CAPTURE_RANGE;
	int bits = 0;
	if (!strcmp(range, "cudaProfilerApi")) {
		mode = MODE_PROFILER;
	} else if (!strcmp(range, "nvtx")) {
		if (*ss_config.SYNCSPY_NVTX_CAPTURE) {
			mode = MODE_NVTX;
			nvtx_name = ss_config.SYNCSPY_NVTX_CAPTURE;
		} else {
			fprintf(stderr, "syncspy: ignoring SYNCSPY_CAPTURE_RANGE=nvtx without "
					"SYNCSPY_NVTX_CAPTURE, recording from the start\n");
		}
	} else if (*range) {
		fprintf(stderr,
			"syncspy: ignoring SYNCSPY_CAPTURE_RANGE=%s (not cudaProfilerApi or nvtx), "
			"recording from the start\n",
			range);
	}
	if (mode == MODE_PROFILER)
		append_setting("%s", "cudaProfilerApi", 0);
	if (mode == MODE_NVTX)
		append_setting("nvtx:%s", nvtx_name, 0);
	if (mode != MODE_ALL)
		bits |= SS_CAPTURE_STOPPED; /* until the first start */
	uint64_t delay = seconds_ns("SYNCSPY_DELAY", ss_config.SYNCSPY_DELAY);
	uint64_t duration = seconds_ns("SYNCSPY_DURATION", ss_config.SYNCSPY_DURATION);
	window_start_ns = ss_process.start_mono_ns + delay;
	window_end_ns = duration ? window_start_ns + duration : 0;
	if (delay) {
		bits |= SS_CAPTURE_BEFORE;
		append_setting("delay %g s", NULL, (double)delay / 1e9);
	}
	if (duration)
		append_setting("duration %g s", NULL, (double)duration / 1e9);
	atomic_store(&ss_hot.capture, bits);
}

const char *ss_capture_setting(void)
{
	if (*setting)
		return setting;
	return switched ? "syncspy_start/syncspy_stop" : NULL;
}

/* Moves the word (capture_lock held): sets SET, clears CLEAR; a switch between recording and
 * not is listed, and CUPTI follows it now (an app thread) or at the next call (the writer). */
static void change_locked(int set, int clear, const char *trigger, int app_thread)
{
	int follow_later = !app_thread && ss_config.SYNCSPY_CUPTI;
	uint64_t before = ss_mono_ns();
	int old = atomic_load(&ss_hot.capture), next;
	do {
		next = (old | set) & ~clear;
		if (follow_later && !(old & SS_CAPTURE_OFF) != !(next & SS_CAPTURE_OFF))
			next |= SS_CAPTURE_CUPTI_PENDING;
	} while (!atomic_compare_exchange_weak(&ss_hot.capture, &old, next));
	int was_on = !(old & SS_CAPTURE_OFF), on = !(next & SS_CAPTURE_OFF);
	if (was_on == on)
		return;
	if (nswitches == switches_capacity && switches_capacity < SWITCHES_MAX) {
		size_t capacity = switches_capacity ? 2 * switches_capacity : 16;
		void *grown = realloc(switches, capacity * sizeof(*switches));
		if (grown) {
			switches = grown;
			switches_capacity = capacity;
		}
	}
	if (nswitches < switches_capacity)
		switches[nswitches++] =
		    (struct ss_capture_switch){on ? before : ss_mono_ns(), on, trigger};
	if (app_thread && ss_config.SYNCSPY_CUPTI)
		ss_cupti_capture(on);
}

void ss_capture_trigger(int on, const char *trigger)
{
	ss_load();
	if (ss_config.SYNCSPY_DISABLE)
		return;
	int saved_errno = errno;
	pthread_mutex_lock(&capture_lock);
	if (mode == MODE_ALL)
		switched = 1;
	change_locked(on ? 0 : SS_CAPTURE_STOPPED, on ? SS_CAPTURE_STOPPED : 0, trigger, 1);
	pthread_mutex_unlock(&capture_lock);
	errno = saved_errno;
}

void ss_capture_profiler(int on)
{
	if (mode == MODE_PROFILER)
		ss_capture_trigger(on, "cudaProfilerApi");
}

int ss_capture_nvtx_open(const char *name)
{
	if (mode != MODE_NVTX || !name || strcmp(name, nvtx_name) != 0)
		return 0;
	pthread_mutex_lock(&capture_lock);
	if (nvtx_open++ == 0)
		change_locked(0, SS_CAPTURE_STOPPED, "nvtx", 1);
	pthread_mutex_unlock(&capture_lock);
	return 1;
}

void ss_capture_nvtx_close(void)
{
	pthread_mutex_lock(&capture_lock);
	if (nvtx_open > 0 && --nvtx_open == 0)
		change_locked(SS_CAPTURE_STOPPED, 0, "nvtx", 1);
	pthread_mutex_unlock(&capture_lock);
}

/* The window's bits for time NOW, and what moved them. */
static void follow_window_locked(uint64_t now, int app_thread)
{
	int bits = atomic_load(&ss_hot.capture);
	int set = 0, clear = 0;
	if ((bits & SS_CAPTURE_BEFORE) && now >= window_start_ns)
		clear |= SS_CAPTURE_BEFORE;
	if (window_end_ns && !(bits & SS_CAPTURE_AFTER) && now >= window_end_ns)
		set |= SS_CAPTURE_AFTER;
	if (set || clear)
		change_locked(set, clear, set ? "duration" : "delay", app_thread);
}

void ss_capture_writer_tick(void)
{
	int bits = atomic_load_explicit(&ss_hot.capture, memory_order_relaxed);
	if (!(bits & SS_CAPTURE_BEFORE) && (!window_end_ns || (bits & SS_CAPTURE_AFTER)))
		return;
	pthread_mutex_lock(&capture_lock);
	follow_window_locked(ss_mono_ns(), 0);
	pthread_mutex_unlock(&capture_lock);
}

/* A call outside the capture ranges, counted in its thread's ring (SHIM-6). A polling loop
 * still open in the ring ends here: it was recorded, the queries from now on are not. */
static void count_skipped(struct ss_tls *tls, int cls)
{
	struct ss_ring *ring = tls->ring;
	if (cls < 0 || cls >= SS_CLASS_COUNT)
		cls = SS_CLASS_NONE;
	if (!ring ||
	    tls->generation != atomic_load_explicit(&ss_hot.generation, memory_order_relaxed))
		ring = ss_ring_attach(tls);
	if (!ring) {
		atomic_fetch_add_explicit(&ss_capture_skipped_no_ring[cls], 1,
					  memory_order_relaxed);
		return;
	}
	if (atomic_load_explicit(&ring->poll_open, memory_order_relaxed))
		ss_ring_close_poll(ring);
	/* one producer: a plain increment, published for the writer's meta */
	atomic_store_explicit(
	    &ring->skipped_calls[cls],
	    atomic_load_explicit(&ring->skipped_calls[cls], memory_order_relaxed) + 1,
	    memory_order_relaxed);
}

int ss_capture_slow(struct ss_tls *tls, const struct ss_rec *rec, int bits)
{
	int saved_errno = errno;
	if ((bits & SS_CAPTURE_BEFORE) && ss_mono_ns() >= window_start_ns) {
		pthread_mutex_lock(&capture_lock);
		follow_window_locked(ss_mono_ns(), 1);
		pthread_mutex_unlock(&capture_lock);
	}
	if ((bits & SS_CAPTURE_CUPTI_PENDING) &&
	    (atomic_fetch_and(&ss_hot.capture, ~SS_CAPTURE_CUPTI_PENDING) &
	     SS_CAPTURE_CUPTI_PENDING)) {
		pthread_mutex_lock(&capture_lock);
		ss_cupti_capture(ss_capturing());
		pthread_mutex_unlock(&capture_lock);
	}
	int record = !(bits & SS_CAPTURE_OFF); /* as the call started */
	if (!record && rec)
		count_skipped(tls, rec->cls);
	errno = saved_errno;
	return record;
}

size_t ss_capture_take(struct ss_capture_switch **out)
{
	pthread_mutex_lock(&capture_lock);
	*out = switches;
	size_t n = nswitches;
	switches = NULL;
	nswitches = switches_capacity = 0;
	pthread_mutex_unlock(&capture_lock);
	return n;
}

void ss_capture_fork_child(void)
{
	pthread_mutex_init(&capture_lock, NULL);
	free(switches); /* the parent's, stored in the parent's database */
	switches = NULL;
	nswitches = switches_capacity = 0;
}
