/*
 * report/db.h: opening syncspy databases for reading, shared by every subcommand.
 *
 * A recording is never modified (but by `syncspy symbolize`, cmd_symbolize.c, which opens its
 * own connection for writing): databases are opened read-only, and a `.partial` file of a
 * process that is still running or was killed (with its -wal beside it) reads like a finished
 * one. Every function here that can fail returns an ss_exit code (commands.h) and leaves one
 * message in err, "PATH: what is wrong", for the caller to print after "syncspy: ".
 */
#ifndef SYNCSPY_REPORT_DB_H
#define SYNCSPY_REPORT_DB_H

#include <stddef.h>
#include <stdio.h>

#include <sqlite3.h>

/* A gpu_activity row with a time (alias A: "a." or ""): CUPTI hands over the records of work
 * not finished at a forced flush (every pause and detach: CUPTI-8, CUPTI-9) with start and end
 * 0; recordings made before the shim dropped them (convert, cupti/cupti.c) hold such rows (the
 * corpus traces recorded on the H100 in sessions 16 and 19: up to 26 in one). They are no work
 * at time 0: every reader leaves them out. */
#define SS_GPU_TIMED(A) A "start_ns > 0 AND " A "end_ns >= " A "start_ns"

/* The database paths the command line names, directories expanded. */
struct ss_db_list {
	char **paths;
	size_t count;
	size_t capacity;
};

/*
 * Appends each argument to list; an argument that is a directory stands for the *.sqlite and
 * *.sqlite.partial files directly inside it, in version order of their names (rank2 before
 * rank10; the same in every locale, so outputs are stable). A missing path or a directory with no databases is an input error. Files are not
 * opened here: ss_db_open says what is wrong with them.
 */
int ss_db_expand(int argc, char *const *argv, struct ss_db_list *list, char *err, size_t errlen);

/*
 * For the commands that merge databases (report, check, export): a file named twice (the same
 * device and inode: a repeated name, a symlink, a directory and a file in it) stays once, at
 * its first place, with a note on stderr ("syncspy: note: B is the same file as A: read
 * once"); counted twice it would be two ranks of one process. dump and info list what is named.
 */
void ss_db_dedupe(struct ss_db_list *list);
void ss_db_list_free(struct ss_db_list *list);

/*
 * Opens path read-only and checks that it is a syncspy database this syncspy can read: an
 * SQLite file, with a meta table whose schema_version is SS_SCHEMA_VERSION and every table and
 * view of SS_SCHEMA_SQL, every page of it sound (PRAGMA quick_check: READ-1, time proportional
 * to the file's size, docs/cli.md gives the cost). On success *out is the open connection
 * (close it with sqlite3_close).
 */
int ss_db_open(const char *path, sqlite3 **out, char *err, size_t errlen);

/*
 * ss_db_open without reading every page: for a file this command has opened with ss_db_open
 * already (a second pass over it, as export and the HTML page make), and for the directory
 * listing's look at a .partial, which the command then opens with ss_db_open.
 */
int ss_db_reopen(const char *path, sqlite3 **out, char *err, size_t errlen);

/*
 * PRAGMA integrity_check, `info --check`: what ss_db_open's quick_check verifies, and that
 * every index holds exactly its table's rows. "corrupt or truncated database (integrity_check:
 * ...)" when not.
 */
int ss_db_integrity_check(sqlite3 *db, const char *path, char *err, size_t errlen);

/*
 * Turns a failed SQLite call on an open database into an exit code and a message. Input errors
 * (exit 2): corruption and truncation (SQLITE_CORRUPT, SQLITE_NOTADB, short reads), read errors,
 * a file its writer keeps locked, a WAL file that cannot be opened read-only, a value the schema
 * does not allow (ss_db_diagnose). Anything else (SQL errors on valid data, no memory) is
 * internal (exit 3). rc is the failing result code.
 */
int ss_db_failure(sqlite3 *db, int rc, const char *path, char *err, size_t errlen);

/* Whether SCHEMA ("main", "temp") of DB has table NAME (0 on an error: the query that follows
 * says what). */
int ss_db_has_table(sqlite3 *db, const char *schema, const char *name);

/* gpu_order.c (CUPTI-13): for a recording whose GPU rows have no gpu_api rows to tie them (the
 * default kinds, CUPTI-12), the ties by stream order, in a TEMP table gpu_api on DB that the
 * readers of gpu_api read instead; SYNCSPY_REPORT_TIES=order makes them also where gpu_api has
 * rows. Called where gpu_api is read (analysis.c, out_html.c, export's second pass, dump of
 * gpu_api), not by ss_db_open: info, check and symbolize need no ties. */
int ss_gpu_order_ties(sqlite3 *db, const char *path, char *err, size_t errlen);

/* hook_sites.c: the site texts the findings name, on DB's connection: file:line of native sites
 * where debug information has it (ss_lines_attach), and a sync made inside a framework's hook
 * (save_on_cpu's pack hook, eager QAT's observers) named by the line that called the model
 * (SITE-1: TEMP tables and a TEMP view `calls`, made only where a Python stack has such a
 * hook). For the analysis, the HTML report and `check` alike; `export` keeps the recorded
 * sites. Returns SS_EXIT_OK or an exit code with the error in err. */
int ss_finding_sites(sqlite3 *db, const char *path, char *err, size_t errlen);

/*
 * The largest time a call may have: CLOCK_MONOTONIC ns (SCHEMA-3) of 2^60, 36 years of uptime;
 * and the largest meta.start_realtime_ns, 2^62 (the year 2116). Within them, a time on the
 * report's axis (t - start_mono_ns + start_realtime_ns, ANALYSIS-4) and the difference of two
 * such times cannot overflow 64 bits; a database with a time beyond them (or below 0) is
 * damaged (ss_db_diagnose, load.c, docs/cli.md).
 */
#define SS_DB_TIME_MAX_NS     (1LL << 60)
#define SS_DB_REALTIME_MAX_NS (1LL << 62)

/*
 * Looks for a value the schema does not allow, the first one found: a BLOB in any column, text
 * or a real number in an INTEGER column, a calls.start_ns or end_ns outside [0,
 * SS_DB_TIME_MAX_NS]. One scan of each table: run after a query failed, to tell damaged input
 * (SS_EXIT_INPUT, "PATH: damaged syncspy database: calls row 5: bytes holds a blob value" in
 * err) from an internal error; SS_EXIT_OK when the data holds nothing of the kind (err
 * untouched). ss_db_failure calls it for every failure that is not of the file itself.
 */
int ss_db_diagnose(sqlite3 *db, const char *path, char *err, size_t errlen);

/* How ss_db_print_rows lays out a table. */
struct ss_rows_style {
	const char *indent;	/* printed before every line */
	const char *separator;	/* between columns; NULL: two spaces */
	int header;		/* 1: a first line of column names */
	const char *empty_note; /* printed (after indent) instead of the table when there are no
				   rows; NULL: print nothing */
};

/*
 * Runs a prepared statement and prints its rows as an aligned table: columns whose values are
 * all integers (or NULL) are right-aligned, others left-aligned; NULL prints as "-", control
 * characters and bytes that are not UTF-8 as \xNN (text_safe.h), so that every row is one line.
 * Resets stmt.
 */
int ss_db_print_rows(sqlite3 *db, sqlite3_stmt *stmt, const char *path, FILE *out,
		     const struct ss_rows_style *style, char *err, size_t errlen);

#endif
