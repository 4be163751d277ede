/*
 * report/export.h: the output backends of `syncspy export`, one per trace format, behind one
 * ops struct, so that another format (Perfetto's protobuf, say) is one more export_NAME.c and
 * one row in formats.h's table of output formats.
 *
 * cmd_export.c does what every format needs: it opens and checks the databases, puts all of
 * them on one time axis and gives each one a process id in the trace; a backend only turns a
 * database's rows into its format.
 *
 * Invariants (cited as EXPORT-n):
 *   EXPORT-1  time: a CLOCK_MONOTONIC time t of database d (SCHEMA-3) is at t + d.shift_ns
 *             nanoseconds after the trace's origin, the earliest call of all databases, on the
 *             wall clock (meta start_realtime_ns - start_mono_ns). Times stay integers until
 *             the backend divides them, so nanoseconds survive the 1.7e18 of the wall clock.
 *   EXPORT-2  every database is one process of the trace, with a process id no other database
 *             of the same export has: its rank where known and free, else its OS pid.
 */
#ifndef SYNCSPY_REPORT_EXPORT_H
#define SYNCSPY_REPORT_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#include <sqlite3.h>

/* One database as the backends see it: open, checked, placed on the trace's time axis. */
struct ss_export_db {
	sqlite3 *db;
	const char *path;
	size_t index;	    /* position among the exported databases, from 0 */
	long long pid;	    /* EXPORT-2: the trace's process id */
	long long rank;	    /* -1 when the recording knows none */
	long long os_pid;   /* meta.pid */
	const char *host;   /* meta.host */
	long long shift_ns; /* EXPORT-1 */
	long long calls;    /* rows in calls */
};

/* Where a backend writes, and what it counts for the final message. */
struct ss_export_out {
	FILE *file;
	size_t events;
	size_t flows;
};

/*
 * A format: begin once, database once per database in command-line order, end once. Each
 * returns an ss_exit code and, on failure, leaves one message in err ("PATH: what is wrong").
 */
struct ss_export_ops {
	int (*begin)(struct ss_export_out *out, char *err, size_t errlen);
	int (*database)(struct ss_export_out *out, const struct ss_export_db *db, char *err,
			size_t errlen);
	int (*end)(struct ss_export_out *out, char *err, size_t errlen);
};

/* The formats, each in its export_NAME.c, each a row of formats.h's table. */
extern const struct ss_export_ops ss_export_chrome;

#endif
