/*
 * syncspy/sample.h: SYNCSPY_CUPTI_SAMPLE's syntax, shared by the shim (cupti/cupti.c, which
 * samples the GPU timeline: CUPTI-4) and the command (`syncspy run --cupti-sample`, which
 * refuses a bad value before the program starts).
 */
#ifndef SYNCSPY_SAMPLE_H
#define SYNCSPY_SAMPLE_H

#include <stdio.h>

#define SS_SAMPLE_SYNTAX "ON/PERIOD in ms, 0 < ON < PERIOD"

/* "ON/PERIOD" (ms) -> 1 with *on_ms and *period_ms set; 0 for anything else: a missing or
 * extra part, ON of 0, ON not below PERIOD, a PERIOD over a day. */
static inline int ss_parse_sample(const char *text, unsigned long long *on_ms,
				  unsigned long long *period_ms)
{
	char tail = 0;
	if (!text || sscanf(text, "%llu/%llu%c", on_ms, period_ms, &tail) != 2)
		return 0;
	return *on_ms > 0 && *on_ms < *period_ms && *period_ms <= 86400000ull;
}

#endif
