/*
 * interpose/clock.c: choosing the raw clock and converting raw ticks to CLOCK_MONOTONIC ns.
 *
 * The TSC-to-ns mapping is measured, not read from the kernel: pairings of one TSC read with
 * clock_gettime, at load and then as the writer drains. It must keep two promises
 * (docs/architecture.md, SCHEMA-3):
 *
 *   CLOCK-1 The mapping is one function of the raw tick, the same whichever drain converts a
 *           record, and it never goes backwards: two records of one thread keep their order,
 *           and a step mark stays between the calls it was made between. (A mapping refitted
 *           at every drain broke this: with a pairing late by a preemption, records of two
 *           drains differed by milliseconds, and a stream sync fell into the next step.)
 *   CLOCK-2 It stays within a pairing's error of CLOCK_MONOTONIC, so that CUPTI's rows, on
 *           that clock, line up with the calls.
 *
 * So the mapping is piecewise linear and continuous: a segment starts where the one before
 * it ends, and is never changed once a record may have been converted with it. Each new
 * segment's rate is the rate over the whole time since load, slewed so that the error the
 * segment starts with (a bad pairing's, early on) is gone by the next segment. Segments come
 * 1 ms apart after load, then further apart as the rate settles (a quarter of the time since
 * load, at most 30 s); past SEGMENTS the last one holds.
 */
#include <cpuid.h>
#include <stdatomic.h>
#include <stddef.h>

#include "clock.h"

enum {
	SEGMENTS = 1024,
	PAIR_TRIES = 5, /* a pairing is the tightest of this many */
};
static const double first_interval_ns = 1e6, last_interval_ns = 30e9;

/* From tsc on, a record's ns is ns + (raw - tsc) * rate, until the next segment's tsc. */
struct segment {
	uint64_t tsc;
	int64_t ns;
	double rate; /* ns per tick */
};

static struct segment segments[SEGMENTS];
static _Atomic size_t nsegments;   /* published after the segment is written */
static uint64_t tsc0, mono0;	   /* the pairing at load: the long baseline's start */
static double rate_since_load;	   /* the latest rate over the long baseline */
static uint64_t next_segment_mono; /* none before then; 0: not calibrated yet */

/* The raw reads; tests/progs/clock_steps.c replaces them with scripted clocks. */
#ifndef SS_CLOCK_READ_TSC
#define SS_CLOCK_READ_TSC()  __rdtsc()
#define SS_CLOCK_READ_MONO() ss_mono_ns()
#define SS_CLOCK_HAS_TSC()   cpu_has_invariant_tsc()

static int cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned int eax, ebx, ecx, edx;
	if (!__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) || eax < 0x80000007)
		return 0;
	__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx);
	return (edx >> 8) & 1;
#else
	return 0;
#endif
}
#endif

/* One pairing: the TSC read halfway between two clock_gettime calls, of the tries the one
 * with the two reads closest together (a preemption between them makes the midpoint wrong). */
static void pair_now(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best_window = UINT64_MAX;
	for (int i = 0; i < PAIR_TRIES; i++) {
		uint64_t m1 = SS_CLOCK_READ_MONO();
#if defined(__x86_64__)
		uint64_t t = SS_CLOCK_READ_TSC();
#else
		uint64_t t = 0;
#endif
		uint64_t m2 = SS_CLOCK_READ_MONO();
		if (m2 - m1 < best_window) {
			best_window = m2 - m1;
			*tsc = t;
			*mono = m1 + (m2 - m1) / 2;
		}
	}
}

static int64_t convert(const struct segment *s, uint64_t raw)
{
	return s->ns + (int64_t)((double)(int64_t)(raw - s->tsc) * s->rate);
}

/* The time from now until the next segment: short while the rate is young. */
static double segment_interval(uint64_t mono)
{
	double since_load = (double)(mono - mono0) / 4;
	return since_load < first_interval_ns  ? first_interval_ns
	       : since_load > last_interval_ns ? last_interval_ns
					       : since_load;
}

void ss_clock_init(int allow_tsc)
{
	ss_hot.clock_is_tsc = allow_tsc && SS_CLOCK_HAS_TSC();
	if (!ss_hot.clock_is_tsc)
		return;
	pair_now(&tsc0, &mono0);
	rate_since_load = 1.0 / 3.0; /* a placeholder until the first calibration */
	segments[0] = (struct segment){tsc0, (int64_t)mono0, rate_since_load};
	next_segment_mono = 0;
	atomic_store_explicit(&nsegments, 1, memory_order_release);
}

void ss_clock_calibrate(void)
{
	if (!ss_hot.clock_is_tsc)
		return;
	uint64_t tsc, mono;
	do /* at least 1 ms of baseline: only the writer waits, and only right after load */
		pair_now(&tsc, &mono);
	while (mono < mono0 + 1000000 || tsc <= tsc0);
	rate_since_load = (double)(mono - mono0) / (double)(tsc - tsc0);
	if (!next_segment_mono) { /* nothing has been converted yet: segment 0 can still change */
		segments[0].rate = rate_since_load;
		next_segment_mono = mono + (uint64_t)segment_interval(mono);
		return;
	}
	size_t n = atomic_load_explicit(&nsegments, memory_order_relaxed);
	if (mono < next_segment_mono || n == SEGMENTS)
		return;
	int64_t at = convert(&segments[n - 1], tsc); /* continuous (CLOCK-1) */
	double interval = segment_interval(mono);
	double slew = (double)(at - (int64_t)mono) / interval; /* the error, gone by the next */
	if (slew > 0.5)
		slew = 0.5;
	else if (slew < -0.5)
		slew = -0.5;
	segments[n] = (struct segment){tsc, at, rate_since_load * (1.0 - slew)};
	atomic_store_explicit(&nsegments, n + 1, memory_order_release);
	next_segment_mono = mono + (uint64_t)interval;
}

uint64_t ss_clock_to_ns(uint64_t raw)
{
	if (!ss_hot.clock_is_tsc)
		return raw;
	size_t i = atomic_load_explicit(&nsegments, memory_order_acquire) - 1;
	while (i > 0 &&
	       (int64_t)(raw - segments[i].tsc) < 0) /* mostly the last or the one before */
		i--;
	return (uint64_t)convert(&segments[i], raw);
}

uint64_t ss_clock_ticks_to_ns(uint64_t ticks)
{
	return ss_hot.clock_is_tsc ? (uint64_t)((double)ticks * rate_since_load) : ticks;
}

const char *ss_clock_name(void)
{
	return ss_hot.clock_is_tsc ? "tsc" : "mono";
}
