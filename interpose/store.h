/*
 * interpose/store.h: the shim's storage engine, SQLite, loaded privately.
 *
 * libsyncspy.so does not link SQLite: Debian's libsqlite3.a is not PIC, and a SQLite linked
 * into the preload library would enter the process's global symbol scope and could take the
 * place of the program's own (docs/architecture.md F7). The writer thread dlopen()s libsqlite3.so.0
 * in a link-map namespace of its own (dlmopen LM_ID_NEWLM) and calls it through this table: a
 * private copy, with its own global configuration, so that a program that loaded SQLite itself
 * never sees the shim's statements (its SQLITE_CONFIG_LOG callback, its sqlite3_config, its
 * memory statistics: t854). Where a new namespace cannot be made (no room left for its static
 * TLS), it falls back to dlopen(RTLD_LOCAL), which shares the program's copy when there is one
 * (meta.sqlite_private says which).
 */
#ifndef SYNCSPY_STORE_H
#define SYNCSPY_STORE_H

#include <sqlite3.h>

#define SS_SQLITE_FUNCS(X)                                                                         \
	X(sqlite3_open_v2)                                                                         \
	X(sqlite3_close)                                                                           \
	X(sqlite3_exec)                                                                            \
	X(sqlite3_prepare_v2)                                                                      \
	X(sqlite3_bind_int64)                                                                      \
	X(sqlite3_bind_text)                                                                       \
	X(sqlite3_bind_null)                                                                       \
	X(sqlite3_step)                                                                            \
	X(sqlite3_reset)                                                                           \
	X(sqlite3_finalize)                                                                        \
	X(sqlite3_errmsg)                                                                          \
	X(sqlite3_last_insert_rowid)                                                               \
	X(sqlite3_busy_timeout)                                                                    \
	X(sqlite3_libversion)                                                                      \
	X(sqlite3_column_int64)                                                                    \
	X(sqlite3_free)                                                                            \
	X(sqlite3_snprintf)                                                                        \
	X(sqlite3_config)                                                                          \
	X(sqlite3_changes)                                                                         \
	X(sqlite3_get_autocommit)                                                                  \
	X(sqlite3_errstr)                                                                          \
	X(sqlite3_column_text)

struct ss_sqlite {
	void *library;
	int private_copy; /* 1: loaded in a namespace of its own, configured by the shim */
#define SS_SQLITE_POINTER(f) __typeof__(f) *f;
	SS_SQLITE_FUNCS(SS_SQLITE_POINTER)
#undef SS_SQLITE_POINTER
};

/* Loads libsqlite3.so.0 (once). 0 on success, else -1 with a message in err. */
int ss_sqlite_load(struct ss_sqlite *sq, char *err, size_t errlen);

#endif
