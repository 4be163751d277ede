/*
 * interpose/dbfile.h: the database file as the writer thread's files share it (dbfile.c): the
 * SQLite connection, the prepared statements, the small SQL helpers, and the file's life from
 * *.sqlite.partial to its final name. Only the writer thread includes it (SHIM-1: no app
 * thread touches SQLite).
 */
#ifndef SYNCSPY_DBFILE_H
#define SYNCSPY_DBFILE_H

#include <stddef.h>
#include <stdint.h>

#include "shim.h"
#include "store.h"

extern struct ss_sqlite ss_sq; /* SQLite's functions, loaded privately (store.c) */
extern sqlite3 *ss_db;	       /* NULL while no database is open */

enum ss_statement {
	SS_ST_CALL,    /* one row, its id given (after a failed insert: writer.c) */
	SS_ST_CALL_1,  /* one row, numbered by SQLite */
	SS_ST_CALL_16, /* 16 rows of calls in one statement (writer.c's batches) */
	SS_ST_CALL_64, /* 64 rows */
	SS_ST_ENQ_1,   /* the same, of plain enqueues (dbfile.c, call_sql) */
	SS_ST_ENQ_16,
	SS_ST_ENQ_64,
	SS_ST_POLL_UPDATE,
	SS_ST_THREAD,
	SS_ST_SITE,
	SS_ST_COMM,
	SS_ST_COMM_END,
	SS_ST_STREAM,
	SS_ST_STREAM_END,
	SS_ST_META,
	SS_ST_STACK,
	SS_ST_ATTACH_STACK,
	SS_ST_RANGE,
	SS_ST_ATTACH_NATIVE,
	SS_ST_COUNT
};
extern sqlite3_stmt *ss_statements[SS_ST_COUNT]; /* prepared by ss_db_open */

extern const char *const ss_class_names[SS_CLASS_COUNT]; /* "S1", ... (the classes table) */
extern uint64_t ss_db_dropped_write; /* rows SQLite refused (disk full...): SHIM-5 */
/* Columns of a calls row, in SS_ST_CALL's order (id first: the writer numbers rows itself). */
#define SS_CALL_COLUMNS 17

int ss_db_exec(const char *sql); /* SQLITE_OK, or the error noted (ss_db_note_write_error) */
/* A statement SQLite refused, that cost ROWS rows (SHIM-5): counted, the first one's text kept. */
void ss_db_note_write_error(int rc, uint64_t rows);
extern int ss_db_write_errors; /* statements refused since the file was opened */
extern int ss_db_first_error;  /* the first one's result code */
const char *ss_db_first_error_text(void);
void ss_db_bind_u64_or_null(sqlite3_stmt *st, int i, int present, uint64_t value);
int ss_db_step(sqlite3_stmt *st); /* step and reset: 0, or -1 noted and counted as one row */
void ss_meta_text(const char *key, const char *value);
void ss_meta_int(const char *key, int64_t value);

/* Loads SQLite; builds the schema, the lookup tables and the meta rows known at the start in
 * one transaction (SCHEMA-1) in a hidden .init file, which then becomes the .partial; opens
 * that in WAL mode, prepares the statements and leaves a transaction open for the caller to
 * add to and commit. 0, or -1 with ERR set. */
int ss_db_open(char *err, size_t errlen);
const char *ss_db_partial_path(void);
const char *ss_db_final_path(void); /* after ss_db_close: the name the file got */
/* Finalizes the statements (other files' first), makes the file self-contained, closes it and
 * renames it to its final name (docs/recording.md): 0. When the file cannot be made
 * self-contained (a full disk), it keeps its .partial name with its -wal beside it: -1. */
int ss_db_close(void);
/* Fork child: the connection is the parent's; forget it without touching it. */
void ss_db_fork_child(void);

#endif
