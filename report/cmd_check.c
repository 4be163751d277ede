/*
 * report/cmd_check.c: `syncspy check --budget FILE DB|DIR...`, sync-point budgets for CI.
 *
 * Exit 0 when every limit of the budget holds, 1 when one is breached, 2 on bad input (a
 * malformed budget, a bad database, bad usage). docs/budget.md is the user's description.
 *
 * How it works: the budget is read and validated by check_budget.c. Each recording is opened
 * with ss_db_open (db.c) and summarized by one query into rows of (class, API, call site,
 * in warm-up?, calls, blocked ns), which are copied into an in-memory SQLite database together
 * with the recording's rank. The allow-list marks rows there, and every limit is then one query
 * on that small table: its total (or one total per rank), and for a breach the call sites that
 * contributed most. Only sync points (classes with classes.sync_point = 1, S1-S7) are counted;
 * an S7 row counts its `count` queries (SCHEMA-5), and blocked time is sum(end_ns - start_ns).
 *
 * Limits with "range" are checked per range instance: when the budget has such limits, the
 * ranges of each recording whose name matches one of their globs are copied into the work
 * database with, per range, the sync points of its thread that lie inside it (summed per class,
 * API, site and warm-up, like the totals). Recordings have no index on calls(tid, start_ns), so
 * those sync points are first put into a TEMP table with that index on the recording's own
 * connection (which stays read-only); recordings without matching ranges skip all of this.
 *
 * Outputs, all from the same results: one text line per check on stdout (PASS, FAIL or WARN
 * for a limit that could not be checked), the top sites of each breach, a summary line;
 * --junit FILE writes one JUnit testcase per check; when GITHUB_ACTIONS=true each breach also
 * becomes a GitHub workflow command (`::error file=F,line=L::...`); with $GITHUB_STEP_SUMMARY
 * set, a Markdown table of the checks is appended to that file.
 *
 * `check --init` reads a good run the same way (steady warm-up) and writes a budget from its
 * figures per steady step, with the margin of INIT_COUNT_FACTOR and INIT_BLOCKED_FACTOR.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "check_budget.h"
#include "check_sql.h"
#include "summary.h"
#include "commands.h"
#include "db.h"
#include "outfile.h"
#include "text_safe.h"

/* How many call sites a breach lists unless --top says otherwise. */
#define DEFAULT_TOP_SITES 5

/* The in-memory database every limit is evaluated on. */
#define WORK_SCHEMA_SQL                                                                            \
	"CREATE TABLE recordings(id INTEGER PRIMARY KEY, path TEXT NOT NULL, rank INTEGER,"        \
	" unit TEXT NOT NULL, dropped INTEGER NOT NULL, has_ranges INTEGER NOT NULL DEFAULT 0,"    \
	" steady_steps INTEGER NOT NULL DEFAULT 0);"                                               \
	"CREATE TABLE ranges(recording INTEGER NOT NULL, id INTEGER NOT NULL, tid INTEGER,"        \
	" name TEXT NOT NULL, idx INTEGER NOT NULL, start_ns INTEGER NOT NULL,"                    \
	" PRIMARY KEY(recording, id));"                                                            \
	"CREATE TABLE range_contrib(recording INTEGER NOT NULL, range_id INTEGER NOT NULL,"        \
	" class TEXT NOT NULL, api TEXT NOT NULL, site TEXT NOT NULL, warmup INTEGER NOT NULL,"    \
	" allowed INTEGER NOT NULL DEFAULT 0, calls INTEGER NOT NULL,"                             \
	" blocked_ns INTEGER NOT NULL);"                                                           \
	"CREATE INDEX range_contrib_r ON range_contrib(recording, range_id);"                      \
	"CREATE TABLE contrib(recording INTEGER NOT NULL, class TEXT NOT NULL, api TEXT NOT NULL," \
	" site TEXT NOT NULL, warmup INTEGER NOT NULL, allowed INTEGER NOT NULL DEFAULT 0,"        \
	" calls INTEGER NOT NULL, blocked_ns INTEGER NOT NULL);"                                   \
	"CREATE TABLE apis(name TEXT PRIMARY KEY) WITHOUT ROWID;"                                  \
	"CREATE TABLE allow(glob TEXT NOT NULL);"

/*
 * Per-range limits, on the recording's connection (TEMP tables only; the file stays unchanged).
 * ss_globs holds the "range" globs of the budget; ss_ranges the ranges they match, an open range
 * (end_ns NULL) ending at the end of the recording (meta.end_mono_ns, else the last call's
 * end), with idx its place among the ranges of its name (1 = first); ss_rsync the sync points
 * of the threads that opened them, indexed by (tid, start_ns) for the join.
 */
#define RANGE_SETUP_SQL "CREATE TEMP TABLE ss_globs(glob TEXT NOT NULL)"
#define RANGE_SELECT_SQL                                                                           \
	"CREATE TEMP TABLE ss_ranges AS"                                                           \
	" WITH stop(ns) AS (SELECT coalesce((SELECT value FROM meta WHERE key = 'end_mono_ns'),"   \
	"  (SELECT max(end_ns) FROM calls)))"                                                      \
	" SELECT id, tid, coalesce(name, '(unnamed)') AS name, start_ns,"                          \
	"  coalesce(end_ns, (SELECT ns FROM stop)) AS end_ns,"                                     \
	"  row_number() OVER (PARTITION BY coalesce(name, '(unnamed)') ORDER BY start_ns, id)"     \
	"  AS idx FROM ranges"                                                                     \
	" WHERE EXISTS (SELECT 1 FROM temp.ss_globs g"                                             \
	"  WHERE coalesce(name, '(unnamed)') GLOB g.glob)"
#define RANGE_ROWS_SQL                                                                             \
	"SELECT id, tid, name, idx, start_ns - coalesce((SELECT value FROM meta WHERE key ="       \
	" 'start_mono_ns'), (SELECT min(start_ns) FROM calls)) FROM temp.ss_ranges"
#define RANGE_CALLS_SQL                                                                            \
	"CREATE TEMP TABLE ss_rsync AS " WARMUP_WITH_SQL                                           \
	" SELECT c.tid AS tid, c.start_ns AS start_ns, c.end_ns AS end_ns, c.class AS class,"      \
	"  a.name AS api, coalesce(s.text, '" UNKNOWN_SITE "') AS site,"                           \
	"  " WARMUP_EXPR_SQL " AS warmup,"                                                         \
	"  CASE WHEN c.class = 'S7' THEN c.count ELSE 1 END AS n"                                  \
	" FROM calls c JOIN apis a ON a.id = c.api_id"                                             \
	" JOIN classes k ON k.class = c.class AND k.sync_point"                                    \
	" LEFT JOIN sites s ON s.id = c.site_id"                                                   \
	" WHERE c.tid IN (SELECT tid FROM temp.ss_ranges)"
#define RANGE_INDEX_SQL "CREATE INDEX temp.ss_rsync_t ON ss_rsync(tid, start_ns)"
/* A sync point is in a range when it starts and ends inside it, on the range's thread. */
#define RANGE_CONTRIB_SQL                                                                          \
	"SELECT r.id, t.class, t.api, t.site, t.warmup, sum(t.n),"                                 \
	" sum(max(t.end_ns - t.start_ns, 0))"                                                      \
	" FROM temp.ss_ranges r JOIN temp.ss_rsync t ON t.tid = r.tid"                             \
	" AND t.start_ns >= r.start_ns AND t.start_ns <= r.end_ns AND t.end_ns <= r.end_ns"        \
	" GROUP BY 1, 2, 3, 4, 5"

/* The rows a limit counts: named parameters :class, :api, :site, :rank of the limit. */
#define CALL_FILTER_SQL                                                                            \
	" NOT c.warmup AND NOT c.allowed"                                                          \
	" AND (:class = 'sync' OR c.class = :class) AND (:api IS NULL OR c.api = :api)"            \
	" AND (:site IS NULL OR c.site GLOB :site)"
#define LIMIT_FILTER_SQL " c.recording = r.id AND" CALL_FILTER_SQL

/* A limit's totals: one row, or one per rank (unit) with :per_rank; no row: no recording. */
#define LIMIT_TOTAL_SQL                                                                            \
	"SELECT CASE WHEN :per_rank THEN r.unit END,"                                              \
	" coalesce(sum(c.calls), 0), coalesce(sum(c.blocked_ns), 0),"                              \
	" (SELECT sum(r2.steady_steps) FROM recordings r2 WHERE (:rank IS NULL OR r2.rank = :rank)" \
	"  AND (NOT :per_rank OR r2.unit = r.unit))"                                               \
	" FROM recordings r LEFT JOIN contrib c ON" LIMIT_FILTER_SQL                               \
	" WHERE (:rank IS NULL OR r.rank = :rank)"                                                 \
	" GROUP BY 1 ORDER BY min(r.rank IS NULL), min(r.rank), min(r.id)"

/* The call sites behind a breach, the largest contribution to what was breached first. */
#define LIMIT_SITES_SQL                                                                            \
	"SELECT site, sum(calls) AS n, sum(blocked_ns) AS ns, group_concat(api, ', ') FROM"        \
	" (SELECT c.site AS site, c.api AS api, sum(c.calls) AS calls,"                            \
	"   sum(c.blocked_ns) AS blocked_ns"                                                       \
	"  FROM recordings r JOIN contrib c ON" LIMIT_FILTER_SQL                                   \
	"  WHERE (:rank IS NULL OR r.rank = :rank) AND (:unit IS NULL OR r.unit = :unit)"          \
	"  GROUP BY c.site, c.api ORDER BY c.site, c.api)"                                         \
	" GROUP BY site ORDER BY CASE WHEN :by_count THEN n ELSE ns END DESC, n DESC, ns DESC, "   \
	"site"

/*
 * A range limit's instances (temp.inst): every range matching :range in the recordings of the
 * limit's rank, with its counted sync points; grp is the check it belongs to (the unit with
 * :per_rank). over: the instance is above one of the per-range maxima (:max_count, :max_ns;
 * negative when not given).
 */
#define RANGE_INSTANCES_SQL                                                                        \
	"CREATE TEMP TABLE inst AS SELECT r.recording AS recording, r.id AS id, r.name AS name,"   \
	" r.idx AS idx, r.tid AS tid, r.start_ns AS start_ns, rec.unit AS unit,"                   \
	" CASE WHEN :per_rank THEN rec.unit END AS grp, coalesce(sum(c.calls), 0) AS calls,"       \
	" coalesce(sum(c.blocked_ns), 0) AS blocked_ns, 0 AS over"                                 \
	" FROM recordings rec JOIN ranges r ON r.recording = rec.id AND r.name GLOB :range"        \
	" LEFT JOIN range_contrib c ON c.recording = r.recording AND c.range_id = r.id"            \
	" AND" CALL_FILTER_SQL                                                                     \
	" WHERE (:rank IS NULL OR rec.rank = :rank) GROUP BY r.recording, r.id"
#define RANGE_OVER_SQL                                                                             \
	"UPDATE temp.inst SET over = (:max_count >= 0 AND calls > :max_count)"                     \
	" OR (:max_ns >= 0 AND blocked_ns > :max_ns)"

/* One row per check of a range limit (as LIMIT_TOTAL_SQL): instances, breaching instances,
 * whether any recording of it has ranges at all (for the message when none matched). */
#define RANGE_GROUPS_SQL                                                                           \
	"SELECT CASE WHEN :per_rank THEN rec.unit END, count(i.id), max(rec.has_ranges)"           \
	" FROM recordings rec LEFT JOIN temp.inst i ON i.recording = rec.id"                       \
	" WHERE (:rank IS NULL OR rec.rank = :rank)"                                               \
	" GROUP BY 1 ORDER BY min(rec.rank IS NULL), min(rec.rank), min(rec.id)"

/* The worst instance of one check: over first, then the larger count (or blocked time). */
#define RANGE_WORST_SQL                                                                            \
	"SELECT name, idx, unit, tid, start_ns, calls, blocked_ns,"                                \
	" (SELECT count(*) FROM temp.inst WHERE grp IS :unit),"                                    \
	" (SELECT count(*) FROM temp.inst WHERE grp IS :unit AND over)"                            \
	" FROM temp.inst WHERE grp IS :unit ORDER BY over DESC,"                                   \
	" CASE WHEN :by_count THEN calls ELSE blocked_ns END DESC, calls DESC, blocked_ns DESC,"   \
	" recording, start_ns LIMIT 1"

/* The call sites behind a range breach: summed over the instances that breached. */
#define RANGE_SITES_SQL                                                                            \
	"SELECT site, sum(calls) AS n, sum(blocked_ns) AS ns, group_concat(api, ', ') FROM"        \
	" (SELECT c.site AS site, c.api AS api, sum(c.calls) AS calls,"                            \
	"   sum(c.blocked_ns) AS blocked_ns"                                                       \
	"  FROM temp.inst i JOIN range_contrib c ON c.recording = i.recording"                     \
	"  AND c.range_id = i.id AND" CALL_FILTER_SQL "  WHERE i.over AND i.grp IS :unit"          \
	"  GROUP BY c.site, c.api ORDER BY c.site, c.api)"                                         \
	" GROUP BY site ORDER BY CASE WHEN :by_count THEN n ELSE ns END DESC, n DESC, ns DESC, "   \
	"site"

/* What one `syncspy check` run works with. */
struct check {
	sqlite3 *work; /* the in-memory database (also reads the budget's JSON) */
	struct ss_budget budget;
	const char *budget_path;
	int top_sites;
	int github;	       /* GITHUB_ACTIONS=true: print workflow commands */
	const char *workspace; /* $GITHUB_WORKSPACE, stripped from annotated file names */
	FILE *junit;	       /* the testcases, gathered until the totals are known */
	FILE *summary;	       /* $GITHUB_STEP_SUMMARY's table rows, gathered likewise */
	char *summary_text;
	size_t summary_len;
	char *junit_text;
	size_t junit_len;
	int checks, passed, breached, unchecked;
	long long steady_start, steady_end; /* the recording being read: its steady window, or -1 */
	char err[1024];
};

/* ------------------------------------------------------------------ text helpers */

/* Milliseconds as the budget would write them: 5, 0.25, 13.032 (at most 3 decimals); from
 * 1e12 ms (31 years) on, with 6 significant digits, as %g does (1e+308, not 309 digits). */
static void format_ms(char *buf, size_t len, double ms)
{
	char *end;

	if (ms >= 1e12 || ms <= -1e12) {
		snprintf(buf, len, "%g", ms);
		return;
	}
	snprintf(buf, len, "%.3f", ms);
	end = buf + strlen(buf) - 1;
	while (end > buf && *end == '0')
		*end-- = '\0';
	if (*end == '.')
		*end = '\0';
}

/*
 * Finds "FILE:LINE" at the start of a site's text (the form of Python frames, "train.py:42 in
 * step"): file gets FILE (a copy the caller frees), *line LINE. Native sites ("symbol+0x1c
 * (module)") have none; neither do C++ names, whose "::" is not followed by digits alone.
 */
static int site_file_line(const char *site, char **file, long *line)
{
	size_t token = strcspn(site, " \t");
	const char *colon = NULL;

	for (const char *c = site; c < site + token; c++)
		if (*c == ':')
			colon = c;
	if (!colon || colon == site || colon + 1 == site + token)
		return 0;
	for (const char *c = colon + 1; c < site + token; c++)
		if (*c < '0' || *c > '9')
			return 0;
	*line = strtol(colon + 1, NULL, 10);
	*file = strndup(site, (size_t)(colon - site));
	return *file != NULL && *line > 0;
}

/* ------------------------------------------------------------------ describing a limit */

/*
 * "limits[2] \"no syncs in step\" class=sync site=*train.py:42*": the limit as the budget
 * wrote it, so that a line of output leads back to its place in the file.
 */
static void describe_limit(char *buf, size_t len, const struct ss_budget_limit *limit)
{
	size_t used;

#define APPEND(...)                                                                                \
	do {                                                                                       \
		if (used < len)                                                                    \
			used += (size_t)snprintf(buf + used, len - used, __VA_ARGS__);             \
	} while (0)

	used = 0;
	APPEND("%s", strncmp(limit->path, "$.", 2) == 0 ? limit->path + 2 : limit->path);
	if (limit->name)
		APPEND(" \"%s\"", limit->name);
	APPEND(" class=%s", limit->cls);
	if (limit->api)
		APPEND(" api=%s", limit->api);
	if (limit->site)
		APPEND(" site=%s", limit->site);
	if (limit->rank >= 0)
		APPEND(" rank=%lld", limit->rank);
	if (limit->per_rank)
		APPEND(" per_rank");
	if (limit->range)
		APPEND(" range=%s", limit->range);
#undef APPEND
}

/* "count 46 <= 60, blocked 13.032 ms > 10 ms, count per step 2.00 <= 3"; sets *count_over
 * and *blocked_over. steps: the steady steps of what was counted (per-step maxima). */
static void describe_measure(char *buf, size_t len, const struct ss_budget_limit *limit,
			     long long calls, long long blocked_ns, long long steps,
			     int *count_over, int *blocked_over)
{
	char measured[32], max[32];
	double per_step = steps > 0 ? (double)calls / (double)steps : 0;
	double blocked_per_step = steps > 0 ? (double)blocked_ns / 1e6 / (double)steps : 0;
	int step_count_over = limit->max_count_per_step >= 0.0 && per_step > limit->max_count_per_step;
	int step_blocked_over =
	    limit->max_blocked_ms_per_step >= 0.0 && blocked_per_step > limit->max_blocked_ms_per_step;
	size_t used = 0;

	*count_over = (limit->max_count >= 0 && calls > limit->max_count) || step_count_over;
	*blocked_over =
	    (limit->max_blocked_ms >= 0.0 && (double)blocked_ns > limit->max_blocked_ms * 1e6) ||
	    step_blocked_over;
	buf[0] = '\0';
	if (limit->max_count >= 0)
		used += (size_t)snprintf(buf, len, "count %lld %s %lld", calls,
					 calls > limit->max_count ? ">" : "<=", limit->max_count);
	if (limit->max_blocked_ms >= 0.0 && used < len) {
		int over = (double)blocked_ns > limit->max_blocked_ms * 1e6;

		format_ms(measured, sizeof(measured), (double)blocked_ns / 1e6);
		format_ms(max, sizeof(max), limit->max_blocked_ms);
		used += (size_t)snprintf(buf + used, len - used, "%sblocked %s ms %s %s ms",
					 used ? ", " : "", measured, over ? ">" : "<=", max);
	}
	if (limit->max_count_per_step >= 0.0 && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%scount per step %.2f %s %g",
					 used ? ", " : "", per_step, step_count_over ? ">" : "<=",
					 limit->max_count_per_step);
	if (limit->max_blocked_ms_per_step >= 0.0 && used < len) {
		format_ms(measured, sizeof(measured), blocked_per_step);
		format_ms(max, sizeof(max), limit->max_blocked_ms_per_step);
		snprintf(buf + used, len - used, "%sblocked per step %s ms %s %s ms",
			 used ? ", " : "", measured, step_blocked_over ? ">" : "<=", max);
	}
}

/* ------------------------------------------------------------------ GitHub step summary */

static void summary_row(struct check *ck, const char *name, const char *status, const char *message)
{
	if (!ck->summary)
		return;
	fprintf(ck->summary, "| %s | ", strcmp(status, "SKIP") == 0 ? "WARN" : status);
	ss_put_markdown(ck->summary, name);
	fputs(" | ", ck->summary);
	ss_put_markdown(ck->summary, message);
	fputs(" |\n", ck->summary);
}

/*
 * With $GITHUB_STEP_SUMMARY set (GitHub Actions sets it to a file per step), appends a Markdown
 * section: a heading naming the budget, one table row per check, the summary line. A file that
 * cannot be written is a note on stderr: the step summary never changes the exit status.
 */
static void summary_write(struct check *ck, const char *path)
{
	FILE *out;

	fflush(ck->summary);
	out = fopen(path, "a");
	if (!out) {
		ss_error(SS_EXIT_OK, "note: check: $GITHUB_STEP_SUMMARY %s: %s: no summary written",
			 path, strerror(errno));
		return;
	}
	fputs("### syncspy check: ", out);
	ss_put_markdown(out, ck->budget_path);
	fprintf(out, " %s\n\n| result | limit | measured |\n| --- | --- | --- |\n",
		ck->breached ? "failed" : "passed");
	fwrite(ck->summary_text, 1, ck->summary_len, out);
	fprintf(out, "\n%zu limit%s, %d check%s: %d passed, %d breached, %d not checked\n\n",
		ck->budget.limit_count, ck->budget.limit_count == 1 ? "" : "s", ck->checks,
		ck->checks == 1 ? "" : "s", ck->passed, ck->breached, ck->unchecked);
	if (fclose(out) != 0)
		ss_error(SS_EXIT_OK, "note: check: $GITHUB_STEP_SUMMARY %s: write error", path);
}

/* ------------------------------------------------------------------ JUnit */

static void junit_testcase(struct check *ck, const char *name, const char *status,
			   const char *message, const char *details)
{
	FILE *out = ck->junit;

	summary_row(ck, name, status, message);
	if (!out)
		return;
	fputs("    <testcase classname=\"syncspy.check\" name=\"", out);
	ss_put_xml(out, name);
	fputs("\" time=\"0\"", out);
	if (strcmp(status, "PASS") == 0) {
		fputs("/>\n", out);
		return;
	}
	fputs(">\n", out);
	if (strcmp(status, "FAIL") == 0) {
		fputs("      <failure type=\"over budget\" message=\"", out);
		ss_put_xml(out, message);
		fputs("\">", out);
		ss_put_xml(out, details ? details : message);
		fputs("</failure>\n", out);
	} else {
		fputs("      <skipped message=\"", out);
		ss_put_xml(out, message);
		fputs("\"/>\n", out);
	}
	fputs("    </testcase>\n", out);
}

/* Writes the JUnit file: the suite's totals, then the testcases gathered in ck->junit. */
static int junit_write(struct check *ck, const char *path)
{
	struct ss_outfile file;
	char err[1024];
	FILE *out;
	int code;

	if (fclose(ck->junit) != 0)
		return ss_error(SS_EXIT_INTERNAL, "--junit: out of memory");
	ck->junit = NULL;
	code = ss_outfile_open(path, &file, err, sizeof(err)); /* outfile.h */
	if (code != SS_EXIT_OK)
		return ss_error(code, "--junit %s", err);
	out = file.file;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuites name=\"syncspy check\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n",
		ck->checks, ck->breached, ck->unchecked);
	fputs("  <testsuite name=\"syncspy check ", out);
	ss_put_xml(out, ck->budget_path);
	fprintf(out, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"0\">\n",
		ck->checks, ck->breached, ck->unchecked);
	fwrite(ck->junit_text, 1, ck->junit_len, out);
	fputs("  </testsuite>\n</testsuites>\n", out);
	code = ss_outfile_close(&file, 1, err, sizeof(err));
	if (code != SS_EXIT_OK)
		return ss_error(code, "--junit %s", err);
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ reading recordings */

static int work_failure(struct check *ck)
{
	/* the totals of damaged recordings (values each in range, too large together) */
	if (strcmp(sqlite3_errmsg(ck->work), "integer overflow") == 0)
		return ss_error(SS_EXIT_INPUT, "check: the recordings' counts or times add up "
					       "beyond 64 bits (damaged databases)");
	return ss_error(SS_EXIT_INTERNAL, "check: SQLite: %s", sqlite3_errmsg(ck->work));
}

static int work_exec(struct check *ck, const char *sql)
{
	if (sqlite3_exec(ck->work, sql, NULL, NULL, NULL) != SQLITE_OK)
		return work_failure(ck);
	return SS_EXIT_OK;
}

/* Reports a failed query on a recording with db.c's message; returns its exit code. */
static int recording_failure(struct check *ck, sqlite3 *db, int rc, const char *path)
{
	int code = ss_db_failure(db, rc, path, ck->err, sizeof(ck->err));

	return ss_error(code, "%s", ck->err);
}

/* Binds the budget's warm-up to ?1 (ns from the recording's start) and ?2 (first calls). */
static void bind_warmup(const struct check *ck, sqlite3_stmt *stmt)
{
	if (ck->budget.warmup_seconds >= 0.0) {
		double ns = ck->budget.warmup_seconds * 1e9;

		/* past any real run, and clear of int64 overflow */
		if (ns > 4e18)
			ns = 4e18;
		sqlite3_bind_int64(stmt, 1, (sqlite3_int64)(ns + 0.5));
	}
	sqlite3_bind_int64(stmt, 2, ck->budget.warmup_calls > 0 ? ck->budget.warmup_calls : 0);
	if (ck->budget.warmup_steady && ck->steady_start >= 0) {
		sqlite3_bind_int64(stmt, 3, ck->steady_start);
		sqlite3_bind_int64(stmt, 4, ck->steady_end);
	}
}

static int has_range_limits(const struct check *ck)
{
	for (size_t i = 0; i < ck->budget.limit_count; i++)
		if (ck->budget.limits[i].range)
			return 1;
	return 0;
}

/* Runs one statement on the recording's connection (its TEMP schema only). */
static int recording_exec(struct check *ck, sqlite3 *db, const char *sql, const char *path,
			  int warmup)
{
	sqlite3_stmt *stmt;
	int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);

	if (rc != SQLITE_OK)
		return recording_failure(ck, db, rc, path);
	if (warmup)
		bind_warmup(ck, stmt);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? SS_EXIT_OK : recording_failure(ck, db, rc, path);
}

/*
 * Copies the ranges that the budget's "range" globs match, and per range the sync points of its
 * thread inside it, into the work database (ranges, range_contrib). Also notes whether the
 * recording has ranges at all, so that a limit whose name matches none can say which it is.
 */
static int copy_ranges(struct check *ck, sqlite3 *db, const char *path, int id)
{
	sqlite3_stmt *read = NULL, *add = NULL;
	long long matched = 0;
	int rc, code;

	rc = sqlite3_prepare_v2(db, "SELECT EXISTS (SELECT 1 FROM ranges)", -1, &read, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(read);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(read);
		return recording_failure(ck, db, rc, path);
	}
	if (!sqlite3_column_int(read, 0)) {
		sqlite3_finalize(read);
		return SS_EXIT_OK;
	}
	sqlite3_finalize(read);
	read = NULL;
	if (sqlite3_prepare_v2(ck->work, "UPDATE recordings SET has_ranges = 1 WHERE id = ?1", -1,
			       &add, NULL) != SQLITE_OK)
		return work_failure(ck);
	sqlite3_bind_int(add, 1, id);
	rc = sqlite3_step(add);
	sqlite3_finalize(add);
	add = NULL;
	if (rc != SQLITE_DONE)
		return work_failure(ck);

	code = recording_exec(ck, db, RANGE_SETUP_SQL, path, 0);
	if (code != SS_EXIT_OK)
		return code;
	rc = sqlite3_prepare_v2(db, "INSERT INTO temp.ss_globs VALUES(?1)", -1, &read, NULL);
	if (rc != SQLITE_OK)
		return recording_failure(ck, db, rc, path);
	for (size_t i = 0; i < ck->budget.limit_count; i++) {
		if (!ck->budget.limits[i].range)
			continue;
		sqlite3_bind_text(read, 1, ck->budget.limits[i].range, -1, SQLITE_STATIC);
		rc = sqlite3_step(read);
		sqlite3_reset(read);
		if (rc != SQLITE_DONE) {
			sqlite3_finalize(read);
			return recording_failure(ck, db, rc, path);
		}
	}
	sqlite3_finalize(read);
	read = NULL;
	code = recording_exec(ck, db, RANGE_SELECT_SQL, path, 0);
	if (code != SS_EXIT_OK)
		return code;

	/* the matched ranges, with their start relative to the recording's */
	rc = sqlite3_prepare_v2(db, RANGE_ROWS_SQL, -1, &read, NULL);
	if (rc != SQLITE_OK)
		return recording_failure(ck, db, rc, path);
	if (sqlite3_prepare_v2(ck->work, "INSERT INTO ranges VALUES(?1, ?2, ?3, ?4, ?5, ?6)", -1,
			       &add, NULL) != SQLITE_OK) {
		code = work_failure(ck);
		goto out;
	}
	while ((rc = sqlite3_step(read)) == SQLITE_ROW) {
		sqlite3_bind_int(add, 1, id);
		for (int col = 0; col < 5; col++)
			sqlite3_bind_value(add, col + 2, sqlite3_column_value(read, col));
		if (sqlite3_step(add) != SQLITE_DONE) {
			code = work_failure(ck);
			goto out;
		}
		sqlite3_reset(add);
		matched++;
	}
	if (rc != SQLITE_DONE) {
		code = recording_failure(ck, db, rc, path);
		goto out;
	}
	if (!matched)
		goto out;

	/* the sync points of their threads, then each range's share of them */
	code = recording_exec(ck, db, RANGE_CALLS_SQL, path, 1);
	if (code == SS_EXIT_OK)
		code = recording_exec(ck, db, RANGE_INDEX_SQL, path, 0);
	if (code != SS_EXIT_OK)
		goto out;
	sqlite3_finalize(read);
	sqlite3_finalize(add);
	add = NULL;
	rc = sqlite3_prepare_v2(db, RANGE_CONTRIB_SQL, -1, &read, NULL);
	if (rc != SQLITE_OK) {
		read = NULL;
		code = recording_failure(ck, db, rc, path);
		goto out;
	}
	if (sqlite3_prepare_v2(
		ck->work, "INSERT INTO range_contrib VALUES(?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8)", -1,
		&add, NULL) != SQLITE_OK) {
		code = work_failure(ck);
		goto out;
	}
	while ((rc = sqlite3_step(read)) == SQLITE_ROW) {
		sqlite3_bind_int(add, 1, id);
		for (int col = 0; col < 7; col++)
			sqlite3_bind_value(add, col + 2, sqlite3_column_value(read, col));
		if (sqlite3_step(add) != SQLITE_DONE) {
			code = work_failure(ck);
			goto out;
		}
		sqlite3_reset(add);
	}
	if (rc != SQLITE_DONE)
		code = recording_failure(ck, db, rc, path);
out:
	sqlite3_finalize(read);
	sqlite3_finalize(add);
	return code;
}

/* Copies the recording's summary rows and API names into the work database. */
static int copy_recording(struct check *ck, sqlite3 *db, const char *path, int id)
{
	sqlite3_stmt *read = NULL, *meta = NULL, *add = NULL, *add_api = NULL, *add_rec = NULL;
	long long rank = -1, dropped = 0, steps = 0;
	int rc, code = SS_EXIT_OK, aggregate = 0;

	ck->steady_start = ck->steady_end = -1;
	if (ck->budget.warmup_steady) { /* the report's steady state (docs/rules.md) */
		code = ss_steady_window(path, &ck->steady_start, &ck->steady_end, &steps, ck->err,
					sizeof(ck->err));
		if (code != SS_EXIT_OK)
			return ss_error(code, "%s", ck->err);
	}
	rc = sqlite3_prepare_v2(db, RECORDING_META_SQL, -1, &meta, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(meta)) == SQLITE_ROW) {
		if (sqlite3_column_type(meta, 0) != SQLITE_NULL)
			rank = sqlite3_column_int64(meta, 0);
		dropped = sqlite3_column_int64(meta, 1);
		aggregate = sqlite3_column_int(meta, 2);
		rc = SQLITE_OK;
	}
	if (rc != SQLITE_OK) {
		code = recording_failure(ck, db, rc, path);
		goto out;
	}
	/* The sync points are rows in aggregate mode as in trace mode, so every limit and warm-up
	 * judges them alike, but the first N calls: enqueues have no rows there. */
	if (aggregate && ck->budget.warmup_calls > 0) {
		code = ss_error(
		    SS_EXIT_INPUT,
		    "%s: recorded in aggregate mode (SYNCSPY_MODE=aggregate): a \"warmup\" "
		    "by calls counts every call, and its enqueues have no rows (use "
		    "\"seconds\" or {\"steady\": true})",
		    path);
		goto out;
	}

	if (sqlite3_prepare_v2(
		ck->work,
		"INSERT INTO recordings(id, path, rank, unit, dropped, steady_steps) VALUES(?1, ?2,"
		" ?3, CASE WHEN ?3 IS NULL THEN ?2 ELSE 'rank ' || ?3 END, ?4, ?5)",
		-1, &add_rec, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ck->work,
			       "INSERT INTO contrib VALUES(?1, ?2, ?3, ?4, ?5, 0, ?6, ?7)", -1,
			       &add, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ck->work, "INSERT OR IGNORE INTO apis VALUES(?1)", -1, &add_api,
			       NULL) != SQLITE_OK) {
		code = work_failure(ck);
		goto out;
	}
	sqlite3_bind_int(add_rec, 1, id);
	sqlite3_bind_text(add_rec, 2, path, -1, SQLITE_STATIC);
	if (rank >= 0)
		sqlite3_bind_int64(add_rec, 3, rank);
	sqlite3_bind_int64(add_rec, 4, dropped);
	sqlite3_bind_int64(add_rec, 5, steps);
	if (sqlite3_step(add_rec) != SQLITE_DONE) {
		code = work_failure(ck);
		goto out;
	}

	rc = sqlite3_prepare_v2(db, RECORDING_SQL, -1, &read, NULL);
	if (rc != SQLITE_OK) {
		code = recording_failure(ck, db, rc, path);
		goto out;
	}
	bind_warmup(ck, read);
	while ((rc = sqlite3_step(read)) == SQLITE_ROW) {
		sqlite3_bind_int(add, 1, id);
		for (int col = 0; col < 6; col++)
			sqlite3_bind_value(add, col + 2, sqlite3_column_value(read, col));
		if (sqlite3_step(add) != SQLITE_DONE) {
			code = work_failure(ck);
			goto out;
		}
		sqlite3_reset(add);
	}
	if (rc != SQLITE_DONE) {
		code = recording_failure(ck, db, rc, path);
		goto out;
	}

	/* Every API the recording library knows, to catch a misspelt "api" in the budget. */
	sqlite3_finalize(read);
	rc = sqlite3_prepare_v2(db, "SELECT name FROM apis", -1, &read, NULL);
	if (rc != SQLITE_OK) {
		code = recording_failure(ck, db, rc, path);
		goto out;
	}
	while ((rc = sqlite3_step(read)) == SQLITE_ROW) {
		sqlite3_bind_value(add_api, 1, sqlite3_column_value(read, 0));
		if (sqlite3_step(add_api) != SQLITE_DONE) {
			code = work_failure(ck);
			goto out;
		}
		sqlite3_reset(add_api);
	}
	if (rc != SQLITE_DONE)
		code = recording_failure(ck, db, rc, path);
	if (code == SS_EXIT_OK && has_range_limits(ck))
		code = copy_ranges(ck, db, path, id);
out:
	sqlite3_finalize(read);
	sqlite3_finalize(meta);
	sqlite3_finalize(add);
	sqlite3_finalize(add_api);
	sqlite3_finalize(add_rec);
	return code;
}

/*
 * A summary's ranks (summary.h) as copy_recording reads their databases (SUMMARY-2): what
 * summarize kept of RECORDING_SQL's rows, split by the steady window, serves a warm-up of none
 * or "steady"; warm-up by seconds or calls and "range" limits need the recordings themselves.
 * Its tables are attached to the work database and copied with one query each.
 */
#define SUMMARY_RECORDINGS_SQL                                                                     \
	"INSERT INTO recordings(id, path, rank, unit, dropped, steady_steps)"                      \
	" SELECT ?1 + r.idx, p.text, r.check_rank,"                                                \
	" CASE WHEN r.check_rank IS NULL THEN p.text ELSE 'rank ' || r.check_rank END,"            \
	" r.check_dropped, CASE WHEN ?2 THEN r.steady_steps ELSE 0 END"                            \
	" FROM summary.ranks r JOIN summary.strings p ON p.id = r.path ORDER BY r.idx"
#define SUMMARY_CONTRIB_SQL                                                                        \
	"INSERT INTO contrib SELECT ?1 + c.idx, k.text, a.text, s.text,"                           \
	" CASE WHEN ?2 THEN c.outside_steady ELSE 0 END, 0, c.calls, c.blocked_ns"                 \
	" FROM summary.check_rows c LEFT JOIN summary.strings k ON k.id = c.class"                 \
	" LEFT JOIN summary.strings a ON a.id = c.api LEFT JOIN summary.strings s ON s.id = "      \
	"c.site"
#define SUMMARY_APIS_SQL                                                                           \
	"INSERT OR IGNORE INTO apis SELECT s.text FROM summary.apis x"                             \
	" JOIN summary.strings s ON s.id = x.name"

static int copy_summary(struct check *ck, const char *path, int *next_id)
{
	static const char *const steps[] = {SUMMARY_RECORDINGS_SQL, SUMMARY_CONTRIB_SQL,
					    SUMMARY_APIS_SQL};
	sqlite3 *db;
	sqlite3_stmt *stmt;
	long long nranks;
	int code = ss_summary_open(path, &db, &nranks, ck->err, sizeof(ck->err));

	if (code != SS_EXIT_OK)
		return ss_error(code, "%s", ck->err);
	sqlite3_close(db);
	if (ck->budget.warmup_seconds >= 0.0 || ck->budget.warmup_calls > 0)
		return ss_error(
		    SS_EXIT_INPUT,
		    "%s: a summary keeps the steady state's split only: a \"warmup\" by "
		    "seconds or calls needs the recordings (name the databases, or use "
		    "\"warmup\": {\"steady\": true})",
		    path);
	if (has_range_limits(ck))
		return ss_error(SS_EXIT_INPUT,
				"%s: a summary keeps no range instances: \"range\" limits need the "
				"recordings (name the databases)",
				path);
	if (sqlite3_prepare_v2(ck->work, "ATTACH ?1 AS summary", -1, &stmt, NULL) != SQLITE_OK)
		return work_failure(ck);
	sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
	code = sqlite3_step(stmt) == SQLITE_DONE ? SS_EXIT_OK : work_failure(ck);
	sqlite3_finalize(stmt);
	for (size_t i = 0; code == SS_EXIT_OK && i < sizeof(steps) / sizeof(steps[0]); i++) {
		int rc = sqlite3_prepare_v2(ck->work, steps[i], -1, &stmt, NULL);

		if (rc == SQLITE_OK) {
			sqlite3_bind_int(stmt, 1, *next_id);
			sqlite3_bind_int(stmt, 2, ck->budget.warmup_steady);
			rc = sqlite3_step(stmt);
		}
		if (rc != SQLITE_DONE && rc != SQLITE_OK) /* a NULL where a text must be */
			code = ss_error(SS_EXIT_INPUT, "%s: damaged syncspy summary: %s", path,
					sqlite3_errmsg(ck->work));
		sqlite3_finalize(stmt);
	}
	sqlite3_exec(ck->work, "DETACH summary", NULL, NULL, NULL);
	*next_id += (int)nranks;
	return code;
}

/*
 * Opens and summarizes every recording (and every rank of a summary). A bad one is reported
 * (db.c's message) and the others are still read, so that one run names every bad file; any
 * bad file makes the result 2, as a budget cannot be judged on part of a run.
 */
static int read_recordings(struct check *ck, const struct ss_db_list *list)
{
	int worst = SS_EXIT_OK, next_id = 1;

	for (size_t i = 0; i < list->count; i++) {
		sqlite3 *db;
		int code;

		if (ss_summary_is(list->paths[i])) {
			code = copy_summary(ck, list->paths[i], &next_id);
			if (code > worst)
				worst = code;
			continue;
		}
		code = ss_db_open(list->paths[i], &db, ck->err, sizeof(ck->err));
		if (code != SS_EXIT_OK) {
			ss_error(code, "%s", ck->err);
		} else {
			/* breaches name the findings' sites */
			code = ss_finding_sites(db, list->paths[i], ck->err, sizeof(ck->err));
			if (code == SS_EXIT_OK)
				code = copy_recording(ck, db, list->paths[i], next_id++);
			else
				ss_error(code, "%s", ck->err);
			sqlite3_close(db);
		}
		if (code > worst)
			worst = code;
	}
	return worst;
}

/* The allow-list, matched once against the site texts of the work database. */
static int apply_allow_list(struct check *ck)
{
	sqlite3_stmt *add;

	if (sqlite3_prepare_v2(ck->work, "INSERT INTO allow VALUES(?1)", -1, &add, NULL) !=
	    SQLITE_OK)
		return work_failure(ck);
	for (size_t i = 0; i < ck->budget.allow_count; i++) {
		sqlite3_bind_text(add, 1, ck->budget.allow[i], -1, SQLITE_STATIC);
		if (sqlite3_step(add) != SQLITE_DONE) {
			sqlite3_finalize(add);
			return work_failure(ck);
		}
		sqlite3_reset(add);
	}
	sqlite3_finalize(add);
	return work_exec(ck,
			 "UPDATE contrib SET allowed ="
			 " EXISTS (SELECT 1 FROM allow WHERE contrib.site GLOB allow.glob);"
			 "UPDATE range_contrib SET allowed ="
			 " EXISTS (SELECT 1 FROM allow WHERE range_contrib.site GLOB allow.glob)");
}

/* An "api" the recordings do not know is a typo (or an API this syncspy does not record). */
static int check_api_names(struct check *ck)
{
	sqlite3_stmt *find;
	int code = SS_EXIT_OK;

	if (sqlite3_prepare_v2(ck->work, "SELECT 1 FROM apis WHERE name = ?1", -1, &find, NULL) !=
	    SQLITE_OK)
		return work_failure(ck);
	for (size_t i = 0; i < ck->budget.limit_count && code == SS_EXIT_OK; i++) {
		const struct ss_budget_limit *limit = &ck->budget.limits[i];

		if (!limit->api)
			continue;
		sqlite3_bind_text(find, 1, limit->api, -1, SQLITE_STATIC);
		if (sqlite3_step(find) != SQLITE_ROW)
			code = ss_error(SS_EXIT_INPUT,
					"%s: %s.api: no API named \"%s\" in the recordings (names "
					"are case-sensitive, e.g. cudaStreamSynchronize)",
					ck->budget_path, limit->path, limit->api);
		sqlite3_reset(find);
	}
	sqlite3_finalize(find);
	return code;
}

/* "budget FILE: 4 recordings, 120 sync points (8 in warm-up, 3 on allowed sites)" and a
 * warning for each recording that lost events (its counts are lower bounds). */
static int print_header(struct check *ck)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sqlite3_prepare_v2(
	    ck->work,
	    "SELECT (SELECT count(*) FROM recordings),"
	    " coalesce(sum(calls), 0), coalesce(sum(calls) FILTER (WHERE warmup), 0),"
	    " coalesce(sum(calls) FILTER (WHERE allowed AND NOT warmup), 0)"
	    " FROM contrib",
	    -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return work_failure(ck);
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		long long n = sqlite3_column_int64(stmt, 0);

		fputs("budget ", stdout);
		ss_put_printable(stdout, ck->budget_path);
		printf(": %lld recording%s, %lld sync points (%lld in warm-up, %lld on "
		       "allowed sites)\n",
		       n, n == 1 ? "" : "s", sqlite3_column_int64(stmt, 1),
		       sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3));
	}
	sqlite3_finalize(stmt);
	rc = sqlite3_prepare_v2(
	    ck->work, "SELECT path, dropped FROM recordings WHERE dropped > 0 ORDER BY id", -1,
	    &stmt, NULL);
	if (rc != SQLITE_OK)
		return work_failure(ck);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		fputs("WARN ", stdout);
		ss_put_printable(stdout, (const char *)sqlite3_column_text(stmt, 0));
		printf(": %lld events dropped while recording; its counts are lower bounds\n",
		       sqlite3_column_int64(stmt, 1));
	}
	sqlite3_finalize(stmt);
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ evaluating limits */

static void bind_named(sqlite3_stmt *stmt, const char *name, const char *text)
{
	int index = sqlite3_bind_parameter_index(stmt, name);

	if (index && text)
		sqlite3_bind_text(stmt, index, text, -1, SQLITE_STATIC);
	else if (index)
		sqlite3_bind_null(stmt, index);
}

static void bind_limit(sqlite3_stmt *stmt, const struct ss_budget_limit *limit, const char *unit)
{
	int index;

	bind_named(stmt, ":class", limit->cls);
	bind_named(stmt, ":api", limit->api);
	bind_named(stmt, ":site", limit->site);
	bind_named(stmt, ":unit", unit);
	index = sqlite3_bind_parameter_index(stmt, ":rank");
	if (limit->rank >= 0)
		sqlite3_bind_int64(stmt, index, limit->rank);
	else
		sqlite3_bind_null(stmt, index);
	index = sqlite3_bind_parameter_index(stmt, ":per_rank");
	if (index)
		sqlite3_bind_int(stmt, index, limit->per_rank);
}

/* Prints (and annotates) one GitHub error for a breach at a site, or for the breach itself. */
static void github_error(struct check *ck, FILE *out, const char *site, const char *message)
{
	char *file = NULL;
	long line = 0;
	size_t ws = ck->workspace ? strlen(ck->workspace) : 0;

	fputs("::error ", out);
	if (site && site_file_line(site, &file, &line)) {
		const char *shown = file;

		/* GitHub places annotations by paths relative to the checkout. */
		if (ws && strncmp(file, ck->workspace, ws) == 0 && file[ws] == '/')
			shown = file + ws + 1;
		fputs("file=", out);
		ss_put_github(out, shown, 1);
		fprintf(out, ",line=%ld,", line);
	}
	free(file);
	fputs("title=syncspy check::", out);
	ss_put_github(out, message, 0);
	fputc('\n', out);
}

/*
 * Prints the sites behind a breach, then its GitHub annotations (with GITHUB_ACTIONS=true);
 * the site lines also become the JUnit failure's text in *details (malloc'd).
 */
static int print_breach_sites(struct check *ck, const char *sql,
			      const struct ss_budget_limit *limit, const char *unit,
			      const char *headline, int by_count, char **details)
{
	sqlite3_stmt *stmt;
	char *text = NULL, *annotations = NULL, first_message[2048] = "";
	size_t text_len = 0, annotations_len = 0;
	FILE *lines = open_memstream(&text, &text_len);
	FILE *notes = open_memstream(&annotations, &annotations_len);
	int shown = 0, more = 0, annotated = 0, failed;

	*details = NULL;
	if (!lines || !notes || sqlite3_prepare_v2(ck->work, sql, -1, &stmt, NULL) != SQLITE_OK) {
		if (lines)
			fclose(lines);
		if (notes)
			fclose(notes);
		free(text);
		free(annotations);
		return lines && notes ? work_failure(ck)
				      : ss_error(SS_EXIT_INTERNAL, "check: out of memory");
	}
	bind_limit(stmt, limit, unit);
	sqlite3_bind_int(stmt, sqlite3_bind_parameter_index(stmt, ":by_count"), by_count);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		const char *site = (const char *)sqlite3_column_text(stmt, 0);
		long long calls = sqlite3_column_int64(stmt, 1);
		char ms[32], message[2048];

		if (shown == ck->top_sites) {
			more++;
			continue;
		}
		shown++;
		format_ms(ms, sizeof(ms), (double)sqlite3_column_int64(stmt, 2) / 1e6);
		fprintf(lines, "  %lld call%s, %s ms: ", calls, calls == 1 ? "" : "s", ms);
		ss_put_printable(lines, site);
		fputs(" [", lines);
		ss_put_printable(lines, (const char *)sqlite3_column_text(stmt, 3)); /* API names */
		fputs("]\n", lines);
		if (ck->github) {
			char *file;
			long line;

			snprintf(message, sizeof(message), "%s; %s: %lld call%s, %s ms", headline,
				 site, calls, calls == 1 ? "" : "s", ms);
			/* Each site with a file and line gets its own annotation, at that line. */
			if (site_file_line(site, &file, &line)) {
				free(file);
				github_error(ck, notes, site, message);
				annotated++;
			} else if (shown == 1) {
				snprintf(first_message, sizeof(first_message), "%s", message);
			}
		}
	}
	sqlite3_finalize(stmt);
	/* A breach with no located site (native frames only) still gets one annotation. */
	if (ck->github && !annotated)
		github_error(ck, notes, NULL, first_message[0] ? first_message : headline);
	if (more)
		fprintf(lines, "  ... and %d more site%s\n", more, more == 1 ? "" : "s");
	failed = fclose(lines) != 0;
	failed |= fclose(notes) != 0;
	if (failed) {
		free(text);
		free(annotations);
		return ss_error(SS_EXIT_INTERNAL, "check: out of memory");
	}
	/* the sites first, then the workflow commands, which GitHub hides from the log */
	fputs(text, stdout);
	fputs(annotations, stdout);
	free(annotations);
	*details = text;
	return SS_EXIT_OK;
}

/* A limit that cannot be checked: a WARN line, a skipped testcase, no effect on the exit. */
static void not_checked(struct check *ck, const char *description, const char *reason)
{
	char message[512];

	fputs("WARN ", stdout);
	ss_put_printable(stdout, description);
	fputs(": ", stdout);
	ss_put_printable(stdout, reason);
	fputs("; limit not checked\n", stdout);
	ck->checks++;
	ck->unchecked++;
	snprintf(message, sizeof(message), "%s; limit not checked", reason);
	junit_testcase(ck, description, "SKIP", message, NULL);
}

/* Binds the per-range parts of a range limit (:range, :max_count, :max_ns) besides bind_limit's. */
static void bind_range_limit(sqlite3_stmt *stmt, const struct ss_budget_limit *limit,
			     const char *unit)
{
	int index;

	bind_limit(stmt, limit, unit);
	bind_named(stmt, ":range", limit->range);
	index = sqlite3_bind_parameter_index(stmt, ":max_count");
	if (index)
		sqlite3_bind_int64(stmt, index, limit->max_count_per_range);
	index = sqlite3_bind_parameter_index(stmt, ":max_ns");
	if (index)
		sqlite3_bind_double(stmt, index,
				    limit->max_blocked_ms_per_range < 0.0
					? -1.0
					: limit->max_blocked_ms_per_range * 1e6);
	index = sqlite3_bind_parameter_index(stmt, ":by_count");
	if (index)
		sqlite3_bind_int(stmt, index, limit->max_count_per_range >= 0);
}

/* Prepares sql on the work database, binds the range limit and runs it to the end. */
static int range_exec(struct check *ck, const char *sql, const struct ss_budget_limit *limit)
{
	sqlite3_stmt *stmt;
	int rc;

	if (sqlite3_prepare_v2(ck->work, sql, -1, &stmt, NULL) != SQLITE_OK)
		return work_failure(ck);
	bind_range_limit(stmt, limit, NULL);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? SS_EXIT_OK : work_failure(ck);
}

/*
 * One check of a range limit (all recordings, or one unit with per_rank): the worst instance
 * against the per-range maxima, how many instances breach, and for a breach the sites within
 * the breaching instances.
 */
static int check_range_group(struct check *ck, const struct ss_budget_limit *limit,
			     const char *name, const char *unit)
{
	struct ss_budget_limit per_range = *limit;
	char measure[256], where[1024], line[1600], ms[32];
	long long instances, over, calls, blocked_ns;
	int count_over, blocked_over, code = SS_EXIT_OK;
	sqlite3_stmt *stmt;

	if (sqlite3_prepare_v2(ck->work, RANGE_WORST_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return work_failure(ck);
	bind_range_limit(stmt, limit, unit);
	if (sqlite3_step(stmt) != SQLITE_ROW) {
		sqlite3_finalize(stmt);
		return work_failure(ck);
	}
	calls = sqlite3_column_int64(stmt, 5);
	blocked_ns = sqlite3_column_int64(stmt, 6);
	instances = sqlite3_column_int64(stmt, 7);
	over = sqlite3_column_int64(stmt, 8);
	format_ms(ms, sizeof(ms), (double)sqlite3_column_int64(stmt, 4) / 1e6);
	/* "step #2 (rank 0, tid 4242, at 12.5 ms)": which instance, and where to find it */
	snprintf(where, sizeof(where), "%s #%lld (%s, tid %lld, at %s ms)",
		 (const char *)sqlite3_column_text(stmt, 0), sqlite3_column_int64(stmt, 1),
		 (const char *)sqlite3_column_text(stmt, 2), sqlite3_column_int64(stmt, 3), ms);
	sqlite3_finalize(stmt);

	/* the measure of one instance against the *_per_range maxima */
	per_range.max_count = limit->max_count_per_range;
	per_range.max_blocked_ms = limit->max_blocked_ms_per_range;
	per_range.max_count_per_step = per_range.max_blocked_ms_per_step = -1.0;
	describe_measure(measure, sizeof(measure), &per_range, calls, blocked_ns, 0, &count_over,
			 &blocked_over);
	if (over)
		snprintf(line, sizeof(line), "%lld of %lld instance%s over; worst %s: %s", over,
			 instances, instances == 1 ? "" : "s", where, measure);
	else
		snprintf(line, sizeof(line), "%lld instance%s; worst %s: %s", instances,
			 instances == 1 ? "" : "s", where, measure);
	ck->checks++;
	if (!over) {
		ck->passed++;
		fputs("PASS ", stdout);
		ss_put_printable(stdout, name);
		fputs(": ", stdout);
		ss_put_printable(stdout, line);
		fputc('\n', stdout);
		junit_testcase(ck, name, "PASS", line, NULL);
	} else {
		char headline[3000], *details;

		ck->breached++;
		fputs("FAIL ", stdout);
		ss_put_printable(stdout, name);
		fputs(": ", stdout);
		ss_put_printable(stdout, line);
		fputc('\n', stdout);
		snprintf(headline, sizeof(headline), "%s: %s", name, line);
		/* the worst instance is over: list by the measure it breached first */
		code = print_breach_sites(ck, RANGE_SITES_SQL, limit, unit, headline,
					  count_over || !blocked_over, &details);
		if (code == SS_EXIT_OK) {
			char *full = NULL;

			if (asprintf(&full, "%s\n%s", headline, details) < 0)
				full = NULL;
			junit_testcase(ck, name, "FAIL", line, full ? full : headline);
			free(full);
		}
		free(details);
	}
	return code;
}

/*
 * A limit with "range": checked per range instance (docs/budget.md). A check whose recordings
 * have no range matching the name only warns: the exit code is unaffected.
 */
static int check_range_limit(struct check *ck, const struct ss_budget_limit *limit,
			     const char *description)
{
	sqlite3_stmt *stmt;
	int rc, rows = 0, code;

	code = work_exec(ck, "DROP TABLE IF EXISTS temp.inst");
	if (code == SS_EXIT_OK)
		code = range_exec(ck, RANGE_INSTANCES_SQL, limit);
	if (code == SS_EXIT_OK)
		code = range_exec(ck, RANGE_OVER_SQL, limit);
	if (code != SS_EXIT_OK)
		return code;
	if (sqlite3_prepare_v2(ck->work, RANGE_GROUPS_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return work_failure(ck);
	bind_range_limit(stmt, limit, NULL);
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *unit = (const char *)sqlite3_column_text(stmt, 0);
		char name[1200], reason[512];

		rows++;
		if (unit)
			snprintf(name, sizeof(name), "%s [%s]", description, unit);
		else
			snprintf(name, sizeof(name), "%s", description);
		if (sqlite3_column_int64(stmt, 1) > 0) {
			code = check_range_group(ck, limit, name, unit);
			continue;
		}
		if (sqlite3_column_int(stmt, 2))
			snprintf(reason, sizeof(reason), "no range matching \"%s\" recorded",
				 limit->range);
		else
			snprintf(reason, sizeof(reason), "no NVTX ranges recorded");
		not_checked(ck, name, reason);
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = work_failure(ck);
	sqlite3_finalize(stmt);
	if (code == SS_EXIT_OK && rows == 0) {
		char reason[256];

		snprintf(reason, sizeof(reason), "no recording of rank %lld", limit->rank);
		not_checked(ck, description, reason);
	}
	return code;
}

static int check_limit(struct check *ck, const struct ss_budget_limit *limit)
{
	char description[1024], reason[256];
	sqlite3_stmt *stmt;
	int rc, rows = 0, code = SS_EXIT_OK;

	describe_limit(description, sizeof(description), limit);
	if (limit->range)
		return check_range_limit(ck, limit, description);
	if (sqlite3_prepare_v2(ck->work, LIMIT_TOTAL_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return work_failure(ck);
	bind_limit(stmt, limit, NULL);
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *unit = (const char *)sqlite3_column_text(stmt, 0);
		long long calls = sqlite3_column_int64(stmt, 1);
		long long blocked_ns = sqlite3_column_int64(stmt, 2);
		long long steps = sqlite3_column_int64(stmt, 3);
		char name[1200], measure[256], headline[1500];
		int count_over, blocked_over;

		rows++;
		if (unit)
			snprintf(name, sizeof(name), "%s [%s]", description, unit);
		else
			snprintf(name, sizeof(name), "%s", description);
		if ((limit->max_count_per_step >= 0.0 || limit->max_blocked_ms_per_step >= 0.0) &&
		    steps <= 0) {
			not_checked(ck, name,
				    "no repeating step found (docs/rules.md, \"Steady state\"): no "
				    "per-step figure");
			continue;
		}
		describe_measure(measure, sizeof(measure), limit, calls, blocked_ns, steps,
				 &count_over, &blocked_over);
		ck->checks++;
		if (!count_over && !blocked_over) {
			ck->passed++;
			fputs("PASS ", stdout);
			ss_put_printable(stdout, name);
			printf(": %s\n", measure);
			junit_testcase(ck, name, "PASS", measure, NULL);
		} else {
			char *details;

			ck->breached++;
			fputs("FAIL ", stdout);
			ss_put_printable(stdout, name);
			printf(": %s\n", measure);
			snprintf(headline, sizeof(headline), "%s: %s", name, measure);
			code = print_breach_sites(ck, LIMIT_SITES_SQL, limit, unit, headline,
						  count_over, &details);
			if (code == SS_EXIT_OK) {
				char *full = NULL;

				if (asprintf(&full, "%s\n%s", headline, details) < 0)
					full = NULL;
				junit_testcase(ck, name, "FAIL", measure, full ? full : headline);
				free(full);
			}
			free(details);
		}
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = work_failure(ck);
	sqlite3_finalize(stmt);
	if (code == SS_EXIT_OK && rows == 0) {
		snprintf(reason, sizeof(reason), "no recording of rank %lld", limit->rank);
		not_checked(ck, description, reason);
	}
	return code;
}

/* ------------------------------------------------------------------ --init: a budget from a run */

/* The margin `check --init` gives a good run (docs/budget.md, "A budget from a good run"): sync
 * points per step times INIT_COUNT_FACTOR, blocked ms per step times INIT_BLOCKED_FACTOR and at
 * least INIT_BLOCKED_SLACK_MS more (blocked time varies from run to run more than counts). */
#define INIT_COUNT_FACTOR     1.25
#define INIT_BLOCKED_FACTOR   1.5
#define INIT_BLOCKED_SLACK_MS 0.5

/* Per class (and 'sync' for S1-S7 together), the largest figure of any unit: calls and blocked
 * ns outside the warm-up, per steady step (steps > 0) or in total. ?1: 1 to divide by steps. */
#define INIT_FIGURES_SQL                                                                           \
	"WITH u(unit, steps) AS (SELECT unit, sum(steady_steps) FROM recordings GROUP BY unit),"   \
	" k(class) AS (VALUES('sync'),('S1'),('S2'),('S3'),('S4'),('S5'),('S6'),('S7')),"          \
	" f(class, unit, calls, ns) AS (SELECT k.class, u.unit,"                                   \
	"  coalesce(sum(c.calls), 0), coalesce(sum(c.blocked_ns), 0) FROM k CROSS JOIN u"          \
	"  LEFT JOIN recordings r ON r.unit = u.unit LEFT JOIN contrib c ON c.recording = r.id"    \
	"  AND NOT c.warmup AND (k.class = 'sync' OR c.class = k.class) GROUP BY k.class, u.unit)" \
	" SELECT f.class, max(CASE WHEN ?1 THEN f.calls * 1.0 / u.steps ELSE f.calls END),"        \
	"  max(CASE WHEN ?1 THEN f.ns / 1e6 / u.steps ELSE f.ns / 1e6 END)"                        \
	" FROM f JOIN u ON u.unit = f.unit GROUP BY f.class"                                       \
	" ORDER BY f.class <> 'sync', f.class"

/* x rounded up at the given number of decimals, so that the limit is never below x. */
static double round_up(double x, int decimals)
{
	double scale = decimals == 3 ? 1000.0 : 100.0;
	double r = (double)(long long)(x * scale);

	if (r < x * scale)
		r += 1.0;
	return r / scale;
}

static int write_init_budget(struct check *ck, FILE *out)
{
	sqlite3_stmt *stmt;
	long long units = 0, stepless = 0, recordings = 0;
	int rc, per_step, per_rank, first = 1;

	rc = sqlite3_prepare_v2(
	    ck->work,
	    "SELECT count(*), count(*) FILTER (WHERE steps = 0),"
	    " (SELECT count(*) FROM recordings) FROM"
	    " (SELECT unit, sum(steady_steps) AS steps FROM recordings GROUP BY unit)",
	    -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return work_failure(ck);
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		units = sqlite3_column_int64(stmt, 0);
		stepless = sqlite3_column_int64(stmt, 1);
		recordings = sqlite3_column_int64(stmt, 2);
	}
	sqlite3_finalize(stmt);
	per_step = stepless == 0;
	per_rank = units > 1;
	if (sqlite3_prepare_v2(ck->work, INIT_FIGURES_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return work_failure(ck);
	sqlite3_bind_int(stmt, 1, per_step);
	fprintf(out, "{\n  \"version\": %d,\n  \"warmup\": {\"steady\": true},\n  \"limits\": [\n",
		SS_BUDGET_VERSION);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *cls = (const char *)sqlite3_column_text(stmt, 0);
		double calls = sqlite3_column_double(stmt, 1), ms = sqlite3_column_double(stmt, 2);
		const char *unit = per_step ? " per step" : "";
		const char *suffix = per_step ? "_per_step" : "";

		if (strcmp(cls, "sync") != 0 && calls == 0) {
			fprintf(
			    out,
			    "%s    {\"name\": \"no %s in the steady state\", \"class\": \"%s\"%s,"
			    " \"max_count%s\": 0}",
			    first ? "" : ",\n", cls, cls, per_rank ? ", \"per_rank\": true" : "",
			    suffix);
		} else {
			double max_calls =
			    per_step ? round_up(calls * INIT_COUNT_FACTOR, 2)
				     : (double)(long long)(calls * INIT_COUNT_FACTOR + 0.999);
			double max_ms = ms * INIT_BLOCKED_FACTOR;

			if (max_ms < ms + INIT_BLOCKED_SLACK_MS)
				max_ms = ms + INIT_BLOCKED_SLACK_MS;
			fprintf(
			    out,
			    "%s    {\"name\": \"%s: %.10g sync point%s%s, %.10g ms blocked%s in the"
			    " recorded run\", \"class\": \"%s\"%s, \"max_count%s\": %.10g,"
			    " \"max_blocked_ms%s\": %.10g}",
			    first ? "" : ",\n", cls, round_up(calls, 2),
			    round_up(calls, 2) == 1.0 ? "" : "s", unit, round_up(ms, 3), unit, cls,
			    per_rank ? ", \"per_rank\": true" : "", suffix, max_calls, suffix,
			    round_up(max_ms, 3));
		}
		first = 0;
	}
	sqlite3_finalize(stmt);
	if (rc != SQLITE_DONE)
		return work_failure(ck);
	fputs("\n  ]\n}\n", out);
	fprintf(stderr, "syncspy: check --init: %lld recording%s, %s%s\n", recordings,
		recordings == 1 ? "" : "s",
		per_step ? "limits per steady step" : "no repeating step: limits on the totals",
		per_rank ? ", per rank" : "");
	return SS_EXIT_OK;
}

/* `check --init`: the recordings read in steady mode, a budget written to output. */
static int run_init(struct check *ck, int argc, char **argv, const char *output)
{
	struct ss_db_list list = {0};
	struct ss_outfile file;
	int code, closed;

	if (sqlite3_open_v2(":memory:", &ck->work, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return ss_error(SS_EXIT_INTERNAL, "check: cannot open an in-memory database");
	ck->budget.warmup_seconds = -1.0;
	ck->budget.warmup_calls = -1;
	ck->budget.warmup_steady = 1;
	code = ss_db_expand(argc, argv, &list, ck->err, sizeof(ck->err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", ck->err);
	}
	ss_db_dedupe(&list);
	code = work_exec(ck, WORK_SCHEMA_SQL);
	if (code == SS_EXIT_OK)
		code = read_recordings(ck, &list);
	ss_db_list_free(&list);
	if (code != SS_EXIT_OK)
		return code;
	code = ss_outfile_open(output ? output : "-", &file, ck->err, sizeof(ck->err));
	if (code != SS_EXIT_OK)
		return ss_error(code, "%s", ck->err);
	code = write_init_budget(ck, file.file);
	closed = ss_outfile_close(&file, code == SS_EXIT_OK, ck->err, sizeof(ck->err));
	if (closed != SS_EXIT_OK && code == SS_EXIT_OK)
		code = ss_error(closed, "%s", ck->err);
	return code;
}

/* ------------------------------------------------------------------ the command */

static int parse_top(const char *arg, int *top)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(arg, &end, 10);
	if (errno || end == arg || *end || value < 0 || value > 1000)
		return ss_error(SS_EXIT_INPUT, "check: --top %s: expected a number from 0 to 1000",
				arg);
	*top = (int)value;
	return SS_EXIT_OK;
}

static int run_check(struct check *ck, int argc, char **argv, const char *junit_path)
{
	const char *summary_path = getenv("GITHUB_STEP_SUMMARY");
	struct ss_db_list list = {0};
	int code;

	if (sqlite3_open_v2(":memory:", &ck->work, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return ss_error(SS_EXIT_INTERNAL, "check: cannot open an in-memory database");
	code = ss_budget_load(ck->work, ck->budget_path, &ck->budget, ck->err, sizeof(ck->err));
	if (code != SS_EXIT_OK)
		return ss_error(code, "%s", ck->err);
	code = ss_db_expand(argc, argv, &list, ck->err, sizeof(ck->err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", ck->err);
	}
	ss_db_dedupe(&list); /* one file, one rank */
	code = work_exec(ck, WORK_SCHEMA_SQL);
	if (code == SS_EXIT_OK)
		code = read_recordings(ck, &list);
	ss_db_list_free(&list);
	if (code == SS_EXIT_OK)
		code = check_api_names(ck);
	if (code == SS_EXIT_OK)
		code = apply_allow_list(ck);
	if (code == SS_EXIT_OK && junit_path) {
		ck->junit = open_memstream(&ck->junit_text, &ck->junit_len);
		if (!ck->junit)
			code = ss_error(SS_EXIT_INTERNAL, "check: out of memory");
	}
	if (code == SS_EXIT_OK && summary_path && *summary_path) {
		ck->summary = open_memstream(&ck->summary_text, &ck->summary_len);
		if (!ck->summary)
			code = ss_error(SS_EXIT_INTERNAL, "check: out of memory");
	}
	if (code == SS_EXIT_OK)
		code = print_header(ck);
	for (size_t i = 0; i < ck->budget.limit_count && code == SS_EXIT_OK; i++)
		code = check_limit(ck, &ck->budget.limits[i]);
	if (code != SS_EXIT_OK)
		return code;
	printf("syncspy check: %zu limit%s, %d check%s: %d passed, %d breached, %d not checked\n",
	       ck->budget.limit_count, ck->budget.limit_count == 1 ? "" : "s", ck->checks,
	       ck->checks == 1 ? "" : "s", ck->passed, ck->breached, ck->unchecked);
	if (ck->summary)
		summary_write(ck, summary_path);
	if (junit_path) {
		fflush(stdout);
		code = junit_write(ck, junit_path);
		if (code != SS_EXIT_OK)
			return code;
	}
	return ck->breached ? SS_EXIT_OVER_BUDGET : SS_EXIT_OK;
}

int cmd_check(int argc, char **argv)
{
	static const struct option options[] = {
	    {"budget", required_argument, NULL, 'b'},
	    {"junit", required_argument, NULL, 'j'},
	    {"top", required_argument, NULL, 't'},
	    {"init", no_argument, NULL, 'i'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct check ck = {0};
	const char *junit_path = NULL, *github, *output = NULL;
	int ch, code, init = 0;

	ck.top_sites = DEFAULT_TOP_SITES;
	opterr = 0;
	optind = 0; /* glibc: start a fresh scan */
	while ((ch = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
		switch (ch) {
		case 'b':
			ck.budget_path = optarg;
			break;
		case 'i':
			init = 1;
			break;
		case 'o':
			output = optarg;
			break;
		case 'j':
			junit_path = optarg;
			break;
		case 't':
			code = parse_top(optarg, &ck.top_sites);
			if (code != SS_EXIT_OK)
				return code;
			break;
		case 'h':
			ss_command_usage(stdout, "check");
			return SS_EXIT_OK;
		case ':':
			/* the word getopt consumed: "--budget", "-o" */
			return ss_error(SS_EXIT_INPUT, "check: option %s needs an argument",
					argv[optind - 1]);
		default:
			return ss_bad_option("check", ch, argv);
		}
	}
	if (init && (ck.budget_path || junit_path))
		return ss_error(SS_EXIT_INPUT,
				"check: --init writes a budget: not with --budget or --junit");
	if (!init && output)
		return ss_error(SS_EXIT_INPUT, "check: -o FILE goes with --init");
	if (init && optind == argc)
		return ss_error(SS_EXIT_INPUT, "check: --init: name the recordings of a good run");
	if (init) {
		code = run_init(&ck, argc - optind, argv + optind, output);
		sqlite3_close(ck.work);
		return code;
	}
	if (!ck.budget_path)
		return ss_error(SS_EXIT_INPUT,
				"check: --budget FILE is required (see docs/budget.md)");
	if (optind == argc)
		return ss_error(SS_EXIT_INPUT, "check: name at least one database or directory");
	github = getenv("GITHUB_ACTIONS");
	ck.github = github && strcmp(github, "true") == 0;
	ck.workspace = getenv("GITHUB_WORKSPACE");

	code = run_check(&ck, argc - optind, argv + optind, junit_path);

	fflush(stdout);
	if (ck.junit)
		fclose(ck.junit);
	free(ck.junit_text);
	if (ck.summary)
		fclose(ck.summary);
	free(ck.summary_text);
	ss_budget_free(&ck.budget);
	sqlite3_close(ck.work);
	if (ferror(stdout))
		return ss_error(SS_EXIT_INTERNAL, "check: write error on standard output");
	return code;
}
