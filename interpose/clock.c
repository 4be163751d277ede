/*
 * interpose/clock.c: choosing the raw clock and converting raw ticks to CLOCK_MONOTONIC ns.
 *
 * The TSC-to-ns rate is measured, not read from the kernel: at load we pair one TSC read with
 * one clock_gettime (tsc0, mono0); before each drain the writer pairs them again and takes the
 * rate over the whole interval since load. A record is converted with the rate of the drain
 * that carries it, so its error is about one clock read's jitter whatever its age.
 */
#include <cpuid.h>
#include <stdatomic.h>

#include "clock.h"

static uint64_t tsc0, mono0;
static _Atomic double ns_per_tick = 1.0; /* only the writer thread writes it */

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

/* One pairing: the TSC read halfway between two clock_gettime calls. */
static void pair_now(uint64_t *tsc, uint64_t *mono)
{
	uint64_t m1 = ss_mono_ns();
#if defined(__x86_64__)
	*tsc = __rdtsc();
#else
	*tsc = 0;
#endif
	uint64_t m2 = ss_mono_ns();
	*mono = m1 + (m2 - m1) / 2;
}

void ss_clock_init(int allow_tsc)
{
	ss_hot.clock_is_tsc = allow_tsc && cpu_has_invariant_tsc();
	if (ss_hot.clock_is_tsc) {
		pair_now(&tsc0, &mono0);
		atomic_store(&ns_per_tick, 1.0 / 3.0); /* placeholder until the first calibration */
	}
}

void ss_clock_calibrate(void)
{
	if (!ss_hot.clock_is_tsc)
		return;
	uint64_t tsc, mono;
	do /* at least 1 ms of baseline: only the writer waits, and only right after load */
		pair_now(&tsc, &mono);
	while (mono < mono0 + 1000000 || tsc <= tsc0);
	atomic_store(&ns_per_tick, (double)(mono - mono0) / (double)(tsc - tsc0));
}

uint64_t ss_clock_to_ns(uint64_t raw)
{
	if (!ss_hot.clock_is_tsc)
		return raw;
	double rate = atomic_load_explicit(&ns_per_tick, memory_order_relaxed);
	double delta = ((double)(int64_t)(raw - tsc0)) * rate;
	return (uint64_t)((int64_t)mono0 + (int64_t)delta);
}

const char *ss_clock_name(void)
{
	return ss_hot.clock_is_tsc ? "tsc" : "mono";
}
