/*
 * report/cmd_export.c: `syncspy export [--format chrome] [--start S] [--end S] [--syncs-only]
 * -o FILE DB|DIR...`, one trace file for a timeline viewer from one or many rank databases, or
 * from a part of them (a long run's trace that Perfetto can open).
 *
 * What every format needs is done here (export.h): check each database, find its rank, pid and
 * host, put all of them on one time axis (EXPORT-1) and give each one a distinct process id
 * (EXPORT-2); the backend named by --format (formats.h's table) writes the rows. The file is
 * written beside its final name and renamed when complete, so a viewer never opens half a
 * trace.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "db.h"
#include "lines.h"
#include "export.h"
#include "formats.h"
#include "outfile.h"
#include "text_safe.h"

/* What alignment and naming need from one database; the first call's wall-clock time in ns
 * (NULL when there are no calls) places it on the axis. */
#define PLACE_SQL                                                                                  \
	"SELECT (SELECT value FROM meta WHERE key = 'rank'),"                                      \
	" coalesce((SELECT value FROM meta WHERE key = 'pid'), 0),"                                \
	" coalesce((SELECT value FROM meta WHERE key = 'host'), '?'),"                             \
	" (SELECT value FROM meta WHERE key = 'start_realtime_ns')"                                \
	"  - (SELECT value FROM meta WHERE key = 'start_mono_ns'),"                                \
	" t.first, t.n, t.lo, t.hi,"                                                               \
	" (SELECT value FROM meta WHERE key = 'start_mono_ns'),"                                   \
	" (SELECT value FROM meta WHERE key = 'start_realtime_ns'),"                               \
	" EXISTS (SELECT 1 FROM meta WHERE key = 'mode' AND value = 'aggregate')"                  \
	" FROM (SELECT min(start_ns) AS first, count(*) AS n,"                                     \
	"  min(min(start_ns), min(end_ns)) AS lo,"                                                 \
	"  max(max(start_ns), max(end_ns)) AS hi FROM calls) t"

struct placed_db {
	struct ss_export_db info;
	char *host;
	long long start_mono;	/* meta.start_mono_ns: --start and --end count from it */
	long long mono_to_real; /* add to a CLOCK_MONOTONIC time: wall-clock ns */
	int has_calls;
	long long first_real;
	int aggregate; /* recorded in aggregate mode: its enqueues are not rows (a note says so) */
};

static int place(sqlite3 *db, const char *path, struct placed_db *p, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc, code = SS_EXIT_OK;

	rc = sqlite3_prepare_v2(db, PLACE_SQL, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		code = ss_db_failure(db, rc, path, err, errlen);
		sqlite3_finalize(stmt);
		return code;
	}
	p->info.rank =
	    sqlite3_column_type(stmt, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(stmt, 0);
	p->info.os_pid = sqlite3_column_int64(stmt, 1);
	p->host = strdup((const char *)sqlite3_column_text(stmt, 2));
	/* Without the pair (never written by a working shim), the database keeps its own clock. */
	p->mono_to_real = sqlite3_column_int64(stmt, 3);
	p->has_calls = sqlite3_column_type(stmt, 4) != SQLITE_NULL;
	p->first_real = sqlite3_column_int64(stmt, 4) + p->mono_to_real;
	p->info.calls = sqlite3_column_int64(stmt, 5);
	p->start_mono = sqlite3_column_int64(stmt, 8);
	p->aggregate = sqlite3_column_int(stmt, 10);
	/* times the report refuses (db.h's range) are refused here too, in the same words */
	if (p->has_calls && (sqlite3_column_int64(stmt, 6) < 0 ||
			     sqlite3_column_int64(stmt, 7) > SS_DB_TIME_MAX_NS)) {
		sqlite3_finalize(stmt);
		if (ss_db_diagnose(db, path, err, errlen) != SS_EXIT_OK)
			return SS_EXIT_INPUT;
		snprintf(err, errlen, "%s: damaged syncspy database: a call's time out of range",
			 path);
		return SS_EXIT_INPUT;
	}
	for (int col = 8; col <= 9; col++) {
		long long v = sqlite3_column_int64(stmt, col);
		long long max = col == 9 ? SS_DB_REALTIME_MAX_NS : SS_DB_TIME_MAX_NS;

		if (v < 0 || v > max) {
			snprintf(
			    err, errlen,
			    "%s: damaged syncspy database: meta.%s out of range (%lld; from 0 to "
			    "%lld)",
			    path, col == 9 ? "start_realtime_ns" : "start_mono_ns", v, max);
			sqlite3_finalize(stmt);
			return SS_EXIT_INPUT;
		}
	}
	sqlite3_finalize(stmt);
	if (!p->host)
		return ss_error(SS_EXIT_INTERNAL, "out of memory");
	return SS_EXIT_OK;
}

/*
 * --start, --end, --syncs-only (docs/export.md, "Part of a recording"): which rows the backend
 * sees. TEMP views named as the tables shadow them on the backend's connection (SQLite looks in
 * temp first), so that every format gets the same rows without a line of its own: calls that
 * start in [start, end) of the database's own time (seconds from meta.start_mono_ns), S1-S7
 * only with --syncs-only; GPU work and API records that start there, none with --syncs-only
 * (none of it is a host sync). The trace's time axis stays the whole recording's (EXPORT-1).
 */
struct export_filter {
	int active;
	long long start_ns, end_ns; /* from the recording's start; end -1: to its end */
	int syncs_only;
};

/* Seconds, a decimal >= 0, as ns; -1 when TEXT is not one. */
static long long parse_seconds(const char *text)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(text, &end);
	if (errno || end == text || *end || !(s >= 0) || s > 1e9)
		return -1;
	return (long long)(s * 1e9 + 0.5);
}

static int apply_filter(const struct export_filter *f, const struct placed_db *p, char *err,
			size_t errlen)
{
	static const char *const gpu_tables[] = {"gpu_activity", "gpu_api"};
	char range[96], *sql;
	int rc;

	if (!f->active)
		return SS_EXIT_OK;
	if (f->end_ns < 0)
		snprintf(range, sizeof(range), "start_ns >= %lld", p->start_mono + f->start_ns);
	else
		snprintf(range, sizeof(range), "start_ns >= %lld AND start_ns < %lld",
			 p->start_mono + f->start_ns, p->start_mono + f->end_ns);
	sql = sqlite3_mprintf("CREATE TEMP VIEW calls AS SELECT * FROM main.calls WHERE %s%s;",
			      range, f->syncs_only ? " AND class GLOB 'S[1-7]'" : "");
	for (size_t i = 0; sql && i < sizeof(gpu_tables) / sizeof(gpu_tables[0]); i++)
		if (ss_db_has_table(p->info.db, "temp",
				    gpu_tables[i])) /* ties by stream order (db.h) */
			sql = sqlite3_mprintf("%z DELETE FROM temp.%s WHERE NOT (%s%s);", sql,
					      gpu_tables[i], range, f->syncs_only ? " AND 0" : "");
		else if (ss_db_has_table(p->info.db, "main", gpu_tables[i]))
			sql = sqlite3_mprintf("%z CREATE TEMP VIEW %s AS SELECT * FROM main.%s"
					      " WHERE %s%s;",
					      sql, gpu_tables[i], gpu_tables[i], range,
					      f->syncs_only ? " AND 0" : "");
	if (!sql)
		return ss_error(SS_EXIT_INTERNAL, "out of memory");
	rc = sqlite3_exec(p->info.db, sql, NULL, NULL, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK)
		return ss_db_failure(p->info.db, rc, p->info.path, err, errlen);
	return SS_EXIT_OK;
}

/* EXPORT-2: the rank, else the OS pid, else a number after every rank and pid. */
static void assign_pids(struct placed_db *dbs, size_t n)
{
	long long spare = 1LL << 31;

	for (size_t i = 0; i < n; i++) {
		long long want[2] = {dbs[i].info.rank, dbs[i].info.os_pid};

		dbs[i].info.pid = -1;
		for (int k = 0; k < 2 && dbs[i].info.pid < 0; k++) {
			int taken = want[k] < 0;

			for (size_t j = 0; j < i && !taken; j++)
				taken = dbs[j].info.pid == want[k];
			if (!taken)
				dbs[i].info.pid = want[k];
		}
		if (dbs[i].info.pid < 0)
			dbs[i].info.pid = spare++;
	}
}

int cmd_export(int argc, char **argv)
{
	static const struct option options[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"start", required_argument, NULL, 's'},
	    {"end", required_argument, NULL, 'e'},
	    {"syncs-only", no_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const struct ss_export_ops *ops = ss_format_default(SS_FORMAT_EXPORT)->export;
	const char *output = NULL;
	struct export_filter filter = {.end_ns = -1};
	struct ss_db_list list = {0};
	struct placed_db *dbs = NULL;
	struct ss_export_out out = {0};
	struct ss_outfile file = {0};
	char err[1024];
	static char buffer[1 << 20];
	size_t n = 0;
	long long origin = 0;
	int ch, code, worst = SS_EXIT_OK, have_origin = 0;

	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, argv, ":f:o:h", options, NULL)) != -1) {
		switch (ch) {
		case 'f': {
			const struct ss_format *format = ss_format_option(SS_FORMAT_EXPORT, optarg);

			if (!format)
				return SS_EXIT_INPUT;
			ops = format->export;
			break;
		}
		case 'o':
			output = optarg;
			break;
		case 's':
		case 'e':
			*(ch == 's' ? &filter.start_ns : &filter.end_ns) = parse_seconds(optarg);
			if ((ch == 's' ? filter.start_ns : filter.end_ns) < 0)
				return ss_error(SS_EXIT_INPUT,
						"export: --%s %s: not a number of seconds >= 0",
						ch == 's' ? "start" : "end", optarg);
			filter.active = 1;
			break;
		case 'S':
			filter.syncs_only = filter.active = 1;
			break;
		case 'h':
			ss_command_usage(stdout, "export");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("export", ch, argv);
		}
	}
	if (!output)
		return ss_error(SS_EXIT_INPUT,
				"export: -o FILE is required (-o - for standard output)");
	if (filter.end_ns >= 0 && filter.end_ns <= filter.start_ns)
		return ss_error(SS_EXIT_INPUT, "export: --end must be after --start");
	if (optind >= argc)
		return ss_error(SS_EXIT_INPUT, "export: no database or directory given");
	code = ss_db_expand(argc - optind, argv + optind, &list, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", err);
	}

	ss_db_dedupe(&list); /* one file, one rank */
	/* Pass 1: check and place every database; the bad ones are reported and skipped. */
	dbs = calloc(list.count, sizeof(*dbs));
	if (!dbs) {
		ss_db_list_free(&list);
		return ss_error(SS_EXIT_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < list.count; i++) {
		struct placed_db *p = &dbs[n];
		sqlite3 *db;

		code = ss_db_open(list.paths[i], &db, err, sizeof(err));
		if (code == SS_EXIT_OK) {
			code = place(db, list.paths[i], p, err, sizeof(err));
			sqlite3_close(db);
		}
		if (code != SS_EXIT_OK) {
			ss_error(code, "%s", err);
			worst = code > worst ? code : worst;
			continue;
		}
		p->info.path = list.paths[i];
		p->info.host = p->host;
		p->info.index = n++;
		if (p->has_calls && (!have_origin || p->first_real < origin)) {
			origin = p->first_real;
			have_origin = 1;
		}
	}
	if (n == 0) {
		code = worst;
		goto out;
	}
	assign_pids(dbs, n);

	/* outfile.h: beside FILE and renamed when complete (a failed export leaves no half trace),
	 * or through to a device or FIFO */
	code = ss_outfile_open(output, &file, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_error(code, "export: %s", err);
		goto out;
	}
	out.file = file.file;
	setvbuf(out.file, buffer, _IOFBF, sizeof(buffer));

	/* Pass 2: the backend, one database at a time (each opened again: few files open). */
	err[0] = '\0';
	code = ops->begin(&out, err, sizeof(err));
	for (size_t i = 0; i < n && code == SS_EXIT_OK; i++) {
		struct placed_db *p = &dbs[i];

		p->info.shift_ns = p->mono_to_real - origin;
		/* pass 1 read it whole (READ-1) */
		code = ss_db_reopen(p->info.path, &p->info.db, err, sizeof(err));
		if (code == SS_EXIT_OK) /* CUPTI-13: the flows start at gpu_api's calls */
			code = ss_gpu_order_ties(p->info.db, p->info.path, err, sizeof(err));
		if (code == SS_EXIT_OK)
			code = apply_filter(&filter, p, err, sizeof(err));
		if (code == SS_EXIT_OK) {
			ss_lines_attach(p->info.db); /* slices name file:line where it is known */
			code = ops->database(&out, &p->info, err, sizeof(err));
		}
		sqlite3_close(p->info.db);
		p->info.db = NULL;
	}
	if (code == SS_EXIT_OK)
		code = ops->end(&out, err, sizeof(err));
	if (code != SS_EXIT_OK && err[0])
		ss_error(code, "%s", err);
	{
		int to_stdout = out.file == stdout;
		int closed = ss_outfile_close(&file, code == SS_EXIT_OK, err, sizeof(err));

		if (closed != SS_EXIT_OK && code == SS_EXIT_OK)
			code = ss_error(closed, "export: %s", err);
		else if (code == SS_EXIT_OK && !to_stdout)
			ss_print_line(
			    stderr, "syncspy: export: %zu database%s, %zu events (%zu flows) -> %s",
			    n, n == 1 ? "" : "s", out.events, out.flows, output);
	}
	/* aggregate mode (docs/recording.md): what the trace lacks, said once */
	size_t aggregated = 0;
	for (size_t i = 0; i < n; i++)
		aggregated += dbs[i].aggregate;
	if (code == SS_EXIT_OK && aggregated)
		ss_print_line(
		    stderr,
		    "syncspy: export: note: %zu database%s recorded in aggregate mode: "
		    "%s sync points and other calls are exported, %s enqueues are "
		    "aggregated per site (syncspy info, dump --table enqueue_aggregates), "
		    "not events",
		    aggregated, aggregated == 1 ? "" : "s", aggregated == 1 ? "its" : "their",
		    aggregated == 1 ? "its" : "their");
out:
	for (size_t i = 0; i < n; i++)
		free(dbs[i].host);
	free(dbs);
	ss_db_list_free(&list);
	return code > worst ? code : worst;
}
