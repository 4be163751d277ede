/*
 * interpose/dbfile.c: the database file's life, on the writer thread. It is created as
 * syncspy-<host>-<pid>[-x<N>].sqlite.partial in SYNCSPY_OUTPUT (exclusively: an exec'd image
 * keeps the pid), filled in WAL mode, and at the end made self-contained (no -wal beside it)
 * and renamed to its final name, with the rank when known (docs/recording.md): a file without
 * .partial is complete. Here too: the schema and the lookup tables, the meta rows of the start
 * (SCHEMA-1: in the schema's transaction), the prepared statements and the SQL helpers the
 * writer's other files share (dbfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "syncspy/mkdir_p.h"
#include "syncspy/schema.h"

#include "clock.h"
#include "dbfile.h"
#include "env.h"
#include "lifecycle.h"
#include "shim.h"

struct ss_sqlite ss_sq;
sqlite3 *ss_db;
static char partial_path[PATH_MAX], final_path[PATH_MAX + 64]; /* room for suffixes */

/* The INSERTs of calls rows (writer.c's batches). A multi-row INSERT costs SQLite about a third
 * less per row than a statement per row; a row numbered by SQLite (the largest id + 1, which
 * is the writer's own count) is appended without the search an explicit id costs; and the
 * shape of a plain enqueue (no bytes, direction, memory kind, communicator or pointer, ret 0,
 * count 1, ended when it started) binds 8 values instead of 16. The explicit-id form is for
 * after a failed insert. Built at open, one statement at a time. */
static const char *call_sql(int statement)
{
	static char sql[16384];
	static const char *const full_columns =
	    "tid, api_id, class, start_ns, end_ns, stream, event, comm, ptr, bytes, dir, host_mem,"
	    " ret, site_id, count, aux";
	int id = statement == SS_ST_CALL;
	int enq = statement >= SS_ST_ENQ_1 && statement <= SS_ST_ENQ_64;
	int rows = (statement == SS_ST_CALL_16 || statement == SS_ST_ENQ_16)   ? 16
		   : (statement == SS_ST_CALL_64 || statement == SS_ST_ENQ_64) ? 64
									       : 1;
	size_t n =
	    (size_t)snprintf(sql, sizeof(sql), "INSERT INTO calls(%s%s) VALUES", id ? "id, " : "",
			     enq ? "tid, api_id, class, start_ns, end_ns, stream, event, ret,"
				   " site_id, aux"
				 : full_columns);
	for (int r = 0, p = 1; r < rows && n < sizeof(sql); r++) {
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s(", r ? "," : "");
		if (enq) { /* end_ns is start_ns: the same parameter twice */
			n += (size_t)snprintf(sql + n, sizeof(sql) - n,
					      "?%d,?%d,?%d,?%d,?%d,?%d,?%d,0,?%d,?%d)", p, p + 1,
					      p + 2, p + 3, p + 3, p + 4, p + 5, p + 6, p + 7);
			p += 8;
			continue;
		}
		for (int c = 0; c < 16 + id; c++)
			n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s?%d", c ? "," : "", p++);
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ")");
	}
	return sql;
}

static const char *const statement_sql[SS_ST_COUNT] = {
    [SS_ST_POLL_UPDATE] = "UPDATE calls SET end_ns = ?, count = ?, ret = ? WHERE id = ?",
    [SS_ST_THREAD] = "INSERT OR IGNORE INTO threads(tid, name, first_ns) VALUES(?,?,?)",
    [SS_ST_SITE] = "INSERT INTO sites(address, module, module_offset, symbol, text)"
		   " VALUES(?,?,?,?,?)",
    [SS_ST_COMM] = "INSERT INTO comms(comm, id_hash, rank, nranks, parent, api_id, created_ns)"
		   " VALUES(?,?,?,?,?,?,?)",
    [SS_ST_COMM_END] = "UPDATE comms SET destroyed_ns = ? WHERE comm = ? AND destroyed_ns IS NULL",
    [SS_ST_STREAM] = "INSERT INTO streams(stream, flags, priority, api_id, created_ns)"
		     " VALUES(?,?,?,?,?)",
    [SS_ST_STREAM_END] = "UPDATE streams SET destroyed_ns = ?"
			 " WHERE stream = ? AND destroyed_ns IS NULL",
    [SS_ST_META] = "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)",
    [SS_ST_STACK] = "INSERT INTO stacks(kind, hash, depth, frames) VALUES(?,?,?,?)",
    [SS_ST_ATTACH_NATIVE] = "UPDATE calls SET native_stack_id = ?, site_id = coalesce(?, site_id)"
			    " WHERE id = ?",
    [SS_ST_RANGE] =
	"INSERT INTO ranges(tid, kind, name, start_ns, end_ns, depth) VALUES(?,?,?,?,?,?)",
    [SS_ST_ATTACH_STACK] = "UPDATE calls SET py_stack_id = ?, site_id = coalesce(?, site_id)"
			   " WHERE id = ?",
};
sqlite3_stmt *ss_statements[SS_ST_COUNT];
uint64_t ss_db_dropped_write;

const char *const ss_class_names[SS_CLASS_COUNT] = {
#define SS_CLASS_NAME(c, sync, desc) [SS_##c] = #c,
    SS_CLASSES(SS_CLASS_NAME)
#undef SS_CLASS_NAME
};

/* ------------------------------------------------------------------ SQL helpers */

/* Errors are counted (ss_db_write_errors), the first one's text kept: the line at the end
 * says what they cost instead of the usual summary (writer.c). */
int ss_db_write_errors;
int ss_db_first_error;
static char first_error_text[256];

static void note_error(int rc, const char *message)
{
	if (ss_db_write_errors++ == 0) {
		ss_db_first_error = rc;
		snprintf(first_error_text, sizeof(first_error_text), "%s",
			 message ? message : ss_sq.sqlite3_errstr(rc));
	}
}

const char *ss_db_first_error_text(void)
{
	return first_error_text;
}

void ss_db_note_write_error(int rc, uint64_t rows)
{
	ss_db_dropped_write += rows;
	note_error(rc, ss_db ? ss_sq.sqlite3_errmsg(ss_db) : NULL);
}

int ss_db_exec(const char *sql)
{
	char *message = NULL;
	int rc = ss_sq.sqlite3_exec(ss_db, sql, NULL, NULL, &message);
	if (rc != SQLITE_OK) {
		note_error(rc, message);
		ss_sq.sqlite3_free(message);
	}
	return rc;
}

void ss_db_bind_u64_or_null(sqlite3_stmt *st, int i, int present, uint64_t value)
{
	if (present)
		ss_sq.sqlite3_bind_int64(st, i, (sqlite3_int64)value);
	else
		ss_sq.sqlite3_bind_null(st, i);
}

int ss_db_step(sqlite3_stmt *st)
{
	int rc = ss_sq.sqlite3_step(st);
	ss_sq.sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		ss_db_note_write_error(rc, 1);
		return -1;
	}
	return 0;
}

void ss_meta_text(const char *key, const char *value)
{
	sqlite3_stmt *st = ss_statements[SS_ST_META];
	ss_sq.sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	if (value)
		ss_sq.sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
	else
		ss_sq.sqlite3_bind_null(st, 2);
	ss_db_step(st);
}

void ss_meta_int(const char *key, int64_t value)
{
	sqlite3_stmt *st = ss_statements[SS_ST_META];
	ss_sq.sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	ss_sq.sqlite3_bind_int64(st, 2, value);
	ss_db_step(st);
}

/* ------------------------------------------------------------------ first rows */

static void write_meta_start(void)
{
	char host[256] = "?", text[64];
	gethostname(host, sizeof(host) - 1);
	ss_meta_int("schema_version", SS_SCHEMA_VERSION); /* SCHEMA-1: same transaction as tables */
	ss_meta_text("syncspy_version", PACKAGE_VERSION);
	ss_meta_text("host", host);
	ss_meta_int("pid", getpid());
	ss_meta_int("ppid", getppid());
	ss_meta_int("start_mono_ns", (int64_t)ss_process.start_mono_ns);
	ss_meta_int("start_realtime_ns", (int64_t)ss_process.start_realtime_ns);
	ss_meta_text("clock", ss_clock_name());
	ss_meta_text("sqlite_version", ss_sq.sqlite3_libversion());
	ss_meta_int("sqlite_private", ss_sq.private_copy);
	snprintf(text, sizeof(text), "%ld", ss_config.SYNCSPY_BUFFER_MB);
	ss_meta_text("buffer_mb", text);
	ss_meta_text("mode", ss_config.SYNCSPY_MODE); /* SHIM-7: trace or aggregate */
	/* the command line, NUL-separated in /proc: joined with spaces */
	char cmdline[4096];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof(cmdline) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		for (ssize_t i = 0; i < n - 1; i++)
			if (cmdline[i] == 0)
				cmdline[i] = ' ';
		cmdline[n] = 0;
		ss_meta_text("cmdline", cmdline);
	}
}

static void fill_lookup_tables(void)
{
	char sql[512];
#define SS_CLASS_ROW(c, sync, desc)                                                                \
	ss_sq.sqlite3_snprintf(sizeof(sql), sql, "INSERT INTO classes VALUES(%Q, %d, %Q)", #c,     \
			       sync, desc);                                                        \
	ss_db_exec(sql);
	SS_CLASSES(SS_CLASS_ROW)
#undef SS_CLASS_ROW
#define SS_LOOKUP_ROW(table, id, s)                                                                \
	if (s) {                                                                                   \
		ss_sq.sqlite3_snprintf(sizeof(sql), sql, "INSERT INTO %s VALUES(%d, %Q)", table,   \
				       id, s);                                                     \
		ss_db_exec(sql);                                                                   \
	}
#define SS_MEMKIND_ROW(id, n, s) SS_LOOKUP_ROW("memkinds", id, s)
#define SS_DIR_ROW(id, n, s)	 SS_LOOKUP_ROW("dirs", id, s)
	SS_MEMKINDS(SS_MEMKIND_ROW)
	SS_DIRS(SS_DIR_ROW)
#undef SS_MEMKIND_ROW
#undef SS_DIR_ROW
#undef SS_LOOKUP_ROW
	static const char *const layer_names[SS_LAYER_COUNT] = {
#define SS_LAYER_NAME(n, s) [SS_LAYER_##n] = s,
	    SS_LAYERS(SS_LAYER_NAME)
#undef SS_LAYER_NAME
	};
	for (int api = 0; api < SS_API_COUNT; api++) {
		ss_sq.sqlite3_snprintf(sizeof(sql), sql, "INSERT INTO apis VALUES(%d, %Q, %Q, %Q)",
				       api, ss_apis[api].name, layer_names[ss_apis[api].layer],
				       ss_class_names[ss_apis[api].cls]);
		ss_db_exec(sql);
	}
}

/* ------------------------------------------------------------------ files */

static void host_name(char *out, size_t len)
{
	if (gethostname(out, len) != 0)
		snprintf(out, len, "host");
	out[len - 1] = 0;
	for (char *p = out; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

static int rename_noreplace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (link(from, to) != 0) /* file systems without RENAME_NOREPLACE */
		return -1;
	unlink(from);
	return 0;
}

/* The file is built under a hidden name, .syncspy-<host>-<pid>.sqlite.init, and appears as a
 * .partial only once its schema is committed (SCHEMA-1): a process that leaves with _exit()
 * right after its first CUDA call leaves no empty or unreadable .partial behind, at most a
 * hidden .init file, which the next process of this host to start a database removes once
 * its pid is gone (t854). */
static char init_path[PATH_MAX];

static void remove_stale_init_files(const char *dir, const char *host)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char prefix[192];
	snprintf(prefix, sizeof(prefix), ".syncspy-%s-", host);
	size_t len = strlen(prefix);
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (strncmp(e->d_name, prefix, len) != 0)
			continue;
		char *end;
		long pid = strtol(e->d_name + len, &end, 10);
		if (pid <= 0 || strcmp(end, ".sqlite.init") != 0 || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

static int create_init(char *err, size_t errlen)
{
	const char *dir = ss_config.SYNCSPY_OUTPUT;
	char host[128];
	host_name(host, sizeof(host));
	if (ss_mkdir_p(dir) != 0) {
		snprintf(err, errlen, "cannot create SYNCSPY_OUTPUT=%s: %s", dir, strerror(errno));
		return -1;
	}
	remove_stale_init_files(dir, host);
	snprintf(init_path, sizeof(init_path), "%s/.syncspy-%s-%d.sqlite.init", dir, host,
		 (int)getpid());
	unlink(init_path); /* this pid's: an image before exec that left early */
	int fd = open(init_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write to SYNCSPY_OUTPUT=%s: %s", dir,
			 strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* Gives the built file its .partial name, never replacing one: a pid can own several (an
 * exec'd image keeps it). */
static int name_partial(char *err, size_t errlen)
{
	const char *dir = ss_config.SYNCSPY_OUTPUT;
	char host[128];
	host_name(host, sizeof(host));
	for (int n = 0; n < 1000; n++) {
		if (n == 0)
			snprintf(partial_path, sizeof(partial_path),
				 "%s/syncspy-%s-%d.sqlite.partial", dir, host, (int)getpid());
		else
			snprintf(partial_path, sizeof(partial_path),
				 "%s/syncspy-%s-%d-x%d.sqlite.partial", dir, host, (int)getpid(),
				 n);
		if (rename_noreplace(init_path, partial_path) == 0)
			return 0;
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot write to SYNCSPY_OUTPUT=%s: %s", dir,
				 strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "too many databases for pid %d in %s", (int)getpid(), dir);
	return -1;
}

/* syncspy-<host>-<pid>[-x<N>][-r<rank>].sqlite (docs/recording.md) */
static void rename_final(void)
{
	size_t stem_len = strlen(partial_path) - strlen(".sqlite.partial");
	char stem[PATH_MAX], rank_part[16] = "";
	snprintf(stem, sizeof(stem), "%.*s", (int)stem_len, partial_path);
	int rank = atomic_load(&ss_process.rank);
	if (rank >= 0)
		snprintf(rank_part, sizeof(rank_part), "-r%d", rank);
	for (int n = 0; n < 1000; n++) {
		if (n == 0)
			snprintf(final_path, sizeof(final_path), "%s%s.sqlite", stem, rank_part);
		else
			snprintf(final_path, sizeof(final_path), "%s-x%d%s.sqlite", stem, n,
				 rank_part);
		if (rename_noreplace(partial_path, final_path) == 0)
			return;
		if (errno != EEXIST)
			break;
	}
	fprintf(stderr, "syncspy: cannot rename %s: %s (the data is complete in it)\n",
		partial_path, strerror(errno));
	snprintf(final_path, sizeof(final_path), "%s", partial_path);
}

/* ------------------------------------------------------------------ open, close */

static int open_connection(const char *path, char *err, size_t errlen)
{
	if (ss_sq.sqlite3_open_v2(path, &ss_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
				  NULL) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "cannot open %s: %s", path,
		 ss_db ? ss_sq.sqlite3_errmsg(ss_db) : "out of memory");
	ss_sq.sqlite3_close(ss_db);
	ss_db = NULL;
	return -1;
}

/* The schema, the lookup tables and the first meta rows, in one transaction (SCHEMA-1), in the
 * hidden .init file; without a journal: until it is renamed the file is nobody's. */
static int build_init(char *err, size_t errlen)
{
	if (open_connection(init_path, err, errlen) != 0)
		return -1;
	int ok = ss_db_exec("PRAGMA journal_mode=OFF") == SQLITE_OK &&
		 ss_db_exec("PRAGMA synchronous=OFF") == SQLITE_OK &&
		 ss_db_exec("BEGIN") == SQLITE_OK && ss_db_exec(SS_SCHEMA_SQL) == SQLITE_OK &&
		 ss_sq.sqlite3_prepare_v2(ss_db, statement_sql[SS_ST_META], -1,
					  &ss_statements[SS_ST_META], NULL) == SQLITE_OK;
	/* aggregate mode's tables with the schema: a .partial whose meta says aggregate has them */
	if (ok && ss_aggregate_mode)
		ok = ss_db_exec(SS_AGGREGATE_SQL) == SQLITE_OK;
	if (ok) {
		fill_lookup_tables();
		write_meta_start();
		/* in WAL mode already, so that opening it under its name writes no journal */
		ok = ss_db_exec("COMMIT") == SQLITE_OK &&
		     ss_db_exec("PRAGMA journal_mode=WAL") == SQLITE_OK;
	}
	ss_sq.sqlite3_finalize(ss_statements[SS_ST_META]);
	ss_statements[SS_ST_META] = NULL;
	ss_sq.sqlite3_close(ss_db);
	ss_db = NULL;
	if (!ok)
		snprintf(err, errlen, "cannot create the schema in %s", init_path);
	return ok ? 0 : -1;
}

int ss_db_open(char *err, size_t errlen)
{
	ss_db_dropped_write = 0;
	ss_db_write_errors = 0;
	ss_db_first_error = 0;
	first_error_text[0] = 0;
	if (ss_sqlite_load(&ss_sq, err, errlen) != 0)
		return -1;
	if (create_init(err, errlen) != 0)
		return -1;
	if (build_init(err, errlen) != 0 || name_partial(err, errlen) != 0) {
		unlink(init_path);
		return -1;
	}
	if (open_connection(partial_path, err, errlen) != 0)
		return -1;
	ss_sq.sqlite3_busy_timeout(ss_db, 5000);
	/* WAL, not synced: a killed process loses nothing that was committed (its writes are in
	 * the kernel's page cache); only a crash of the machine itself could. A large page cache
	 * and WAL checkpoints every 16 MB of log keep the writer's system calls few. */
	ss_db_exec("PRAGMA journal_mode=WAL");
	ss_db_exec("PRAGMA synchronous=OFF");
	ss_db_exec("PRAGMA cache_size=-16384");
	ss_db_exec("PRAGMA wal_autocheckpoint=4096");
	for (int i = 0; i < SS_ST_COUNT; i++)
		if (ss_sq.sqlite3_prepare_v2(ss_db,
					     statement_sql[i] ? statement_sql[i] : call_sql(i), -1,
					     &ss_statements[i], NULL) != SQLITE_OK &&
		    i != SS_ST_CALL_64 && i != SS_ST_ENQ_64) {
			/* (a SQLite before 3.32 takes at most 999 parameters: no 64-row
			 * statements there, writer.c goes by 16) */
			snprintf(err, errlen, "cannot prepare statement: %s",
				 ss_sq.sqlite3_errmsg(ss_db));
			return -1;
		}
	if (ss_db_exec("BEGIN") != SQLITE_OK) {
		snprintf(err, errlen, "cannot write %s", partial_path);
		return -1;
	}
	return 0;
}

const char *ss_db_partial_path(void)
{
	return partial_path;
}

const char *ss_db_final_path(void)
{
	return final_path;
}

/* PRAGMA journal_mode=DELETE answers the mode it is in: still "wal" when the switch failed
 * (the checkpoint it needs could not write the file: a full disk). */
static int switch_to_rollback_journal(void)
{
	sqlite3_stmt *st = NULL;
	int done = 0;
	if (ss_sq.sqlite3_prepare_v2(ss_db, "PRAGMA journal_mode=DELETE", -1, &st, NULL) ==
		SQLITE_OK &&
	    ss_sq.sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *mode = ss_sq.sqlite3_column_text(st, 0);
		done = mode && strcmp((const char *)mode, "delete") == 0;
	}
	ss_sq.sqlite3_finalize(st);
	return done;
}

int ss_db_close(void)
{
	for (int i = 0; i < SS_ST_COUNT; i++) {
		ss_sq.sqlite3_finalize(ss_statements[i]);
		ss_statements[i] = NULL;
	}
	/* A self-contained file: no -wal beside it, readable from a read-only place. */
	int self_contained = ss_db_exec("PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_OK &&
			     switch_to_rollback_journal();
	ss_sq.sqlite3_close(ss_db);
	ss_db = NULL;
	if (!self_contained) {
		/* What was committed is in the .partial and its -wal: renamed, the file would be
		 * read without its log. It stays as it is, an unfinished recording to readers. */
		snprintf(final_path, sizeof(final_path), "%s", partial_path);
		return -1;
	}
	rename_final();
	return 0;
}

void ss_db_fork_child(void)
{
	ss_db = NULL;
	for (int i = 0; i < SS_ST_COUNT; i++)
		ss_statements[i] = NULL;
	ss_db_dropped_write = 0;
}
