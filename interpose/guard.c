/*
 * interpose/guard.c: the in-process sync guard (issue 16; docs/python.md). A program opens a
 * guard on a thread; every sync point (S1-S7, docs/sync-model.md) the thread makes until it
 * closes the guard is counted by class and named: API, class, count and the user's line, the
 * Python frame python.c reads at the sync itself (the same user frame the database names:
 * SCHEMA-6), else the native return address the wrapper was called from. Guards nest: a sync
 * point counts in every open guard of the thread whose classes include it. The exported
 * functions are declared in include/syncspy/syncspy.h; the Python package (python/syncspy)
 * makes syncspy.no_sync(), expect_syncs() and counts() of them.
 *
 * Invariants (cited as GUARD-n):
 *   GUARD-1  With no guard open, a sync point costs one increment of a thread-local counter and
 *            one test of ss_tls.guard (guard.h); an enqueue costs nothing: the wrapper's one
 *            class test after the record, which chose a sync point's stacks before, chooses the
 *            guard's count too (bench/guard_cost.sh).
 *   GUARD-2  A guard changes nothing the program sees: the wrapper returns what the real call
 *            returned with its errno (SHIM-2), and the record is the one made without a guard.
 *            ON_SYNC runs after the real call, inside the wrapper, so the calls it makes are
 *            not recorded (SHIM-3).
 *   GUARD-3  A guard is its thread's: it counts the sync points of the thread that opened it
 *            only, and only that thread reads or closes it (all state hangs on ss_tls).
 *
 * Not the hot path's rules: a guard is open while a program asks for its sync points to be
 * named, and naming one (a Python frame walk, dladdr, the point's allocation) is an exception
 * to SHIM-1 that only sync points inside an open guard pay (docs/recording.md).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "lifecycle.h"
#include "python.h"
#include "shim.h"
#include "syncspy/syncspy.h" /* the exported functions below, as the program sees them */

#define GUARD_POINTS 256 /* points a guard names; the rest are counted, unnamed */
#define SYNC_CLASSES SS_S7

_Static_assert(SYNCSPY_S7 == 1u << (SS_S7 - SS_S1), "syncspy.h's bits are the classes");

struct guard_point {
	struct syncspy_sync_point point; /* file and function point into text */
	char *text;			 /* one allocation: file, then function */
};

struct ss_guard {
	struct ss_guard *outer; /* the guard this one is open in, or NULL */
	int depth;		/* its id: 1 for the outermost */
	unsigned classes;	/* SYNCSPY_S1 | ... */
	syncspy_sync_fn on_sync;
	void *arg;
	unsigned long long by_class[SYNC_CLASSES];
	struct guard_point *points;
	int npoints, capacity;
};

/* Where a sync point was made, named once for all the guards that count it. */
struct where {
	char file[512], function[256];
	int line;
	uint64_t address;
};

static void name_site(struct where *where, uint64_t caller)
{
	if (ss_python_user_frame(where->file, sizeof(where->file), &where->line, where->function,
				 sizeof(where->function))) {
		where->address = 0;
		return;
	}
	Dl_info info;
	where->line = 0;
	where->address = caller;
	where->file[0] = where->function[0] = 0;
	if (!caller || !dladdr((void *)(uintptr_t)(caller - 1), &info) || !info.dli_fname)
		return; /* caller - 1: inside the call, as sites.c names stacks */
	snprintf(where->file, sizeof(where->file), "%s", info.dli_fname);
	if (info.dli_sname)
		snprintf(where->function, sizeof(where->function), "%s+0x%llx", info.dli_sname,
			 (unsigned long long)(caller - (uint64_t)(uintptr_t)info.dli_saddr));
}

/* The guard's point for this API, class and place: found, else added (NULL when the guard
 * names GUARD_POINTS already or has no memory: counted, unnamed). */
static struct guard_point *find_point(struct ss_guard *guard, const struct ss_rec *rec,
				      const struct where *where)
{
	const char *api = ss_apis[rec->api].name;
	for (int i = 0; i < guard->npoints; i++) {
		struct guard_point *p = &guard->points[i];
		if (p->point.api == api && p->point.sync_class == rec->cls &&
		    p->point.line == where->line && p->point.address == where->address &&
		    !strcmp(p->point.file, where->file) &&
		    !strcmp(p->point.function, where->function))
			return p;
	}
	if (guard->npoints == GUARD_POINTS)
		return NULL;
	if (guard->npoints == guard->capacity) {
		int capacity = guard->capacity ? guard->capacity * 2 : 8;
		struct guard_point *grown = realloc(guard->points, capacity * sizeof(*grown));
		if (!grown)
			return NULL;
		guard->points = grown;
		guard->capacity = capacity;
	}
	size_t file_len = strlen(where->file) + 1, function_len = strlen(where->function) + 1;
	char *text = malloc(file_len + function_len);
	if (!text)
		return NULL;
	memcpy(text, where->file, file_len);
	memcpy(text + file_len, where->function, function_len);
	struct guard_point *p = &guard->points[guard->npoints++];
	*p = (struct guard_point){.point = {.api = api,
					    .sync_class = rec->cls,
					    .file = text,
					    .line = where->line,
					    .function = text + file_len,
					    .address = where->address},
				  .text = text};
	return p;
}

void ss_guard_note(struct ss_tls *tls, const struct ss_rec *rec)
{
	int saved_errno = errno; /* GUARD-2 */
	unsigned bit = 1u << (rec->cls - SS_S1);
	struct where where;
	int named = 0;
	for (struct ss_guard *guard = tls->guard; guard; guard = guard->outer) {
		if (!(guard->classes & bit))
			continue;
		if (!named) {
			name_site(&where, rec->caller);
			named = 1;
		}
		guard->by_class[rec->cls - SS_S1]++;
		struct guard_point *p = find_point(guard, rec, &where);
		if (p)
			p->point.count++;
		if (guard->on_sync) {
			struct syncspy_sync_point unnamed = {.api = ss_apis[rec->api].name,
							     .sync_class = rec->cls,
							     .count = 1,
							     .file = where.file,
							     .line = where.line,
							     .function = where.function,
							     .address = where.address};
			guard->on_sync(guard->arg, p ? &p->point : &unnamed);
		}
	}
	errno = saved_errno;
}

static struct ss_guard *find_guard(struct ss_tls *tls, int id)
{
	struct ss_guard *guard = tls->guard;
	while (guard && guard->depth != id)
		guard = guard->outer;
	return guard;
}

SS_EXPORT int syncspy_recording(void)
{
	ss_load();
	return atomic_load(&ss_hot.state) != SS_STATE_CLOSED;
}

SS_EXPORT int syncspy_guard_open(unsigned classes, syncspy_sync_fn on_sync, void *arg)
{
	if (!syncspy_recording())
		return 0; /* no wrapper would count: the guard could only pass */
	struct ss_tls *tls = &ss_tls;
	int saved_errno = errno;
	struct ss_guard *guard = calloc(1, sizeof(*guard));
	errno = saved_errno;
	if (!guard)
		return 0;
	classes &= SYNCSPY_ALL_SYNCS;
	guard->classes = classes ? classes : SYNCSPY_ALL_SYNCS;
	guard->on_sync = on_sync;
	guard->arg = arg;
	guard->outer = tls->guard;
	guard->depth = tls->guard ? tls->guard->depth + 1 : 1;
	tls->guard = guard;
	return guard->depth;
}

SS_EXPORT int syncspy_guard_points(int id, struct syncspy_sync_point *points, int max)
{
	struct ss_guard *guard = find_guard(&ss_tls, id);
	if (!guard)
		return -1;
	for (int i = 0; points && i < max && i < guard->npoints; i++)
		points[i] = guard->points[i].point;
	return guard->npoints;
}

SS_EXPORT long long syncspy_guard_count(int id, int sync_class)
{
	struct ss_guard *guard = find_guard(&ss_tls, id);
	if (!guard || sync_class < 0 || sync_class > SYNC_CLASSES)
		return -1;
	if (sync_class)
		return (long long)guard->by_class[sync_class - 1];
	unsigned long long total = 0;
	for (int i = 0; i < SYNC_CLASSES; i++)
		total += guard->by_class[i];
	return (long long)total;
}

SS_EXPORT long long syncspy_guard_close(int id)
{
	struct ss_tls *tls = &ss_tls;
	struct ss_guard *guard = tls->guard;
	if (!guard || guard->depth != id)
		return -1;
	long long total = syncspy_guard_count(id, 0);
	tls->guard = guard->outer;
	for (int i = 0; i < guard->npoints; i++)
		free(guard->points[i].text);
	free(guard->points);
	free(guard);
	return total;
}

SS_EXPORT void syncspy_python_raise(void *arg, const struct syncspy_sync_point *point)
{
	(void)point; /* the exception reads the guard's points when it is made (docs/python.md) */
	ss_python_raise_async(arg);
}

SS_EXPORT int syncspy_sync_counts(unsigned long long *counts, int n)
{
	if (!syncspy_recording() || !counts || n <= 0)
		return 0;
	if (n > SYNC_CLASSES)
		n = SYNC_CLASSES;
	for (int i = 0; i < n; i++)
		counts[i] = ss_tls.syncs[i];
	return n;
}
