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
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "syncspy/schema.h"

#include "clock.h"
#include "dbfile.h"
#include "env.h"
#include "lifecycle.h"
#include "shim.h"

struct ss_sqlite ss_sq;
sqlite3 *ss_db;
static char partial_path[PATH_MAX], final_path[PATH_MAX + 64]; /* room for suffixes */

static const char *const statement_sql[SS_ST_COUNT] = {
    [SS_ST_CALL] =
	"INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, event, comm, ptr,"
	" bytes, dir, host_mem, ret, site_id, count, aux)"
	" VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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

int ss_db_exec(const char *sql)
{
	char *message = NULL;
	int rc = ss_sq.sqlite3_exec(ss_db, sql, NULL, NULL, &message);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "syncspy: database error: %s\n", message ? message : "?");
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
		ss_db_dropped_write++;
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

static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

static void host_name(char *out, size_t len)
{
	if (gethostname(out, len) != 0)
		snprintf(out, len, "host");
	out[len - 1] = 0;
	for (char *p = out; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

/* Creates the .partial file exclusively: a pid can own several (an exec'd image keeps it). */
static int create_partial(char *err, size_t errlen)
{
	const char *dir = ss_config.SYNCSPY_OUTPUT;
	char host[128];
	host_name(host, sizeof(host));
	if (make_dirs(dir) != 0) {
		snprintf(err, errlen, "cannot create SYNCSPY_OUTPUT=%s: %s", dir, strerror(errno));
		return -1;
	}
	for (int n = 0; n < 1000; n++) {
		if (n == 0)
			snprintf(partial_path, sizeof(partial_path),
				 "%s/syncspy-%s-%d.sqlite.partial", dir, host, (int)getpid());
		else
			snprintf(partial_path, sizeof(partial_path),
				 "%s/syncspy-%s-%d-x%d.sqlite.partial", dir, host, (int)getpid(),
				 n);
		int fd = open(partial_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (errno != EEXIST) {
			snprintf(err, errlen, "cannot write to SYNCSPY_OUTPUT=%s: %s", dir,
				 strerror(errno));
			return -1;
		}
	}
	snprintf(err, errlen, "too many databases for pid %d in %s", (int)getpid(), dir);
	return -1;
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

int ss_db_open(char *err, size_t errlen)
{
	if (ss_sqlite_load(&ss_sq, err, errlen) != 0)
		return -1;
	if (create_partial(err, errlen) != 0)
		return -1;
	if (ss_sq.sqlite3_open_v2(partial_path, &ss_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
				  NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", partial_path,
			 ss_db ? ss_sq.sqlite3_errmsg(ss_db) : "out of memory");
		ss_sq.sqlite3_close(ss_db);
		ss_db = NULL;
		unlink(partial_path);
		return -1;
	}
	ss_sq.sqlite3_busy_timeout(ss_db, 5000);
	ss_db_exec("PRAGMA journal_mode=WAL");
	ss_db_exec("PRAGMA synchronous=NORMAL");
	if (ss_db_exec("BEGIN") != SQLITE_OK || ss_db_exec(SS_SCHEMA_SQL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot create the schema in %s", partial_path);
		return -1;
	}
	for (int i = 0; i < SS_ST_COUNT; i++)
		if (ss_sq.sqlite3_prepare_v2(ss_db, statement_sql[i], -1, &ss_statements[i],
					     NULL) != SQLITE_OK) {
			snprintf(err, errlen, "cannot prepare statement: %s",
				 ss_sq.sqlite3_errmsg(ss_db));
			return -1;
		}
	fill_lookup_tables();
	write_meta_start();
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

void ss_db_close(void)
{
	for (int i = 0; i < SS_ST_COUNT; i++) {
		ss_sq.sqlite3_finalize(ss_statements[i]);
		ss_statements[i] = NULL;
	}
	/* A self-contained file: no -wal beside it, readable from a read-only place. */
	ss_db_exec("PRAGMA wal_checkpoint(TRUNCATE)");
	ss_db_exec("PRAGMA journal_mode=DELETE");
	ss_sq.sqlite3_close(ss_db);
	ss_db = NULL;
	rename_final();
	ss_db_dropped_write = 0;
}

void ss_db_fork_child(void)
{
	ss_db = NULL;
	for (int i = 0; i < SS_ST_COUNT; i++)
		ss_statements[i] = NULL;
	ss_db_dropped_write = 0;
}
