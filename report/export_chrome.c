/*
 * report/export_chrome.c: the Chrome trace-event JSON backend of `syncspy export` (export.h),
 * the format chrome://tracing, Perfetto (ui.perfetto.dev) and speedscope open.
 *
 * Layout (docs/export.md): one process per database (EXPORT-2), named "rank R (host pid)";
 * one track per host thread with every call as a complete event ("ph": "X"); one track per
 * stream with the calls that name that stream (enqueues, records, waits, syncs, NCCL
 * operations), at their host-side times; flow arrows from each event record (E2) to the stream
 * waits (E3) that wait on it. When the database has CUPTI's tables (docs/cupti.md): one track
 * per GPU stream (CUPTI's device and stream ids) with the kernels, copies and memsets as the GPU
 * ran them, and a flow from each host call (its gpu_api record's start, on the thread's track)
 * to the GPU work of the same correlation id.
 *
 * Clock alignment (docs/export.md, "Clock alignment"): the first database is the reference; a
 * database of another host is moved by its clock offset against it (ss_clock_fit over the end
 * times of blocking collectives both made), on top of EXPORT-1's wall-clock shift. Databases of
 * the reference's host keep EXPORT-1's shift: their offset is 0 exactly.
 *
 * Every event is built by SQLite's JSON functions in SQL over the recording, one row per event,
 * and written as it comes (bytes that are not UTF-8 as U+FFFD, text_safe.h): memory stays flat
 * however many calls a database holds.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "db.h"
#include "export.h"
#include "lines.h"
#include "text_safe.h"

/*
 * Track ids of streams: above any Linux tid (pid_max is at most 2^22), distinct per database
 * so that no two processes share one. CHROME_STREAM_TRACKS per database.
 */
#define CHROME_STREAM_TID_BASE 0x40000000LL
#define CHROME_STREAM_TRACKS   0x10000LL
/* Flow ids: unique in the trace (database index above, calls.id below), and below 2^53 so
 * that JavaScript viewers read them exactly. */
#define CHROME_FLOW_ID_SHIFT 32

/*
 * Bound parameters of every query: ?1 process id, ?2 shift_ns (EXPORT-1, less the clock offset of
 * a database off the first one's host), ?3 first stream track id - 1, ?4 first flow id, ?5
 * process name, ?6 process sort index; ?7 a query's own text (the clock label).
 *
 * Two lookups are built first, as TEMP tables (the connection stays read-only: TEMP lives
 * apart from the recording, on disk when large, so memory stays flat):
 *   stream_tracks  one row per stream track: a stream handle, except the per-thread default
 *                  stream (SCHEMA-4: 2), which is one stream per thread: its owner is the tid;
 *   records        the event records (E2) of events some stream waits on (E3), indexed so that
 *                  each wait finds the last record before it without sorting every edge.
 */
#define SETUP_SQL                                                                                  \
	"CREATE TEMP TABLE stream_tracks(stream INTEGER, owner INTEGER, n INTEGER,"                \
	" PRIMARY KEY (stream, owner));"                                                           \
	"INSERT INTO stream_tracks SELECT stream, owner,"                                          \
	" row_number() OVER (ORDER BY stream, owner) FROM"                                         \
	" (SELECT DISTINCT stream, CASE WHEN stream = 2 THEN tid ELSE 0 END AS owner"              \
	"  FROM calls WHERE stream IS NOT NULL);"                                                  \
	"CREATE TEMP TABLE records(event INTEGER, start_ns INTEGER, id INTEGER, stream INTEGER,"   \
	" tid INTEGER, mid_ns INTEGER);"                                                           \
	"INSERT INTO records SELECT event, start_ns, id, stream, tid, (start_ns + end_ns) / 2"     \
	" FROM calls WHERE class = 'E2'"                                                           \
	" AND event IN (SELECT event FROM calls WHERE class = 'E3');"                              \
	"CREATE INDEX temp.records_by_event ON records(event, start_ns, id);" TEXTS_SETUP_SQL

/*
 * Long texts (docs/export.md, "Long texts"): a site text, API name or kernel name longer than
 * CHROME_TEXT_MAX characters is cut to that many, plus "…", in the events that repeat it (every
 * call of a site, every launch of a kernel), and written whole once per database in a
 * "syncspy_text" metadata event that the cut events name by id: a recording of 1 MB strings
 * exports to a file of its own size, not one copy per call. Shorter texts are as they were.
 */
#define CHROME_TEXT_MAX "1024" /* characters, in SQL */
#define CUT_TEXT(x)                                                                                \
	"CASE WHEN length(" x ") > " CHROME_TEXT_MAX " THEN substr(" x ", 1, " CHROME_TEXT_MAX     \
	") || '\xe2\x80\xa6' ELSE " x " END"

#define CUT_NAME  CUT_TEXT("name")
#define CUT_SITE  CUT_TEXT("text")
#define CUT_GNAME CUT_TEXT("ss_demangle(g.name)")

/* The texts the calls' events repeat, cut once per site and API rather than once per call. */
#define TEXTS_SETUP_SQL                                                                            \
	"CREATE TEMP TABLE site_texts(id INTEGER PRIMARY KEY, text TEXT, long INTEGER);"           \
	"INSERT INTO site_texts SELECT id, " CUT_SITE ", length(text) > " CHROME_TEXT_MAX          \
	" FROM sites WHERE id IN (SELECT site_id FROM calls);"                                     \
	"CREATE TEMP TABLE api_names(id INTEGER PRIMARY KEY, name TEXT, long INTEGER);"            \
	"INSERT INTO api_names SELECT id, " CUT_NAME ", length(name) > " CHROME_TEXT_MAX           \
	" FROM apis WHERE id IN (SELECT api_id FROM calls);"

/* The whole of each long text, once (after the track names). */
#define LONG_TEXTS_SQL                                                                             \
	"SELECT json_object('ph', 'M', 'name', 'syncspy_text', 'pid', ?1, 'tid', 0,"               \
	" 'args', json_object('site_id', id, 'text', text))"                                       \
	" FROM sites WHERE id IN (SELECT id FROM site_texts WHERE long)"                           \
	" UNION ALL SELECT json_object('ph', 'M', 'name', 'syncspy_text', 'pid', ?1, 'tid', 0,"    \
	" 'args', json_object('api_id', id, 'text', name))"                                        \
	" FROM apis WHERE id IN (SELECT id FROM api_names WHERE long)"

#define STREAM_OWNER(stream, tid) "CASE WHEN " stream " = 2 THEN " tid " ELSE 0 END"

/* Threads the calls name, with the names the threads table has for them. */
#define THREADS_CTE                                                                                \
	"thread_tracks(tid, name) AS ("                                                            \
	" SELECT tid, name FROM threads"                                                           \
	" UNION SELECT DISTINCT tid, NULL FROM calls WHERE tid NOT IN (SELECT tid FROM threads))"

/* Process and track names, and their order in the viewer: threads by tid, then streams. */
#define METADATA_SQL                                                                               \
	"WITH " THREADS_CTE                                                                        \
	" SELECT json_object('ph', 'M', 'name', 'process_name', 'pid', ?1, 'tid', 0,"              \
	"  'args', json_object('name', ?5))"                                                       \
	" UNION ALL SELECT json_object('ph', 'M', 'name', 'process_sort_index', 'pid', ?1,"        \
	"  'tid', 0, 'args', json_object('sort_index', ?6))"                                       \
	" UNION ALL SELECT json_object('ph', 'M', 'name', 'thread_name', 'pid', ?1, 'tid', tid,"   \
	"  'args', json_object('name', coalesce(name, 'thread') || ' (tid ' || tid || ')'))"       \
	"  FROM thread_tracks"                                                                     \
	" UNION ALL SELECT json_object('ph', 'M', 'name', 'thread_sort_index', 'pid', ?1,"         \
	"  'tid', tid, 'args', json_object('sort_index', row_number() OVER (ORDER BY tid)))"       \
	"  FROM thread_tracks"                                                                     \
	" UNION ALL SELECT json_object('ph', 'M', 'name', 'thread_name', 'pid', ?1, 'tid', ?3 + "  \
	"n,"                                                                                       \
	"  'args', json_object('name', CASE stream WHEN 1 THEN 'legacy stream'"                    \
	"   WHEN 2 THEN 'per-thread stream (tid ' || owner || ')'"                                 \
	"   ELSE printf('stream 0x%x', stream) END))"                                              \
	"  FROM stream_tracks"                                                                     \
	" UNION ALL SELECT json_object('ph', 'M', 'name', 'thread_sort_index', 'pid', ?1,"         \
	"  'tid', ?3 + n, 'args', json_object('sort_index', 1000000 + n))"                         \
	"  FROM stream_tracks"

/* A call's arguments, NULLs left out (json_patch onto {} drops them). */
#define CALL_ARGS                                                                                  \
	"json_patch('{}', json_object("                                                            \
	" 'stream', CASE WHEN c.stream IS NULL THEN NULL WHEN c.stream = 1 THEN 'legacy'"          \
	"  WHEN c.stream = 2 THEN 'per-thread' ELSE printf('0x%x', c.stream) END,"                 \
	" 'bytes', c.bytes, 'host_mem', m.name, 'dir', d.name, 'ret', c.ret, 'site', s.text,"      \
	" 'count', c.count, 'tid', c.tid,"                                                         \
	" 'event', CASE WHEN c.event IS NULL THEN NULL ELSE printf('0x%x', c.event) END,"          \
	" 'comm', CASE WHEN c.comm IS NULL THEN NULL ELSE printf('0x%x', c.comm) END,"             \
	" 'site_id', CASE WHEN s.long THEN s.id END, 'api_id', CASE WHEN a.long THEN a.id END))"

#define CALL_JOINS                                                                                 \
	" FROM calls c JOIN temp.api_names a ON a.id = c.api_id"                                   \
	" LEFT JOIN memkinds m ON m.id = c.host_mem LEFT JOIN dirs d ON d.id = c.dir"              \
	" LEFT JOIN temp.site_texts s ON s.id = c.site_id"

/*
 * One complete event of a call: on its thread's track with all its arguments, on a stream's
 * track with its tid only (the thread's slice has the rest; building JSON is most of the time).
 * Sync points (S1-S7) are colored as waits; cname is left out of other calls rather than null.
 */
#define SLICE(TID, ARGS, EXTRA)                                                                    \
	"json_object('ph', 'X', 'name', a.name, 'cat', c.class, 'pid', ?1, 'tid', " TID ","        \
	" 'ts', (c.start_ns + ?2) / 1000.0, 'dur', max(c.end_ns - c.start_ns, 0) / 1000.0,"        \
	" 'args', " ARGS EXTRA ")"
#define CALL_EVENT(TID, ARGS)                                                                      \
	"CASE WHEN c.class GLOB 'S[1-7]' THEN " SLICE(                                             \
	    TID, ARGS, ", 'cname', 'terrible'") " ELSE " SLICE(TID, ARGS, "") " END"

/*
 * Every call on its thread's track. Calls come in id order, which is time order within a thread
 * (the writer drains each thread's buffer in order): every thread track is sorted without a
 * sort, which for a million calls would cost more than building their JSON.
 */
#define THREAD_SLICES_SQL "SELECT " CALL_EVENT("c.tid", CALL_ARGS) CALL_JOINS " ORDER BY c.id"

/* The calls that name a stream, again, on the stream's track (sorted when one thread feeds it;
 * viewers sort the rest). */
#define STREAM_SLICES_SQL                                                                          \
	"SELECT " CALL_EVENT(                                                                      \
	    "?3 + t.n",                                                                            \
	    "json_object('tid', c.tid)") " FROM calls c JOIN temp.api_names a ON a.id = c.api_id"  \
					 " JOIN stream_tracks t ON t.stream = c.stream"            \
					 "  AND t.owner = " STREAM_OWNER("c.stream",               \
									 "c.tid") " ORDER BY c.id"

/*
 * Flows: each stream wait (E3) from the last record (E2) of the same event at or before it
 * (an event may be recorded again and again: a wait orders after the latest record). Flow
 * points sit in the middle of their slices, where viewers bind them to the slice.
 */
#define FLOWS_SQL                                                                                  \
	"SELECT json_object('ph', 's', 'id', ?4 + w.id, 'name', printf('event 0x%x', w.event),"    \
	"  'cat', 'dependency', 'pid', ?1, 'tid', ?3 + rt.n, 'ts', (r.mid_ns + ?2) / 1000.0),"     \
	" json_object('ph', 'f', 'bp', 'e', 'id', ?4 + w.id,"                                      \
	"  'name', printf('event 0x%x', w.event), 'cat', 'dependency', 'pid', ?1,"                 \
	"  'tid', ?3 + wt.n, 'ts', ((w.start_ns + w.end_ns) / 2 + ?2) / 1000.0)"                   \
	" FROM calls w"                                                                            \
	" JOIN records r ON r.rowid = (SELECT rowid FROM records x WHERE x.event = w.event"        \
	"  AND x.start_ns <= w.start_ns ORDER BY x.start_ns DESC, x.id DESC LIMIT 1)"              \
	" JOIN stream_tracks rt ON rt.stream = r.stream"                                           \
	"  AND rt.owner = " STREAM_OWNER(                                                          \
	    "r.stream", "r.tid") " JOIN stream_tracks wt ON wt.stream = w.stream"                  \
				 "  AND wt.owner = " STREAM_OWNER("w.stream",                      \
								  "w.tid") " WHERE w.class = 'E3'"

/*
 * GPU tracks (only with the gpu_activity table): track ids ?3 + CHROME_GPU_TRACK_OFFSET + n, in
 * the upper half of the database's range (host stream tracks take the lower half). Flow ids
 * ?4 + CHROME_GPU_FLOW_OFFSET + gpu_activity.id: above the E3 flows' calls ids.
 */
#define CHROME_GPU_TRACK_OFFSET "32768"	   /* 0x8000, in SQL */
#define CHROME_GPU_FLOW_OFFSET	"2147483648" /* 2^31, in SQL */
#define GPU_TRACK		"?3 + " CHROME_GPU_TRACK_OFFSET " + t.n"
#define GPU_KINDS		"('kernel', 'memcpy', 'memset')"

#define HAS_GPU_SQL                                                                                \
	"SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_activity'),"\
	" EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_api')"

/* gpu_tracks: one row per (device, stream); gpu_calls: per correlation id, the earliest
 * gpu_api record (the outermost call: runtime before the driver call it makes). */
#define GPU_SETUP_SQL                                                                              \
	"CREATE TEMP TABLE gpu_tracks(device INTEGER, stream_id INTEGER, n INTEGER,"               \
	" PRIMARY KEY (device, stream_id));"                                                       \
	"INSERT INTO gpu_tracks SELECT device, stream_id,"                                         \
	" row_number() OVER (ORDER BY device, stream_id) FROM (SELECT DISTINCT device, stream_id"  \
	"  FROM gpu_activity WHERE kind IN " GPU_KINDS                                             \
	"  AND device IS NOT NULL AND stream_id IS NOT NULL);"
#define GPU_API_SETUP_SQL                                                                          \
	"CREATE TEMP TABLE gpu_calls(correlation_id INTEGER PRIMARY KEY, tid INTEGER,"             \
	" start_ns INTEGER);"                                                                      \
	"INSERT INTO gpu_calls SELECT correlation_id, tid, min(start_ns) FROM gpu_api"             \
	" WHERE correlation_id IS NOT NULL GROUP BY correlation_id;"

#define GPU_METADATA_SQL                                                                           \
	"SELECT json_object('ph', 'M', 'name', 'thread_name', 'pid', ?1, 'tid', " GPU_TRACK ","    \
	"  'args', json_object('name', printf('GPU %d stream %d', device, stream_id))),"           \
	" json_object('ph', 'M', 'name', 'thread_sort_index', 'pid', ?1, 'tid', " GPU_TRACK ","    \
	"  'args', json_object('sort_index', 2000000 + t.n))"                                      \
	" FROM gpu_tracks t ORDER BY t.n"

#define GPU_NAME                                                                                   \
	"CASE g.kind WHEN 'kernel' THEN coalesce(" CUT_GNAME ", 'kernel')"                         \
	" WHEN 'memcpy' THEN 'memcpy ' || CASE g.copy_kind WHEN 1 THEN 'HtoD' WHEN 2 THEN 'DtoH'"  \
	"  WHEN 8 THEN 'DtoD' WHEN 9 THEN 'HtoH' WHEN 10 THEN 'PtoP'"                              \
	"  ELSE 'kind ' || coalesce(g.copy_kind, '?') END"                                         \
	" ELSE 'memset' END"

/* The whole of each long kernel name, once; its events carry the cut name. */
#define GPU_LONG_TEXTS_SQL                                                                         \
	"SELECT json_object('ph', 'M', 'name', 'syncspy_text', 'pid', ?1, 'tid', 0,"               \
	" 'args', json_object('kernel', " CUT_NAME ", 'text', name))"                              \
	" FROM (SELECT DISTINCT ss_demangle(name) AS name FROM gpu_activity WHERE kind = 'kernel'" \
	"  AND length(ss_demangle(name)) > " CHROME_TEXT_MAX ") ORDER BY name"

/* The GPU work, one complete event each, sorted per track. */
#define GPU_SLICES_SQL                                                                             \
	"SELECT json_object('ph', 'X', 'name', " GPU_NAME ", 'cat', 'gpu ' || g.kind, 'pid', ?1,"  \
	" 'tid', " GPU_TRACK ", 'ts', (g.start_ns + ?2) / 1000.0,"                                 \
	" 'dur', (g.end_ns - g.start_ns) / 1000.0,"                                                \
	" 'args', json_patch('{}', json_object('bytes', g.bytes, 'correlation_id',"                \
	"  g.correlation_id, 'grid', g.grid, 'block', g.block, 'src_kind', g.src_kind,"            \
	"  'dst_kind', g.dst_kind, 'device', g.device, 'stream_id', g.stream_id,"                  \
	"  'symbol', CASE WHEN g.kind = 'kernel' AND ss_demangle(g.name) IS NOT g.name"            \
	"  THEN g.name END)))"                                                                     \
	" FROM gpu_activity g JOIN gpu_tracks t ON t.device = g.device"                            \
	"  AND t.stream_id = g.stream_id WHERE g.kind IN " GPU_KINDS                               \
	"  AND " SS_GPU_TIMED("g.") " ORDER BY t.n, g.start_ns, g.id"

/* Flows from the host call (its gpu_api record's start, on the calling thread's track) to the
 * GPU work it caused. */
#define GPU_FLOW_ID "?4 + " CHROME_GPU_FLOW_OFFSET " + g.id"
#define GPU_FLOWS_SQL                                                                              \
	"SELECT json_object('ph', 's', 'id', " GPU_FLOW_ID ", 'name', 'launch', 'cat', 'gpu',"     \
	"  'pid', ?1, 'tid', a.tid, 'ts', (a.start_ns + ?2) / 1000.0),"                            \
	" json_object('ph', 'f', 'bp', 'e', 'id', " GPU_FLOW_ID ", 'name', 'launch', 'cat', 'gpu',"\
	"  'pid', ?1, 'tid', " GPU_TRACK ", 'ts', (g.start_ns + ?2) / 1000.0)"                     \
	" FROM gpu_activity g JOIN gpu_tracks t ON t.device = g.device"                            \
	"  AND t.stream_id = g.stream_id JOIN gpu_calls a ON a.correlation_id = g.correlation_id" \
	" WHERE g.kind IN " GPU_KINDS " AND " SS_GPU_TIMED("g.") " ORDER BY g.id"

/* The reference (the first database): its path and host, and its collectives once needed
 * (collectives.c, as the report reads them). */
static struct {
	char *path, *host;
	long long rank;
	struct ss_collectives series;
	int loaded;
} ref;

static void ref_free(void)
{
	free(ref.path);
	free(ref.host);
	ss_collectives_free(&ref.series);
	memset(&ref, 0, sizeof(ref));
}

/* What the time axis does with one database (docs/export.md, "Clock alignment"). */
struct clock {
	long long offset_ns, spread_ns; /* spread -1: unknown (wall clock) */
	const char *method;
};

static int estimate_clock(const struct ss_export_db *d, struct clock *clock, char *err,
			  size_t errlen)
{
	struct ss_collectives mine = {0};
	long long *samples = NULL;
	size_t n = 0, capacity = 0;
	int code = SS_EXIT_OK;

	*clock = (struct clock){0, 0, "same-host"};
	if (d->index == 0 || strcmp(d->host, ref.host) == 0)
		return SS_EXIT_OK;
	if (!ref.loaded) {
		sqlite3 *db;

		ref.loaded = 1;
		code = ss_db_reopen(ref.path, &db, err, errlen); /* export's pass 1 read it */
		if (code == SS_EXIT_OK) {
			code = ss_collectives_load(db, ref.path, &ref.series, err, errlen);
			sqlite3_close(db);
		}
	}
	if (code == SS_EXIT_OK)
		code = ss_collectives_load(d->db, d->path, &mine, err, errlen);
	/* the instances of one collective (id_hash, API) both made; the fit takes the median, so
	 * the order of the samples does not matter */
	for (size_t a = 0; code == SS_EXIT_OK && a < mine.nseries; a++)
		for (size_t b = 0; code == SS_EXIT_OK && b < ref.series.nseries; b++) {
			const struct ss_series *x = &mine.series[a], *y = &ref.series.series[b];

			if (strcmp(x->hash, y->hash) != 0 || strcmp(x->op, y->op) != 0)
				continue;
			if (ss_clock_samples(x->c, x->n, y->c, y->n, &samples, &n, &capacity)) {
				snprintf(err, errlen, "%s: clock alignment: out of memory",
					 d->path);
				code = SS_EXIT_INTERNAL;
			}
		}
	if (code == SS_EXIT_OK) {
		if (ss_clock_fit(samples, n, &clock->offset_ns, &clock->spread_ns))
			clock->method = "collectives";
		else
			*clock = (struct clock){0, -1, "wall-clock"};
	}
	free(samples);
	ss_collectives_free(&mine);
	return code;
}

static int chrome_begin(struct ss_export_out *out, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	fprintf(out->file,
		"{\"displayTimeUnit\": \"ns\",\n"
		" \"otherData\": {\"generator\": \"syncspy %s\", \"times\": \"host-side call "
		"times (CLOCK_MONOTONIC, aligned on the wall clock); GPU times are not "
		"recorded\"},\n"
		" \"traceEvents\": [",
		PACKAGE_VERSION);
	return SS_EXIT_OK;
}

/* Writes each row's columns (JSON texts) as events of the array. */
static int write_rows_text(struct ss_export_out *out, const struct ss_export_db *d, const char *sql,
			   const char *label, size_t *counter, char *err, size_t errlen,
			   const char *text)
{
	sqlite3_stmt *stmt;
	char *name;
	int rc;

	(void)label; /* db.c words failures alike for every command (report and export agree) */
	rc = sqlite3_prepare_v2(d->db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(d->db, rc, d->path, err, errlen);
	if (d->rank >= 0)
		name = sqlite3_mprintf("rank %lld (%s %lld)", d->rank, d->host, d->os_pid);
	else
		name = sqlite3_mprintf("rank - (%s %lld)", d->host, d->os_pid);
	sqlite3_bind_int64(stmt, 1, d->pid);
	sqlite3_bind_int64(stmt, 2, d->shift_ns);
	sqlite3_bind_int64(stmt, 3,
			   CHROME_STREAM_TID_BASE + (long long)d->index * CHROME_STREAM_TRACKS);
	sqlite3_bind_int64(stmt, 4, (long long)d->index << CHROME_FLOW_ID_SHIFT);
	sqlite3_bind_text(stmt, 5, name, -1, sqlite3_free);
	sqlite3_bind_int64(stmt, 6, d->rank >= 0 ? d->rank : 1000000 + (long long)d->index);
	if (text) /* ?7: a query's own text */
		sqlite3_bind_text(stmt, 7, text, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		for (int col = 0; col < sqlite3_column_count(stmt); col++) {
			fputs(out->events++ ? ",\n" : "\n", out->file);
			ss_put_json_text(out->file, (const char *)sqlite3_column_text(stmt, col),
					 0);
		}
		if (counter)
			(*counter)++;
	}
	if (rc != SQLITE_DONE) {
		int code = ss_db_failure(d->db, rc, d->path, err, errlen);

		sqlite3_finalize(stmt);
		return code;
	}
	sqlite3_finalize(stmt);
	return ferror(out->file) ? SS_EXIT_INTERNAL : SS_EXIT_OK;
}

static int write_rows(struct ss_export_out *out, const struct ss_export_db *d, const char *sql,
		      const char *label, size_t *counter, char *err, size_t errlen)
{
	return write_rows_text(out, d, sql, label, counter, err, errlen, NULL);
}

/* The GPU tracks and flows of a database with CUPTI's tables; nothing (one lookup) without. */
static int chrome_gpu(struct ss_export_out *out, const struct ss_export_db *d, char *err,
		      size_t errlen)
{
	sqlite3_stmt *stmt;
	int activity = 0, api = 0, rc, code;

	rc = sqlite3_prepare_v2(d->db, HAS_GPU_SQL, -1, &stmt, NULL);
	if (rc == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
		activity = sqlite3_column_int(stmt, 0);
		api = sqlite3_column_int(stmt, 1);
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_OK)
		return ss_db_failure(d->db, rc, d->path, err, errlen);
	if (!activity)
		return SS_EXIT_OK;
	/* kernel names demangled (the symbol kept as args.symbol), by libstdc++'s demangler */
	rc = ss_demangle_attach(d->db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(d->db, GPU_SETUP_SQL, NULL, NULL, NULL);
	if (rc == SQLITE_OK && api)
		rc = sqlite3_exec(d->db, GPU_API_SETUP_SQL, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(d->db, rc, d->path, err, errlen);
	code = write_rows(out, d, GPU_METADATA_SQL, "GPU track names", NULL, err, errlen);
	if (code == SS_EXIT_OK)
		code = write_rows(out, d, GPU_LONG_TEXTS_SQL, "long texts", NULL, err, errlen);
	if (code == SS_EXIT_OK)
		code = write_rows(out, d, GPU_SLICES_SQL, "GPU tracks", NULL, err, errlen);
	if (code == SS_EXIT_OK && api)
		code = write_rows(out, d, GPU_FLOWS_SQL, "GPU flows", &out->flows, err, errlen);
	return code;
}

/* A database off the reference's host says how it was aligned: a process label (chrome://tracing
 * and Perfetto show it under the process name). */
#define CLOCK_LABEL_SQL                                                                            \
	"SELECT json_object('ph', 'M', 'name', 'process_labels', 'pid', ?1, 'tid', 0,"             \
	" 'args', json_object('labels', ?7))"

static int chrome_database(struct ss_export_out *out, const struct ss_export_db *given, char *err,
			   size_t errlen)
{
	struct ss_export_db placed = *given, *d = &placed;
	struct clock clock;
	int rc, code;

	if (d->index == 0) {
		ref_free();
		ref.path = strdup(d->path);
		ref.host = strdup(d->host);
		ref.rank = d->rank;
		if (!ref.path || !ref.host) {
			snprintf(err, errlen, "%s: out of memory", d->path);
			return SS_EXIT_INTERNAL;
		}
	}
	code = estimate_clock(d, &clock, err, errlen);
	if (code != SS_EXIT_OK)
		return code;
	d->shift_ns -= clock.offset_ns; /* "Clock alignment": 0 on the reference's host */
	rc = sqlite3_exec(d->db, SETUP_SQL, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return ss_db_failure(d->db, rc, d->path, err, errlen);
	code = write_rows(out, d, METADATA_SQL, "track names", NULL, err, errlen);
	if (code == SS_EXIT_OK)
		code = write_rows(out, d, LONG_TEXTS_SQL, "long texts", NULL, err, errlen);
	if (code == SS_EXIT_OK && strcmp(clock.method, "same-host") != 0) {
		char spread[64] = "unknown", *label;

		if (clock.spread_ns >= 0)
			snprintf(spread, sizeof(spread), "%.3f ms", (double)clock.spread_ns / 1e6);
		label = sqlite3_mprintf("clock offset %+.3f ms against %s (%s), by %s; spread %s",
					(double)clock.offset_ns / 1e6, ref.path, ref.host,
					clock.method, spread);
		code = write_rows_text(out, d, CLOCK_LABEL_SQL, "clock label", NULL, err, errlen,
					       label);
		sqlite3_free(label);
	}

	if (code == SS_EXIT_OK)
		code = write_rows(out, d, THREAD_SLICES_SQL, "thread tracks", NULL, err, errlen);
	if (code == SS_EXIT_OK)
		code = write_rows(out, d, STREAM_SLICES_SQL, "stream tracks", NULL, err, errlen);
	if (code == SS_EXIT_OK)
		code = write_rows(out, d, FLOWS_SQL, "flows", &out->flows, err, errlen);
	if (code == SS_EXIT_OK)
		code = chrome_gpu(out, d, err, errlen);
	return code;
}

static int chrome_end(struct ss_export_out *out, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	fputs("\n]}\n", out->file);
	ref_free();
	return SS_EXIT_OK;
}

const struct ss_export_ops ss_export_chrome = {
    .begin = chrome_begin,
    .database = chrome_database,
    .end = chrome_end,
};
