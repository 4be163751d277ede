/*
 * report/rules/copy_on_compute_stream.c: the copy-on-compute-stream rule (docs/rules.md), a
 * per-database rule in C (SS_RULE_DATABASE) over the candidates the pass over calls kept
 * (load.c: async H2D copies followed by a kernel launch on the compute stream). With a GPU
 * timeline, its confirm step clears the sites copy-without-overlap did not flag.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "../analysis_int.h"
#include "../commands.h"
#include "../db.h"

extern const struct ss_rule ss_rule_copy_on_compute_stream; /* at the end: its findings name it */

/* copy-on-compute-stream: a site must show the pattern this often (once per step, >= 2 steps). */
#define SS_OVERLAP_MIN_COPIES 2

/*
 * copy-on-compute-stream (host-side heuristic): an async H2D copy from non-pageable memory whose
 * next row of the same thread (rows are written thread by thread in call order) is a kernel
 * launch on the same stream, when that stream is the compute stream (the one with the most
 * kernel launches): the kernel probably consumes it, and nothing else could overlap the copy on
 * that stream.
 */
#define OVERLAP_SQL                                                                                \
	"SELECT coalesce(s.text, '" NO_SITE "') AS site, count(*), sum(c.end_ns - c.start_ns),"    \
	" max(c.end_ns - c.start_ns), sum(c.bytes), group_concat(DISTINCT a.name)"                 \
	" FROM temp.ss_overlap o JOIN calls c ON c.id = o.id JOIN apis a ON a.id = c.api_id"      \
	" LEFT JOIN sites s ON s.id = c.site_id GROUP BY site HAVING count(*) >= :min_count"

/* The SQL form of the copy-on-compute-stream rule, over the candidates' ids in ss_overlap: used
 * when a site shows several copy APIs, whose list (group_concat DISTINCT) keeps SQLite's order. */
static int run_overlap_sql(struct loader *ld, struct db_state *st)
{
	sqlite3_stmt *stmt = NULL;
	int rc, code = exec_temp(ld, st, "BEGIN");

	if (code == SS_EXIT_OK)
		code = prepare(ld, st, "INSERT INTO temp.ss_overlap VALUES(?)", &stmt);
	for (size_t i = 0; code == SS_EXIT_OK && i < st->noverlap; i++) {
		sqlite3_bind_int64(stmt, 1, st->overlap[i].id);
		code = insert_row(ld, st, stmt);
	}
	sqlite3_finalize(stmt);
	if (code == SS_EXIT_OK)
		code = exec_temp(ld, st, "COMMIT");
	if (code != SS_EXIT_OK)
		return code;
	code = prepare(ld, st, OVERLAP_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	bind_named_int(stmt, ":min_count", SS_OVERLAP_MIN_COPIES);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long count = sqlite3_column_int64(stmt, 1);
		long long bytes = column_or(stmt, 4, 0);

		code = add_finding(
		    ld, &ss_rule_copy_on_compute_stream, st->rank, count,
		    sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3), bytes, -1,
		    xstrdup((const char *)sqlite3_column_text(stmt, 0)),
		    format("%lld async H2D copies (%s, %lld bytes) enqueued right before a kernel "
			   "launch on the same stream; host-side heuristic: confirm with GPU "
			   "timeline",
			   count, (const char *)sqlite3_column_text(stmt, 5), bytes));
		if (code != SS_EXIT_OK)
			break;
	}
	return end_rows(ld, st, stmt, rc, code);
}

/* The candidates of one (site id, API): what OVERLAP_SQL sums, then the texts it joins. */
struct overlap_group {
	long long site_id, api_id;
	int no_site, has_bytes;
	long long count, t, w, b;
	long long steps;  /* distinct steady steps (steps.h) */
	size_t last_step; /* the last of them */
	char *site, *api; /* NULL api: no such API (the SQL's inner join drops the rows) */
};

static int compare_overlap_groups(const void *a, const void *b)
{
	const struct overlap_group *x = a, *y = b;

	return strcmp(x->site, y->site);
}

/* One text column of the row of stmt bound to id, or NULL (no row or NULL text): *text. */
static int lookup_text(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, long long id,
		       char **text)
{
	int rc;

	*text = NULL;
	sqlite3_bind_int64(stmt, 1, id);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
		*text = xstrdup((const char *)sqlite3_column_text(stmt, 0));
		if (!*text) {
			sqlite3_reset(stmt);
			return out_of_memory(ld);
		}
	} else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sqlite3_reset(stmt);
		return ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
	}
	sqlite3_reset(stmt);
	return SS_EXIT_OK;
}

/*
 * copy-on-compute-stream from the pass's candidates (OVERLAP_SQL's result, without reading the
 * candidates back from calls): grouped by (site id, API) in C, then by site text, in site order.
 */
static int run_overlap_rule(struct loader *ld, struct db_state *st)
{
	struct overlap_group *groups = NULL, *g;
	size_t ngroups = 0, capacity = 0, last = 0;
	sqlite3_stmt *site_stmt = NULL, *api_stmt = NULL;
	int code = SS_EXIT_OK, mixed = 0;

	if (!st->noverlap)
		return SS_EXIT_OK; /* OVERLAP_SQL has no row */
	for (size_t i = 0; i < st->noverlap; i++) {
		const struct overlap_candidate *c = &st->overlap[i];

		if (ngroups == 0 || groups[last].api_id != c->api_id ||
		    groups[last].no_site != c->no_site ||
		    (!c->no_site && groups[last].site_id != c->site_id)) {
			for (last = 0; last < ngroups; last++)
				if (groups[last].api_id == c->api_id &&
				    groups[last].no_site == c->no_site &&
				    (c->no_site || groups[last].site_id == c->site_id))
					break;
			if (last == ngroups) {
				if (!reserve(&groups, &capacity, ngroups, sizeof(*groups))) {
					code = out_of_memory(ld);
					goto out;
				}
				groups[ngroups++] = (struct overlap_group){.site_id = c->site_id,
									   .api_id = c->api_id,
									   .no_site = c->no_site,
									   .last_step = (size_t)-1};
			}
		}
		g = &groups[last];
		{
			size_t step;

			ss_steps_phase(&st->steps, c->start, &step);
			if (step != (size_t)-1 && step != g->last_step) {
				g->steps++;
				g->last_step = step;
			}
		}
		if (g->count++ == 0 || c->ns > g->w)
			g->w = c->ns;
		g->t += c->ns;
		if (c->has_bytes) {
			g->b += c->bytes;
			g->has_bytes = 1;
		}
	}
	code = prepare(ld, st, "SELECT text FROM sites WHERE id = ?", &site_stmt);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, "SELECT name FROM apis WHERE id = ?", &api_stmt);
	for (size_t i = 0; code == SS_EXIT_OK && i < ngroups; i++) {
		g = &groups[i];
		code = lookup_text(ld, st, api_stmt, g->api_id, &g->api);
		if (code == SS_EXIT_OK && !g->no_site)
			code = lookup_text(ld, st, site_stmt, g->site_id, &g->site);
		if (code == SS_EXIT_OK && !g->site && !(g->site = xstrdup(NO_SITE)))
			code = out_of_memory(ld);
	}
	if (code != SS_EXIT_OK)
		goto out;
	qsort(groups, ngroups, sizeof(*groups), compare_overlap_groups);
	for (size_t i = 0; i < ngroups && !mixed; i++)
		for (size_t j = i + 1; j < ngroups && strcmp(groups[j].site, groups[i].site) == 0; j++)
			if (groups[i].api && groups[j].api && strcmp(groups[i].api, groups[j].api))
				mixed = 1;
	if (mixed) {
		code = run_overlap_sql(ld, st);
		goto out;
	}
	for (size_t i = 0, j; code == SS_EXIT_OK && i < ngroups; i = j) {
		const char *api = NULL;
		long long count = 0, blocked = 0, worst = 0, bytes = 0, steps = 0;

		for (j = i; j < ngroups && strcmp(groups[j].site, groups[i].site) == 0; j++) {
			g = &groups[j];
			if (!g->api)
				continue;
			if (count == 0 || g->w > worst)
				worst = g->w;
			api = g->api;
			count += g->count;
			blocked += g->t;
			bytes += g->b;
			if (g->steps > steps)
				steps = g->steps;
		}
		/* a loop's pattern: once per step (steps.h), not the first steps' */
		if (count < SS_OVERLAP_MIN_COPIES || !ss_steps_recurring(&st->steps, steps, count))
			continue;
		code = add_finding(
		    ld, &ss_rule_copy_on_compute_stream, st->rank, count, blocked, worst, bytes, -1,
		    xstrdup(groups[i].site),
		    format("%lld async H2D copies (%s, %lld bytes) enqueued right before a kernel "
			   "launch on the same stream; host-side heuristic: confirm with GPU "
			   "timeline",
			   count, api, bytes));
		if (code == SS_EXIT_OK && st->steps.nsteps)
			ld->report->findings[ld->report->nfindings - 1].steps = steps;
	}
out:
	sqlite3_finalize(site_stmt);
	sqlite3_finalize(api_stmt);
	for (size_t i = 0; i < ngroups; i++) {
		free(groups[i].site);
		free(groups[i].api);
	}
	free(groups);
	return code;
}

/* copy-on-compute-stream is a host-side guess; with a GPU timeline copy-without-overlap
 * measures the same thing. When the GPU rule flagged no copy of the rank worth its fix (none, or
 * all under its floor: ss_finding_under_floor), no copy held compute up by a share of the step
 * that matters (the copies were small, or nothing waited behind them): the guess is cleared.
 * When it flagged these very copies (the same rank and site), the two are one problem, which the
 * GPU rule has measured: the guess is cleared as said there (ANALYSIS-2's spirit: one finding
 * per problem at a line). */
static void confirm_on_gpu(struct ss_report *found, const struct ss_rank *rk)
{
	for (size_t i = 0; i < found->nfindings; i++) {
		struct ss_finding *f = &found->findings[i];
		int confirmed = 0, flagged = 0;

		if (strcmp(f->rule, ss_rule_copy_on_compute_stream.id) != 0)
			continue;
		for (size_t j = 0; j < found->nfindings && !confirmed; j++) {
			/* any site: the GPU rule names a copy by the host call its API record
			 * joins, which through a static runtime may be another row near it */
			const struct ss_finding *g = &found->findings[j];

			if (strcmp(g->rule, ss_rule_copy_without_overlap.id) != 0 ||
			    strcmp(g->phase, "steady") != 0)
				continue;
			flagged = 1;
			confirmed = !g->cleared && !ss_finding_under_floor(g, rk);
		}
		if (!confirmed) {
			f->cleared = flagged
					 ? "the GPU timeline shows the copies holding compute up "
					   "by under 1% of the step (copy-without-overlap)"
					 : "the GPU timeline shows no compute waiting behind these "
					   "copies (copy-without-overlap did not flag them)";
			continue;
		}
		for (size_t j = 0; j < found->nfindings; j++) {
			const struct ss_finding *g = &found->findings[j];

			if (strcmp(g->rule, ss_rule_copy_without_overlap.id) == 0 &&
			    strcmp(g->phase, "steady") == 0 && g->rank == f->rank && g->path == f->path &&
			    strcmp(g->site, f->site) == 0)
				f->cleared = "the GPU timeline measured these copies holding compute up: "
					     "copy-without-overlap at the same line gives their cost";
		}
	}
}

const struct ss_rule ss_rule_copy_on_compute_stream = {
    .id = "copy-on-compute-stream",
    .advice = "Issue the next step's input copy on a separate copy stream and make the kernel "
	      "wait with cudaEventRecord/cudaStreamWaitEvent, so the copy overlaps the current "
	      "compute.",
    .phase = SS_RULE_DATABASE,
    .needs_enqueue_rows = 1, /* a copy's next row of its thread */
    .run_database = run_overlap_rule,
    .confirm = confirm_on_gpu,
};
