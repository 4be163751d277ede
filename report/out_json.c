/*
 * report/out_json.c: the `--format json` backend of `syncspy report` (docs/report-json.md).
 *
 * The document is built by SQLite's JSON functions, not by hand: each rank, finding, range
 * statistic and note becomes a json_object() row of an in-memory database, and end() assembles
 * the whole document with json_group_array() in one query, so quoting and escaping are SQLite's;
 * bytes that are not UTF-8 become U+FFFD as the document is written (text_safe.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "syncspy/schema.h"
#include "commands.h"
#include "output.h"
#include "text_safe.h"

#define RANK_OBJECT                                                                                \
	"json_object('rank', ?1, 'world_size', ?2,"                                                \
	" 'host', ?3, 'pid', ?4, 'path', ?5, 'finished', json(?6), 'wall_ns', ?7,"                 \
	" 'calls', json(?8), 'sync_points', ?9, 'blocked_ns', ?10, 'copies', ?11,"                 \
	" 'copy_bytes', ?12, 'nccl_ops', ?13, 'nccl_ns', ?14, 'dropped_events', ?15,"              \
	" 'deviates', json(?16))"
#define RANK_SQL "INSERT INTO docs(kind, doc) VALUES('rank', " RANK_OBJECT ")"
/* With a GPU timeline in the report (ss_report.gpu_ranks), the GPU fields follow, appended by
 * json_set in this order; without one, the document stays as it was. */
#define RANK_GPU_SQL                                                                               \
	"INSERT INTO docs(kind, doc) VALUES('rank', json_set(" RANK_OBJECT ", '$.comm_ns', ?17,"   \
	" '$.comm_overlap', ?18, '$.exposed_comm_ns', ?19))"

/* The rank's steps (docs/rules.md, "Steady state"), after its other fields; the GPU figure only
 * in a report with a GPU timeline (?9), as the other GPU fields. */
#define STEPS_OBJECT                                                                               \
	"json_object('source', ?1, 'name', ?2, 'count', ?3, 'steady', ?4, 'step_ns', ?5,"          \
	" 'sync_points_per_step', ?6, 'blocked_ns_per_step', ?7, 'steady_start_ns', ?10,"          \
	" 'steady_end_ns', ?11)"
#define RANK_STEPS_SQL                                                                             \
	"UPDATE docs SET doc = json_set(doc, '$.steps', CASE WHEN ?9 THEN json_set(" STEPS_OBJECT  \
	", '$.gpu_idle_ns_per_step', ?8) ELSE " STEPS_OBJECT                                       \
	" END) WHERE id = last_insert_rowid()"

/* With a capture range (docs/recording.md, "Capture ranges"), what was recorded of the run; a
 * recording of the whole run stays as it was. */
#define RANK_CAPTURE_SQL                                                                           \
	"UPDATE docs SET doc = json_set(doc, '$.capture', json_object('range', ?1,"                \
	" 'intervals', ?2, 'captured_ns', ?3, 'skipped_calls', ?4, 'skipped_by_class', ?5))"       \
	" WHERE id = last_insert_rowid()"

/* Recorded in aggregate mode (docs/recording.md, "Aggregate mode"): its enqueues' aggregates,
 * the enqueues per steady step and the rules that did not run (ANALYSIS-6); a trace-mode
 * recording stays as it was. */
#define RANK_AGGREGATE_SQL                                                                         \
	"UPDATE docs SET doc = json_set(doc, '$.aggregate', json_object('enqueues', ?1,"           \
	" 'aggregates', ?2, 'enqueues_per_step', ?3,"                                              \
	" 'rules_not_run', json('[\"' || replace(?4, ',', '\",\"') || '\"]')))"                    \
	" WHERE id = last_insert_rowid()"

/* With two ranks or more, each rank's clock alignment (docs/rules.md, "Clock alignment") follows
 * its other fields; a one-rank report stays as it was. */
#define RANK_CLOCK_SQL                                                                             \
	"UPDATE docs SET doc = json_set(doc, '$.clock_offset_ns', ?1,"                             \
	" '$.clock_offset_method', ?2, '$.clock_offset_spread_ns', ?3)"                            \
	" WHERE id = last_insert_rowid()"

#define FINDING_OBJECT                                                                             \
	"json_object('rule', ?1, 'severity', ?2,"                                                  \
	" 'rank', ?3, 'count', ?4, 'blocked_ns', ?5, 'worst_ns', ?6, 'bytes', ?7,"                 \
	" 'estimate_ns', ?8, 'site', ?9, 'detail', ?10, 'advice', ?11, 'phase', ?13,"              \
	" 'steps', ?14, 'cost_ns', ?15, 'cost_per_step_ns', ?16, 'share', ?17)"
#define FINDING_SQL "INSERT INTO docs(kind, doc) VALUES('finding', " FINDING_OBJECT ")"
#define FINDING_GPU_SQL                                                                            \
	"INSERT INTO docs(kind, doc) VALUES('finding', json_set(" FINDING_OBJECT ","               \
	" '$.gpu_idle_ns', ?12))"

/* A finding folded over several ranks (ANALYSIS-5) lists them and their spread after its other
 * fields; a finding of one rank stays as it was. */
#define FINDING_RANKS_SQL                                                                          \
	"UPDATE docs SET doc = json_set(doc, '$.ranks', json(?1), '$.spread',"                     \
	" json_object('ranks', ?2, 'worst_rank', ?3, 'cost_per_step_ns_min', ?4,"                  \
	" 'cost_per_step_ns_median', ?5, 'cost_per_step_ns_max', ?6))"                             \
	" WHERE id = last_insert_rowid()"

#define RANGE_SQL                                                                                  \
	"INSERT INTO docs(kind, doc) VALUES('range', json_object('rank', ?1, 'name', ?2,"          \
	" 'kind', ?3, 'instances', ?4, 'sync_points_min', ?5, 'sync_points_median', ?6,"           \
	" 'sync_points_max', ?7, 'blocked_ns_median', ?8, 'blocked_ns_max', ?9))"

#define NOTE_SQL "INSERT INTO docs(kind, doc) VALUES('note', json_quote(?1))"

#define DOCUMENT_SQL                                                                               \
	"SELECT json_object('report_version', ?1, 'syncspy_version', ?2, 'schema_version', ?3,"    \
	" 'ranks', (SELECT json_group_array(json(doc)) FROM (SELECT doc FROM docs"                 \
	"  WHERE kind = 'rank' ORDER BY id)),"                                                     \
	" 'findings', (SELECT json_group_array(json(doc)) FROM (SELECT doc FROM docs"              \
	"  WHERE kind = 'finding' ORDER BY id)),"                                                  \
	" 'notes', (SELECT json_group_array(json(doc)) FROM (SELECT doc FROM docs"                 \
	"  WHERE kind = 'note' ORDER BY id)),"                                                     \
	" 'ranges', (SELECT json_group_array(json(doc)) FROM (SELECT doc FROM docs"                \
	"  WHERE kind = 'range' ORDER BY id)))"

static sqlite3 *doc_db;

static int sql_failed(void)
{
	ss_error(SS_EXIT_INTERNAL, "json output: %s", sqlite3_errmsg(doc_db));
	sqlite3_close(doc_db);
	doc_db = NULL;
	return SS_EXIT_INTERNAL;
}

/* -1 stands for "not applicable" in the model: JSON null. */
static void bind_optional(sqlite3_stmt *stmt, int i, long long value)
{
	if (value < 0)
		sqlite3_bind_null(stmt, i);
	else
		sqlite3_bind_int64(stmt, i, value);
}

static int run(sqlite3_stmt *stmt)
{
	int rc = sqlite3_step(stmt);

	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? SS_EXIT_OK : sql_failed();
}

static int json_begin(FILE *out, const struct ss_report *report)
{
	(void)out;
	(void)report;
	if (sqlite3_open(":memory:", &doc_db) != SQLITE_OK ||
	    sqlite3_exec(doc_db, "CREATE TABLE docs(id INTEGER PRIMARY KEY, kind TEXT, doc TEXT)",
			 NULL, NULL, NULL) != SQLITE_OK)
		return sql_failed();
	return SS_EXIT_OK;
}

static int json_rank(FILE *out, const struct ss_report *report, const struct ss_rank *rk)
{
	static const char *const names[] = {"sync_points", "blocked_ns", "copies", "nccl_ops"};
	char deviates[96] = "[";
	sqlite3_stmt *stmt;

	(void)out;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (rk->deviates & (1u << i))
			snprintf(deviates + strlen(deviates), sizeof(deviates) - strlen(deviates),
				 "%s\"%s\"", deviates[1] ? "," : "", names[i]);
	strcat(deviates, "]");
	if (sqlite3_prepare_v2(doc_db, report->gpu_ranks ? RANK_GPU_SQL : RANK_SQL, -1, &stmt,
			       NULL) != SQLITE_OK)
		return sql_failed();
	bind_optional(stmt, 1, rk->rank);
	bind_optional(stmt, 2, rk->world_size);
	sqlite3_bind_text(stmt, 3, rk->host, -1, SQLITE_STATIC);
	bind_optional(stmt, 4, rk->pid);
	sqlite3_bind_text(stmt, 5, rk->path, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 6, rk->finished ? "true" : "false", -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 7, rk->wall_ns);
	sqlite3_bind_text(stmt, 8, rk->calls_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 9, rk->sync_points);
	sqlite3_bind_int64(stmt, 10, rk->blocked_ns);
	sqlite3_bind_int64(stmt, 11, rk->copies);
	sqlite3_bind_int64(stmt, 12, rk->copy_bytes);
	sqlite3_bind_int64(stmt, 13, rk->nccl_ops);
	sqlite3_bind_int64(stmt, 14, rk->nccl_ns);
	sqlite3_bind_int64(stmt, 15, rk->dropped);
	sqlite3_bind_text(stmt, 16, deviates, -1, SQLITE_TRANSIENT);
	if (report->gpu_ranks) {
		bind_optional(stmt, 17, rk->gpu ? rk->comm_ns : -1);
		if (rk->gpu && rk->comm_overlap >= 0)
			sqlite3_bind_double(stmt, 18, rk->comm_overlap);
		else
			sqlite3_bind_null(stmt, 18);
		bind_optional(stmt, 19, rk->gpu ? rk->exposed_comm_ns : -1);
	}
	if (run(stmt) != SS_EXIT_OK)
		return SS_EXIT_INTERNAL;
	if (sqlite3_prepare_v2(doc_db, RANK_STEPS_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return sql_failed();
	sqlite3_bind_text(stmt, 1, rk->steps_source, -1, SQLITE_STATIC);
	if (rk->steps_name)
		sqlite3_bind_text(stmt, 2, rk->steps_name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 3, rk->steps);
	sqlite3_bind_int64(stmt, 4, rk->steady_steps);
	bind_optional(stmt, 5, rk->step_ns);
	sqlite3_bind_int(stmt, 9, report->gpu_ranks > 0);
	if (rk->steady_steps > 0) {
		double n = (double)rk->steady_steps;

		bind_optional(stmt, 10, rk->steady_start_ns); /* the window the figures cover */
		bind_optional(stmt, 11, rk->steady_end_ns);
		sqlite3_bind_double(stmt, 6, (double)rk->steady_sync_points / n);
		sqlite3_bind_int64(stmt, 7, rk->steady_blocked_ns / rk->steady_steps);
		bind_optional(
		    stmt, 8,
		    rk->steady_gpu_idle_ns >= 0 ? rk->steady_gpu_idle_ns / rk->steady_steps : -1);
	}
	if (run(stmt) != SS_EXIT_OK)
		return SS_EXIT_INTERNAL;
	if (rk->capture_range) {
		if (sqlite3_prepare_v2(doc_db, RANK_CAPTURE_SQL, -1, &stmt, NULL) != SQLITE_OK)
			return sql_failed();
		sqlite3_bind_text(stmt, 1, rk->capture_range, -1, SQLITE_STATIC);
		sqlite3_bind_int64(stmt, 2, rk->capture_ranges);
		bind_optional(stmt, 3, rk->captured_ns);
		sqlite3_bind_int64(stmt, 4, rk->capture_skipped);
		if (rk->capture_skipped_by_class)
			sqlite3_bind_text(stmt, 5, rk->capture_skipped_by_class, -1, SQLITE_STATIC);
		if (run(stmt) != SS_EXIT_OK)
			return SS_EXIT_INTERNAL;
	}
	if (rk->aggregate) {
		if (sqlite3_prepare_v2(doc_db, RANK_AGGREGATE_SQL, -1, &stmt, NULL) != SQLITE_OK)
			return sql_failed();
		sqlite3_bind_int64(stmt, 1, rk->aggregated_enqueues);
		sqlite3_bind_int64(stmt, 2, rk->enqueue_aggregates);
		bind_optional(stmt, 3, rk->step_enqueues);
		sqlite3_bind_text(stmt, 4, ss_rules_needing_enqueue_rows(), -1, SQLITE_STATIC);
		if (run(stmt) != SS_EXIT_OK)
			return SS_EXIT_INTERNAL;
	}
	if (report->nranks < 2)
		return SS_EXIT_OK;
	if (sqlite3_prepare_v2(doc_db, RANK_CLOCK_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return sql_failed();
	sqlite3_bind_int64(stmt, 1, rk->clock_offset_ns);
	sqlite3_bind_text(stmt, 2, rk->clock_offset_method, -1, SQLITE_STATIC);
	bind_optional(stmt, 3, rk->clock_offset_spread_ns);
	return run(stmt);
}

/* ANALYSIS-5: the ranks of a folded finding, and the spread of their cost per step. */
static int finding_ranks(const struct ss_finding *f)
{
	char *list = malloc(f->nranks * 22 + 3);
	size_t used = 0;
	sqlite3_stmt *stmt;

	if (!list)
		return ss_error(SS_EXIT_INTERNAL, "json output: out of memory");
	list[used++] = '[';
	for (size_t i = 0; i < f->nranks; i++)
		used += (size_t)sprintf(list + used, i ? ",%lld" : "%lld", f->ranks[i]);
	list[used++] = ']';
	list[used] = '\0';
	if (sqlite3_prepare_v2(doc_db, FINDING_RANKS_SQL, -1, &stmt, NULL) != SQLITE_OK) {
		free(list);
		return sql_failed();
	}
	sqlite3_bind_text(stmt, 1, list, (int)used, free);
	sqlite3_bind_int64(stmt, 2, (long long)f->nranks);
	sqlite3_bind_int64(stmt, 3, f->rank);
	bind_optional(stmt, 4, f->per_step_min_ns);
	bind_optional(stmt, 5, f->per_step_median_ns);
	bind_optional(stmt, 6, f->per_step_max_ns);
	return run(stmt);
}

static int json_finding(FILE *out, const struct ss_report *report, const struct ss_finding *f)
{
	sqlite3_stmt *stmt;

	(void)out;
	if (sqlite3_prepare_v2(doc_db, report->gpu_ranks ? FINDING_GPU_SQL : FINDING_SQL, -1, &stmt,
			       NULL) != SQLITE_OK)
		return sql_failed();
	sqlite3_bind_text(stmt, 1, f->rule, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, f->severity, -1, SQLITE_STATIC);
	bind_optional(stmt, 3, f->rank);
	sqlite3_bind_int64(stmt, 4, f->count);
	sqlite3_bind_int64(stmt, 5, f->blocked_ns);
	bind_optional(stmt, 6, f->worst_ns);
	bind_optional(stmt, 7, f->bytes);
	bind_optional(stmt, 8, f->estimate_ns);
	sqlite3_bind_text(stmt, 9, f->site, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 10, f->detail, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 11, f->advice, -1, SQLITE_STATIC);
	if (report->gpu_ranks)
		bind_optional(stmt, 12, f->gpu_idle_ns);
	sqlite3_bind_text(stmt, 13, f->phase, -1, SQLITE_STATIC);
	bind_optional(stmt, 14, f->steps);
	bind_optional(stmt, 15, f->cost_ns);
	bind_optional(stmt, 16, f->cost_per_step_ns);
	sqlite3_bind_double(stmt, 17, f->share);
	if (run(stmt) != SS_EXIT_OK)
		return SS_EXIT_INTERNAL;
	return f->nranks > 1 ? finding_ranks(f) : SS_EXIT_OK;
}

static int json_end(FILE *out, const struct ss_report *report)
{
	sqlite3_stmt *stmt;
	int rc;

	for (size_t i = 0; i < report->nranges; i++) {
		const struct ss_range_stat *r = &report->ranges[i];

		if (sqlite3_prepare_v2(doc_db, RANGE_SQL, -1, &stmt, NULL) != SQLITE_OK)
			return sql_failed();
		bind_optional(stmt, 1, r->rank);
		sqlite3_bind_text(stmt, 2, r->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 3, r->kind, -1, SQLITE_STATIC);
		sqlite3_bind_int64(stmt, 4, r->instances);
		sqlite3_bind_int64(stmt, 5, r->sync_min);
		sqlite3_bind_int64(stmt, 6, r->sync_median);
		sqlite3_bind_int64(stmt, 7, r->sync_max);
		sqlite3_bind_int64(stmt, 8, r->blocked_median_ns);
		sqlite3_bind_int64(stmt, 9, r->blocked_max_ns);
		if (run(stmt) != SS_EXIT_OK)
			return SS_EXIT_INTERNAL;
	}
	for (size_t i = 0; i < report->nnotes; i++) {
		if (sqlite3_prepare_v2(doc_db, NOTE_SQL, -1, &stmt, NULL) != SQLITE_OK)
			return sql_failed();
		sqlite3_bind_text(stmt, 1, report->notes[i], -1, SQLITE_STATIC);
		if (run(stmt) != SS_EXIT_OK)
			return SS_EXIT_INTERNAL;
	}
	if (sqlite3_prepare_v2(doc_db, DOCUMENT_SQL, -1, &stmt, NULL) != SQLITE_OK)
		return sql_failed();
	sqlite3_bind_text(stmt, 1, SS_REPORT_JSON_VERSION, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, PACKAGE_VERSION, -1, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 3, SS_SCHEMA_VERSION);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(stmt);
		return sql_failed();
	}
	/* SQLite's JSON copies bytes that are not UTF-8: U+FFFD as it is written (text_safe.h) */
	ss_put_json_text(out, (const char *)sqlite3_column_text(stmt, 0), 0);
	fputc('\n', out);
	sqlite3_finalize(stmt);
	sqlite3_close(doc_db);
	doc_db = NULL;
	return SS_EXIT_OK;
}

const struct ss_report_ops ss_report_json_ops = {
    .begin = json_begin,
    .rank = json_rank,
    .finding = json_finding,
    .end = json_end,
};
