/*
 * report/cmd_dump.c: `syncspy dump [--table T] [--format tsv|csv|json] [--where EXPR]
 * DB|DIR...`, the rows of one table or view of each recording as text, for scripts.
 *
 * Columns come in the schema's order (SS_SCHEMA_SQL: stable within a schema version) and rows
 * in a fixed order per table (calls by start time, then id), so that two dumps of the same
 * recording are byte-identical. TSV and CSV give each database a "# PATH" line and a header
 * line; JSON is one array with one object per database, {"path", "table", "rows": [...]},
 * each row built by SQLite's json_object, one row per line, streamed (no whole table in memory).
 *
 * --where is pasted into the query as SQL (DUMP-1): the connection is read-only (db.c) and an
 * authorizer allows reading only, so an expression can filter but cannot write or attach
 * files. For a local tool reading the user's own files that is enough.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "db.h"
#include "text_safe.h"

enum { ONLY_AGGREGATE = 1, ONLY_GPU };

/* The tables and view dump knows, with the order their rows come in. */
static const struct dump_table {
	const char *name;
	const char *order;
	int only; /* ONLY_AGGREGATE, ONLY_GPU: a table some recordings do not have */
} dump_tables[] = {
    {"api_calls", "start_ns, id", 0},
    {"calls", "start_ns, id", 0},
    {"meta", "key", 0},
    {"sites", "id", 0},
    {"threads", "tid", 0},
    {"comms", "created_ns, comm", 0},
    {"streams", "created_ns, stream", 0},
    {"stacks", "id", 0},
    {"ranges", "start_ns, id", 0},
    /* aggregate mode's (docs/schema.md): a database recorded in trace mode has none */
    {"enqueue_aggregates", "id", ONLY_AGGREGATE},
    {"enqueue_histogram", "aggregate_id, bucket", ONLY_AGGREGATE},
    {"step_figures", "start_ns, id", ONLY_AGGREGATE},
    /* the GPU timeline's (docs/cupti.md): only where CUPTI delivered records; gpu_api is the
     * ties the report uses, by stream order where the recording has none (db.h) */
    {"gpu_activity", "start_ns, id", ONLY_GPU},
    {"gpu_api", "correlation_id, start_ns", ONLY_GPU},
};

enum dump_format { FORMAT_TSV, FORMAT_CSV, FORMAT_JSON };

/* DUMP-1: reading only. Views read their tables (SQLITE_READ); functions are pure reads. */
static int read_only_authorizer(void *unused, int action, const char *a, const char *b,
				const char *c, const char *d)
{
	(void)unused, (void)a, (void)b, (void)c, (void)d;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_FUNCTION:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	default:
		return SQLITE_DENY;
	}
}

static void put_cell(enum dump_format format, const char *text, FILE *out)
{
	if (format == FORMAT_CSV)
		ss_put_csv(out, text);
	else
		ss_put_tsv(out, text);
}

/* A failed or refused read, worded by db.c: the diagnosis reads the schema, which the
 * authorizer of --where would refuse (the connection is read-only either way). */
static int dump_failure(sqlite3 *db, int rc, const char *path, char *err, size_t errlen)
{
	sqlite3_set_authorizer(db, NULL, NULL);
	if (rc == SQLITE_MISMATCH) /* a BLOB in a text dump: what ss_db_diagnose finds */
		return ss_db_diagnose(db, path, err, errlen) != SS_EXIT_OK
			   ? SS_EXIT_INPUT
			   : ss_db_failure(db, rc, path, err, errlen);
	return ss_db_failure(db, rc, path, err, errlen);
}

/* TSV/CSV: a header line of column names, then one line per row; NULL is an empty field. A
 * BLOB (no recording has one: the schema's columns are integers and text) is refused as
 * damage, as every other command refuses it. */
static int dump_delimited(sqlite3 *db, sqlite3_stmt *stmt, const char *path,
			  enum dump_format format, char *err, size_t errlen)
{
	const char separator = format == FORMAT_CSV ? ',' : '\t';
	int columns = sqlite3_column_count(stmt), rc;

	printf("# %s\n", path);
	for (int c = 0; c < columns; c++) {
		if (c)
			putchar(separator);
		put_cell(format, sqlite3_column_name(stmt, c), stdout);
	}
	putchar('\n');
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		for (int c = 0; c < columns; c++)
			if (sqlite3_column_type(stmt, c) == SQLITE_BLOB)
				return dump_failure(db, SQLITE_MISMATCH, path, err, errlen);
		for (int c = 0; c < columns; c++) {
			const char *text = (const char *)sqlite3_column_text(stmt, c);

			if (c)
				putchar(separator);
			if (text)
				put_cell(format, text, stdout);
		}
		putchar('\n');
	}
	return rc == SQLITE_DONE ? SS_EXIT_OK : dump_failure(db, rc, path, err, errlen);
}

/* JSON: the statement's one column is each row's json_object text. */
static int dump_json(sqlite3 *db, sqlite3_stmt *stmt, const char *path, const char *table,
		     int first, char *err, size_t errlen)
{
	sqlite3_stmt *quote;
	int rc, rows = 0;

	/* The path as a JSON string, quoted by SQLite like every other value. */
	rc = sqlite3_prepare_v2(db, "SELECT json_quote(?1), json_quote(?2)", -1, &quote, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	sqlite3_bind_text(quote, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(quote, 2, table, -1, SQLITE_STATIC);
	rc = sqlite3_step(quote);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(quote);
		return ss_db_failure(db, rc, path, err, errlen);
	}
	printf("%s{\"path\": ", first ? "" : ",\n");
	ss_put_json_text(stdout, (const char *)sqlite3_column_text(quote, 0), 0);
	fputs(", \"table\": ", stdout);
	ss_put_json_text(stdout, (const char *)sqlite3_column_text(quote, 1), 0);
	fputs(", \"rows\": [", stdout);
	sqlite3_finalize(quote);
	/* SQLite's JSON copies bytes that are not UTF-8: U+FFFD as it is written (text_safe.h) */
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		printf("%s\n  ", rows++ ? "," : "");
		ss_put_json_text(stdout, (const char *)sqlite3_column_text(stmt, 0), 0);
	}
	printf("%s]}", rows ? "\n" : "");
	return rc == SQLITE_DONE ? SS_EXIT_OK : dump_failure(db, rc, path, err, errlen);
}

/* SELECT * for TSV/CSV; for JSON, json_object('col', "col", ...) over the same columns. */
static char *build_query(sqlite3 *db, const struct dump_table *table, const char *where,
			 enum dump_format format, int *rc)
{
	sqlite3_stmt *probe;
	sqlite3_str *sql = sqlite3_str_new(db);
	char *base;

	/* The expression in parentheses: it cannot swallow the ORDER BY that follows. */
	base = sqlite3_mprintf("SELECT * FROM \"%w\" WHERE (%s)%s%s", table->name,
			       where ? where : "1", format == FORMAT_JSON ? "" : " ORDER BY ",
			       format == FORMAT_JSON ? "" : table->order);
	if (!base) {
		*rc = SQLITE_NOMEM;
		sqlite3_free(sqlite3_str_finish(sql));
		return NULL;
	}
	if (format != FORMAT_JSON) {
		sqlite3_free(sqlite3_str_finish(sql));
		*rc = SQLITE_OK;
		return base;
	}
	/* The column names, from the query itself (the view's names, in its order). */
	*rc = sqlite3_prepare_v2(db, base, -1, &probe, NULL);
	if (*rc != SQLITE_OK) {
		sqlite3_free(base);
		sqlite3_free(sqlite3_str_finish(sql));
		return NULL;
	}
	sqlite3_str_appendall(sql, "SELECT json_object(");
	for (int c = 0; c < sqlite3_column_count(probe); c++) {
		const char *name = sqlite3_column_name(probe, c);

		sqlite3_str_appendf(sql, "%s%Q, \"%w\"", c ? ", " : "", name, name);
	}
	sqlite3_str_appendf(sql, ") FROM (%s) ORDER BY %s", base, table->order);
	sqlite3_finalize(probe);
	sqlite3_free(base);
	*rc = sqlite3_str_errcode(sql);
	return sqlite3_str_finish(sql);
}

static int dump_one(const char *path, const struct dump_table *table, const char *where,
		    enum dump_format format, int first, char *err, size_t errlen)
{
	sqlite3 *db;
	sqlite3_stmt *stmt = NULL;
	char *sql;
	int rc, code;

	code = ss_db_open(path, &db, err, errlen);
	if (code == SS_EXIT_OK && strcmp(table->name, "gpu_api") == 0) /* CUPTI-13's ties */
		code = ss_gpu_order_ties(db, path, err, errlen);
	if (code != SS_EXIT_OK) {
		sqlite3_close(db);
		return code;
	}
	if (table->only && !ss_db_has_table(db, "main", table->name)) {
		snprintf(err, errlen, "dump: %s: no table '%s' (%s)", path, table->name,
			 table->only == ONLY_AGGREGATE
			     ? "aggregate mode's: this recording was made in trace mode"
			     : "the GPU timeline's: this recording has none");
		sqlite3_close(db);
		return SS_EXIT_INPUT;
	}
	sqlite3_set_authorizer(db, read_only_authorizer, NULL);
	sql = build_query(db, table, where, format, &rc);
	if (sql)
		rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK) {
		/* Most likely the --where expression: SQLite's message names what is wrong. */
		if (where && (rc & 0xff) != SQLITE_NOMEM) {
			snprintf(err, errlen, "dump: %s: --where '%s': %s", path, where,
				 sqlite3_errmsg(db));
			code = SS_EXIT_INPUT;
		} else {
			code = ss_db_failure(db, rc, path, err, errlen);
		}
	} else if (format == FORMAT_JSON) {
		code = dump_json(db, stmt, path, table->name, first, err, errlen);
	} else {
		code = dump_delimited(db, stmt, path, format, err, errlen);
	}
	sqlite3_finalize(stmt);
	sqlite3_free(sql);
	sqlite3_close(db);
	return code;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option options[] = {
	    {"table", required_argument, NULL, 't'},
	    {"format", required_argument, NULL, 'f'},
	    {"where", required_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const struct dump_table *table = &dump_tables[0];
	enum dump_format format = FORMAT_TSV;
	const char *where = NULL;
	struct ss_db_list list = {0};
	char err[1024];
	int ch, code, worst = SS_EXIT_OK, dumped = 0;

	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, argv, ":t:f:w:h", options, NULL)) != -1) {
		switch (ch) {
		case 't':
			table = NULL;
			for (size_t i = 0; i < sizeof(dump_tables) / sizeof(dump_tables[0]); i++)
				if (strcmp(optarg, dump_tables[i].name) == 0)
					table = &dump_tables[i];
			if (!table)
				return ss_error(
				    SS_EXIT_INPUT,
				    "dump: unknown table '%s' (calls, api_calls, meta, "
				    "sites, threads, comms, streams, stacks, ranges, "
				    "enqueue_aggregates, enqueue_histogram, step_figures, "
				    "gpu_activity, gpu_api)",
				    optarg);
			break;
		case 'f':
			if (strcmp(optarg, "tsv") == 0)
				format = FORMAT_TSV;
			else if (strcmp(optarg, "csv") == 0)
				format = FORMAT_CSV;
			else if (strcmp(optarg, "json") == 0)
				format = FORMAT_JSON;
			else
				return ss_error(SS_EXIT_INPUT,
						"dump: unknown format '%s' (tsv, csv, json)",
						optarg);
			break;
		case 'w':
			where = optarg;
			break;
		case 'h':
			ss_command_usage(stdout, "dump");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("dump", ch, argv);
		}
	}
	if (optind >= argc)
		return ss_error(SS_EXIT_INPUT, "dump: no database or directory given");
	code = ss_db_expand(argc - optind, argv + optind, &list, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", err);
	}
	if (format == FORMAT_JSON)
		putchar('[');
	for (size_t i = 0; i < list.count; i++) {
		err[0] = '\0';
		code = dump_one(list.paths[i], table, where, format, dumped == 0, err, sizeof(err));
		if (code == SS_EXIT_OK)
			dumped++;
		else if (err[0])
			ss_error(code, "%s", err);
		if (code > worst)
			worst = code;
	}
	if (format == FORMAT_JSON)
		printf("]\n");
	ss_db_list_free(&list);
	return worst;
}
