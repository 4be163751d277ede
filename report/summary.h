/*
 * report/summary.h: the per-node summary `syncspy summarize` writes and `report`/`check` read
 * beside databases (docs/cli.md, "Large jobs"; docs/schema.md, "Summaries"). A summary is a
 * SQLite file of its own kind: what the analysis keeps of each rank database it read (the
 * rank's figures, its findings before ANALYSIS-5 folds them, its range statistics, its
 * collectives for ANALYSIS-4 and the cross-rank rules) and what `check` reads of it (sync
 * points per class, API, site and whether they lie outside the steady state), so that a job's
 * databases never have to be copied to one place.
 *
 * Invariants (cited in code as SUMMARY-n):
 *   SUMMARY-1  a summary says what it is twice: the SQLite header's application_id is
 *              SS_SUMMARY_APPLICATION_ID and meta.kind is SS_SUMMARY_KIND, with
 *              meta.summary_version SS_SUMMARY_VERSION; readers refuse other versions, and
 *              commands that need a recording refuse a summary by name.
 *   SUMMARY-2  a rank read from a summary is what load_one made of its database: report and
 *              check give the findings they give on the databases (t410).
 *   SUMMARY-3  every text is stored once per summary (strings), referenced by id: ranks of one
 *              job repeat the same site texts and details.
 */
#ifndef SYNCSPY_REPORT_SUMMARY_H
#define SYNCSPY_REPORT_SUMMARY_H

#include <stddef.h>

#include <sqlite3.h>

/* "SSUM" in the SQLite header (PRAGMA application_id): found without opening the file as SQL. */
#define SS_SUMMARY_APPLICATION_ID 0x5353554d
#define SS_SUMMARY_KIND		  "syncspy-summary"
#define SS_SUMMARY_VERSION	  2 /* 2: the ranks' aggregate-mode fields (docs/schema.md) */

/*
 * The fields of struct ss_rank a summary keeps, one column each of its ranks table:
 * X(field, kind) with kind LL (long long), INT (int), DBL (double), STR (owned text, may be
 * NULL: a strings id) or SRC (steps_source: one of steps.h's ss_steps_source_names). What the
 * cross-rank steps compute (deviates, clock_offset_*) is not kept: they are computed again on
 * merging.
 */
#define SS_SUMMARY_RANK_FIELDS(X)                                                                  \
	X(path, STR)                                                                               \
	X(rank, LL)                                                                                \
	X(world_size, LL)                                                                          \
	X(host, STR)                                                                               \
	X(pid, LL)                                                                                 \
	X(finished, INT)                                                                           \
	X(wall_ns, LL)                                                                             \
	X(calls_json, STR)                                                                         \
	X(sync_points, LL)                                                                         \
	X(blocked_ns, LL)                                                                          \
	X(copies, LL)                                                                              \
	X(copy_bytes, LL)                                                                          \
	X(nccl_ops, LL)                                                                            \
	X(nccl_ns, LL)                                                                             \
	X(dropped, LL)                                                                             \
	X(backwards, LL)                                                                           \
	X(dropped_calls, LL)                                                                       \
	X(dropped_by_class, STR)                                                                   \
	X(start_mono_ns, LL)                                                                       \
	X(start_realtime_ns, LL)                                                                   \
	X(gpu, INT)                                                                                \
	X(cupti, STR)                                                                              \
	X(cupti_pauses, LL)                                                                        \
	X(cupti_paused_ns, LL)                                                                     \
	X(cupti_sample, STR)                                                                       \
	X(cupti_windows, LL)                                                                       \
	X(cupti_auto_permille, LL)                                                                 \
	X(cupti_traced_ns, LL)                                                                     \
	X(capture_range, STR)                                                                      \
	X(capture_ranges, LL)                                                                      \
	X(captured_ns, LL)                                                                         \
	X(capture_skipped, LL)                                                                     \
	X(capture_skipped_by_class, STR)                                                           \
	X(aggregate, INT)                                                                          \
	X(aggregated_enqueues, LL)                                                                 \
	X(enqueue_aggregates, LL)                                                                  \
	X(step_enqueues, LL)                                                                       \
	X(comm_ns, LL)                                                                             \
	X(comm_overlap, DBL)                                                                       \
	X(exposed_comm_ns, LL)                                                                     \
	X(steps_source, SRC)                                                                       \
	X(steps_name, STR)                                                                         \
	X(steps, LL)                                                                               \
	X(steady_steps, LL)                                                                        \
	X(step_ns, LL)                                                                             \
	X(steady_sync_points, LL)                                                                  \
	X(steady_blocked_ns, LL)                                                                   \
	X(steady_gpu_idle_ns, LL)                                                                  \
	X(steady_start_ns, LL)                                                                     \
	X(steady_end_ns, LL)

#define SS_SUMMARY_COLUMN(field, kind) #field ","
/* The summary's tables (SUMMARY-3: text columns hold ids of strings). ranks.idx is the rank's
 * place in the summary (the order summarize read the databases in); every other table names
 * it. check_rank and check_dropped are meta.rank and meta.dropped_events as `check` reads them. */
#define SS_SUMMARY_SCHEMA_SQL                                                                      \
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"                            \
	"CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT NOT NULL);"                        \
	"CREATE TABLE ranks(idx INTEGER PRIMARY KEY, " SS_SUMMARY_RANK_FIELDS(                     \
	    SS_SUMMARY_COLUMN) " check_rank, check_dropped);"                                      \
			       "CREATE TABLE findings(idx INTEGER NOT NULL, rule, severity, "      \
			       "phase, cleared, steps,"                                            \
			       " cost_ns, cost_per_step_ns, share, count, blocked_ns, worst_ns, "  \
			       "bytes, estimate_ns,"                                               \
			       " gpu_idle_ns, site, detail);"                                      \
			       "CREATE TABLE ranges(idx INTEGER NOT NULL, name, kind, instances, " \
			       "sync_min, sync_median,"                                            \
			       " sync_max, sync_total, blocked_median_ns, blocked_max_ns);"        \
			       "CREATE TABLE collectives(idx INTEGER NOT NULL, hash, op, n, "      \
			       "calls BLOB);"                                                      \
			       "CREATE TABLE check_rows(idx INTEGER NOT NULL, class, api, site, "  \
			       "outside_steady, calls,"                                            \
			       " blocked_ns);"                                                     \
			       "CREATE TABLE apis(name);"

/* One message per bad summary: these say why (docs/cli.md, exit 2). */

/* 1 when path's first 100 bytes are a SQLite header with SS_SUMMARY_APPLICATION_ID
 * (SUMMARY-1), 0 otherwise (a database, anything else, or a file that cannot be read: the
 * command's own open says what is wrong with it). */
int ss_summary_is(const char *path);

/*
 * Opens a summary read-only and checks it (SUMMARY-1: kind, version; its tables); *nranks is
 * the number of ranks it holds. Returns an ss_exit code with one message in err ("PATH: ...":
 * exit 2 for a damaged or foreign file, 3 when out of memory).
 */
int ss_summary_open(const char *path, sqlite3 **db, long long *nranks, char *err, size_t errlen);

/* A failed query on an open summary: exit 2 with "PATH: damaged syncspy summary: WHY", or 3
 * when SQLite ran out of memory. */
int ss_summary_failure(sqlite3 *db, int rc, const char *path, char *err, size_t errlen);

/* A collective series' calls as a summary stores them (summary.c: the delta of the start's
 * delta and the duration's change as zigzag LEB128 varints, regular stretches as one count):
 * *out malloc'd, *len its bytes. 0 when out of memory. */
struct ss_collective_call;
int ss_summary_encode_calls(const struct ss_collective_call *c, size_t n, unsigned char **out,
			    size_t *len);
/* The inverse into c (n elements; NULL: only check): 0 when the blob does not hold exactly n
 * calls. */
int ss_summary_decode_calls(const unsigned char *blob, size_t len, struct ss_collective_call *c,
			    size_t n);

#endif
