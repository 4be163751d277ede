/*
 * syncspy/schema.h: the database schema, shared by the writer in libsyncspy.so and every
 * reader in the syncspy command. docs/schema.md documents each table and column; a change
 * to anything here bumps SS_SCHEMA_VERSION, and readers refuse versions they do not know.
 *
 * Invariants (cited in code as SCHEMA-n):
 *   SCHEMA-1  meta.schema_version is written in the same transaction that creates the tables,
 *             so a database with tables and no version is not a syncspy database.
 *   SCHEMA-2  calls.api_id always names a row of apis, and calls.class a row of classes.
 *   SCHEMA-3  times (start_ns, end_ns, first_ns, *_mono_ns) are CLOCK_MONOTONIC nanoseconds of
 *             the recording host; meta.start_realtime_ns pairs with meta.start_mono_ns to turn
 *             them into wall-clock time.
 *   SCHEMA-4  calls.stream is NULL for calls without a stream, 1 for the legacy default stream,
 *             2 for the per-thread default stream (of calls.tid), else the handle value.
 *   SCHEMA-5  one calls row is one intercepted call, except class S7, where one row stands
 *             for an uninterrupted polling loop of `count` queries of one object by one thread.
 *   SCHEMA-6  calls.site_id names the user call site: the first Python frame outside the
 *             frameworks when a Python stack was taken (calls.py_stack_id), else the native
 *             return address into the caller of the entry point (docs/attribution.md).
 *
 * Version history: 1 (first); 2 adds stacks, calls.py_stack_id, calls.native_stack_id and
 * ranges (NVTX, steps); 3 adds the extension table capture (capture ranges); 4 adds meta.mode
 * and the extension tables of aggregate mode (enqueue_aggregates, enqueue_histogram,
 * step_figures). Readers accept SS_SCHEMA_VERSION_MIN to SS_SCHEMA_VERSION: a version 2 file is
 * one without capture ranges, a version 2 or 3 file one recorded in trace mode.
 */
#ifndef SYNCSPY_SCHEMA_H
#define SYNCSPY_SCHEMA_H

#define SS_SCHEMA_VERSION     4
#define SS_SCHEMA_VERSION_MIN 2 /* the oldest version readers still read */

/* Tables. Lookup tables (classes, apis, memkinds, dirs) are filled by the writer from the same
 * X-macros the shim is built from, so every database describes itself. */
#define SS_SCHEMA_SQL                                                                              \
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;\n"                          \
	"CREATE TABLE classes(class TEXT PRIMARY KEY, sync_point INTEGER NOT NULL,"                \
	" description TEXT NOT NULL) WITHOUT ROWID;\n"                                             \
	"CREATE TABLE apis(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"                     \
	" layer TEXT NOT NULL, class TEXT NOT NULL);\n"                                            \
	"CREATE TABLE memkinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"                     \
	"CREATE TABLE dirs(id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"                         \
	"CREATE TABLE threads(tid INTEGER PRIMARY KEY, name TEXT, first_ns INTEGER);\n"            \
	"CREATE TABLE sites(id INTEGER PRIMARY KEY, address INTEGER NOT NULL, module TEXT,"        \
	" module_offset INTEGER, symbol TEXT, text TEXT);\n"                                       \
	"CREATE TABLE calls(id INTEGER PRIMARY KEY, tid INTEGER NOT NULL,"                         \
	" api_id INTEGER NOT NULL, class TEXT NOT NULL,"                                           \
	" start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"                                     \
	" stream INTEGER, event INTEGER, comm INTEGER, ptr INTEGER, bytes INTEGER, dir INTEGER,"   \
	" host_mem INTEGER, ret INTEGER NOT NULL, site_id INTEGER,"                                \
	" count INTEGER NOT NULL DEFAULT 1, aux INTEGER, py_stack_id INTEGER,"                     \
	" native_stack_id INTEGER);\n"                                                             \
	"CREATE TABLE stacks(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, hash INTEGER NOT NULL,"   \
	" depth INTEGER NOT NULL, frames TEXT NOT NULL);\n"                                        \
	"CREATE TABLE ranges(id INTEGER PRIMARY KEY, tid INTEGER NOT NULL, kind TEXT NOT NULL,"    \
	" name TEXT, start_ns INTEGER NOT NULL, end_ns INTEGER, depth INTEGER);\n"                 \
	"CREATE TABLE comms(comm INTEGER NOT NULL, id_hash TEXT, rank INTEGER, nranks INTEGER,"    \
	" parent INTEGER, api_id INTEGER, created_ns INTEGER, destroyed_ns INTEGER);\n"            \
	"CREATE TABLE streams(stream INTEGER NOT NULL, flags INTEGER, priority INTEGER,"           \
	" api_id INTEGER, created_ns INTEGER, destroyed_ns INTEGER);\n"                            \
	"CREATE VIEW api_calls AS SELECT c.id AS id, a.name AS api, c.class AS class,"             \
	" c.start_ns AS start_ns, c.end_ns AS end_ns, c.tid AS tid,"                               \
	" CASE WHEN c.stream IS NULL THEN NULL WHEN c.stream = 1 THEN 'legacy'"                    \
	" WHEN c.stream = 2 THEN 'per-thread' ELSE printf('0x%x', c.stream) END AS stream,"        \
	" c.bytes AS bytes, m.name AS host_mem, c.ret AS ret, s.text AS site,"                     \
	" CASE WHEN c.event IS NULL THEN NULL ELSE printf('0x%x', c.event) END AS event,"          \
	" CASE WHEN c.comm IS NULL THEN NULL ELSE printf('0x%x', c.comm) END AS comm,"             \
	" d.name AS dir, c.count AS count, c.aux AS aux, a.layer AS layer,"                        \
	" CASE WHEN c.ptr IS NULL THEN NULL ELSE printf('0x%x', c.ptr) END AS ptr,"                \
	" (SELECT frames FROM stacks st WHERE st.id = c.py_stack_id) AS py_stack,"                 \
	" (SELECT frames FROM stacks st WHERE st.id = c.native_stack_id) AS native_stack"          \
	" FROM calls c JOIN apis a ON a.id = c.api_id"                                             \
	" LEFT JOIN memkinds m ON m.id = c.host_mem LEFT JOIN dirs d ON d.id = c.dir"              \
	" LEFT JOIN sites s ON s.id = c.site_id;\n"

/* Extension tables: created only when there is something to put in them, so a recording without
 * native sites or without CUPTI keeps exactly SS_SCHEMA_SQL; readers treat them as optional
 * (docs/schema.md, docs/cupti.md). Columns are only ever added at the end. */
#define SS_MODULES_SQL                                                                             \
	"CREATE TABLE IF NOT EXISTS modules(path TEXT PRIMARY KEY, build_id TEXT, file TEXT);\n"
#define SS_GPU_TABLES_SQL                                                                          \
	"CREATE TABLE IF NOT EXISTS gpu_activity(id INTEGER PRIMARY KEY, kind TEXT NOT NULL,"      \
	" start_ns INTEGER, end_ns INTEGER, device INTEGER, stream_id INTEGER,"                    \
	" correlation_id INTEGER, bytes INTEGER, copy_kind INTEGER, src_kind TEXT, dst_kind TEXT," \
	" detail INTEGER, name TEXT, grid TEXT, block TEXT, symbol TEXT);\n"                       \
	"CREATE TABLE IF NOT EXISTS gpu_api(correlation_id INTEGER, layer TEXT, cbid INTEGER,"     \
	" tid INTEGER, start_ns INTEGER, end_ns INTEGER, name TEXT, cupti_tid INTEGER);\n"
/* When the GPU timeline was off (syncspy_gpu_trace, SYNCSPY_CUPTI_SAMPLE): GPU activity then
 * went unrecorded. */
#define SS_GPU_PAUSED_SQL                                                                          \
	"CREATE TABLE IF NOT EXISTS gpu_paused(start_ns INTEGER, end_ns INTEGER);\n"
/* The intervals a capture range recorded (interpose/capture.h, SHIM-6), in time order: created
 * when the recording had a capture range; end_ns NULL while (or when killed while) recording. */
#define SS_CAPTURE_SQL                                                                             \
	"CREATE TABLE IF NOT EXISTS capture(start_ns INTEGER NOT NULL, end_ns INTEGER,"            \
	" started_by TEXT, stopped_by TEXT);\n"
/* Aggregate mode (SYNCSPY_MODE=aggregate, meta.mode; interpose/aggregate.c, SHIM-7): created
 * with the schema of such a recording only. The enqueues (E1-E3, N2) that trace mode writes as
 * calls rows, counted per (thread, API, class, stream, direction, host memory kind, site): one
 * row per key, rewritten at every commit; host_ns and max_ns NULL where the calls were not
 * timed (E1-E3 without SYNCSPY_ENQUEUE_TIMING). enqueue_histogram: per aggregate, how many of
 * its timed calls took a host time of bit length `bucket` (0: 0 ns; b: [2^(b-1), 2^b) ns).
 * step_figures: one row per syncspy_step step of the process's stepping thread, with the
 * enqueues and sync points of every thread that started in it. */
#define SS_AGGREGATE_SQL                                                                           \
	"CREATE TABLE IF NOT EXISTS enqueue_aggregates(id INTEGER PRIMARY KEY,"                    \
	" tid INTEGER NOT NULL, api_id INTEGER NOT NULL, class TEXT NOT NULL, stream INTEGER,"     \
	" dir INTEGER, host_mem INTEGER, site_id INTEGER, count INTEGER NOT NULL, bytes INTEGER,"  \
	" errors INTEGER NOT NULL, first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL,"           \
	" host_ns INTEGER, max_ns INTEGER);\n"                                                     \
	"CREATE TABLE IF NOT EXISTS enqueue_histogram(aggregate_id INTEGER NOT NULL,"              \
	" bucket INTEGER NOT NULL, count INTEGER NOT NULL, PRIMARY KEY(aggregate_id, bucket))"     \
	" WITHOUT ROWID;\n"                                                                        \
	"CREATE TABLE IF NOT EXISTS step_figures(id INTEGER PRIMARY KEY, tid INTEGER NOT NULL,"    \
	" step INTEGER NOT NULL, name TEXT, start_ns INTEGER NOT NULL, end_ns INTEGER,"            \
	" enqueues INTEGER NOT NULL, syncs INTEGER NOT NULL, sync_ns INTEGER NOT NULL);\n"

#endif
