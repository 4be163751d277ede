/*
 * report/cmd_symbolize.c: `syncspy symbolize DB|DIR...`, the file:line of native call sites
 * written into the databases themselves.
 *
 * A native site is recorded as module + offset; `syncspy report` reads its file:line after the
 * run from the module's debug information (report/lines.c), so a recording moved to a machine
 * without the binary (a trace committed from the GPU machine and read in CI) loses its lines.
 * This command computes the same texts while the binary is at hand and stores them in
 * `sites.text`, which every reader already shows; the recorded texts are kept in the
 * `sites_recorded` table (id, text), so `--restore` (or one UPDATE, docs/schema.md) gives the
 * database back as it was recorded. Running it again recomputes the texts and keeps the first
 * recorded ones.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "commands.h"
#include "db.h"
#include "lines.h"

#define RECORDED_SQL "CREATE TABLE IF NOT EXISTS sites_recorded(id INTEGER PRIMARY KEY, text TEXT);"
#define KEEP_SQL                                                                                   \
	"INSERT OR IGNORE INTO sites_recorded(id, text) SELECT id, text FROM sites WHERE id = ?"
#define RESTORE_SQL                                                                                \
	"UPDATE sites SET text = (SELECT r.text FROM sites_recorded r WHERE r.id = sites.id)"      \
	" WHERE id IN (SELECT id FROM sites_recorded);"                                            \
	"DROP TABLE sites_recorded;"

struct symbolize {
	sqlite3_stmt *keep, *update;
	int failed;
};

/* ss_lines_each's callback: the recorded text kept (once), the line written. */
static int write_line(void *context, long long site_id, char *text)
{
	struct symbolize *s = context;
	sqlite3_bind_int64(s->keep, 1, site_id);
	sqlite3_bind_text(s->update, 1, text, -1, free);
	sqlite3_bind_int64(s->update, 2, site_id);
	int ok = sqlite3_step(s->keep) == SQLITE_DONE && sqlite3_step(s->update) == SQLITE_DONE;
	sqlite3_reset(s->keep);
	sqlite3_reset(s->update);
	if (!ok) {
		s->failed = 1;
		return -1;
	}
	return 1;
}

/* Count of native sites (address != 0): what could have a line. */
static long long native_sites(sqlite3 *db)
{
	sqlite3_stmt *stmt = NULL;
	long long n = -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sites WHERE address != 0", -1, &stmt,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return n;
}

static int symbolize_one(const char *path, int restore)
{
	char err[1024];
	sqlite3 *db = NULL;
	int code = ss_db_open(path, &db, err, sizeof err); /* is it a syncspy database? */
	sqlite3_close(db);
	db = NULL;
	if (code != SS_EXIT_OK)
		return ss_error(code, "symbolize: %s", err);
	if (strstr(path, ".partial"))
		return ss_error(SS_EXIT_INPUT,
				"symbolize: %s: still being written (or its writer was killed)",
				path);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		code = ss_error(SS_EXIT_INPUT, "symbolize: %s: cannot open for writing: %s", path,
				sqlite3_errmsg(db));
		sqlite3_close(db);
		return code;
	}
	sqlite3_busy_timeout(db, 5000); /* as db.c waits for a writer */
	if (restore) {
		int has = 0;
		sqlite3_stmt *stmt = NULL;
		if (sqlite3_prepare_v2(db,
				       "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
				       " AND name = 'sites_recorded'",
				       -1, &stmt, NULL) == SQLITE_OK &&
		    sqlite3_step(stmt) == SQLITE_ROW)
			has = sqlite3_column_int(stmt, 0);
		sqlite3_finalize(stmt);
		if (has &&
		    sqlite3_exec(db, "BEGIN;" RESTORE_SQL "COMMIT;", NULL, NULL, NULL) != SQLITE_OK)
			code = ss_error(SS_EXIT_INTERNAL, "symbolize: %s: %s", path,
					sqlite3_errmsg(db));
		else
			printf("%s: %s\n", path,
			       has ? "recorded site texts restored" : "not symbolized, unchanged");
		sqlite3_close(db);
		return code;
	}

	struct symbolize s = {NULL, NULL, 0};
	int found = 0;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE;" RECORDED_SQL, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, KEEP_SQL, -1, &s.keep, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE sites SET text = ? WHERE id = ?", -1, &s.update, NULL) !=
		SQLITE_OK) {
		s.failed = 1;
	} else {
		found = ss_lines_each(db, write_line, &s);
	}
	sqlite3_finalize(s.keep);
	sqlite3_finalize(s.update);
	if (s.failed || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		code = ss_error(SS_EXIT_INTERNAL, "symbolize: %s: %s", path, sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	} else {
		printf("%s: %d of %lld native sites with file:line\n", path, found,
		       native_sites(db));
	}
	sqlite3_close(db);
	return code;
}

int cmd_symbolize(int argc, char **argv)
{
	static const struct option options[] = {
	    {"restore", no_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ss_db_list list = {0};
	char err[1024];
	int restore = 0, ch, code = SS_EXIT_OK;

	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (ch) {
		case 'r':
			restore = 1;
			break;
		case 'h':
			ss_command_usage(stdout, "symbolize");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("symbolize", ch, argv);
		}
	}
	if (optind >= argc)
		return ss_error(SS_EXIT_INPUT, "symbolize: no database given (see 'syncspy help "
					       "symbolize')");
	/* Without libdw there is nothing to write: say so rather than report 0 lines found. */
	if (!restore && !ss_lines_usable())
		return ss_error(SS_EXIT_INPUT,
				"symbolize: libdw.so.1 not found (install libdw1): no file:line to "
				"write");
	code = ss_db_expand(argc - optind, argv + optind, &list, err, sizeof err);
	if (code != SS_EXIT_OK)
		return ss_error(code, "symbolize: %s", err);
	for (size_t i = 0; i < list.count; i++) {
		int rc = symbolize_one(list.paths[i], restore);
		if (rc > code)
			code = rc;
	}
	ss_db_list_free(&list);
	return code;
}
