/*
 * report/gpu_order.c: GPU rows tied to their host calls by stream order (CUPTI-13,
 * docs/cupti.md "The correlation by stream order").
 *
 * A recording made with the default kinds (CUPTI-12: no `correlate`, no `api`) has no gpu_api
 * rows: CUPTI hooked no API call, so nothing says which call queued which kernel. It has what
 * makes the tie anyway: the host's own calls (calls.stream, in the order they were made) and
 * the GPU rows (gpu_activity.stream_id, and a correlation id CUPTI numbers in the order the
 * process makes its calls). A stream runs its work in the order it was queued, so the n-th
 * kernel, copy or memset of a stream is the n-th enqueue of that kind to its handle, but for:
 *   - enqueues with no GPU row: calls in a pause of the timeline (gpu_paused), calls to a
 *     stream being captured into a graph (they run at the graph's launch), work dropped at a
 *     detach, a copy of 0 bytes;
 *   - GPU rows with no recorded enqueue: work a library queued by a path the shim does not
 *     wrap, or queued before the timeline came back on;
 *   - a call that makes several rows (a graph launch, a copy in pieces): they share their
 *     correlation id, and count as one op.
 * Which handle is which of CUPTI's streams is not recorded (cuptiGetStreamIdEx answered
 * CUPTI_ERROR_INVALID_STREAM for the legacy stream on the H100: session 24, run 2): all the
 * ops in correlation order are aligned with all the calls in time order first, and their ties
 * vote for the map (infer_maps). Then each stream's ops are aligned with the calls to its
 * handle, per traced interval, by kind and time (a call starts before its work does),
 * skipping on either side what has no partner (align).
 *
 * The result is written where the report reads ties from: a TEMP table gpu_api on the
 * connection (the recording is never modified, db.h), one row per correlation id with the
 * call's thread and times, as the callbacks (CUPTI-11) would have written it (layer `order`).
 * SYNCSPY_REPORT_TIES=order does the same for a recording that has gpu_api rows (`correlate`):
 * how the order's ties are checked against the callbacks' (tests/gpu/check_order.py).
 *
 * Invariants:
 *   CUPTI-13  A GPU op is tied to a call only when the call queued work of its kind (a kernel
 *            launch: one kernel row) to the handle its stream maps to, in the same traced
 *            interval, and started before the op's work did (ORDER_SKEW_NS of clock error
 *            allowed); ties keep the order of both sides: no two ops cross. Where the next op
 *            and the next call do not fit, the side whose partner comes sooner (within
 *            ORDER_LOOKAHEAD) is skipped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "db.h"

#define ORDER_SKEW_NS	50000LL
#define ORDER_LOOKAHEAD 16

enum { WORK_KERNEL = 1, WORK_COPY = 2, WORK_MEMSET = 4 };

/* What GPU rows a call can make, by its function's name; 0: none (a host function, an
 * allocation, a prefetch). */
static int work_of(const char *api)
{
	if (!api)
		return 0;
	if (strstr(api, "GraphLaunch"))
		return WORK_KERNEL | WORK_COPY | WORK_MEMSET;
	/* a copy or memset call makes its own kind of row, never a kernel (on the H100: none of
	 * 83 workloads' copies and memsets, session 24 run 2); one that makes none (nothing to
	 * copy) must not take the next kernel's place */
	if (strstr(api, "Memset"))
		return WORK_MEMSET;
	if (strstr(api, "Memcpy") || strstr(api, "cpy"))
		return WORK_COPY;
	if (strncmp(api, "nccl", 4) == 0)
		return WORK_KERNEL | WORK_COPY;
	if (strstr(api, "Launch") && !strstr(api, "HostFunc"))
		return WORK_KERNEL;
	return 0;
}

struct stream_key {
	long long device, stream_id;
};

struct host_call {
	long long id, tid, start, end, handle;
	int work, segment;
	struct stream_key key; /* where the map puts it (one key per device for a default stream) */
	const char *api;       /* interned in api_names */
};

struct gpu_op {
	long long correlation, start;
	struct stream_key key;
	int work, segment, rows;
	const struct host_call *call; /* the tie, or NULL */
};

struct mapping {
	long long handle, device, stream_id, first_ns;
};

struct capture {
	long long handle, at;
	int begins;
};

static int compare_mappings(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->handle != y->handle)
		return (x->handle > y->handle) - (x->handle < y->handle);
	if (x->device != y->device)
		return (x->device > y->device) - (x->device < y->device);
	return (x->first_ns > y->first_ns) - (x->first_ns < y->first_ns);
}

static int compare_keys(const struct stream_key *x, const struct stream_key *y)
{
	if (x->device != y->device)
		return (x->device > y->device) - (x->device < y->device);
	return (x->stream_id > y->stream_id) - (x->stream_id < y->stream_id);
}

static int compare_calls(const void *a, const void *b)
{
	const struct host_call *x = a, *y = b;
	int k = compare_keys(&x->key, &y->key);

	if (k)
		return k;
	if (x->segment != y->segment)
		return x->segment - y->segment;
	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->id > y->id) - (x->id < y->id);
}

static int compare_ops(const void *a, const void *b)
{
	const struct gpu_op *x = a, *y = b;
	int k = compare_keys(&x->key, &y->key);

	if (k)
		return k;
	if (x->segment != y->segment)
		return x->segment - y->segment;
	return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}

/* by handle, then time: a handle's captures in the order they began and ended */
static int compare_captures(const void *a, const void *b)
{
	const struct capture *x = a, *y = b;

	if (x->handle != y->handle)
		return (x->handle > y->handle) - (x->handle < y->handle);
	return (x->at > y->at) - (x->at < y->at);
}

/* The traced interval T falls in: how many pauses ended at or before it (pause_ends sorted). */
static int segment_of(const long long *pause_ends, size_t n, long long t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pause_ends[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo;
}

/* The first of BASE[0..n) (sorted) for which BEFORE(element, KEY) is false: a lower bound. */
static size_t lower_bound(const void *base, size_t n, size_t size, const void *key,
			  int (*before)(const void *element, const void *key))
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (before((const char *)base + mid * size, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* qsort of N elements, none when there are none (BASE may then be NULL, which qsort must not
 * be given). */
static void sort(void *base, size_t n, size_t size, int (*compare)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, compare);
}

static int map_before_handle(const void *element, const void *key)
{
	return ((const struct mapping *)element)->handle < *(const long long *)key;
}

static int call_before_handle(const void *element, const void *key)
{
	return ((const struct host_call *)element)->handle < *(const long long *)key;
}

static int op_before_key(const void *element, const void *key)
{
	return compare_keys(&((const struct gpu_op *)element)->key, key) < 0;
}

struct tie_state {
	sqlite3 *db;
	const char *path;
	long long (*pauses)[2];
	long long *pause_ends;
	size_t npauses;
	struct mapping *maps;
	size_t nmaps;
	struct capture *captures;
	size_t ncaptures;
	struct host_call *raw; /* the calls that queue work, not yet placed on a stream */
	size_t nraw, cap_raw;
	struct host_call *calls; /* one per stream key its handle maps to */
	size_t ncalls, cap_calls;
	struct gpu_op *ops;
	size_t nops, cap_ops;
	char **api_names;
	size_t napi_names;
};

static int grow(void **array, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 1;
	size_t want = *cap ? 2 * *cap : 1024;
	void *p = realloc(*array, want * size);

	if (!p)
		return 0;
	*array = p;
	*cap = want;
	return 1;
}

static int end_before(const void *element, const void *key)
{
	return (*(const long long(*)[2])element)[1] < *(const long long *)key;
}

/* Whether T lies in a pause (pauses sorted by end, none overlapping): the first that ends at
 * or after T began at or before it. */
static int in_pause(const struct tie_state *ts, long long t)
{
	size_t k = lower_bound(ts->pauses, ts->npauses, sizeof(*ts->pauses), &t, end_before);

	return k < ts->npauses && ts->pauses[k][0] <= t;
}

static int capture_before(const void *element, const void *key)
{
	const struct capture *c = element, *k = key;

	return c->handle < k->handle || (c->handle == k->handle && c->at <= k->at);
}

/* Whether HANDLE was being captured at T (a capture's enqueues run at the graph's launch): its
 * last begin or end at or before T was a begin. */
static int captured(const struct tie_state *ts, long long handle, long long t)
{
	struct capture key = {handle, t, 0};
	size_t k =
	    lower_bound(ts->captures, ts->ncaptures, sizeof(*ts->captures), &key, capture_before);

	return k > 0 && ts->captures[k - 1].handle == handle && ts->captures[k - 1].begins;
}

static int load(struct tie_state *ts, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc;
	size_t cap = 0;

#define PREPARE(sql)                                                                               \
	if ((rc = sqlite3_prepare_v2(ts->db, sql, -1, &stmt, NULL)) != SQLITE_OK)                  \
	return ss_db_failure(ts->db, rc, ts->path, err, errlen)
#define OOM                                                                                        \
	do {                                                                                       \
		sqlite3_finalize(stmt);                                                            \
		snprintf(err, errlen, "out of memory");                                            \
		return SS_EXIT_INTERNAL;                                                           \
	} while (0)

	if (ss_db_has_table(ts->db, "main", "gpu_paused")) {
		PREPARE("SELECT start_ns, end_ns FROM gpu_paused ORDER BY end_ns");
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			if (!grow((void **)&ts->pauses, &cap, ts->npauses, sizeof(*ts->pauses)))
				OOM;
			ts->pauses[ts->npauses][0] = sqlite3_column_int64(stmt, 0);
			ts->pauses[ts->npauses++][1] = sqlite3_column_int64(stmt, 1);
		}
		sqlite3_finalize(stmt);
	}
	ts->pause_ends = malloc((ts->npauses + 1) * sizeof(*ts->pause_ends));
	if (!ts->pause_ends) {
		snprintf(err, errlen, "out of memory");
		return SS_EXIT_INTERNAL;
	}
	for (size_t i = 0; i < ts->npauses; i++)
		ts->pause_ends[i] = ts->pauses[i][1];

	cap = 0;
	PREPARE("SELECT c.stream, c.start_ns, instr(a.name, 'BeginCapture') > 0 FROM calls c"
		" JOIN apis a ON a.id = c.api_id WHERE c.stream IS NOT NULL AND c.ret = 0"
		" AND (a.name LIKE '%BeginCapture%' OR a.name LIKE '%EndCapture%')");
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (!grow((void **)&ts->captures, &cap, ts->ncaptures, sizeof(*ts->captures)))
			OOM;
		ts->captures[ts->ncaptures++] =
		    (struct capture){sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
				     sqlite3_column_int(stmt, 2)};
	}
	sqlite3_finalize(stmt);
	sort(ts->captures, ts->ncaptures, sizeof(*ts->captures), compare_captures);

	/* The calls that queue work, in no stream yet (place_calls). */
	size_t cap_names = 0;
	PREPARE("SELECT c.id, c.tid, c.start_ns, c.end_ns, c.stream, a.id, a.name FROM calls c"
		" JOIN apis a ON a.id = c.api_id WHERE c.stream IS NOT NULL AND c.ret = 0"
		" AND c.class IN ('E1', 'S4', 'S5', 'N2')");
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long handle = sqlite3_column_int64(stmt, 4),
			  start = sqlite3_column_int64(stmt, 2);
		long long api_id = sqlite3_column_int64(stmt, 5);
		const char *api = (const char *)sqlite3_column_text(stmt, 6);
		int work = work_of(api);

		if (!work || in_pause(ts, start) || captured(ts, handle, start))
			continue;
		/* interned by apis.id (small, dense) */
		if (api_id < 0 || api_id > 1 << 20)
			continue;
		while ((size_t)api_id >= ts->napi_names) {
			if (!grow((void **)&ts->api_names, &cap_names, ts->napi_names,
				  sizeof(*ts->api_names)))
				OOM;
			ts->api_names[ts->napi_names++] = NULL;
		}
		if (!ts->api_names[api_id] && !(ts->api_names[api_id] = strdup(api)))
			OOM;
		if (!grow((void **)&ts->raw, &ts->cap_raw, ts->nraw, sizeof(*ts->raw)))
			OOM;
		ts->raw[ts->nraw++] =
		    (struct host_call){.id = sqlite3_column_int64(stmt, 0),
				       .tid = sqlite3_column_int64(stmt, 1),
				       .start = start,
				       .end = sqlite3_column_int64(stmt, 3),
				       .handle = handle,
				       .work = work,
				       .segment = segment_of(ts->pause_ends, ts->npauses, start),
				       .api = ts->api_names[api_id]};
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return ss_db_failure(ts->db, rc, ts->path, err, errlen);

	/* The GPU's work, one op per correlation id (a graph launch's rows, a copy's pieces). */
	PREPARE(
	    "SELECT correlation_id, min(start_ns), coalesce(device, 0), coalesce(stream_id, -1),"
	    " count(*),"
	    " max(kind = 'kernel') | (max(kind = 'memcpy') << 1) | (max(kind = 'memset') << 2)"
	    " FROM gpu_activity WHERE kind IN ('kernel', 'memcpy', 'memset') AND " SS_GPU_TIMED("")
	    /* CUPTI's id 0 (beneath the attach count, CUPTI-8): no call made it (the device did) */
	    " AND (coalesce(correlation_id, 0) & 4294967295) <> 0 GROUP BY correlation_id");
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long start = sqlite3_column_int64(stmt, 1);

		if (!grow((void **)&ts->ops, &ts->cap_ops, ts->nops, sizeof(*ts->ops)))
			OOM;
		ts->ops[ts->nops++] = (struct gpu_op){
		    .correlation = sqlite3_column_int64(stmt, 0),
		    .start = start,
		    .key = {sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3)},
		    .rows = sqlite3_column_int(stmt, 4),
		    .work = sqlite3_column_int(stmt, 5),
		    .segment = segment_of(ts->pause_ends, ts->npauses, start)};
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return ss_db_failure(ts->db, rc, ts->path, err, errlen);
#undef PREPARE
#undef OOM
	return SS_EXIT_OK;
}

/* CUPTI-13: whether call C can have made op O. A kernel launch makes one row: an op of several
 * kernels is a graph's (or a collective's), which the launches captured into the graph did not
 * make (where the recording lacks the capture's begin: older shims, a static runtime). */
static int fits(const struct host_call *c, const struct gpu_op *o)
{
	if (c->work == WORK_KERNEL && o->rows > 1)
		return 0;
	return (c->work & o->work) == o->work && c->start <= o->start + ORDER_SKEW_NS;
}

/* Aligns one stream's interval: ops[0..nops) against calls[0..ncalls), both in order. */
static void align(struct gpu_op *ops, size_t nops, const struct host_call *calls, size_t ncalls)
{
	size_t i = 0, j = 0; /* i: calls, j: ops */

	while (j < nops && i < ncalls) {
		if (fits(&calls[i], &ops[j])) {
			ops[j++].call = &calls[i++];
			continue;
		}
		size_t skip_calls = 0, skip_ops = 0;

		for (size_t k = 1; k <= ORDER_LOOKAHEAD && i + k < ncalls && !skip_calls; k++)
			if (fits(&calls[i + k], &ops[j]))
				skip_calls = k;
		for (size_t k = 1; k <= ORDER_LOOKAHEAD && j + k < nops && !skip_ops; k++)
			if (fits(&calls[i], &ops[j + k]))
				skip_ops = k;
		if (skip_calls && (!skip_ops || skip_calls <= skip_ops))
			i += skip_calls;
		else if (skip_ops)
			j += skip_ops;
		else if (calls[i].start > ops[j].start + ORDER_SKEW_NS)
			j++; /* the op ran before this call: no call of ours made it */
		else
			i++; /* the call made no op we have */
	}
}

/* Puts each call on the stream keys its handle maps to: per device, the latest map made at or
 * before the call (a handle destroyed may come back as another stream). */
static int place_calls(struct tie_state *ts)
{
	for (size_t r = 0; r < ts->nraw; r++) {
		const struct host_call *c = &ts->raw[r];
		size_t lo = lower_bound(ts->maps, ts->nmaps, sizeof(*ts->maps), &c->handle,
					map_before_handle);

		for (size_t i = lo; i < ts->nmaps && ts->maps[i].handle == c->handle; i++) {
			const struct mapping *m = &ts->maps[i];

			if (m->first_ns > c->start)
				continue;
			if (i + 1 < ts->nmaps && ts->maps[i + 1].handle == c->handle &&
			    ts->maps[i + 1].device == m->device &&
			    ts->maps[i + 1].first_ns <= c->start)
				continue; /* a later map of the same device applies */
			if (!grow((void **)&ts->calls, &ts->cap_calls, ts->ncalls,
				  sizeof(*ts->calls)))
				return 0;
			ts->calls[ts->ncalls] = *c;
			ts->calls[ts->ncalls++].key = (struct stream_key){m->device, m->stream_id};
		}
	}
	return 1;
}

struct vote {
	long long handle, device, stream_id;
};

static int compare_votes(const void *a, const void *b)
{
	const struct vote *x = a, *y = b;

	if (x->device != y->device)
		return (x->device > y->device) - (x->device < y->device);
	if (x->stream_id != y->stream_id)
		return (x->stream_id > y->stream_id) - (x->stream_id < y->stream_id);
	return (x->handle > y->handle) - (x->handle < y->handle);
}

static int compare_calls_by_time(const void *a, const void *b)
{
	const struct host_call *x = a, *y = b;

	if (x->segment != y->segment)
		return x->segment - y->segment;
	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->id > y->id) - (x->id < y->id);
}

static int compare_calls_by_handle(const void *a, const void *b)
{
	const struct host_call *x = a, *y = b;

	if (x->handle != y->handle)
		return (x->handle > y->handle) - (x->handle < y->handle);
	return compare_calls_by_time(a, b);
}

static int compare_ops_by_correlation(const void *a, const void *b)
{
	const struct gpu_op *x = a, *y = b;

	if (x->segment != y->segment)
		return x->segment - y->segment;
	return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}

/* Aligns ops[0..nops) with calls[0..ncalls) (both in order, of any segments) segment by
 * segment; returns how many ops were tied, and the first and last tied call's start. */
static size_t align_segments(struct gpu_op *ops, size_t nops, const struct host_call *calls,
			     size_t ncalls, long long *first, long long *last)
{
	size_t tied = 0;

	for (size_t j = 0, i = 0; j < nops;) {
		size_t end = j, call_end;

		while (end < nops && ops[end].segment == ops[j].segment)
			end++;
		while (i < ncalls && calls[i].segment < ops[j].segment)
			i++;
		for (call_end = i; call_end < ncalls && calls[call_end].segment == ops[j].segment;)
			call_end++;
		align(ops + j, end - j, calls + i, call_end - i);
		j = end;
	}
	*first = *last = -1;
	for (size_t j = 0; j < nops; j++)
		if (ops[j].call) {
			tied++;
			if (*first < 0 || ops[j].call->start < *first)
				*first = ops[j].call->start;
			if (ops[j].call->start > *last)
				*last = ops[j].call->start;
		}
	return tied;
}

/* A handle considered for a stream: how many of the stream's ops its calls tie, over when. */
struct candidate {
	long long handle, device, stream_id, first, last;
	size_t tied;
};

static int compare_candidates(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	if (x->tied != y->tied)
		return (x->tied < y->tied) - (x->tied > y->tied); /* most first */
	if (x->device != y->device)
		return (x->device > y->device) - (x->device < y->device);
	if (x->stream_id != y->stream_id)
		return (x->stream_id > y->stream_id) - (x->stream_id < y->stream_id);
	return (x->handle > y->handle) - (x->handle < y->handle);
}

#define ORDER_CANDIDATES 8 /* handles tried per stream, those the global alignment voted most */

static size_t hash2(long long a, long long b)
{
	unsigned long long h =
	    (unsigned long long)a * 0x9e3779b97f4a7c15ull ^
	    ((unsigned long long)b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;

	return (size_t)(h ^ (h >> 29));
}

/*
 * CUPTI-13's map of handles to CUPTI's streams. CUPTI numbers correlation ids in the order the
 * process makes its calls, whatever stream they queue to, so all the ops in correlation order
 * align with all the calls in time order: one thread's calls exactly, threads' calls made at
 * the same moment may cross. Each op so tied votes for its call's handle as its stream's. Then
 * each stream tries the handles it got votes from (ORDER_CANDIDATES at most): aligned alone
 * against that handle's calls, the one that ties most of its ops wins, from its first tied call
 * on (a handle destroyed may come back as another stream). Best pairs first; a handle already
 * taken on the device over an overlapping time is not given to a second stream.
 */
static int infer_maps(struct tie_state *ts)
{
	struct host_call *calls = malloc((ts->nraw + 1) * sizeof(*calls));
	struct host_call *by_handle = malloc((ts->nraw + 1) * sizeof(*by_handle));
	struct gpu_op *ops = malloc((ts->nops + 1) * sizeof(*ops));
	struct gpu_op *scratch = malloc((ts->nops + 1) * sizeof(*scratch));
	struct vote *votes = malloc((ts->nops + 1) * sizeof(*votes));
	struct candidate *cands = NULL, *taken = NULL;
	size_t nvotes = 0, ncands = 0, cap_cands = 0, ntaken = 0;
	size_t *by_stream = NULL, *by_handle_slot = NULL;
	long long first, last;
	int ok = calls && by_handle && ops && scratch && votes;

	if (!ok || !ts->nraw || !ts->nops) /* nothing to tie (aggregate mode: no enqueue rows) */
		goto out;
	memcpy(calls, ts->raw, ts->nraw * sizeof(*calls));
	memcpy(by_handle, ts->raw, ts->nraw * sizeof(*by_handle));
	memcpy(ops, ts->ops, ts->nops * sizeof(*ops));
	sort(calls, ts->nraw, sizeof(*calls), compare_calls_by_time);
	sort(by_handle, ts->nraw, sizeof(*by_handle), compare_calls_by_handle);
	sort(ops, ts->nops, sizeof(*ops), compare_ops_by_correlation);
	align_segments(ops, ts->nops, calls, ts->nraw, &first, &last);
	for (size_t j = 0; j < ts->nops; j++)
		if (ops[j].call)
			votes[nvotes++] = (struct vote){ops[j].call->handle, ops[j].key.device,
							ops[j].key.stream_id};
	sort(votes, nvotes, sizeof(*votes), compare_votes);
	/* the stream's ops, in order, for each candidate's alignment */
	memcpy(ops, ts->ops, ts->nops * sizeof(*ops));
	sort(ops, ts->nops, sizeof(*ops), compare_ops);
	for (size_t v = 0; v < nvotes;) {
		size_t end = v, o = 0, nops;
		struct candidate best[ORDER_CANDIDATES];
		size_t nbest = 0;

		while (end < nvotes && votes[end].device == votes[v].device &&
		       votes[end].stream_id == votes[v].stream_id)
			end++;
		/* the handles voted most */
		for (size_t h = v; h < end;) {
			size_t n = h;

			while (n < end && votes[n].handle == votes[h].handle)
				n++;
			struct candidate c = {
			    votes[h].handle, votes[h].device, votes[h].stream_id, 0, 0, n - h};
			if (nbest < ORDER_CANDIDATES) {
				best[nbest++] = c;
			} else { /* in place of the fewest votes, when more */
				size_t fewest = 0;

				for (size_t k = 1; k < nbest; k++)
					if (best[k].tied < best[fewest].tied)
						fewest = k;
				if (best[fewest].tied < c.tied)
					best[fewest] = c;
			}
			h = n;
		}
		/* this stream's ops */
		struct stream_key key = {votes[v].device, votes[v].stream_id};
		size_t lo = lower_bound(ops, ts->nops, sizeof(*ops), &key, op_before_key);

		for (o = lo; o < ts->nops && !compare_keys(&ops[o].key, &key);)
			o++;
		nops = o - lo;
		for (size_t k = 0; k < nbest; k++) {
			/* the handle's calls */
			size_t a = lower_bound(by_handle, ts->nraw, sizeof(*by_handle),
					       &best[k].handle, call_before_handle),
			       b;

			for (b = a; b < ts->nraw && by_handle[b].handle == best[k].handle;)
				b++;
			memcpy(scratch, ops + lo, nops * sizeof(*scratch));
			for (size_t j = 0; j < nops; j++)
				scratch[j].call = NULL;
			best[k].tied = align_segments(scratch, nops, by_handle + a, b - a,
						      &best[k].first, &best[k].last);
			if (!best[k].tied)
				continue;
			if (!grow((void **)&cands, &cap_cands, ncands, sizeof(*cands))) {
				ok = 0;
				goto out;
			}
			cands[ncands++] = best[k];
		}
		v = end;
	}
	/* best pairs first; each stream once; a handle once per device and time. Two open-address
	 * tables over the taken pairs, by stream and by handle (a run may create thousands of
	 * streams): a slot holds a taken index + 1, 0 when free. */
	sort(cands, ncands, sizeof(*cands), compare_candidates);
	size_t slots = 16;

	while (slots < 2 * ncands + 2)
		slots *= 2;
	by_stream = calloc(slots, sizeof(*by_stream));
	by_handle_slot = calloc(slots, sizeof(*by_handle_slot));
	if (!by_stream || !by_handle_slot || !(taken = malloc((ncands + 1) * sizeof(*taken)))) {
		ok = 0;
		goto out;
	}
	for (size_t c = 0; c < ncands; c++) {
		const struct candidate *k = &cands[c];
		size_t ss = hash2(k->device, k->stream_id) & (slots - 1);
		size_t hs = hash2(k->handle, k->device) & (slots - 1);
		int clash = 0;

		for (; by_stream[ss] && !clash; ss = (ss + 1) & (slots - 1))
			clash = taken[by_stream[ss] - 1].device == k->device &&
				taken[by_stream[ss] - 1].stream_id == k->stream_id;
		for (; by_handle_slot[hs] && !clash; hs = (hs + 1) & (slots - 1)) {
			const struct candidate *t = &taken[by_handle_slot[hs] - 1];

			clash = t->handle == k->handle && t->device == k->device &&
				t->first <= k->last && k->first <= t->last;
		}
		if (clash)
			continue;
		taken[ntaken++] = *k;
		by_stream[ss] = ntaken;
		by_handle_slot[hs] = ntaken;
	}
	ts->maps = malloc((ntaken + 1) * sizeof(*ts->maps));
	if (!ts->maps) {
		ok = 0;
		goto out;
	}
	for (size_t t = 0; t < ntaken; t++)
		ts->maps[ts->nmaps++] = (struct mapping){taken[t].handle, taken[t].device,
							 taken[t].stream_id, taken[t].first};
	sort(ts->maps, ts->nmaps, sizeof(*ts->maps), compare_mappings);
	/* a handle's first map holds from the start (calls before its first tie: none tied) */
	for (size_t m = 0; m < ts->nmaps; m++)
		if (!m || ts->maps[m - 1].handle != ts->maps[m].handle ||
		    ts->maps[m - 1].device != ts->maps[m].device)
			ts->maps[m].first_ns = 0;
out:
	free(calls);
	free(by_handle);
	free(ops);
	free(scratch);
	free(votes);
	free(cands);
	free(taken);
	free(by_stream);
	free(by_handle_slot);
	return ok;
}

static int store(struct tie_state *ts, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc = sqlite3_exec(ts->db,
			      "DROP TABLE IF EXISTS temp.gpu_api;"
			      " CREATE TEMP TABLE gpu_api(correlation_id INTEGER, layer TEXT,"
			      " cbid INTEGER, tid INTEGER, start_ns INTEGER, end_ns INTEGER,"
			      " name TEXT, cupti_tid INTEGER); BEGIN",
			      NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return ss_db_failure(ts->db, rc, ts->path, err, errlen);
	rc = sqlite3_prepare_v2(ts->db,
				"INSERT INTO temp.gpu_api VALUES(?1, 'order', NULL, ?2, ?3, ?4, ?5,"
				" NULL)",
				-1, &stmt, NULL);
	for (size_t i = 0; rc == SQLITE_OK && i < ts->nops; i++) {
		const struct host_call *c = ts->ops[i].call;

		if (!c)
			continue;
		sqlite3_bind_int64(stmt, 1, ts->ops[i].correlation);
		sqlite3_bind_int64(stmt, 2, c->tid);
		sqlite3_bind_int64(stmt, 3, c->start);
		sqlite3_bind_int64(stmt, 4, c->end);
		sqlite3_bind_text(stmt, 5, c->api, -1, SQLITE_STATIC);
		rc = sqlite3_step(stmt) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(ts->db);
		sqlite3_reset(stmt);
	}
	sqlite3_finalize(stmt);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(ts->db, "COMMIT", NULL, NULL, NULL);
	else
		sqlite3_exec(ts->db, "ROLLBACK", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(ts->db, rc, ts->path, err, errlen);
	return SS_EXIT_OK;
}

/* Whether this recording's ties come from the stream order: it has GPU work and no gpu_api rows
 * (or SYNCSPY_REPORT_TIES=order asks). */
static int wanted(sqlite3 *db)
{
	const char *force = getenv("SYNCSPY_REPORT_TIES");
	int forced = force && strcmp(force, "order") == 0;
	sqlite3_stmt *stmt;
	int yes = 0;

	if (!ss_db_has_table(db, "main", "gpu_api") || !ss_db_has_table(db, "main", "gpu_activity"))
		return 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT EXISTS (SELECT 1 FROM gpu_activity WHERE kind IN ('kernel',"
			       " 'memcpy', 'memset')), NOT EXISTS (SELECT 1 FROM main.gpu_api)",
			       -1, &stmt, NULL) != SQLITE_OK)
		return 0;
	yes = sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int(stmt, 0) &&
	      (forced || sqlite3_column_int(stmt, 1));
	sqlite3_finalize(stmt);
	return yes;
}

int ss_gpu_order_ties(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	struct tie_state ts = {.db = db, .path = path};
	int code;

	if (!wanted(db))
		return SS_EXIT_OK;
	code = load(&ts, err, errlen);
	if (code == SS_EXIT_OK && (!infer_maps(&ts) || !place_calls(&ts))) {
		snprintf(err, errlen, "out of memory");
		code = SS_EXIT_INTERNAL;
	}
	if (code == SS_EXIT_OK) {
		sort(ts.calls, ts.ncalls, sizeof(*ts.calls), compare_calls);
		sort(ts.ops, ts.nops, sizeof(*ts.ops), compare_ops);
		for (size_t j = 0, i = 0; j < ts.nops;) {
			size_t end = j;

			while (end < ts.nops && !compare_keys(&ts.ops[end].key, &ts.ops[j].key) &&
			       ts.ops[end].segment == ts.ops[j].segment)
				end++;
			/* the calls of the same stream and interval */
			while (i < ts.ncalls &&
			       (compare_keys(&ts.calls[i].key, &ts.ops[j].key) < 0 ||
				(!compare_keys(&ts.calls[i].key, &ts.ops[j].key) &&
				 ts.calls[i].segment < ts.ops[j].segment)))
				i++;
			size_t call_end = i;

			while (call_end < ts.ncalls &&
			       !compare_keys(&ts.calls[call_end].key, &ts.ops[j].key) &&
			       ts.calls[call_end].segment == ts.ops[j].segment)
				call_end++;
			align(ts.ops + j, end - j, ts.calls + i, call_end - i);
			j = end;
		}
		code = store(&ts, err, errlen);
	}
	free(ts.pauses);
	free(ts.pause_ends);
	free(ts.maps);
	free(ts.captures);
	free(ts.raw);
	free(ts.calls);
	free(ts.ops);
	for (size_t i = 0; i < ts.napi_names; i++)
		free(ts.api_names[i]);
	free(ts.api_names);
	return code;
}
