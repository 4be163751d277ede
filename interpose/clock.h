/*
 * interpose/clock.h: the hot-path clock. Wrappers stamp raw ticks; the writer converts them
 * to CLOCK_MONOTONIC nanoseconds (SCHEMA-3), so the conversion costs nothing on the hot path.
 *
 * Where the CPU has an invariant TSC (constant rate, not stopped in idle states), raw ticks are
 * the TSC: reading it costs a few ns, against ~20 ns for clock_gettime through the vDSO, and
 * two clock reads are most of a wrapper's cost (docs/architecture.md F10: 45-85 ns for a naive
 * wrapper). Elsewhere, or with SYNCSPY_CLOCK=mono, raw ticks are CLOCK_MONOTONIC ns already.
 */
#ifndef SYNCSPY_CLOCK_H
#define SYNCSPY_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "hot.h"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static inline uint64_t ss_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ss_now(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(ss_hot.clock_is_tsc, 1))
		return __rdtsc();
#endif
	return ss_mono_ns();
}

void ss_clock_init(int allow_tsc); /* at load: picks the clock, takes the first pairing */
void ss_clock_calibrate(void);	   /* writer: refines the tick rate against CLOCK_MONOTONIC */
uint64_t ss_clock_to_ns(uint64_t raw);	       /* a record's time (CLOCK-1, clock.c) */
uint64_t ss_clock_ticks_to_ns(uint64_t ticks); /* a duration in raw ticks */
const char *ss_clock_name(void);

#endif
