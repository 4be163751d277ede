/*
 * cupti/stub.c: the CUPTI module when it is not built (configure --disable-cupti, or no
 * cupti.h): no GPU timeline. It fills cupti/cupti.h's side of the interface, so that the rest
 * of the shim calls the same functions either way and no file of interpose/ tests whether
 * CUPTI was built: the database says why there are no GPU rows (meta.cupti), the program's
 * syncspy_gpu_trace gets 0 (the timeline does not record), and there is nothing to flush,
 * sample or store. Unlike cupti.c it exports nothing (no cuptiActivityRegisterCallbacks: a
 * program's own CUPTI client goes straight to CUPTI).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cupti/cupti.h"

void ss_cupti_status(char *buf, size_t size)
{
	snprintf(buf, size, "%s", "off: not built (configure --enable-cupti)");
}

void ss_cupti_start(const char *kinds, const char *sample, const char *pause)
{
	(void)kinds;
	(void)sample;
	(void)pause;
}

const char *ss_cupti_detach_stats(int *asked, unsigned *detaches, unsigned *attaches,
				  uint64_t *detach_ns, uint64_t *attach_ns)
{
	*asked = 0;
	*detaches = *attaches = 0;
	*detach_ns = *attach_ns = 0;
	return NULL;
}

void ss_cupti_flush(void)
{
}

void ss_cupti_exit_notice(void)
{
}

void ss_cupti_fork_child(void)
{
}

int ss_cupti_trace(int on)
{
	(void)on;
	return 0;
}

void ss_cupti_capture(int on)
{
	(void)on;
}

void ss_cupti_sample_tick(void)
{
}

int ss_cupti_calls_drained(uint64_t records)
{
	(void)records;
	return 0;
}

void ss_cupti_unsynced_close(void)
{
}

unsigned ss_cupti_detach_deferrals(void)
{
	return 0;
}

unsigned ss_cupti_detach_skips(void)
{
	return 0;
}

void ss_cupti_correlation(char *buf, size_t size)
{
	if (size)
		buf[0] = '\0';
}

unsigned ss_cupti_unsynced_closes(void)
{
	return 0;
}

unsigned ss_cupti_auto_peak(void)
{
	return 0;
}

unsigned ss_cupti_auto_measured(unsigned *on_ticks, unsigned *off_ticks)
{
	*on_ticks = *off_ticks = 0;
	return 0;
}

const char *ss_cupti_sample_text(void)
{
	return "";
}

void ss_cupti_pauses(uint64_t *paused_ns, unsigned *count, unsigned *windows, uint64_t *traced_ns)
{
	*paused_ns = *traced_ns = 0;
	*count = *windows = 0;
}

size_t ss_cupti_off_intervals(size_t from, uint64_t (**intervals)[2], int *open)
{
	(void)from;
	*intervals = NULL;
	*open = 0;
	return 0;
}

size_t ss_cupti_take(struct ss_gpu_rec **records)
{
	*records = NULL;
	return 0;
}
