/*
 * report/gpu_order.c: GPU rows tied to their host calls by stream order (CUPTI-12,
 * docs/cupti.md "The correlation by stream order").
 *
 * A recording made with the `streams` kind and neither `correlate` nor `api` has no gpu_api
 * rows: CUPTI hooked no API call, so nothing says which call queued which kernel. It has what
 * makes the tie anyway: gpu_streams (each stream handle the host enqueued to, with CUPTI's id
 * of that stream on its device), the host's own calls (calls.stream, in the order they were
 * made) and the GPU rows (gpu_activity.stream_id, in correlation-id order, which is the order
 * the calls were made in). A stream runs its work in the order it was queued, so the n-th
 * kernel, copy or memset of a stream is the n-th enqueue of that kind to its handle, but for:
 *   - enqueues with no GPU row: calls in a pause of the timeline (gpu_paused), calls to a
 *     stream being captured into a graph (they run at the graph's launch), work dropped at a
 *     detach, a copy of 0 bytes;
 *   - GPU rows with no recorded enqueue: work a library queued by a path the shim does not
 *     wrap, or queued before the timeline came back on;
 *   - a call that makes several rows (a graph launch, a copy in pieces): they share their
 *     correlation id, and count as one.
 * So the two sequences are aligned, per stream and per traced interval, by kind and time (a
 * call starts before its work does), skipping on either side what has no partner: CUPTI-13.
 *
 * The result is written where the report reads ties from: a TEMP table gpu_api on the
 * connection (the recording is never modified, db.h), one row per correlation id with the
 * call's thread and times, as the callbacks (CUPTI-11) would have written it. SYNCSPY_REPORT_TIES
 * =order does the same for a recording that has gpu_api rows too (`streams` with `correlate`):
 * how the order's ties are checked against the callbacks' on the GPU (tests/gpu/check_order.py).
 *
 * Invariants:
 *   CUPTI-13  A GPU row is tied to a call only when the call queued work of its kind to a
 *            handle mapped to its stream, in the same traced interval, and started before the
 *            row's work did (ORDER_SKEW_NS of clock error allowed); ties keep the order of
 *            both sides: no two ops cross. Where the next op and the next call do not fit,
 *            the side whose partner comes sooner (within ORDER_LOOKAHEAD) is skipped.
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
	if (strstr(api, "Memset"))
		return WORK_MEMSET | WORK_KERNEL;
	if (strstr(api, "Memcpy") || strstr(api, "cpy"))
		return WORK_COPY | WORK_KERNEL;
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

static int compare_captures(const void *a, const void *b)
{
	const struct capture *x = a, *y = b;

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
	struct host_call *calls;
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

static int in_pause(const struct tie_state *ts, long long t)
{
	for (size_t i = 0; i < ts->npauses; i++) /* few: windows are 50 ms and more */
		if (ts->pauses[i][0] <= t && t <= ts->pauses[i][1])
			return 1;
	return 0;
}

/* Whether HANDLE was being captured at T (a capture's enqueues run at the graph's launch). */
static int captured(const struct tie_state *ts, long long handle, long long t)
{
	int open = 0;

	for (size_t i = 0; i < ts->ncaptures && ts->captures[i].at <= t; i++)
		if (ts->captures[i].handle == handle)
			open = ts->captures[i].begins;
	return open;
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

	if (sqlite3_prepare_v2(ts->db, "SELECT 1 FROM main.sqlite_master WHERE name = 'gpu_paused'",
			       -1, &stmt, NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW) {
		sqlite3_finalize(stmt);
		PREPARE("SELECT start_ns, end_ns FROM gpu_paused ORDER BY end_ns");
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			if (!grow((void **)&ts->pauses, &cap, ts->npauses, sizeof(*ts->pauses)))
				OOM;
			ts->pauses[ts->npauses][0] = sqlite3_column_int64(stmt, 0);
			ts->pauses[ts->npauses++][1] = sqlite3_column_int64(stmt, 1);
		}
	}
	sqlite3_finalize(stmt);
	ts->pause_ends = malloc((ts->npauses + 1) * sizeof(*ts->pause_ends));
	if (!ts->pause_ends) {
		snprintf(err, errlen, "out of memory");
		return SS_EXIT_INTERNAL;
	}
	for (size_t i = 0; i < ts->npauses; i++)
		ts->pause_ends[i] = ts->pauses[i][1];

	cap = 0;
	PREPARE("SELECT stream, device, stream_id, first_ns FROM gpu_streams");
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (!grow((void **)&ts->maps, &cap, ts->nmaps, sizeof(*ts->maps)))
			OOM;
		ts->maps[ts->nmaps++] =
		    (struct mapping){sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
				     sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3)};
	}
	sqlite3_finalize(stmt);
	if (ts->nmaps)
		qsort(ts->maps, ts->nmaps, sizeof(*ts->maps), compare_mappings);

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
	if (ts->ncaptures)
		qsort(ts->captures, ts->ncaptures, sizeof(*ts->captures), compare_captures);

	/* The calls, one entry per stream key their handle maps to. */
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
		/* the maps of this handle: per device, the latest made at or before the call */
		size_t lo = 0, hi = ts->nmaps;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (ts->maps[mid].handle < handle)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < ts->nmaps && ts->maps[i].handle == handle; i++) {
			const struct mapping *m = &ts->maps[i];

			if (m->first_ns > start)
				continue;
			if (i + 1 < ts->nmaps && ts->maps[i + 1].handle == handle &&
			    ts->maps[i + 1].device == m->device &&
			    ts->maps[i + 1].first_ns <= start)
				continue; /* a later map of the same device applies */
			if (!grow((void **)&ts->calls, &ts->cap_calls, ts->ncalls,
				  sizeof(*ts->calls)))
				OOM;
			ts->calls[ts->ncalls++] = (struct host_call){
			    .id = sqlite3_column_int64(stmt, 0),
			    .tid = sqlite3_column_int64(stmt, 1),
			    .start = start,
			    .end = sqlite3_column_int64(stmt, 3),
			    .handle = handle,
			    .work = work,
			    .segment = segment_of(ts->pause_ends, ts->npauses, start),
			    .key = {m->device, m->stream_id},
			    .api = ts->api_names[api_id]};
		}
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return ss_db_failure(ts->db, rc, ts->path, err, errlen);

	/* The GPU's work, one op per correlation id (a graph launch's rows, a copy's pieces). */
	PREPARE(
	    "SELECT correlation_id, min(start_ns), coalesce(device, 0), coalesce(stream_id, -1),"
	    " count(*),"
	    " max(kind = 'kernel') | (max(kind = 'memcpy') << 1) | (max(kind = 'memset') << 2)"
	    " FROM gpu_activity WHERE kind IN ('kernel', 'memcpy', 'memset') AND " SS_GPU_TIMED(
		"") " AND correlation_id IS NOT NULL GROUP BY correlation_id");
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

/* Whether this recording's ties come from the stream order: it has a stream map, and no
 * gpu_api rows (or SYNCSPY_REPORT_TIES=order asks). */
static int wanted(sqlite3 *db)
{
	const char *force = getenv("SYNCSPY_REPORT_TIES");
	int forced = force && strcmp(force, "order") == 0;
	sqlite3_stmt *stmt;
	int yes = 0;

	if (sqlite3_prepare_v2(
		db,
		"SELECT (SELECT count(*) FROM main.sqlite_master WHERE type = 'table'"
		" AND name IN ('gpu_streams', 'gpu_api', 'gpu_activity')) = 3",
		-1, &stmt, NULL) != SQLITE_OK)
		return 0;
	yes = sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	if (!yes)
		return 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT EXISTS (SELECT 1 FROM gpu_streams),"
			       " NOT EXISTS (SELECT 1 FROM main.gpu_api)",
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
	if (code == SS_EXIT_OK) {
		qsort(ts.calls, ts.ncalls, sizeof(*ts.calls), compare_calls);
		qsort(ts.ops, ts.nops, sizeof(*ts.ops), compare_ops);
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
	free(ts.calls);
	free(ts.ops);
	for (size_t i = 0; i < ts.napi_names; i++)
		free(ts.api_names[i]);
	free(ts.api_names);
	return code;
}
