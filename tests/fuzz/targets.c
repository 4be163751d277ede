/*
 * tests/fuzz/targets.c: the fuzz targets of the reading side (issue 18, t807 and t808), one
 * LLVMFuzzerTestOneInput for both, the target picked by SYNCSPY_FUZZ_TARGET:
 *
 *   db      the database loader: the input is a database file when it starts with SQLite's
 *           header, else SQL run on a copy of a valid database (SYNCSPY_FUZZ_TEMPLATE, made by
 *           tests/fixtures/make-db.sh) to damage it (drop, retype, extreme values, writable
 *           schema); then the file is analyzed as `syncspy report` does (ss_analyze) and its
 *           steady state found as `syncspy check` does (ss_steady_window). ss_analyze opens it
 *           with ss_db_open, whose quick_check (READ-1) turns most damaged pages away before a
 *           query runs; ss_steady_window reopens it without that check (it expects a file
 *           checked already), so the loader's queries still meet the damaged pages: damage
 *           that quick_check cannot see must come back as bad input too.
 *   budget  the budget parser: the input is a budget file, read by ss_budget_load; one that
 *           loads must keep its promises (no string cut at \u0000, no GLOB longer than
 *           SS_BUDGET_PATTERN_MAX).
 *
 * Bad input must come back as SS_EXIT_INPUT with a message: a crash, a sanitizer report or
 * SS_EXIT_INTERNAL ("a bug", report/commands.h) on anything but out of memory aborts. Built
 * with libFuzzer (clang -fsanitize=fuzzer) or with tests/fuzz/replay.c, which runs the
 * committed corpus (tests/fuzz/corpus) where clang is missing. The report/ sources are
 * compiled in with their main renamed (-Dmain=syncspy_main).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analysis.h"
#include "check_budget.h"
#include "commands.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *target;
static char *template_data;
static size_t template_size;
static char work[4096];

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "syncspy-fuzz: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static char *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		*size = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void write_all(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0)
		die("cannot write", path);
}

static void remove_work(void)
{
	char side[sizeof(work) + 8];

	unlink(work);
	snprintf(side, sizeof(side), "%s-wal", work);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", work);
	unlink(side);
	snprintf(side, sizeof(side), "%s-journal", work);
	unlink(side);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("SYNCSPY_FUZZ_WORKDIR");

	target = getenv("SYNCSPY_FUZZ_TARGET");
	if (!target || (strcmp(target, "db") && strcmp(target, "budget")))
		die("set SYNCSPY_FUZZ_TARGET to db or budget", NULL);
	snprintf(work, sizeof(work), "%s/fuzz-input-%ld.%s", dir ? dir : "/tmp", (long)getpid(),
		 strcmp(target, "db") ? "json" : "sqlite");
	if (!strcmp(target, "db")) {
		const char *path = getenv("SYNCSPY_FUZZ_TEMPLATE");

		if (!path || !(template_data = read_all(path, &template_size)))
			die("set SYNCSPY_FUZZ_TEMPLATE to a database (tests/fixtures/make-db.sh)",
			    path);
	}
	/* the commands' own messages on stderr are not the fuzzer's */
	int null = open("/dev/null", O_WRONLY);
	if (null >= 0) {
		dup2(null, STDOUT_FILENO);
		close(null);
	}
	atexit(remove_work);
	return 0;
}

/* SQL of the input may damage the copy, not reach outside it */
static int deny_attach(void *arg, int action, const char *a, const char *b, const char *c,
		       const char *d)
{
	return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

static int stop_long_sql(void *arg)
{
	return ++*(int *)arg > 1000; /* about 1000 x 1000 virtual machine steps */
}

static void damage_copy(const uint8_t *data, size_t size)
{
	char *sql = malloc(size + 1);
	sqlite3 *db = NULL;
	int steps = 0;

	if (!sql)
		die("out of memory", NULL);
	memcpy(sql, data, size);
	sql[size] = '\0';
	write_all(work, template_data, template_size);
	if (sqlite3_open_v2(work, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		die("cannot open the template copy", sqlite3_errmsg(db));
	sqlite3_set_authorizer(db, deny_attach, NULL);
	sqlite3_progress_handler(db, 1000, stop_long_sql, &steps);
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
	sqlite3_exec(db, sql, NULL, NULL, NULL); /* errors are fine: what ran, ran */
	sqlite3_close(db);
	free(sql);
}

static void judge(int code, const char *err, const char *what)
{
	if (code == SS_EXIT_INTERNAL && !strstr(err, "out of memory"))
		die(what, err); /* bad input must be SS_EXIT_INPUT (exit 2), not "a bug" */
}

static void fuzz_db(const uint8_t *data, size_t size)
{
	static const char header[16] = "SQLite format 3";
	struct ss_analysis_options options = {0};
	struct ss_report report;
	char err[4096] = "";
	char *paths[1] = {work};
	long long start, end, steps;
	int code;

	remove_work();
	if (size >= sizeof(header) && !memcmp(data, header, sizeof(header)))
		write_all(work, data, size);
	else
		damage_copy(data, size);
	memset(&report, 0, sizeof(report));
	code = ss_analyze(paths, 1, &options, &report, err, sizeof(err));
	judge(code, err, "ss_analyze");
	ss_report_free(&report); /* on failure too, as cmd_report.c does */
	err[0] = '\0';
	code = ss_steady_window(work, &start, &end, &steps, err, sizeof(err));
	judge(code, err, "ss_steady_window");
}

/* Whether the JSON text has the escape \u0000 (a backslash that is not itself escaped) */
static int has_escaped_nul(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i + 1 < size; i++) {
		if (data[i] != '\\')
			continue;
		if (data[i + 1] == 'u' && i + 6 <= size && !memcmp(data + i + 2, "0000", 4))
			return 1;
		i++; /* the escaped character */
	}
	return 0;
}

static void fuzz_budget(const uint8_t *data, size_t size)
{
	static sqlite3 *db;
	struct ss_budget budget;
	char err[4096] = "";
	int code;

	if (!db && sqlite3_open(":memory:", &db) != SQLITE_OK)
		die("cannot open an in-memory database", NULL);
	write_all(work, data, size);
	code = ss_budget_load(db, work, &budget, err, sizeof(err));
	judge(code, err, "ss_budget_load");
	if (code != SS_EXIT_OK)
		return;
	/* what a budget that loads promises (issue 18 item 11): no string was cut at an escaped
	 * NUL, and every GLOB is short enough for SQLite to run at check time */
	if (has_escaped_nul(data, size))
		die("a budget with \\u0000 in it loaded", NULL);
	for (size_t i = 0; i < budget.allow_count; i++)
		if (strlen(budget.allow[i]) > SS_BUDGET_PATTERN_MAX)
			die("an allow pattern longer than SS_BUDGET_PATTERN_MAX loaded", NULL);
	for (size_t i = 0; i < budget.limit_count; i++) {
		const struct ss_budget_limit *l = &budget.limits[i];

		if ((l->site && strlen(l->site) > SS_BUDGET_PATTERN_MAX) ||
		    (l->range && strlen(l->range) > SS_BUDGET_PATTERN_MAX))
			die("a pattern longer than SS_BUDGET_PATTERN_MAX loaded", l->path);
	}
	ss_budget_free(&budget);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!strcmp(target, "db"))
		fuzz_db(data, size);
	else
		fuzz_budget(data, size);
	return 0;
}
