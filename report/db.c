/*
 * report/db.c: opening syncspy databases for reading (db.h), shared by every subcommand.
 *
 * The checks run from cheapest to dearest so that each kind of bad input gets its own message:
 * the file itself (missing, empty, not SQLite by its 16-byte header), then SQLite's view of it
 * (corrupt or truncated, caught from the first query), then the syncspy contract (meta table,
 * schema_version, the tables and columns of SS_SCHEMA_SQL), then every page of the file (PRAGMA
 * quick_check, READ-1: a damaged page in a table the command does not read is bad input too).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syncspy/schema.h"
#include "commands.h"
#include "db.h"
#include "summary.h"
#include "text_safe.h"

/* Every database is opened read-only; a writer may hold it for up to its commit period. */
#define SS_DB_BUSY_TIMEOUT_MS 5000

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* ------------------------------------------------------------------ expanding arguments */

static int list_append(struct ss_db_list *list, char *path)
{
	if (list->count == list->capacity) {
		size_t capacity = list->capacity ? 2 * list->capacity : 16;
		char **paths = realloc(list->paths, capacity * sizeof(*paths));

		if (!paths)
			return -1;
		list->paths = paths;
		list->capacity = capacity;
	}
	list->paths[list->count++] = path;
	return 0;
}

static int has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n > s && strcmp(name + n - s, suffix) == 0;
}

/* The names the recording library gives its databases; -wal and -shm files are not listed. */
static int is_database_name(const struct dirent *entry)
{
	return has_suffix(entry->d_name, ".sqlite") || has_suffix(entry->d_name, ".sqlite.partial");
}

/* A .partial found in a directory that is empty or holds no committed schema yet: a process that
 * ended (an _exit(), a kill) before its first commit. Skipped with a note on stderr, so that the
 * directory's other databases can be read; named on the command line it is an error as ever. */
static int unfinished(const char *path)
{
	char why[512];
	sqlite3 *db = NULL;
	struct stat st;

	if (stat(path, &st) == 0 && st.st_size == 0) {
		fprintf(stderr,
			"syncspy: note: skipped %s: empty (its process ended before its "
			"first commit)\n",
			path);
		return 1;
	}
	/* not read whole here: the command's own ss_db_open does that, once (READ-1) */
	if (ss_db_reopen(path, &db, why, sizeof(why)) == SS_EXIT_INPUT) {
		fprintf(stderr, "syncspy: note: skipped %s: an unfinished recording (%s)\n", path,
			why);
		return 1;
	}
	sqlite3_close(db);
	return 0;
}

static int expand_directory(const char *dir, struct ss_db_list *list, char *err, size_t errlen)
{
	struct dirent **entries;
	int n, code = SS_EXIT_OK;
	size_t skipped = 0;
	int slash = has_suffix(dir, "/");

	/* versionsort: rank2 comes before rank10, and the order does not depend on the locale. */
	n = scandir(dir, &entries, is_database_name, versionsort);
	if (n < 0)
		return fail(err, errlen, SS_EXIT_INPUT, "%s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		char *path;

		if (code == SS_EXIT_OK) {
			if (asprintf(&path, "%s%s%s", dir, slash ? "" : "/", entries[i]->d_name) <
			    0)
				path = NULL;
			if (path && has_suffix(path, ".sqlite.partial") && unfinished(path)) {
				free(path);
				skipped++;
			} else if (!path || list_append(list, path) != 0) {
				free(path);
				code = fail(err, errlen, SS_EXIT_INTERNAL, "out of memory");
			}
		}
		free(entries[i]);
	}
	free(entries);
	if (code == SS_EXIT_OK && (n == 0 || (size_t)n == skipped))
		code = fail(err, errlen, SS_EXIT_INPUT, "no syncspy databases in %s", dir);
	return code;
}

/*
 * Drops the paths that name a file already listed (the same device and inode: a name given
 * twice, a symlink, a directory and a file in it), with one note each on stderr: one database
 * counted twice would be two ranks of one process. The first name stays, in its place.
 */
void ss_db_dedupe(struct ss_db_list *list)
{
	struct stat *ids = calloc(list->count ? list->count : 1, sizeof(*ids));
	size_t kept = 0;

	if (!ids)
		return; /* nothing dropped: ss_db_open still reads each */
	for (size_t i = 0; i < list->count; i++) {
		size_t j = kept;
		int known = stat(list->paths[i], &ids[kept]) == 0;

		for (j = 0; known && j < kept; j++)
			if (ids[j].st_dev == ids[kept].st_dev && ids[j].st_ino == ids[kept].st_ino)
				break;
		if (known && j < kept) {
			fputs("syncspy: note: ", stderr);
			ss_put_printable(stderr, list->paths[i]);
			fputs(" is the same file as ", stderr);
			ss_put_printable(stderr, list->paths[j]);
			fputs(": read once\n", stderr);
			free(list->paths[i]);
			continue;
		}
		if (!known) /* ss_db_open will say why; it matches nothing */
			memset(&ids[kept], 0, sizeof(ids[kept]));
		list->paths[kept++] = list->paths[i];
	}
	list->count = kept;
	free(ids);
}

int ss_db_expand(int argc, char *const *argv, struct ss_db_list *list, char *err, size_t errlen)
{
	for (int i = 0; i < argc; i++) {
		struct stat st;
		char *path;
		int code;

		if (stat(argv[i], &st) != 0)
			return fail(err, errlen, SS_EXIT_INPUT, "%s: %s", argv[i], strerror(errno));
		if (S_ISDIR(st.st_mode)) {
			code = expand_directory(argv[i], list, err, errlen);
			if (code != SS_EXIT_OK)
				return code;
			continue;
		}
		path = strdup(argv[i]);
		if (!path || list_append(list, path) != 0) {
			free(path);
			return fail(err, errlen, SS_EXIT_INTERNAL, "out of memory");
		}
	}
	return SS_EXIT_OK;
}

void ss_db_list_free(struct ss_db_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->paths[i]);
	free(list->paths);
	memset(list, 0, sizeof(*list));
}

/* ------------------------------------------------------------------ errors */

/*
 * The first value of a table that breaks the schema's types: a BLOB anywhere, text or a real
 * in an INTEGER column, a calls time outside [0, SS_DB_TIME_MAX_NS]. One scan per table, run
 * only once a query has failed (or been refused), to say what in the file is wrong. Returns
 * SS_EXIT_INPUT with the message, or SS_EXIT_OK when nothing is found.
 */
static int diagnose_table(sqlite3 *db, const char *table, const char *path, char *err,
			  size_t errlen)
{
	sqlite3_str *cond = sqlite3_str_new(db), *which = sqlite3_str_new(db);
	sqlite3_stmt *cols = NULL, *stmt = NULL;
	char *where = NULL, *names = NULL, *sql = NULL;
	int n = 0, code = SS_EXIT_OK;

	if (sqlite3_prepare_v2(db,
			       "SELECT name, upper(type) FROM pragma_table_info(?1) ORDER BY cid",
			       -1, &cols, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(cols, 1, table, -1, SQLITE_STATIC);
	while (sqlite3_step(cols) == SQLITE_ROW) {
		const char *col = (const char *)sqlite3_column_text(cols, 0);
		const char *type = (const char *)sqlite3_column_text(cols, 1);
		int integer = type && strcmp(type, "INTEGER") == 0;
		int timed = strcmp(table, "calls") == 0 &&
			    (strcmp(col, "start_ns") == 0 || strcmp(col, "end_ns") == 0);
		char *test;

		if (integer && timed)
			test = sqlite3_mprintf(
			    "typeof(\"%w\") NOT IN ('integer', 'null') OR \"%w\" < 0"
			    " OR \"%w\" > %lld",
			    col, col, col, (long long)SS_DB_TIME_MAX_NS);
		else if (integer)
			test = sqlite3_mprintf("typeof(\"%w\") NOT IN ('integer', 'null')", col);
		else
			test = sqlite3_mprintf("typeof(\"%w\") = 'blob'", col);
		if (!test)
			break;
		sqlite3_str_appendf(cond, "%s(%s)", n ? " OR " : "", test);
		sqlite3_str_appendf(which, " WHEN %s THEN %Q", test, col);
		sqlite3_free(test);
		n++;
	}
	where = sqlite3_str_finish(cond);
	cond = NULL;
	names = sqlite3_str_finish(which);
	which = NULL;
	if (!n || !where || !names)
		goto out;
	sql = sqlite3_mprintf("SELECT rowid, CASE%s END FROM \"%w\" WHERE %s LIMIT 1", names, table,
			      where);
	if (!sql || sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		const char *col = (const char *)sqlite3_column_text(stmt, 1);
		sqlite3_stmt *value = NULL;
		char *get = sqlite3_mprintf("SELECT typeof(\"%w\"), quote(\"%w\") FROM \"%w\""
					    " WHERE rowid = ?1",
					    col, col, table);
		const char *type = "?";
		char shown[48] = "";

		if (get && sqlite3_prepare_v2(db, get, -1, &value, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(value, 1, sqlite3_column_int64(stmt, 0));
			if (sqlite3_step(value) == SQLITE_ROW) {
				type = (const char *)sqlite3_column_text(value, 0);
				snprintf(shown, sizeof(shown), "%s",
					 (const char *)sqlite3_column_text(value, 1));
			}
		}
		if (strcmp(type, "integer") == 0)
			code =
			    fail(err, errlen, SS_EXIT_INPUT,
				 "%s: damaged syncspy database: %s row %lld: %s out of range (%s; "
				 "times are CLOCK_MONOTONIC ns from 0 to %lld)",
				 path, table, (long long)sqlite3_column_int64(stmt, 0), col, shown,
				 (long long)SS_DB_TIME_MAX_NS);
		else
			code =
			    fail(err, errlen, SS_EXIT_INPUT,
				 "%s: damaged syncspy database: %s row %lld: %s holds a %s value",
				 path, table, (long long)sqlite3_column_int64(stmt, 0), col, type);
		sqlite3_finalize(value);
		sqlite3_free(get);
	}
out:
	sqlite3_free(sqlite3_str_finish(cond));
	sqlite3_free(sqlite3_str_finish(which));
	sqlite3_free(where);
	sqlite3_free(names);
	sqlite3_free(sql);
	sqlite3_finalize(cols);
	sqlite3_finalize(stmt);
	return code;
}

int ss_db_diagnose(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *tables;
	int code = SS_EXIT_OK;

	if (!db ||
	    sqlite3_prepare_v2(db,
			       "SELECT name FROM sqlite_master WHERE type = 'table'"
			       " AND name NOT GLOB 'sqlite_*' ORDER BY name = 'calls' DESC, name",
			       -1, &tables, NULL) != SQLITE_OK)
		return SS_EXIT_OK;
	while (code == SS_EXIT_OK && sqlite3_step(tables) == SQLITE_ROW)
		code = diagnose_table(db, (const char *)sqlite3_column_text(tables, 0), path, err,
				      errlen);
	sqlite3_finalize(tables);
	return code;
}

int ss_db_failure(sqlite3 *db, int rc, const char *path, char *err, size_t errlen)
{
	int ext = db ? sqlite3_extended_errcode(db) : rc;

	switch (rc & 0xff) {
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return fail(err, errlen, SS_EXIT_INPUT, "%s: corrupt or truncated database", path);
	case SQLITE_IOERR:
		if (ext == SQLITE_IOERR_SHORT_READ)
			return fail(err, errlen, SS_EXIT_INPUT, "%s: corrupt or truncated database",
				    path);
		return fail(err, errlen, SS_EXIT_INPUT, "%s: cannot read: %s", path,
			    sqlite3_errmsg(db));
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return fail(err, errlen, SS_EXIT_INPUT,
			    "%s: locked by its writer for more than %d ms; try again", path,
			    SS_DB_BUSY_TIMEOUT_MS);
	case SQLITE_CANTOPEN:
	case SQLITE_PERM:
	case SQLITE_READONLY:
		/* Reading a WAL database needs its -shm file, or the right to create it. */
		return fail(err, errlen, SS_EXIT_INPUT,
			    "%s: cannot open: %s (a database in WAL mode needs its -shm file or a "
			    "writable directory)",
			    path, sqlite3_errmsg(db));
	case SQLITE_NOMEM:
		return fail(err, errlen, SS_EXIT_INTERNAL, "%s: out of memory", path);
	default: {
		/* A value the schema does not allow (a BLOB that json_object refuses, a sum that
		 * overflows) is bad input; only when the file holds none is it our error. */
		int code = fail(err, errlen, SS_EXIT_INTERNAL, "%s: SQLite error: %s", path,
				db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		/* sum() of values each in range, too many or too large together */
		int overflow = db && strcmp(sqlite3_errmsg(db), "integer overflow") == 0;

		/* a header whose schema format SQLite does not know: a damaged file (t807's
		 * fuzzer found it) */
		if (db && strcmp(sqlite3_errmsg(db), "unsupported file format") == 0)
			return fail(err, errlen, SS_EXIT_INPUT,
				    "%s: corrupt database (its header names an unknown file format)",
				    path);
		if (db && ss_db_diagnose(db, path, err, errlen) != SS_EXIT_OK)
			code = SS_EXIT_INPUT;
		else if (overflow)
			code = fail(err, errlen, SS_EXIT_INPUT,
				    "%s: damaged syncspy database: its times or byte counts add up "
				    "beyond 64 bits",
				    path);
		return code;
	}
	}
}

/* ------------------------------------------------------------------ opening and checking */

/* The file itself, before SQLite sees it: each of these gets a message SQLite cannot give. */
static int check_file(const char *path, char *err, size_t errlen)
{
	static const char sqlite_magic[16] = "SQLite format 3";
	char header[sizeof(sqlite_magic)];
	struct stat st;
	ssize_t got;
	int fd;

	if (stat(path, &st) != 0)
		return fail(err, errlen, SS_EXIT_INPUT, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return fail(err, errlen, SS_EXIT_INPUT, "%s: is a directory", path);
	if (!S_ISREG(st.st_mode))
		return fail(err, errlen, SS_EXIT_INPUT, "%s: not a regular file", path);
	if (st.st_size == 0)
		return fail(err, errlen, SS_EXIT_INPUT, "%s: not a syncspy database (empty file)",
			    path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, SS_EXIT_INPUT, "%s: %s", path, strerror(errno));
	got = pread(fd, header, sizeof(header), 0);
	close(fd);
	if (got < 0)
		return fail(err, errlen, SS_EXIT_INPUT, "%s: %s", path, strerror(errno));
	if ((size_t)got < sizeof(header) || memcmp(header, sqlite_magic, sizeof(header)) != 0)
		return fail(err, errlen, SS_EXIT_INPUT, "%s: not a syncspy database (not SQLite)",
			    path);
	return SS_EXIT_OK;
}

/*
 * Reads meta.schema_version (SCHEMA-1: written with the tables). Its value may have been bound
 * as an integer or as text; anything but a whole number means this is not our database.
 */
static int check_objects(sqlite3 *db, const char *path, char *err, size_t errlen);

static int check_version(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	long long version;
	int rc, code;

	rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1,
				&stmt, NULL);
	if (rc != SQLITE_OK && (rc & 0xff) == SQLITE_ERROR) {
		/* a meta table without its columns (key or value renamed away) is bad input,
		 * named as check_objects names any table with other columns (t800) */
		code = check_objects(db, path, err, errlen);
		return code != SS_EXIT_OK ? code : ss_db_failure(db, rc, path, err, errlen);
	}
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE) {
		code =
		    fail(err, errlen, SS_EXIT_INPUT,
			 "%s: not a syncspy database (no schema_version in its meta table)", path);
	} else if (rc != SQLITE_ROW) {
		code = ss_db_failure(db, rc, path, err, errlen);
	} else {
		const char *text = (const char *)sqlite3_column_text(stmt, 0);
		char *end = NULL;

		errno = 0;
		version = text ? strtoll(text, &end, 10) : 0;
		if (!text || !*text || *end || errno)
			code = fail(err, errlen, SS_EXIT_INPUT,
				    "%s: not a syncspy database (schema_version is '%s')", path,
				    text ? text : "NULL");
		else if (version < SS_SCHEMA_VERSION_MIN || version > SS_SCHEMA_VERSION)
			code = fail(err, errlen, SS_EXIT_INPUT,
				    "%s: unknown schema version %lld (this syncspy reads %d to %d)",
				    path, version, SS_SCHEMA_VERSION_MIN, SS_SCHEMA_VERSION);
		else
			code = SS_EXIT_OK;
	}
	sqlite3_finalize(stmt);
	return code;
}

/* A comma-separated list of a table's columns, in order, as a string SQLite owns (free it with
 * sqlite3_free); NULL when the table does not exist or on error (*rc says which). */
static char *table_columns(sqlite3 *db, const char *table, int *rc)
{
	sqlite3_stmt *stmt;
	char *columns = NULL;

	*rc = sqlite3_prepare_v2(db,
				 "SELECT group_concat(name, ',') FROM"
				 " (SELECT name FROM pragma_table_info(?1) ORDER BY cid)",
				 -1, &stmt, NULL);
	if (*rc != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	*rc = sqlite3_step(stmt);
	if (*rc == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(stmt, 0);

		*rc = SQLITE_OK;
		if (text) {
			columns = sqlite3_mprintf("%s", text);
			if (!columns)
				*rc = SQLITE_NOMEM;
		}
	}
	sqlite3_finalize(stmt);
	return columns;
}

/*
 * Compares the database with SS_SCHEMA_SQL itself, built in memory, so that the reader's idea
 * of version 1 cannot drift from the writer's: every table and view must have the same columns
 * in the same order, and every view must compile (a view reading a dropped table does not).
 * Extra tables or indexes are allowed.
 */
static int check_objects(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3 *ref = NULL;
	sqlite3_stmt *objects = NULL;
	int rc, code = SS_EXIT_OK;

	rc = sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(ref, SS_SCHEMA_SQL, NULL, NULL, NULL);
	/* Tables first: a view that reads a missing table is reported as that table missing. */
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
		    ref,
		    "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view')"
		    " AND name NOT GLOB 'sqlite_*' ORDER BY type = 'view', name",
		    -1, &objects, NULL);
	if (rc != SQLITE_OK) {
		code = fail(err, errlen, SS_EXIT_INTERNAL, "cannot build the reference schema: %s",
			    ref ? sqlite3_errmsg(ref) : sqlite3_errstr(rc));
		goto out;
	}
	while (code == SS_EXIT_OK && (rc = sqlite3_step(objects)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(objects, 0);
		const char *name = (const char *)sqlite3_column_text(objects, 1);
		char *want, *have;
		int rc_want, rc_have;

		want = table_columns(ref, name, &rc_want);
		have = table_columns(db, name, &rc_have);
		if (rc_have != SQLITE_OK && (rc_have & 0xff) == SQLITE_ERROR &&
		    strcmp(type, "view") == 0)
			/* the view's SQL does not compile on this database (a table or column it
			 * reads is gone): bad input, not an internal error */
			code = fail(err, errlen, SS_EXIT_INPUT,
				    "%s: damaged syncspy database: view '%s' cannot be read (%s)",
				    path, name, sqlite3_errmsg(db));
		else if (rc_have != SQLITE_OK)
			code = ss_db_failure(db, rc_have, path, err, errlen);
		else if (rc_want != SQLITE_OK)
			code = fail(err, errlen, SS_EXIT_INTERNAL, "reference schema: %s",
				    sqlite3_errmsg(ref));
		else if (!have)
			code = fail(err, errlen, SS_EXIT_INPUT,
				    "%s: damaged syncspy database: no %s '%s'", path, type, name);
		else if (strcmp(want, have) != 0) /* a view's columns are what readers select */
			code = fail(err, errlen, SS_EXIT_INPUT,
				    "%s: damaged syncspy database: %s '%s' has columns (%s), "
				    "schema version %d has (%s)",
				    path, type, name, have, SS_SCHEMA_VERSION, want);
		sqlite3_free(want);
		sqlite3_free(have);
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = fail(err, errlen, SS_EXIT_INTERNAL, "reference schema: %s",
			    sqlite3_errmsg(ref));
out:
	sqlite3_finalize(objects);
	sqlite3_close(ref);
	return code;
}

/* Whether the database has a meta table: the first read, so corruption shows up here. */
static int check_meta_table(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *stmt;
	int rc, code;

	rc = sqlite3_prepare_v2(db,
				"SELECT count(*) FROM sqlite_master WHERE type = 'table'"
				" AND name = 'meta'",
				-1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		code = ss_db_failure(db, rc, path, err, errlen);
	else if (sqlite3_column_int(stmt, 0) == 0)
		code = fail(err, errlen, SS_EXIT_INPUT,
			    "%s: not a syncspy database (no meta table)", path);
	else
		code = SS_EXIT_OK;
	sqlite3_finalize(stmt);
	return code;
}

/*
 * A database that is not in WAL mode, or whose writer has finished (no -wal beside it), can be
 * read as immutable: SQLite then takes no locks and needs no -shm file, so recordings in a
 * read-only directory (a CI artifact, another user's run) still open.
 */
static sqlite3 *open_immutable(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	char *wal, *uri;
	size_t n = 0, len = strlen(path);
	sqlite3 *db = NULL;
	int wal_exists;

	if (asprintf(&wal, "%s-wal", path) < 0)
		return NULL;
	wal_exists = access(wal, F_OK) == 0;
	free(wal);
	if (wal_exists)
		return NULL;
	/* A URI filename: escape what URI syntax gives a meaning to. */
	uri = malloc(3 * len + sizeof("file:?immutable=1"));
	if (!uri)
		return NULL;
	n += (size_t)sprintf(uri, "file:");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
			uri[n++] = '%';
			uri[n++] = hex[c >> 4];
			uri[n++] = hex[c & 15];
		} else {
			uri[n++] = (char)c;
		}
	}
	strcpy(uri + n, "?immutable=1");
	if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		db = NULL;
	}
	free(uri);
	return db;
}

/* One value of a PRAGMA that returns an integer (page_count, page_size). */
static int pragma_int(sqlite3 *db, const char *sql, long long *value)
{
	sqlite3_stmt *stmt;
	int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);

	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		*value = sqlite3_column_int64(stmt, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(stmt);
	return rc;
}

/*
 * A file cut short: SQLite reads the missing end of a page as zeros (a short read is not an
 * error to it), so a copy cut inside its last page reads with rows missing and no complaint.
 * The database's size in pages (PRAGMA page_count: the header's count, as SQLite trusts it)
 * times the page size must fit in the file. With a non-empty -wal beside it, pages may live
 * there (a recording still running): the file alone is not checked then, but it is always
 * made of whole pages.
 */
static int check_size(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	long long pages = 0, page_size = 0;
	struct stat st, wal_st;
	char *wal;
	int rc, wal_used;

	rc = pragma_int(db, "PRAGMA page_size", &page_size);
	if (rc == SQLITE_OK)
		rc = pragma_int(db, "PRAGMA page_count", &pages);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	if (stat(path, &st) != 0)
		return fail(err, errlen, SS_EXIT_INPUT, "%s: %s", path, strerror(errno));
	if (asprintf(&wal, "%s-wal", path) < 0)
		return fail(err, errlen, SS_EXIT_INTERNAL, "out of memory");
	wal_used = stat(wal, &wal_st) == 0 && wal_st.st_size > 0;
	free(wal);
	if (page_size <= 0)
		return SS_EXIT_OK;
	if (st.st_size % page_size != 0 || (!wal_used && st.st_size < pages * page_size))
		return fail(err, errlen, SS_EXIT_INPUT,
			    "%s: corrupt or truncated database (%lld bytes; its header says %lld "
			    "pages of %lld bytes)",
			    path, (long long)st.st_size, pages, page_size);
	return SS_EXIT_OK;
}

/* PRAGMA NAME(1) (quick_check or integrity_check) on the whole file: "ok", or the first problem
 * as "corrupt or truncated database (NAME: what SQLite says)". */
static int check_pages(sqlite3 *db, const char *path, const char *name, char *err, size_t errlen)
{
	char sql[64];
	sqlite3_stmt *stmt;
	int rc, code = SS_EXIT_OK;

	snprintf(sql, sizeof(sql), "PRAGMA %s(1)", name);
	rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return ss_db_failure(db, rc, path, err, errlen);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		const char *result = (const char *)sqlite3_column_text(stmt, 0);

		if (!result || strcmp(result, "ok") != 0) {
			/* "*** in database main ***" and a newline come first: one database here */
			const char *line = result ? strstr(result, "***\n") : NULL;

			if (line && strncmp(result, "*** in database ", 16) == 0)
				result = line + 4;
			/* SQLite's report spans lines; the message must stay one line. */
			code = fail(err, errlen, SS_EXIT_INPUT,
				    "%s: corrupt or truncated database (%s: %s)", path, name,
				    result ? result : "no result");
			for (char *c = err; *c; c++)
				if (*c == '\n')
					*c = ' ';
		}
	} else {
		code = ss_db_failure(db, rc, path, err, errlen);
	}
	sqlite3_finalize(stmt);
	return code;
}

/* ss_db_open and ss_db_reopen: the same checks, the pages read (READ-1) or not. */
static int open_database(const char *path, int whole_file, sqlite3 **out, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	int rc, code;

	*out = NULL;
	code = check_file(path, err, errlen);
	if (code != SS_EXIT_OK)
		return code;
	if (ss_summary_is(path)) /* SUMMARY-1: a summary is no recording */
		return fail(err, errlen, SS_EXIT_INPUT,
			    "%s: a syncspy summary (syncspy summarize), not a recording: report "
			    "(text, json) and check read summaries; this needs the databases",
			    path);
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
	if (rc != SQLITE_OK) {
		code = ss_db_failure(db, rc, path, err, errlen);
		sqlite3_close(db);
		return code;
	}
	sqlite3_busy_timeout(db, SS_DB_BUSY_TIMEOUT_MS);
	code = check_meta_table(db, path, err, errlen);
	/* In a read-only directory, a WAL database without its -shm fails one of these two ways. */
	if (code != SS_EXIT_OK && ((sqlite3_errcode(db) & 0xff) == SQLITE_CANTOPEN ||
				   (sqlite3_errcode(db) & 0xff) == SQLITE_READONLY)) {
		sqlite3 *immutable = open_immutable(path);

		if (immutable) {
			sqlite3_close(db);
			db = immutable;
			code = check_meta_table(db, path, err, errlen);
		}
	}
	if (code == SS_EXIT_OK)
		code = check_size(db, path, err, errlen);
	if (code == SS_EXIT_OK)
		code = check_version(db, path, err, errlen);
	if (code == SS_EXIT_OK)
		code = check_objects(db, path, err, errlen);
	/* READ-1: last, so that a file of something else, or of another version, is named as
	 * such without being read whole first */
	if (code == SS_EXIT_OK && whole_file)
		code = check_pages(db, path, "quick_check", err, errlen);
	if (code != SS_EXIT_OK) {
		sqlite3_close(db);
		return code;
	}
	*out = db;
	return SS_EXIT_OK;
}

int ss_db_open(const char *path, sqlite3 **out, char *err, size_t errlen)
{
	return open_database(path, 1, out, err, errlen);
}

int ss_db_reopen(const char *path, sqlite3 **out, char *err, size_t errlen)
{
	return open_database(path, 0, out, err, errlen);
}

int ss_db_has_table(sqlite3 *db, const char *schema, const char *name)
{
	sqlite3_stmt *stmt;
	char *sql = sqlite3_mprintf("SELECT 1 FROM \"%w\".sqlite_master WHERE type = 'table' AND"
				    " name = ?1",
				    schema);
	int found = 0;

	if (sql && sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK) {
		sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
		found = sqlite3_step(stmt) == SQLITE_ROW;
		sqlite3_finalize(stmt);
	}
	sqlite3_free(sql);
	return found;
}

int ss_db_integrity_check(sqlite3 *db, const char *path, char *err, size_t errlen)
{
	return check_pages(db, path, "integrity_check", err, errlen);
}

/* ------------------------------------------------------------------ printing rows */

struct cell_table {
	int columns;
	char **cells; /* row-major, the header row first when there is one */
	size_t ncells, capacity;
	size_t *width; /* per column, in characters */
	int *numeric;  /* per column: every value is an integer or NULL */
};

/* Display width of UTF-8 text: continuation bytes take no column. */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static int add_cell(struct cell_table *t, const char *text)
{
	char *copy;

	if (t->ncells == t->capacity) {
		size_t capacity = t->capacity ? 2 * t->capacity : 64 * (size_t)t->columns;
		char **cells = realloc(t->cells, capacity * sizeof(*cells));

		if (!cells)
			return -1;
		t->cells = cells;
		t->capacity = capacity;
	}
	copy = ss_printable_dup(text); /* one row stays one line */
	if (!copy)
		return -1;
	t->cells[t->ncells++] = copy;
	return 0;
}

static void print_table(const struct cell_table *t, FILE *out, const char *indent,
			const char *separator)
{
	for (size_t r = 0; r < t->ncells / t->columns; r++) {
		fputs(indent, out);
		for (int c = 0; c < t->columns; c++) {
			const char *cell = t->cells[r * t->columns + c];
			size_t pad = t->width[c] - text_width(cell);
			int last = c == t->columns - 1;

			if (c > 0)
				fputs(separator, out);
			if (t->numeric[c])
				fprintf(out, "%*s%s", (int)pad, "", cell);
			else
				fprintf(out, "%s%*s", cell, last ? 0 : (int)pad, "");
		}
		fputc('\n', out);
	}
}

static void free_table(struct cell_table *t)
{
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->width);
	free(t->numeric);
}

int ss_db_print_rows(sqlite3 *db, sqlite3_stmt *stmt, const char *path, FILE *out,
		     const struct ss_rows_style *style, char *err, size_t errlen)
{
	struct cell_table t = {.columns = sqlite3_column_count(stmt)};
	size_t data_rows = 0;
	int rc, code = SS_EXIT_OK;

	t.width = calloc((size_t)t.columns + 1, sizeof(*t.width));
	t.numeric = calloc((size_t)t.columns + 1, sizeof(*t.numeric));
	if (!t.width || !t.numeric) {
		code = fail(err, errlen, SS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	for (int c = 0; c < t.columns; c++)
		t.numeric[c] = 1;
	if (style->header) {
		for (int c = 0; c < t.columns; c++) {
			if (add_cell(&t, sqlite3_column_name(stmt, c)) != 0) {
				code = fail(err, errlen, SS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
		}
	}
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		for (int c = 0; c < t.columns; c++) {
			int type = sqlite3_column_type(stmt, c);
			const char *text = (const char *)sqlite3_column_text(stmt, c);

			if (type != SQLITE_INTEGER && type != SQLITE_NULL)
				t.numeric[c] = 0;
			if (add_cell(&t, type == SQLITE_NULL || !text ? "-" : text) != 0) {
				code = fail(err, errlen, SS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
		}
		data_rows++;
	}
	if (rc != SQLITE_DONE) {
		code = ss_db_failure(db, rc, path, err, errlen);
		goto out;
	}
	if (data_rows == 0 || t.columns == 0) {
		if (style->empty_note)
			fprintf(out, "%s%s\n", style->indent, style->empty_note);
		goto out;
	}
	for (size_t i = 0; i < t.ncells; i++) {
		size_t w = text_width(t.cells[i]);

		if (w > t.width[i % t.columns])
			t.width[i % t.columns] = w;
	}
	print_table(&t, out, style->indent, style->separator ? style->separator : "  ");
out:
	sqlite3_reset(stmt);
	free_table(&t);
	return code;
}
