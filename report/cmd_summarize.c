/*
 * report/cmd_summarize.c: `syncspy summarize -o SUMMARY DB|DIR...`, a small per-node summary of
 * rank databases (summary.h) that `report` and `check` read in their place, so that a job of
 * many nodes is reported without copying its databases to one place (docs/cli.md, "Large
 * jobs"). It runs where the databases are, one task per node under the job's own launcher.
 *
 * The databases are analyzed as `syncspy report` analyzes them (ss_analyze, without folding
 * ranks); for each rank, once loaded, ss_analysis_options.each_rank writes what the analysis
 * kept of it (its ss_rank, its findings and range statistics, its collectives: SUMMARY-2), and
 * the rows `check` reads of the database (check_sql.h's RECORDING_SQL, split by the rank's
 * steady window, read by the loading threads through each_database). Texts are stored once
 * (SUMMARY-3). The file is written beside its final name and renamed into place when complete: a
 * failed summarize leaves the old one.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analysis.h"
#include "check_sql.h"
#include "commands.h"
#include "db.h"
#include "summary.h"

/* ------------------------------------------------------------------ strings (SUMMARY-3) */

/* Texts already in the strings table: an open-addressing hash table of (text, id). */
struct interned {
	char **texts;
	long long *ids;
	size_t capacity, count;
	unsigned char *is_api; /* by id: the text is in the apis table already */
	size_t cap_is_api;
};

static uint64_t hash_text(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* What one summarize run writes with. */
struct summarize {
	sqlite3 *out;
	sqlite3_stmt *add_string, *add_rank, *add_finding, *add_range, *add_collective,
	    *add_check_row, *add_api;
	struct interned strings;
	long long next_idx;
	const char *path; /* the summary being written, for messages */
};

static int grow_strings(struct interned *t)
{
	size_t capacity = t->capacity ? 2 * t->capacity : 1024;
	char **texts = calloc(capacity, sizeof(*texts));
	long long *ids = calloc(capacity, sizeof(*ids));

	if (!texts || !ids) {
		free(texts);
		free(ids);
		return 0;
	}
	for (size_t i = 0; i < t->capacity; i++) {
		size_t k;

		if (!t->texts[i])
			continue;
		for (k = hash_text(t->texts[i]) & (capacity - 1); texts[k];
		     k = (k + 1) & (capacity - 1))
			;
		texts[k] = t->texts[i];
		ids[k] = t->ids[i];
	}
	free(t->texts);
	free(t->ids);
	t->texts = texts;
	t->ids = ids;
	t->capacity = capacity;
	return 1;
}

/* The strings id of text (added on first sight); -1 on failure (err set by the caller). */
static long long intern(struct summarize *s, const char *text)
{
	struct interned *t = &s->strings;
	size_t k;

	if ((t->count + 1) * 2 > t->capacity && !grow_strings(t))
		return -1;
	for (k = hash_text(text) & (t->capacity - 1); t->texts[k]; k = (k + 1) & (t->capacity - 1))
		if (strcmp(t->texts[k], text) == 0)
			return t->ids[k];
	t->texts[k] = strdup(text);
	if (!t->texts[k])
		return -1;
	t->ids[k] = (long long)++t->count;
	sqlite3_bind_int64(s->add_string, 1, t->ids[k]);
	sqlite3_bind_text(s->add_string, 2, text, -1, SQLITE_STATIC);
	if (sqlite3_step(s->add_string) != SQLITE_DONE) {
		sqlite3_reset(s->add_string);
		return -1;
	}
	sqlite3_reset(s->add_string);
	return t->ids[k];
}

/* Binds text's strings id to column col (NULL for no text); 0 on failure. */
static int bind_text_id(struct summarize *s, sqlite3_stmt *stmt, int col, const char *text)
{
	long long id;

	if (!text)
		return sqlite3_bind_null(stmt, col) == SQLITE_OK;
	id = intern(s, text);
	return id >= 0 && sqlite3_bind_int64(stmt, col, id) == SQLITE_OK;
}

static void interned_free(struct interned *t)
{
	for (size_t i = 0; i < t->capacity; i++)
		free(t->texts[i]);
	free(t->texts);
	free(t->ids);
	free(t->is_api);
}

/* ------------------------------------------------------------------ writing one rank */

#define QMARK(field, kind) "?,"
#define INSERT_RANK_SQL	   "INSERT INTO ranks VALUES(?," SS_SUMMARY_RANK_FIELDS(QMARK) " ?, ?)"
#define INSERT_FINDING_SQL                                                                         \
	"INSERT INTO findings VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define INSERT_RANGE_SQL      "INSERT INTO ranges VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define INSERT_COLLECTIVE_SQL "INSERT INTO collectives VALUES(?, ?, ?, ?, ?)"
#define INSERT_CHECK_ROW_SQL  "INSERT INTO check_rows VALUES(?, ?, ?, ?, ?, ?, ?)"

/* Steps a bound statement once and resets it: 0 when it failed. */
static int step_once(sqlite3_stmt *stmt)
{
	int rc = sqlite3_step(stmt);

	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	return rc == SQLITE_DONE;
}

#define BIND_LL(field)		ok &= sqlite3_bind_int64(st, ++col, rk->field) == SQLITE_OK;
#define BIND_INT(field)		ok &= sqlite3_bind_int(st, ++col, rk->field) == SQLITE_OK;
#define BIND_DBL(field)		ok &= sqlite3_bind_double(st, ++col, rk->field) == SQLITE_OK;
#define BIND_STR(field)		ok &= bind_text_id(s, st, ++col, rk->field);
#define BIND_SRC(field)		ok &= bind_text_id(s, st, ++col, rk->field);
#define BIND_FIELD(field, kind) BIND_##kind(field)

static int write_rank(struct summarize *s, long long idx, const struct ss_rank *rk,
		      long long check_rank, long long check_dropped)
{
	sqlite3_stmt *st = s->add_rank;
	int col = 1, ok = sqlite3_bind_int64(st, 1, idx) == SQLITE_OK;

	SS_SUMMARY_RANK_FIELDS(BIND_FIELD)
	if (check_rank >= 0)
		ok &= sqlite3_bind_int64(st, ++col, check_rank) == SQLITE_OK;
	else
		ok &= sqlite3_bind_null(st, ++col) == SQLITE_OK;
	ok &= sqlite3_bind_int64(st, ++col, check_dropped) == SQLITE_OK;
	return ok && step_once(st);
}

static int write_findings(struct summarize *s, long long idx, const struct ss_report *found)
{
	sqlite3_stmt *st = s->add_finding;

	for (size_t i = 0; i < found->nfindings; i++) {
		const struct ss_finding *f = &found->findings[i];
		const long long numbers[] = {f->steps, f->cost_ns, f->cost_per_step_ns};
		const long long figures[] = {f->count, f->blocked_ns,  f->worst_ns,
					     f->bytes, f->estimate_ns, f->gpu_idle_ns};
		int col = 5,
		    ok = sqlite3_bind_int64(st, 1, idx) == SQLITE_OK &&
			 bind_text_id(s, st, 2, f->rule) && bind_text_id(s, st, 3, f->severity) &&
			 bind_text_id(s, st, 4, f->phase) && bind_text_id(s, st, 5, f->cleared);

		for (size_t k = 0; k < 3; k++)
			ok &= sqlite3_bind_int64(st, ++col, numbers[k]) == SQLITE_OK;
		ok &= sqlite3_bind_double(st, ++col, f->share) == SQLITE_OK;
		for (size_t k = 0; k < 6; k++)
			ok &= sqlite3_bind_int64(st, ++col, figures[k]) == SQLITE_OK;
		ok &= bind_text_id(s, st, ++col, f->site) && bind_text_id(s, st, ++col, f->detail);
		if (!ok || !step_once(st))
			return 0;
	}
	return 1;
}

static int write_ranges(struct summarize *s, long long idx, const struct ss_report *found)
{
	sqlite3_stmt *st = s->add_range;

	for (size_t i = 0; i < found->nranges; i++) {
		const struct ss_range_stat *r = &found->ranges[i];
		const long long figures[] = {r->instances,     r->sync_min,   r->sync_median,
					     r->sync_max,      r->sync_total, r->blocked_median_ns,
					     r->blocked_max_ns};
		int ok = sqlite3_bind_int64(st, 1, idx) == SQLITE_OK &&
			 bind_text_id(s, st, 2, r->name) && bind_text_id(s, st, 3, r->kind);

		for (size_t k = 0; k < 7; k++)
			ok &= sqlite3_bind_int64(st, 4 + (int)k, figures[k]) == SQLITE_OK;
		if (!ok || !step_once(st))
			return 0;
	}
	return 1;
}

static int write_collectives(struct summarize *s, long long idx, const struct ss_collectives *set)
{
	sqlite3_stmt *st = s->add_collective;

	for (size_t i = 0; i < set->nseries; i++) {
		const struct ss_series *se = &set->series[i];
		unsigned char *blob;
		size_t len;
		int ok;

		if (!se->n)
			continue;
		if (!ss_summary_encode_calls(se->c, se->n, &blob, &len))
			return 0;
		ok = sqlite3_bind_int64(st, 1, idx) == SQLITE_OK &&
		     bind_text_id(s, st, 2, se->hash) && bind_text_id(s, st, 3, se->op) &&
		     sqlite3_bind_int64(st, 4, (long long)se->n) == SQLITE_OK &&
		     sqlite3_bind_blob(st, 5, blob, (int)len, free) == SQLITE_OK && step_once(st);
		if (!ok)
			return 0;
	}
	return 1;
}

/* An API name of the recordings (what `check` knows, to catch a misspelt "api"), once. */
static int write_api(struct summarize *s, const char *name)
{
	struct interned *t = &s->strings;
	long long id = intern(s, name);

	if (id < 0)
		return 0;
	if ((size_t)id >= t->cap_is_api) {
		size_t capacity = 2 * (size_t)id + 64;
		unsigned char *grown = realloc(t->is_api, capacity);

		if (!grown)
			return 0;
		memset(grown + t->cap_is_api, 0, capacity - t->cap_is_api);
		t->is_api = grown;
		t->cap_is_api = capacity;
	}
	if (t->is_api[id])
		return 1;
	t->is_api[id] = 1;
	sqlite3_bind_int64(s->add_api, 1, id);
	return step_once(s->add_api);
}

/* What `check` reads of one database (cmd_check.c's copy_recording), read by the loading
 * thread (read_check_rows) and written with the rank (write_each_rank). */
struct check_part {
	long long rank, dropped; /* meta.rank (-1: none) and meta.dropped_events, as check reads */
	struct check_row {
		char *class, *api, *site;
		sqlite3_value *outside, *calls, *blocked; /* as RECORDING_SQL gives them */
	} * rows;
	size_t nrows, cap_rows;
	char **apis; /* the database's API names */
	size_t napis, cap_apis;
};

static void free_check_part(void *extra)
{
	struct check_part *part = extra;

	for (size_t i = 0; i < part->nrows; i++) {
		free(part->rows[i].class);
		free(part->rows[i].api);
		free(part->rows[i].site);
		sqlite3_value_free(part->rows[i].outside);
		sqlite3_value_free(part->rows[i].calls);
		sqlite3_value_free(part->rows[i].blocked);
	}
	for (size_t i = 0; i < part->napis; i++)
		free(part->apis[i]);
	free(part->rows);
	free(part->apis);
	free(part);
}

/* Appends to *array (n of capacity cap, elements of size) one element; NULL when out of
 * memory. */
static void *append(void *array, size_t *n, size_t *cap, size_t size)
{
	void **p = array;

	if (*n == *cap) {
		size_t capacity = *cap ? 2 * *cap : 16;
		void *grown = realloc(*p, capacity * size);

		if (!grown)
			return NULL;
		*p = grown;
		*cap = capacity;
	}
	return (char *)*p + (*n)++ * size;
}

static char *column_copy(sqlite3_stmt *stmt, int col)
{
	const char *text = (const char *)sqlite3_column_text(stmt, col);

	return strdup(text ? text : "");
}

/*
 * ss_analysis_options.each_database, on the analysis' own connection (site texts with their
 * file:line already): RECORDING_SQL's rows with no warm-up but the steady window's, which
 * `check` applies for "steady" or ignores for none; the rank and dropped events as check reads
 * them; the database's API names.
 */
static int read_check_rows(void *arg, sqlite3 *db, const struct ss_rank *rk, void **extra,
			   char *err, size_t errlen)
{
	struct check_part *part = calloc(1, sizeof(*part));
	sqlite3_stmt *read = NULL;
	int rc, nomem = 0;

	(void)arg;
	if (!part) {
		snprintf(err, errlen, "out of memory");
		return SS_EXIT_INTERNAL;
	}
	*extra = part;
	rc = sqlite3_prepare_v2(db, RECORDING_META_SQL, -1, &read, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(read)) == SQLITE_ROW) {
		part->rank = sqlite3_column_type(read, 0) == SQLITE_NULL
				 ? -1
				 : sqlite3_column_int64(read, 0);
		part->dropped = sqlite3_column_int64(read, 1);
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(read);
	read = NULL;
	if (rc == SQLITE_DONE &&
	    (rc = sqlite3_prepare_v2(db, RECORDING_SQL, -1, &read, NULL)) == SQLITE_OK) {
		sqlite3_bind_int64(read, 2, 0);
		if (rk->steady_start_ns >= 0) {
			sqlite3_bind_int64(read, 3, rk->steady_start_ns);
			sqlite3_bind_int64(read, 4, rk->steady_end_ns);
		}
		while (!nomem && (rc = sqlite3_step(read)) == SQLITE_ROW) {
			struct check_row *row =
			    append(&part->rows, &part->nrows, &part->cap_rows, sizeof(*row));

			if (!row) {
				nomem = 1;
				break;
			}
			*row = (struct check_row){column_copy(read, 0),
						  column_copy(read, 1),
						  column_copy(read, 2),
						  sqlite3_value_dup(sqlite3_column_value(read, 3)),
						  sqlite3_value_dup(sqlite3_column_value(read, 4)),
						  sqlite3_value_dup(sqlite3_column_value(read, 5))};
			nomem = !row->class || !row->api || !row->site || !row->outside ||
				!row->calls || !row->blocked;
		}
		sqlite3_finalize(read);
		read = NULL;
	}
	if (!nomem && rc == SQLITE_DONE &&
	    (rc = sqlite3_prepare_v2(db, "SELECT name FROM apis", -1, &read, NULL)) == SQLITE_OK) {
		while (!nomem && (rc = sqlite3_step(read)) == SQLITE_ROW) {
			char **name =
			    append(&part->apis, &part->napis, &part->cap_apis, sizeof(*name));

			nomem = !name || !(*name = column_copy(read, 0));
		}
		sqlite3_finalize(read);
	}
	if (nomem) {
		snprintf(err, errlen, "out of memory");
		return SS_EXIT_INTERNAL;
	}
	return rc == SQLITE_DONE ? SS_EXIT_OK : ss_db_failure(db, rc, rk->path, err, errlen);
}

static int write_check_rows(struct summarize *s, long long idx, const struct check_part *part)
{
	for (size_t i = 0; i < part->nrows; i++) {
		const struct check_row *row = &part->rows[i];
		sqlite3_stmt *st = s->add_check_row;
		int ok = sqlite3_bind_int64(st, 1, idx) == SQLITE_OK &&
			 bind_text_id(s, st, 2, row->class) && bind_text_id(s, st, 3, row->api) &&
			 bind_text_id(s, st, 4, row->site) &&
			 sqlite3_bind_value(st, 5, row->outside) == SQLITE_OK &&
			 sqlite3_bind_value(st, 6, row->calls) == SQLITE_OK &&
			 sqlite3_bind_value(st, 7, row->blocked) == SQLITE_OK;

		if (!ok || !step_once(st))
			return 0;
	}
	for (size_t i = 0; i < part->napis; i++)
		if (!write_api(s, part->apis[i]))
			return 0;
	return 1;
}

/* ss_analysis_options.each_rank: one rank into the summary. */
static int write_each_rank(void *arg, const struct ss_rank *rk, const struct ss_report *found,
			   const struct ss_collectives *collectives, void *extra, char *err,
			   size_t errlen)
{
	struct summarize *s = arg;
	struct check_part *part = extra;
	long long idx = s->next_idx++;
	int ok = part && write_check_rows(s, idx, part) &&
		 write_rank(s, idx, rk, part->rank, part->dropped) &&
		 write_findings(s, idx, found) && write_ranges(s, idx, found) &&
		 write_collectives(s, idx, collectives);

	if (part)
		free_check_part(part);
	if (!ok) {
		snprintf(err, errlen, "%s: cannot write: %s", s->path, sqlite3_errmsg(s->out));
		return SS_EXIT_INTERNAL;
	}
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ the file */

static int prepare_all(struct summarize *s)
{
	struct {
		const char *sql;
		sqlite3_stmt **stmt;
	} statements[] = {
	    {"INSERT INTO strings VALUES(?, ?)", &s->add_string},
	    {INSERT_RANK_SQL, &s->add_rank},
	    {INSERT_FINDING_SQL, &s->add_finding},
	    {INSERT_RANGE_SQL, &s->add_range},
	    {INSERT_COLLECTIVE_SQL, &s->add_collective},
	    {INSERT_CHECK_ROW_SQL, &s->add_check_row},
	    {"INSERT INTO apis VALUES(?)", &s->add_api},
	};

	for (size_t i = 0; i < sizeof(statements) / sizeof(statements[0]); i++)
		if (sqlite3_prepare_v2(s->out, statements[i].sql, -1, statements[i].stmt, NULL) !=
		    SQLITE_OK)
			return 0;
	return 1;
}

static void finalize_all(struct summarize *s)
{
	sqlite3_stmt *all[] = {s->add_string,	  s->add_rank,	    s->add_finding, s->add_range,
			       s->add_collective, s->add_check_row, s->add_api};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		sqlite3_finalize(all[i]);
	s->add_string = s->add_rank = s->add_finding = s->add_range = s->add_collective =
	    s->add_check_row = s->add_api = NULL;
}

/* The new summary's schema and meta (SUMMARY-1), in the transaction that fills it. */
static int create_summary(struct summarize *s)
{
	char sql[512], host[256] = "";

	gethostname(host, sizeof(host) - 1);
	snprintf(sql, sizeof(sql),
		 "PRAGMA application_id = %d; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
		 "BEGIN;",
		 SS_SUMMARY_APPLICATION_ID);
	if (sqlite3_exec(s->out, sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->out, SS_SUMMARY_SCHEMA_SQL, NULL, NULL, NULL) != SQLITE_OK ||
	    !prepare_all(s))
		return 0;
	{
		sqlite3_stmt *meta;
		const char *keys[] = {"kind", "syncspy_version", "host"};
		const char *values[] = {SS_SUMMARY_KIND, PACKAGE_VERSION, host};
		int ok = sqlite3_prepare_v2(s->out, "INSERT INTO meta VALUES(?, ?)", -1, &meta,
					    NULL) == SQLITE_OK;

		for (size_t i = 0; ok && i < 3; i++) {
			sqlite3_bind_text(meta, 1, keys[i], -1, SQLITE_STATIC);
			sqlite3_bind_text(meta, 2, values[i], -1, SQLITE_STATIC);
			ok = step_once(meta);
		}
		if (ok) {
			sqlite3_bind_text(meta, 1, "summary_version", -1, SQLITE_STATIC);
			sqlite3_bind_int(meta, 2, SS_SUMMARY_VERSION);
			ok = step_once(meta);
		}
		sqlite3_finalize(meta);
		return ok;
	}
}

/* Summarizes list into a temporary file beside output, renamed over it once complete. */
static int summarize(const struct ss_db_list *list, const char *output, int progress)
{
	struct summarize s = {.path = output};
	struct ss_analysis_options options = {.progress = progress,
					      .each_database = read_check_rows,
					      .each_rank = write_each_rank,
					      .free_extra = free_check_part,
					      .each_rank_arg = &s};
	struct ss_report report;
	char err[1024], *tmp = NULL;
	int fd, code;

	if (asprintf(&tmp, "%s.XXXXXX", output) < 0)
		return ss_error(SS_EXIT_INTERNAL, "out of memory");
	fd = mkstemp(tmp);
	if (fd < 0) {
		code = ss_error(errno == ENOENT || errno == ENOTDIR || errno == EACCES
				    ? SS_EXIT_INPUT
				    : SS_EXIT_INTERNAL,
				"%s: cannot write: %s", output, strerror(errno));
		free(tmp);
		return code;
	}
	{ /* mkstemp makes it 0600: a summary is read as the databases are, umask applied */
		mode_t mask = umask(0);

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	close(fd);
	if (sqlite3_open_v2(tmp, &s.out, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
	    !create_summary(&s)) {
		code = ss_error(SS_EXIT_INTERNAL, "%s: cannot write: %s", output,
				s.out ? sqlite3_errmsg(s.out) : "out of memory");
		goto out;
	}
	code = ss_analyze(list->paths, list->count, &options, &report, err, sizeof(err));
	ss_report_free(&report);
	if (code != SS_EXIT_OK) {
		ss_error(code, "%s", err);
		goto out;
	}
	finalize_all(&s);
	if (sqlite3_exec(s.out, "COMMIT", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_close(s.out) != SQLITE_OK) {
		code = ss_error(SS_EXIT_INTERNAL, "%s: cannot write: %s", output,
				sqlite3_errmsg(s.out));
		goto out;
	}
	s.out = NULL;
	if (rename(tmp, output) != 0)
		code = ss_error(SS_EXIT_INTERNAL, "%s: cannot write: %s", output, strerror(errno));
out:
	finalize_all(&s);
	if (s.out)
		sqlite3_close(s.out);
	if (code != SS_EXIT_OK)
		unlink(tmp);
	free(tmp);
	interned_free(&s.strings);
	return code;
}

int cmd_summarize(int argc, char **argv)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"progress", no_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ss_db_list list = {0};
	const char *output = NULL;
	int progress = isatty(STDERR_FILENO), ch, code;
	char err[1024];

	opterr = 0;
	optind = 0; /* glibc: start a fresh scan */
	while ((ch = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
		switch (ch) {
		case 'o':
			output = optarg;
			break;
		case 'p':
			progress = 1;
			break;
		case 'h':
			ss_command_usage(stdout, "summarize");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("summarize", ch, argv);
		}
	}
	if (!output || !*output || strcmp(output, "-") == 0)
		return ss_error(SS_EXIT_INPUT, "summarize: -o SUMMARY names the file to write");
	if (optind == argc)
		return ss_error(SS_EXIT_INPUT,
				"summarize: name at least one database or directory");
	code = ss_db_expand(argc - optind, argv + optind, &list, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", err);
	}
	ss_db_dedupe(&list); /* one file, one rank */
	for (size_t i = 0; i < list.count; i++)
		if (ss_summary_is(list.paths[i])) {
			code = ss_error(SS_EXIT_INPUT,
					"%s: a summary: summarize reads databases (name the "
					"summaries to report or check beside each other)",
					list.paths[i]);
			ss_db_list_free(&list);
			return code;
		}
	code = summarize(&list, output, progress);
	ss_db_list_free(&list);
	return code;
}
