/*
 * report/check_sql.h: the SQL by which `syncspy check` reads a recording's sync points
 * (cmd_check.c), shared with `syncspy summarize` (cmd_summarize.c), which runs it where the
 * databases are and keeps its rows in the summary (summary.h's check_rows, SUMMARY-2).
 */
#ifndef SYNCSPY_REPORT_CHECK_SQL_H
#define SYNCSPY_REPORT_CHECK_SQL_H

/* The text shown (and matched by "site" and "allow" globs) for a call without a known site. */
#define UNKNOWN_SITE "(unknown site)"

/*
 * The sync points of one recording, summed per (class, API, site text, in warm-up). ?1: the
 * warm-up in ns from meta.start_mono_ns (the shim's start; the first call when it is missing),
 * or NULL; ?2: the number of first calls (every class, in start order) that are warm-up.
 * A call belongs to the warm-up by its start.
 */
#define WARMUP_WITH_SQL                                                                            \
	"WITH origin(ns) AS (SELECT coalesce((SELECT value FROM meta WHERE key = "                 \
	"'start_mono_ns'),"                                                                        \
	"  (SELECT min(start_ns) FROM calls))),"                                                   \
	" warm(id) AS (SELECT id FROM calls ORDER BY start_ns, id LIMIT ?2)"
/* ?3, ?4: the steady state's window (ss_steady_window) with "warmup": {"steady": true}: a call
 * outside it is warm-up (setup, the first step, teardown); NULL: none (no steps found: the
 * whole run counts, as the report judges it). */
#define WARMUP_EXPR_SQL                                                                            \
	"(?1 IS NOT NULL AND c.start_ns < (SELECT ns FROM origin) + ?1)"                           \
	" OR c.id IN (SELECT id FROM warm)"                                                        \
	" OR (?3 IS NOT NULL AND (c.start_ns < ?3 OR c.start_ns >= ?4))"

#define RECORDING_SQL                                                                              \
	WARMUP_WITH_SQL                                                                            \
	" SELECT c.class, a.name, coalesce(s.text, '" UNKNOWN_SITE "'), " WARMUP_EXPR_SQL ","      \
	"  sum(CASE WHEN c.class = 'S7' THEN c.count ELSE 1 END),"                                 \
	"  sum(max(c.end_ns - c.start_ns, 0))"                                                     \
	" FROM calls c JOIN apis a ON a.id = c.api_id"                                             \
	" JOIN classes k ON k.class = c.class AND k.sync_point"                                    \
	" LEFT JOIN sites s ON s.id = c.site_id"                                                   \
	" GROUP BY 1, 2, 3, 4"

#define RECORDING_META_SQL                                                                         \
	"SELECT (SELECT value FROM meta WHERE key = 'rank' AND typeof(value) = 'integer'),"        \
	" coalesce((SELECT value FROM meta WHERE key = 'dropped_events'), 0),"                     \
	" EXISTS (SELECT 1 FROM meta WHERE key = 'mode' AND value = 'aggregate')"

#endif
