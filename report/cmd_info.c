/*
 * report/cmd_info.c: `syncspy info DB|DIR...`, what one or more recordings hold.
 *
 * For each database: its meta rows (sorted by key), the calls per API and class, the totals per
 * class, and the dropped-event counters. The text is plain and aligned, in a stable order (sync
 * classes S1-S7 first, then the others, as in model.h; then API name), so that golden tests can
 * compare it. --json gives the same content as one JSON array built by SQLite's own JSON
 * functions. A database recorded in aggregate mode (meta.mode, docs/recording.md) counts its
 * enqueues' aggregates among the calls and has a section of its own.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "db.h"
#include "text_safe.h"

/*
 * Calls per (class, API). A calls row is one call except in class S7, where it stands for a
 * polling loop of `count` queries (SCHEMA-5). A row's class can differ from its API's usual
 * class (an async copy from pageable memory is S5), so the class comes from calls.
 * Classes sort sync points first (sync_point = 1: S1-S7), then E1-E3, N1, N2, X1.
 */
#define CALLS_PER_API_SQL                                                                          \
	"SELECT a.name AS api, c.class AS class,"                                                  \
	" sum(CASE WHEN c.class = 'S7' THEN c.count ELSE 1 END) AS calls,"                         \
	" sum(max(c.end_ns - c.start_ns, 0)) AS total_ns"                                          \
	" FROM calls c JOIN apis a ON a.id = c.api_id"                                             \
	" LEFT JOIN classes k ON k.class = c.class"                                                \
	" GROUP BY c.class, a.name"                                                                \
	" ORDER BY coalesce(k.sync_point, 0) DESC, c.class, a.name"

/* Totals per class, every class of the database listed (a zero says "none of these"). */
#define CALLS_PER_CLASS_SQL                                                                        \
	"SELECT k.class AS class, CASE WHEN k.sync_point THEN 'yes' ELSE 'no' END AS sync,"        \
	" coalesce(t.calls, 0) AS calls, coalesce(t.total_ns, 0) AS total_ns"                      \
	" FROM classes k LEFT JOIN (SELECT class,"                                                 \
	"  sum(CASE WHEN class = 'S7' THEN count ELSE 1 END) AS calls,"                            \
	"  sum(max(end_ns - start_ns, 0)) AS total_ns FROM calls GROUP BY class) t ON t.class = "  \
	"k.class"                                                                                  \
	" ORDER BY k.sync_point DESC, k.class"

/* The calls that are sync points (classes with sync_point = 1) and the time they blocked. */
#define SYNC_TOTAL_SQL                                                                             \
	"SELECT coalesce(sum(CASE WHEN c.class = 'S7' THEN c.count ELSE 1 END), 0) AS calls,"      \
	" coalesce(sum(max(c.end_ns - c.start_ns, 0)), 0) AS blocked_ns"                           \
	" FROM calls c JOIN classes k ON k.class = c.class WHERE k.sync_point"

#define META_SQL "SELECT key, '=', value FROM meta ORDER BY key"

#define DROPPED_SQL "SELECT key, '=', value FROM meta WHERE key GLOB 'dropped*' ORDER BY key"

/*
 * Aggregate mode: the calls rows and the enqueues' aggregates (enqueue_aggregates: count calls,
 * host_ns of them where timed) as one source of (api_id, class, calls, ns), summed as above.
 */
#define AGG_CALLS_SRC                                                                              \
	"(SELECT api_id, class, CASE WHEN class = 'S7' THEN count ELSE 1 END AS n,"                \
	" max(end_ns - start_ns, 0) AS ns FROM calls UNION ALL"                                    \
	" SELECT api_id, class, count, coalesce(host_ns, 0) FROM enqueue_aggregates)"
#define CALLS_PER_API_AGG_SQL                                                                      \
	"SELECT a.name AS api, c.class AS class, sum(c.n) AS calls, sum(c.ns) AS total_ns"         \
	" FROM " AGG_CALLS_SRC " c JOIN apis a ON a.id = c.api_id"                                 \
	" LEFT JOIN classes k ON k.class = c.class"                                                \
	" GROUP BY c.class, a.name"                                                                \
	" ORDER BY coalesce(k.sync_point, 0) DESC, c.class, a.name"
#define CALLS_PER_CLASS_AGG_SQL                                                                    \
	"SELECT k.class AS class, CASE WHEN k.sync_point THEN 'yes' ELSE 'no' END AS sync,"        \
	" coalesce(t.calls, 0) AS calls, coalesce(t.total_ns, 0) AS total_ns"                      \
	" FROM classes k LEFT JOIN (SELECT class, sum(n) AS calls, sum(ns) AS total_ns"            \
	"  FROM " AGG_CALLS_SRC " GROUP BY class) t ON t.class = k.class"                          \
	" ORDER BY k.sync_point DESC, k.class"
/* What aggregate mode kept instead of the enqueues' rows. */
#define AGGREGATE_SQL                                                                              \
	"SELECT 'enqueues' AS k, '=' AS eq,"                                                       \
	" (SELECT coalesce(sum(count), 0) FROM enqueue_aggregates) AS v"                           \
	" UNION ALL SELECT 'aggregates', '=', (SELECT count(*) FROM enqueue_aggregates)"           \
	" UNION ALL SELECT 'step_figures', '=', (SELECT count(*) FROM step_figures)"
#define IS_AGGREGATE_SQL                                                                           \
	"SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'mode' AND value = 'aggregate')"            \
	" AND (SELECT count(*) FROM sqlite_master WHERE type = 'table'"                            \
	" AND name IN ('enqueue_aggregates', 'step_figures')) = 2"

/* One JSON object per database, from the same queries as the text (aggregate mode: with an
 * "aggregate" object). */
#define JSON_OF(per_api, per_class, extra)                                                         \
	"SELECT json_object('path', ?1,"                                                           \
	" 'meta', json((SELECT json_group_object(key, value) FROM (" META_SQL "))),"               \
	" 'apis', json((SELECT json_group_array(json_object('api', api, 'class', class,"           \
	"  'calls', calls, 'total_ns', total_ns)) FROM (" per_api "))),"                           \
	" 'classes', json((SELECT json_group_array(json_object('class', class,"                    \
	"  'sync_point', sync = 'yes', 'calls', calls, 'total_ns', total_ns))"                     \
	"  FROM (" per_class "))),"                                                                \
	" 'sync_points', json((SELECT json_object('calls', calls, 'blocked_ns', blocked_ns)"       \
	"  FROM (" SYNC_TOTAL_SQL "))),"                                                           \
	" 'dropped', json((SELECT json_group_object(key, value) FROM (" DROPPED_SQL ")))" extra    \
	")"
#define JSON_SQL JSON_OF(CALLS_PER_API_SQL, CALLS_PER_CLASS_SQL, "")
#define JSON_AGG_SQL                                                                               \
	JSON_OF(CALLS_PER_API_AGG_SQL, CALLS_PER_CLASS_AGG_SQL,                                    \
		", 'aggregate', json((SELECT json_group_object(k, v) FROM (SELECT k,"              \
		" v FROM (" AGGREGATE_SQL "))))")

static const struct ss_rows_style key_value_style = {"  ", " ", 0, "(none)"};
static const struct ss_rows_style table_style = {"  ", NULL, 1, "(none)"};

static int print_section(sqlite3 *db, const char *path, const char *title, const char *sql,
			 const struct ss_rows_style *style, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc, code;

	rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	printf("%s\n", title);
	code = ss_db_print_rows(db, stmt, path, stdout, style, err, errlen);
	sqlite3_finalize(stmt);
	return code;
}

static int print_sync_total(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc, code = SS_EXIT_OK;

	rc = sqlite3_prepare_v2(db, SYNC_TOTAL_SQL, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		printf("  sync points: %lld calls, %lld ns blocked\n",
		       (long long)sqlite3_column_int64(stmt, 0),
		       (long long)sqlite3_column_int64(stmt, 1));
	else
		code = ss_db_failure(db, rc, path, err, errlen);
	sqlite3_finalize(stmt);
	return code;
}

/* exit_reason is written last, with file_final, when the recording library closes the file. */
static int print_state(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc, code = SS_EXIT_OK;

	rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'exit_reason'", -1, &stmt,
				NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		fputs("state: finished (exit_reason ", stdout);
		ss_put_printable(stdout, (const char *)sqlite3_column_text(stmt, 0));
		fputs(")\n", stdout);
	} else if (rc == SQLITE_DONE)
		printf("state: unfinished (no exit_reason: still running, or killed)\n");
	else
		code = ss_db_failure(db, rc, path, err, errlen);
	sqlite3_finalize(stmt);
	return code;
}

/* 1 when the database was recorded in aggregate mode with its tables, 0 when not, -1 on error. */
static int is_aggregate(sqlite3 *db)
{
	sqlite3_stmt *stmt;
	int aggregate = -1;

	if (sqlite3_prepare_v2(db, IS_AGGREGATE_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		aggregate = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	return aggregate;
}

static int print_text(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	int code, aggregate = is_aggregate(db);

	fputs("== ", stdout);
	ss_put_printable(stdout, path);
	fputc('\n', stdout);
	code = aggregate < 0 ? ss_db_failure(db, sqlite3_errcode(db), path, err, errlen)
			     : print_state(db, path, err, errlen);
	if (code == SS_EXIT_OK)
		code = print_section(db, path, "meta:", META_SQL, &key_value_style, err, errlen);
	if (code == SS_EXIT_OK)
		code = print_section(db, path, "\ncalls per API:",
				     aggregate ? CALLS_PER_API_AGG_SQL : CALLS_PER_API_SQL,
				     &table_style, err, errlen);
	if (code == SS_EXIT_OK)
		code = print_section(db, path, "\ncalls per class:",
				     aggregate ? CALLS_PER_CLASS_AGG_SQL : CALLS_PER_CLASS_SQL,
				     &table_style, err, errlen);

	if (code == SS_EXIT_OK)
		code = print_sync_total(db, path, err, errlen);
	if (code == SS_EXIT_OK && aggregate)
		code = print_section(
		    db, path,
		    "\naggregate mode (enqueues counted per site, not a row each):", AGGREGATE_SQL,
		    &key_value_style, err, errlen);
	if (code == SS_EXIT_OK)
		code = print_section(db, path, "\ndropped events:", DROPPED_SQL, &key_value_style,
				     err, errlen);
	return code;
}

static int print_json(sqlite3 *db, const char *path, int first, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc, code = SS_EXIT_OK, aggregate = is_aggregate(db);

	if (aggregate < 0)
		return ss_db_failure(db, sqlite3_errcode(db), path, err, errlen);
	rc = sqlite3_prepare_v2(db, aggregate ? JSON_AGG_SQL : JSON_SQL, -1, &stmt, NULL);
	if (rc != SQLITE_OK) {
		if (strstr(sqlite3_errmsg(db), "no such function")) {
			snprintf(err, errlen, "--json: this SQLite (%s) lacks the JSON functions",
				 sqlite3_libversion());
			return SS_EXIT_INTERNAL;
		}
		return ss_db_failure(db, rc, path, err, errlen);
	}
	sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		fputs(first ? "[\n" : ",\n", stdout);
		ss_put_json_text(stdout, (const char *)sqlite3_column_text(stmt, 0), 0);
	} else
		code = ss_db_failure(db, rc, path, err, errlen);
	sqlite3_finalize(stmt);
	return code;
}

int cmd_info(int argc, char **argv)
{
	static const struct option options[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"check", no_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ss_db_list list = {0};
	char err[1024];
	int json = 0, check = 0, printed = 0, text_started = 0, worst = SS_EXIT_OK, ch, code;

	opterr = 0;
	optind = 0; /* glibc: start a fresh scan */
	while ((ch = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'c':
			check = 1;
			break;
		case 'h':
			ss_command_usage(stdout, "info");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("info", ch, argv);
		}
	}
	if (optind == argc)
		return ss_error(SS_EXIT_INPUT, "info: name at least one database or directory");
	code = ss_db_expand(argc - optind, argv + optind, &list, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", err);
	}
	/* A bad database is reported and skipped: the others of a run are still worth seeing. */
	for (size_t i = 0; i < list.count; i++) {
		const char *path = list.paths[i];
		sqlite3 *db;

		code = ss_db_open(path, &db, err, sizeof(err));
		if (code == SS_EXIT_OK && check) {
			code = ss_db_integrity_check(db, path, err, sizeof(err));
			if (code != SS_EXIT_OK)
				sqlite3_close(db);
		}
		if (code == SS_EXIT_OK) {
			if (json) {
				code = print_json(db, path, !printed, err, sizeof(err));
			} else {
				if (text_started)
					putchar('\n');
				text_started = 1;
				code = print_text(db, path, err, sizeof(err));
			}
			sqlite3_close(db);
			printed += code == SS_EXIT_OK;
		}
		if (code != SS_EXIT_OK) {
			fflush(stdout);
			ss_error(code, "%s", err);
			if (code > worst)
				worst = code;
		}
	}
	if (json)
		fputs(printed ? "\n]\n" : "[]\n", stdout);
	ss_db_list_free(&list);
	return worst;
}
