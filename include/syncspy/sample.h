/*
 * syncspy/sample.h: SYNCSPY_CUPTI_SAMPLE's syntax (CUPTI-4, CUPTI-5), shared by the shim (cupti/cupti.c, which
 * samples the GPU timeline: CUPTI-4) and the command (`syncspy run --cupti-sample`, which
 * refuses a bad value before the program starts).
 */
#ifndef SYNCSPY_SAMPLE_H
#define SYNCSPY_SAMPLE_H

#include <stdio.h>
#include <string.h>

#define SS_SAMPLE_SYNTAX "auto, all, or ON/PERIOD in ms with 0 < ON < PERIOD"

enum ss_sample_mode {
	SS_SAMPLE_BAD,	   /* none of the below */
	SS_SAMPLE_AUTO,	   /* "auto" or empty: windows when tracing every call costs too much */
	SS_SAMPLE_ALL,	   /* "all": the whole run */
	SS_SAMPLE_WINDOWS, /* "ON/PERIOD": ON ms of every PERIOD ms (*on_ms, *period_ms set) */
};

/* SYNCSPY_CUPTI_SAMPLE's value -> its mode. ON/PERIOD is refused with a missing or extra part,
 * ON of 0, ON not below PERIOD, a PERIOD over a day. */
static inline enum ss_sample_mode ss_parse_sample(const char *text, unsigned long long *on_ms,
						  unsigned long long *period_ms)
{
	char tail = 0;
	if (!text || !text[0] || strcmp(text, "auto") == 0)
		return SS_SAMPLE_AUTO;
	if (strcmp(text, "all") == 0)
		return SS_SAMPLE_ALL;
	if (sscanf(text, "%llu/%llu%c", on_ms, period_ms, &tail) != 2)
		return SS_SAMPLE_BAD;
	return *on_ms > 0 && *on_ms < *period_ms && *period_ms <= 86400000ull ? SS_SAMPLE_WINDOWS
									    : SS_SAMPLE_BAD;
}

#endif
