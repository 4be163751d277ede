/*
 * report/analysis.c: the analysis engine of `syncspy report` (analysis.h): rank databases in,
 * ranks and findings out. docs/rules.md explains each rule to users; rules/<id>.c is its code,
 * rules/registry.c lists them with the phase each runs in, and this file runs them by phase.
 * The other pieces (analysis_int.h says what they share): load.c reads one database, steps.c
 * finds its steady state, gpu.c reads its GPU timeline, ranks.c aligns the ranks' clocks.
 *
 * How a database is read, so that 8 ranks of a million calls each report in seconds:
 *   1. one pass over `calls` in C (load.c, scan_rows) groups every row by (api, class, dir,
 *      host memory, site, legacy stream, steady state) into a TEMP table, ss_agg (a few hundred
 *      rows for real programs), and keeps in memory the few rows two rules need single: async
 *      H2D copies followed by a kernel launch (copy-on-compute-stream, summed in C) and N2
 *      calls. No sort: an SQL GROUP BY sorted all rows;
 *   2. the rank's totals and its calls per API are queries on ss_agg (load.c), and so are the
 *      site rules (SS_RULE_SITE, run_site_rules here); then the per-database rules in C
 *      (SS_RULE_DATABASE);
 *   3. the NCCL collectives: each rank's become one time-ordered array per (id_hash, op)
 *      (collectives.c, load_arrivals), and the ranks' arrays are compared element by element after
 *      loading (ranks.c's clock alignment, then the cross-rank rules, SS_RULE_RANKS), in C: no
 *      per-collective rows go through SQLite;
 *   4. only when the database has NVTX ranges or steps: the sync points of the threads that
 *      opened ranges go into a TEMP table indexed by (tid, start_ns), and each range (a small
 *      table) is joined to it by thread and time (load.c, load_ranges). Without ranges this
 *      costs one lookup, so large recordings without ranges are not slowed down.
 *   5. only when the database has CUPTI's tables (gpu_activity, gpu_api): the GPU timeline in C
 *      (gpu.c, run_gpu): overlap per rank, GPU idle time behind host syncs, then the GPU rules
 *      (SS_RULE_GPU). Without them this costs one lookup of the schema.
 * Databases load in parallel (load_all: one thread and one connection each, up to the cores) and
 * are merged in path order, so the report does not depend on which thread loaded what.
 * Databases are only read: TEMP tables live in the connection's own temporary schema.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analysis_int.h"
#include "steps.h"
#include "commands.h"
#include "db.h"
#include "text_safe.h"
#include "summary.h"

/* ------------------------------------------------------------------ documented constants */

/* host-sync, sync-copy: with a GPU timeline, syncs that left the GPU idle less than this per
 * step (without steps: per call), or less than SS_GPU_BUSY_PERMILLE of the step time, cost
 * nothing measurable: `info` (docs/rules.md, "Cost and severity"). The GPU still had work
 * queued when the host woke up (a pipeline waiting for a buffer to be free). */
#define SS_GPU_BUSY_NS	     2000
#define SS_GPU_BUSY_PERMILLE 1
/* Severity of a steady-state finding: its cost per step per mille of the step time (without
 * steps: its cost per mille of the rank's wall time). */
#define SS_SEVERITY_HIGH_PERMILLE   100
#define SS_SEVERITY_MEDIUM_PERMILLE 20

/* ------------------------------------------------------------------ helpers */

/* SYNCSPY_REPORT_TIMING=1: the seconds each step took, on stderr, to find where the time goes
 * (bench/report-scale.sh). Not documented for users: the steps change with the code. */
static int timing;
static pthread_once_t timing_once = PTHREAD_ONCE_INIT; /* lap runs on the loading threads too */

static void read_timing(void)
{
	const char *value = getenv("SYNCSPY_REPORT_TIMING");

	timing = value && *value;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Prints the time since *since for step and restarts *since. */
void lap(double *since, const char *what, const char *step)
{
	double t;

	pthread_once(&timing_once, read_timing);
	if (!timing)
		return;
	t = now_s();
	fprintf(stderr, "syncspy: timing: %s: %s %.3f s\n", what, step, t - *since);
	*since = t;
}

int fail(struct loader *ld, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ld->err, ld->errlen, fmt, ap);
	va_end(ap);
	return code;
}

int out_of_memory(struct loader *ld)
{
	return fail(ld, SS_EXIT_INTERNAL, "out of memory");
}

char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

char *format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

double ms(long long ns)
{
	return (double)ns / 1e6;
}

const char *ss_severity(double share)
{
	if (share * 1000 >= SS_SEVERITY_HIGH_PERMILLE)
		return "high";
	if (share * 1000 >= SS_SEVERITY_MEDIUM_PERMILLE)
		return "medium";
	return "low";
}

long long column_or(sqlite3_stmt *stmt, int col, long long fallback)
{
	if (sqlite3_column_type(stmt, col) == SQLITE_NULL)
		return fallback;
	return sqlite3_column_int64(stmt, col);
}

void bind_named_int(sqlite3_stmt *stmt, const char *name, long long value)
{
	int i = sqlite3_bind_parameter_index(stmt, name);

	if (i > 0)
		sqlite3_bind_int64(stmt, i, value);
}

/* Takes ownership of site and detail (freed on failure too). */
int add_finding(struct loader *ld, const struct ss_rule *rule, const struct ss_rank *rank,
		long long count, long long blocked_ns, long long worst_ns, long long bytes,
		long long estimate_ns, char *site, char *detail)
{
	struct ss_report *r = ld->report;
	struct ss_finding *f;

	if (!site || !detail) {
		free(site);
		free(detail);
		return out_of_memory(ld);
	}
	if (r->nfindings == ld->findings_capacity) {
		size_t capacity = ld->findings_capacity ? 2 * ld->findings_capacity : 32;
		struct ss_finding *grown = realloc(r->findings, capacity * sizeof(*grown));

		if (!grown) {
			free(site);
			free(detail);
			return out_of_memory(ld);
		}
		r->findings = grown;
		ld->findings_capacity = capacity;
	}
	f = &r->findings[r->nfindings++];
	f->rule = rule->id;
	f->advice = rule->advice;
	f->rank = rank->rank;
	f->path = rank->path;
	f->severity = NULL; /* judge_findings, once the GPU figures are in */
	f->phase = "steady";
	f->steps = -1;
	f->cost_ns = f->cost_per_step_ns = -1;
	f->share = 0;
	f->cleared = NULL;
	f->floor_permille = 0;
	f->count = count;
	f->blocked_ns = blocked_ns;
	f->worst_ns = worst_ns;
	f->bytes = bytes;
	f->estimate_ns = estimate_ns;
	f->gpu_idle_ns = -1;
	f->site = site;
	f->detail = detail;
	f->ranks = f->per_step = NULL;
	f->nranks = 1;
	f->nper = 0;
	f->per_step_min_ns = f->per_step_median_ns = f->per_step_max_ns = -1;
	return SS_EXIT_OK;
}

/* The cost of a finding (docs/rules.md, "Cost and severity"): the lost GPU time where the GPU
 * timeline measured it (a sync's idle time behind it), the estimate for pageable copies and the
 * GPU rules' gains, else the host time of the flagged calls. *rule: its rule, or NULL. */
static long long finding_cost(const struct ss_finding *f, const struct ss_rule **rule)
{
	*rule = NULL;
	for (size_t r = 0; r < ss_nrules; r++)
		if (strcmp(f->rule, ss_rules[r]->id) == 0)
			*rule = ss_rules[r];
	if (*rule && (*rule)->cost == SS_COST_GPU_IDLE && f->gpu_idle_ns >= 0)
		return f->gpu_idle_ns;
	if (*rule && (*rule)->cost == SS_COST_ESTIMATE && f->estimate_ns >= 0)
		return f->estimate_ns;
	return f->blocked_ns;
}

/* The time a rank's share is taken against without steps: its capture range's, else its run's. */
static long long recorded_ns(const struct ss_rank *rk)
{
	return rk->captured_ns > 0 ? rk->captured_ns : rk->wall_ns;
}

int ss_finding_under_floor(const struct ss_finding *f, const struct ss_rank *rk)
{
	const struct ss_rule *rule;
	long long cost = finding_cost(f, &rule);
	int floor = f->floor_permille > 0 ? f->floor_permille : rule ? rule->min_share_permille : 0;

	if (floor <= 0 || strcmp(f->phase, "steady") != 0)
		return 0;
	if (rk->steady_steps > 0 && rk->step_ns > 0)
		return cost / rk->steady_steps * 1000 < rk->step_ns * floor;
	/* no steps: against the time recorded, as the share is (judge_finding) */
	return rk->steady_steps == 0 && recorded_ns(rk) > 0 &&
	       cost * 1000 < recorded_ns(rk) * floor;
}

/*
 * The cost of a finding (finding_cost), its share of the step and its severity (docs/rules.md,
 * "Cost and severity"). `once` findings are `info`: they do not cost the program per step.
 * Appends the per-step figures to the detail. Returns 0 when out of memory.
 */
static int judge_finding(struct ss_finding *f, const struct ss_rank *rk)
{
	const struct ss_rule *rule;
	long long cost = finding_cost(f, &rule);
	int sync = rule && rule->cost == SS_COST_GPU_IDLE;
	char *detail;

	f->cost_ns = cost;
	/* a sync behind which the GPU never waited (it still had work queued: a pipeline that
	 * waits for a buffer to be free) costs no throughput */
	if (sync && f->gpu_idle_ns >= 0 && !f->cleared && strcmp(f->phase, "steady") == 0) {
		long long n = rk->steady_steps > 0 ? rk->steady_steps : f->count;
		long long per = f->gpu_idle_ns / (n > 0 ? n : 1);

		if (per < SS_GPU_BUSY_NS ||
		    (rk->steady_steps > 0 && per * 1000 < rk->step_ns * SS_GPU_BUSY_PERMILLE))
			f->cleared =
			    "the GPU stayed busy behind these syncs (idle under 0.1% of the "
			    "step): no throughput lost";
	}
	/* an upper bound of the gain under the rule's floor: nothing worth the fix */
	if (!f->cleared && ss_finding_under_floor(f, rk))
		f->cleared = rk->steady_steps > 0
				 ? "at most this much to win back, under 1% of the step: not worth "
				   "restructuring for"
				 : "at most this much to win back, under 1% of the run: not worth "
				   "restructuring for";
	if (f->cleared) {
		f->severity = "info";
		f->share = 0;
		detail = format("%s; %s", f->detail, f->cleared);
	} else if (strcmp(f->phase, "once") == 0) {
		f->severity = "info";
		f->share = 0;
		detail = format("%s; once: not in the steady state (setup, warm-up, teardown, or in "
				"too few steps)",
				f->detail);
	} else if (rk->steady_steps > 0 && rk->step_ns > 0) {
		f->cost_per_step_ns = cost / rk->steady_steps;
		f->share = (double)f->cost_per_step_ns / (double)rk->step_ns;
		f->severity = ss_severity(f->share);
		detail = f->steps >= 0
			     ? format("%s; in %lld of %lld steady steps: %.3f ms per step, %.1f%% of "
				      "a %.3f ms step",
				      f->detail, f->steps, rk->steady_steps, ms(f->cost_per_step_ns),
				      100 * f->share, ms(rk->step_ns))
			     : format("%s; %.3f ms per step, %.1f%% of a %.3f ms step", f->detail,
				      ms(f->cost_per_step_ns), 100 * f->share, ms(rk->step_ns));
	} else {
		long long recorded = recorded_ns(rk);

		f->share = (double)cost / (double)(recorded > 0 ? recorded : 1);
		f->severity = ss_severity(f->share);
		return 1; /* no steps: the rank's note says how it was judged */
	}
	if (!detail)
		return 0;
	free(f->detail);
	f->detail = detail;
	return 1;
}

struct ss_finding *ss_finding_at(struct ss_report *r, const char *rule, const char *site)
{
	for (size_t i = 0; i < r->nfindings; i++)
		if (r->findings[i].rule == rule && strcmp(r->findings[i].site, site) == 0)
			return &r->findings[i];
	return NULL;
}

struct ss_finding *ss_steady_finding(struct ss_report *r, const char *rule, const char *site)
{
	for (size_t i = 0; i < r->nfindings; i++) {
		struct ss_finding *g = &r->findings[i];

		if (g->rule == rule && !g->cleared && strcmp(g->phase, "steady") == 0 &&
		    strcmp(g->site, site) == 0)
			return g;
	}
	return NULL;
}

/* Folds finding part into owner, the line whose fix removes it (ss_alloc_regrowth,
 * ss_sync_same_operation): owner's detail names it ("; and N NOUN (X ms) WHAT, at SITE"), its
 * host time and GPU idle time (where both have one) join owner's, and part becomes `info` with
 * the reason cleared. */
int fold_finding(struct loader *ld, struct ss_finding *owner, struct ss_finding *part,
		 const char *noun, const char *what, const char *cleared)
{
	char *detail = format("%s; and %lld %s (%.3f ms)%s, at %s", owner->detail, part->count, noun,
			      ms(part->blocked_ns), what, part->site);

	if (!detail)
		return out_of_memory(ld);
	free(owner->detail);
	owner->detail = detail;
	owner->blocked_ns += part->blocked_ns;
	if (owner->gpu_idle_ns >= 0 && part->gpu_idle_ns >= 0)
		owner->gpu_idle_ns += part->gpu_idle_ns;
	part->cleared = cleared;
	return SS_EXIT_OK;
}

/* A finding's phase (steps.h): its figures are the steady state's, or the whole run's. */
void set_phase(struct ss_finding *f, const struct ss_steps *steps, int steady, long long nsteps)
{
	f->phase = steady ? "steady" : "once";
	f->steps = steps->nsteps ? nsteps : -1;
}

static int add_note(struct ss_report *r, char *note)
{
	char **grown;

	if (!note)
		return SS_EXIT_INTERNAL;
	grown = realloc(r->notes, (r->nnotes + 1) * sizeof(*grown));
	if (!grown) {
		free(note);
		return SS_EXIT_INTERNAL;
	}
	r->notes = grown;
	r->notes[r->nnotes++] = note;
	return SS_EXIT_OK;
}

int compare_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* ------------------------------------------------------------------ one database's statements */

int prepare(struct loader *ld, struct db_state *st, const char *sql, sqlite3_stmt **stmt)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, stmt, NULL);

	if (rc != SQLITE_OK)
		return ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
	return SS_EXIT_OK;
}

int step_failed(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, int rc)
{
	int code = ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);

	sqlite3_finalize(stmt);
	return code;
}

/* Prepares a query that always yields a row (an aggregate) and steps to it: no row is a
 * database failure. On success the caller reads the row and finalizes *stmt. */
int query_row(struct loader *ld, struct db_state *st, const char *sql, sqlite3_stmt **stmt)
{
	int rc, code = prepare(ld, st, sql, stmt);

	if (code != SS_EXIT_OK)
		return code;
	rc = sqlite3_step(*stmt);
	if (rc != SQLITE_ROW)
		return step_failed(ld, st, *stmt, rc);
	return SS_EXIT_OK;
}

/* Ends a loop over the rows of stmt that stopped at step result rc, or earlier when a row
 * failed with code: the row's failure comes first, then a step that did not reach the end.
 * Finalizes stmt either way. */
int end_rows(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt, int rc, int code)
{
	if (code != SS_EXIT_OK) {
		sqlite3_finalize(stmt);
		return code;
	}
	if (rc != SQLITE_DONE)
		return step_failed(ld, st, stmt, rc);
	sqlite3_finalize(stmt);
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ running the rules */

/*
 * The site rules (SS_RULE_SITE), in registry order: each one's query on ss_agg yields one row
 * per site (ANALYSIS-2) with the whole run's figures and the steady state's; a site whose calls
 * recur in the steady state (steps.h) gets a finding with the steady figures, else one with the
 * whole run's, `once` (judged `info`).
 */
static int run_site_rules(struct loader *ld, struct db_state *st)
{
	for (size_t r = 0; r < ss_nrules; r++) {
		const struct ss_rule *sr = ss_rules[r];
		sqlite3_stmt *stmt;
		int rc, code;

		if (sr->phase != SS_RULE_SITE)
			continue;
		code = prepare(ld, st, sr->sql, &stmt);
		if (code != SS_EXIT_OK)
			return code;
		bind_named_int(stmt, ":min_count", sr->min_count);
		bind_named_int(stmt, ":other_streams", st->other_streams);
		bind_named_int(stmt, ":legacy_threads", st->legacy_threads);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			long long count = sqlite3_column_int64(stmt, 1);
			long long blocked = sqlite3_column_int64(stmt, 2);
			long long worst = sqlite3_column_int64(stmt, 3);
			long long bytes = column_or(stmt, 4, -1);
			long long estimate = column_or(stmt, 5, -1);
			long long rows = sqlite3_column_int64(stmt, 6);
			const char *apis = (const char *)sqlite3_column_text(stmt, 7);
			long long steady_rows = sqlite3_column_int64(stmt, 13);
			long long steps = sqlite3_column_int64(stmt, 14);
			/* steady: the site's calls recur in the steady state (steps.h), and the
			 * finding's figures are the steady state's; else the whole run's, `info` */
			int steady =
			    ss_steps_recurring(&st->steps, steps, steady_rows) ||
			    (sr->spread_recurs && sqlite3_column_type(stmt, 16) != SQLITE_NULL &&
			     ss_steps_spread(&st->steps, steps, sqlite3_column_int64(stmt, 16),
					     sqlite3_column_int64(stmt, 17))) ||
			    (sr->burst_recurs && sqlite3_column_type(stmt, 16) != SQLITE_NULL &&
			     ss_steps_bursts(&st->steps, steps, steady_rows,
					     sqlite3_column_int64(stmt, 16),
					     sqlite3_column_int64(stmt, 17)));

			/* without steps, `steps` counts the work's slices (STEPS-5) */
			steady = steady && ss_steps_fallback_recurs(&st->steps, steady_rows, steps,
								    column_or(stmt, 16, -1),
								    column_or(stmt, 17, -1));

			if (steady) {
				count = sqlite3_column_int64(stmt, 8);
				blocked = sqlite3_column_int64(stmt, 9);
				worst = sqlite3_column_int64(stmt, 10);
				bytes = column_or(stmt, 11, -1);
				estimate = column_or(stmt, 12, -1);
				rows = steady_rows;
				apis = (const char *)sqlite3_column_text(stmt, 15);
			}
			if (sr->keep && !sr->keep(count, rows))
				continue;
			if (sr->min_mean_ns > 0 &&
			    (count <= 0 || blocked / count < sr->min_mean_ns))
				continue;

			if (!sr->keeps_estimate)
				estimate = -1;
			if (!sr->keeps_bytes)
				bytes = -1;
			code = add_finding(
			    ld, sr, st->rank, count, blocked, worst, bytes, estimate,
			    xstrdup((const char *)sqlite3_column_text(stmt, 0)),
			    sr->detail(st, apis ? apis : "", worst, bytes, estimate, rows));
			if (code != SS_EXIT_OK)
				break;
			struct ss_finding *added = &ld->report->findings[ld->report->nfindings - 1];
			const char *advice =
			    sr->advice_for ? sr->advice_for(apis ? apis : "") : NULL;
			if (advice)
				added->advice = advice;
			set_phase(added, &st->steps, steady, steps);
		}
		code = end_rows(ld, st, stmt, rc, code);
		if (code != SS_EXIT_OK)
			return code;
	}
	return SS_EXIT_OK;
}

/* The per-database rules in C (SS_RULE_DATABASE), in registry order. */
static int run_database_rules(struct loader *ld, struct db_state *st)
{
	int code = SS_EXIT_OK;

	for (size_t r = 0; code == SS_EXIT_OK && r < ss_nrules; r++)
		if (ss_rules[r]->phase == SS_RULE_DATABASE &&
		    !(st->rank->aggregate && ss_rules[r]->needs_enqueue_rows)) /* ANALYSIS-6 */
			code = ss_rules[r]->run_database(ld, st);
	return code;
}

/* The cross-rank rules (SS_RULE_RANKS), in registry order, once the clocks are aligned. */
static int run_rank_rules(struct loader *ld, const struct ss_collectives *sets, size_t nsets)
{
	int code = SS_EXIT_OK;

	for (size_t r = 0; code == SS_EXIT_OK && r < ss_nrules; r++)
		if (ss_rules[r]->phase == SS_RULE_RANKS)
			code = ss_rules[r]->run_ranks(ld, sets, nsets);
	return code;
}

/* ------------------------------------------------------------------ loading */

/* Two files that claim one rank of one job size, from different processes, are two runs mixed. */
static int check_duplicate_rank(struct loader *ld, size_t index)
{
	const struct ss_rank *rk = &ld->report->ranks[index];

	if (rk->rank < 0)
		return SS_EXIT_OK;
	for (size_t i = 0; i < index; i++) {
		const struct ss_rank *o = &ld->report->ranks[i];

		if (o->rank == rk->rank && o->world_size == rk->world_size &&
		    (o->pid != rk->pid || strcmp(o->host, rk->host) != 0))
			return fail(ld, SS_EXIT_INPUT,
				    "%s: rank %lld of %lld is also recorded by %s (pid %lld): "
				    "name the databases of one run only",
				    rk->path, rk->rank, rk->world_size, o->path, o->pid);
	}
	return SS_EXIT_OK;
}

/* Loads one database into *rk and job (a worker thread: touches nothing shared). */
static void load_one(struct job *job, struct ss_rank *rk)
{
	struct loader ld = {.report = &job->found, .err = job->err, .errlen = sizeof(job->err)};
	const char *path = job->path;
	struct db_state st = {0};
	double t = now_s();
	int code;

	memset(rk, 0, sizeof(*rk));
	rk->comm_ns = rk->exposed_comm_ns = -1;
	rk->comm_overlap = -1;
	rk->steady_gpu_idle_ns = rk->step_ns = rk->steady_start_ns = rk->steady_end_ns = -1;
	rk->step_enqueues = -1;
	rk->steps_source = "none";
	if (job->summary) { /* what summarize kept of the database (SUMMARY-2) */
		job->code = summary_load_rank(&ld, job, rk);
		return;
	}
	rk->path = xstrdup(path);
	if (!rk->path) {
		job->code = out_of_memory(&ld);
		return;
	}
	code = job->reopen ? ss_db_reopen(path, &st.db, ld.err, ld.errlen)
			   : ss_db_open(path, &st.db, ld.err, ld.errlen);
	if (code == SS_EXIT_OK && /* CUPTI-13: gpu.c reads the ties from gpu_api */
	    (code = ss_gpu_order_ties(st.db, path, ld.err, ld.errlen)) != SS_EXIT_OK) {
		sqlite3_close(st.db);
		st.db = NULL;
	}
	if (code != SS_EXIT_OK) {
		job->code = code;
		return;
	}
	code = ss_finding_sites(st.db, path, ld.err, ld.errlen);
	if (code != SS_EXIT_OK) {
		sqlite3_close(st.db);
		st.db = NULL;
		job->code = code;
		return;
	}
	st.path = path;
	st.rank = rk;
	code = load_meta(&ld, &st);
	job->meta_loaded = code == SS_EXIT_OK;
	if (code == SS_EXIT_OK)
		code = check_gpu_tables(&ld, &st);
	lap(&t, path, "open+meta");
	if (code == SS_EXIT_OK)
		code = build_aggregate(&ld, &st);
	lap(&t, path, "aggregate");
	if (code == SS_EXIT_OK)
		code = run_site_rules(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_alloc_regrowth(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_vmm_mappings(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_pool_trim_regrowth(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_graph_exec_destroys(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_module_function_lookups(&ld, &st);
	lap(&t, path, "site rules");
	if (code == SS_EXIT_OK)
		code = run_database_rules(&ld, &st);
	lap(&t, path, "database rules");
	if (code == SS_EXIT_OK)
		code = load_arrivals(&ld, &st, job->collectives);
	lap(&t, path, "arrivals");
	if (code == SS_EXIT_OK)
		code = load_ranges(&ld, &st, job);
	lap(&t, path, "ranges");
	if (code == SS_EXIT_OK)
		code = run_gpu(&ld, &st);
	lap(&t, path, "gpu");
	for (size_t r = 0; code == SS_EXIT_OK && rk->gpu && r < ss_nrules; r++)
		if (ss_rules[r]->confirm)
			ss_rules[r]->confirm(&job->found, rk);
	if (code == SS_EXIT_OK)
		code = ss_sync_same_operation(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_library_object_setup(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_autotune_model_call(&ld, &st);
	if (code == SS_EXIT_OK)
		code = ss_sync_then_free(&ld, &st);
	for (size_t i = 0; code == SS_EXIT_OK && i < job->found.nfindings; i++)
		if (!judge_finding(&job->found.findings[i], rk))
			code = out_of_memory(&ld);
	if (code == SS_EXIT_OK && job->options && job->options->each_database)
		code = job->options->each_database(job->options->each_rank_arg, st.db, rk,
						   &job->extra, ld.err, ld.errlen);
	ss_steps_free(&st.steps);
	sqlite3_close(st.db);
	free(st.overlap);
	free(st.n2);
	free(st.api_first);
	job->code = code;
}

/* Databases are loaded by this many threads at most, one connection each: the scan is CPU-bound
 * once the file is cached, so more threads than cores only add memory. */
#define SS_LOAD_THREADS_MAX 8

struct pool {
	struct job *jobs;
	struct ss_rank *ranks;
	size_t njobs;
	size_t next; /* the next job to take, atomically */
};

static void *load_worker(void *arg)
{
	struct pool *pool = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED)) < pool->njobs)
		load_one(&pool->jobs[i], &pool->ranks[i]);
	return NULL;
}

static void load_all(struct pool *pool)
{
	pthread_t threads[SS_LOAD_THREADS_MAX];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = cores > 0 ? (size_t)cores : 1, started = 0;

	if (n > SS_LOAD_THREADS_MAX)
		n = SS_LOAD_THREADS_MAX;
	if (n > pool->njobs)
		n = pool->njobs;
	/* This thread is one of the workers; a thread that cannot start leaves its share to it. */
	while (started + 1 < n && pthread_create(&threads[started], NULL, load_worker, pool) == 0)
		started++;
	load_worker(pool);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
}

/* Adds a loaded job to the report, as the one-by-one loader of the first version did: the first
 * failure in path order wins, and a duplicate rank is found before the database's other errors. */
static int merge_job(struct loader *ld, struct job *job, size_t index)
{
	struct ss_report *r = ld->report;
	int code = SS_EXIT_OK;

	if (!job->meta_loaded)
		return fail(ld, job->code, "%s", job->err);
	code = check_duplicate_rank(ld, index);
	if (code != SS_EXIT_OK)
		return code;
	if (job->code != SS_EXIT_OK)
		return fail(ld, job->code, "%s", job->err);
	for (size_t i = 0; i < job->found.nfindings; i++) {
		struct ss_finding *f = &job->found.findings[i];

		if (!reserve(&r->findings, &ld->findings_capacity, r->nfindings, sizeof(*f)))
			return out_of_memory(ld);
		r->findings[r->nfindings++] = *f;
		f->site = f->detail = NULL; /* moved */
	}
	for (size_t i = 0; i < job->found.nranges; i++) {
		struct ss_range_stat *rs = &job->found.ranges[i];

		if (!reserve(&r->ranges, &ld->ranges_capacity, r->nranges, sizeof(*rs)))
			return out_of_memory(ld);
		r->ranges[r->nranges++] = *rs;
		rs->name = rs->kind = NULL; /* moved */
	}
	return SS_EXIT_OK;
}

/* ------------------------------------------------------------------ order and notes */

static int compare_findings(const void *a, const void *b)
{
	const struct ss_finding *x = a, *y = b;
	int c;

	int xi = strcmp(x->severity, "info") == 0, yi = strcmp(y->severity, "info") == 0;

	if (xi != yi) /* ANALYSIS-1 */
		return xi - yi;
	if (!xi && x->share != y->share)
		return x->share > y->share ? -1 : 1;
	if (x->blocked_ns != y->blocked_ns)
		return x->blocked_ns > y->blocked_ns ? -1 : 1;
	c = strcmp(x->rule, y->rule);
	if (c)
		return c;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->site, y->site);
}

/* ------------------------------------------------------------------ across ranks (ANALYSIS-5) */

/* fold_ranks sorts the findings of known ranks by (rule, site), then report order. */
static const struct ss_finding *fold_base;

static int compare_fold_keys(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(fold_base[x].rule, fold_base[y].rule);

	if (c)
		return c;
	c = strcmp(fold_base[x].site, fold_base[y].site);
	if (c)
		return c;
	return (x > y) - (x < y);
}

/* Appends what finding f brings to its group's fold: its ranks and its cost per step (a
 * steady, not info, finding's), its own or, folded already, those it carries. */
static int fold_member(const struct ss_finding *f, long long **ranks, size_t *nranks,
		       size_t *cap_ranks, long long **per_step, size_t *nper, size_t *cap_per)
{
	if (f->nranks > 1) {
		for (size_t i = 0; i < f->nranks; i++)
			if (!PUSH(*ranks, *nranks, *cap_ranks, f->ranks[i]))
				return 0;
		for (size_t i = 0; i < f->nper; i++)
			if (!PUSH(*per_step, *nper, *cap_per, f->per_step[i]))
				return 0;
		return 1;
	}
	if (!PUSH(*ranks, *nranks, *cap_ranks, f->rank))
		return 0;
	if (f->cost_per_step_ns >= 0 && strcmp(f->severity, "info") != 0)
		return PUSH(*per_step, *nper, *cap_per, f->cost_per_step_ns);
	return 1;
}

/*
 * ANALYSIS-5: the findings of one (rule, site) on several ranks of the job become the first of
 * them in ANALYSIS-1 order, the worst rank's, with the ranks listed and the spread of their cost
 * per step; the others are dropped, so the order of what remains is unchanged. Findings of
 * databases without a rank stay apart: they are separate programs. ss_analyze folds after each
 * batch of databases, so that memory holds one finding per (rule, site), not one per rank, and
 * once more at the end (final: the spread is computed, the values it came from freed); the worst
 * of a group is the same whatever the batches, as ANALYSIS-1 is a total order. Sorts the findings
 * first. Returns 0 when out of memory.
 */
static int fold_ranks(struct ss_report *r, int final)
{
	size_t *order = malloc((r->nfindings ? r->nfindings : 1) * sizeof(*order));
	size_t n = 0, kept = 0;
	int ok = order != NULL;

	if (ok && r->nfindings)
		qsort(r->findings, r->nfindings, sizeof(*r->findings), compare_findings);
	for (size_t i = 0; ok && i < r->nfindings; i++)
		if (r->findings[i].rank >= 0)
			order[n++] = i;
	fold_base = r->findings;
	if (ok && n)
		qsort(order, n, sizeof(*order), compare_fold_keys);
	for (size_t g = 0, gend; ok && g < n; g = gend) {
		struct ss_finding *worst = &r->findings[order[g]];
		long long *ranks = NULL, *per_step = NULL;
		size_t nranks = 0, nper = 0, cap_ranks = 0, cap_per = 0;

		for (gend = g + 1;
		     gend < n && strcmp(r->findings[order[gend]].rule, worst->rule) == 0 &&
		     strcmp(r->findings[order[gend]].site, worst->site) == 0;
		     gend++)
			;
		if (gend - g < 2 && (!final || worst->nranks < 2))
			continue;
		for (size_t k = g; ok && k < gend; k++)
			ok = fold_member(&r->findings[order[k]], &ranks, &nranks, &cap_ranks,
					 &per_step, &nper, &cap_per);
		if (!ok) {
			free(ranks);
			free(per_step);
			break;
		}
		for (size_t k = g + 1; k < gend; k++) {
			struct ss_finding *f = &r->findings[order[k]];

			free(f->site);
			free(f->detail);
			free(f->ranks);
			free(f->per_step);
			f->site = f->detail = NULL; /* dropped below */
		}
		free(worst->ranks);
		free(worst->per_step);
		worst->ranks = ranks;
		worst->nranks = nranks;
		worst->per_step = per_step;
		worst->nper = nper;
		if (!final)
			continue;
		qsort(worst->ranks, worst->nranks, sizeof(*worst->ranks), compare_ll);
		nranks = 0; /* one rank recorded twice (copies of one database) is one rank */
		for (size_t k = 0; k < worst->nranks; k++)
			if (!nranks || worst->ranks[k] != worst->ranks[nranks - 1])
				worst->ranks[nranks++] = worst->ranks[k];
		worst->nranks = nranks;
		if (nranks < 2) {
			free(worst->ranks);
			worst->ranks = NULL;
			nper = 0;
		}
		if (nper) {
			qsort(per_step, nper, sizeof(*per_step), compare_ll);
			worst->per_step_min_ns = per_step[0];
			worst->per_step_median_ns = per_step[(nper - 1) / 2];
			worst->per_step_max_ns = per_step[nper - 1];
		}
		free(worst->per_step);
		worst->per_step = NULL;
		worst->nper = 0;
	}
	for (size_t i = 0; ok && i < r->nfindings; i++)
		if (r->findings[i].site)
			r->findings[kept++] = r->findings[i];
	if (ok)
		r->nfindings = kept;
	free(order);
	return ok;
}

int compare_ranks(const void *a, const void *b)
{
	const struct ss_rank *x = a, *y = b;

	if (x->rank != y->rank) { /* unknown ranks (-1) last */
		if (x->rank < 0 || y->rank < 0)
			return x->rank < 0 ? 1 : -1;
		return x->rank < y->rank ? -1 : 1;
	}
	return strcmp(x->path, y->path);
}

/* Range statistics follow the rank order (compare_ranks), then the most sync points first. */
static int compare_range_stats(const void *a, const void *b)
{
	const struct ss_range_stat *x = a, *y = b;
	int c;

	if (x->rank != y->rank) {
		if (x->rank < 0 || y->rank < 0)
			return x->rank < 0 ? 1 : -1;
		return x->rank < y->rank ? -1 : 1;
	}
	c = strcmp(x->path, y->path);
	if (c)
		return c;
	if (x->sync_total != y->sync_total)
		return x->sync_total > y->sync_total ? -1 : 1;
	if (x->instances != y->instances)
		return x->instances > y->instances ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->kind, y->kind);
}

/* The kinds of per-database notes add_notes writes, for the count of those left out. */
static const char *const note_kinds[] = {"GPU timeline not recorded",
					 "GPU timeline partial",
					 "GPU timeline limited to what was asked",
					 "GPU timeline sampled",
					 "GPU timeline paused by the program",
					 "no GPU timeline",
					 "no repeating step found",
					 "calls dropped while recording",
					 "calls with end_ns < start_ns",
					 "unfinished recording"};
#define NOTE_KINDS (sizeof(note_kinds) / sizeof(note_kinds[0]))

/* A job of thousands of ranks would list one note per rank: at most this many of one kind name
 * their database, then one note counts the others (docs/cli.md). */
#define SS_NOTES_PER_KIND 10

/* add_note for a note about one database, of the kind *count counts. */
static int add_rank_note(struct ss_report *r, size_t *count, char *note)
{
	if ((*count)++ < SS_NOTES_PER_KIND)
		return add_note(r, note);
	if (!note)
		return SS_EXIT_INTERNAL;
	free(note);
	return SS_EXIT_OK;
}

const char *ss_rules_needing_enqueue_rows(void)
{
	static char ids[256];

	if (!ids[0])
		for (size_t k = 0; k < ss_nrules; k++)
			if (ss_rules[k]->needs_enqueue_rows)
				snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s",
					 ids[0] ? "," : "", ss_rules[k]->id);
	return ids;
}

/* ANALYSIS-6: one note for every database recorded in aggregate mode, naming the rules that
 * did not run on them. */
static int add_aggregate_note(struct ss_report *r)
{
	size_t n = 0, first = 0, nrules = 0;
	char rules[256] = "";

	for (size_t i = 0; i < r->nranks; i++)
		if (r->ranks[i].aggregate && n++ == 0)
			first = i;
	if (!n)
		return SS_EXIT_OK;
	for (size_t k = 0; k < ss_nrules; k++)
		nrules += ss_rules[k]->needs_enqueue_rows;
	for (size_t k = 0, i = 0; k < ss_nrules; k++)
		if (ss_rules[k]->needs_enqueue_rows) {
			i++;
			snprintf(rules + strlen(rules), sizeof(rules) - strlen(rules), "%s%s",
				 i == 1	       ? ""
				 : i == nrules ? " and "
					       : ", ",
				 ss_rules[k]->id);
		}
	char *who = n == 1 ? format("%s: recorded", r->ranks[first].path)
			   : format("%zu of %zu databases recorded", n, r->nranks);
	int code =
	    !who ? SS_EXIT_INTERNAL
		 : add_note(r, format("%s in aggregate mode (SYNCSPY_MODE=aggregate): "
				      "enqueues are counted per site, not a row each, so %s "
				      "did not run on %s (they need a row per enqueue, as "
				      "does the clock alignment by collectives); sync points, "
				      "steps and the other rules are as in trace mode",
				      who, rules, n == 1 ? "it" : "them"));
	free(who);
	return code;
}

static int add_notes(struct ss_report *r)
{
	size_t more[NOTE_KINDS] = {0};
	int hosts_differ = 0, code = SS_EXIT_OK;
	size_t wall_clock = 0;
	long long spread = 0;

	if (!r->gpu_ranks) {
		code = add_note(r, format("GPU idle time behind host syncs: not measurable without "
					  "GPU timeline (the recording holds host-side calls only)"));
		if (code == SS_EXIT_OK)
			code = add_note(r, format("communication/compute overlap: not measurable "
						  "without GPU timeline"));
	}
	for (size_t i = 0; code == SS_EXIT_OK && i < r->nranks; i++) {
		const struct ss_rank *rk = &r->ranks[i];

		/* Why a rank has no GPU timeline, or only part of one (meta.cupti, docs/cupti.md) */
		if (rk->cupti && strncmp(rk->cupti, "off", 3) == 0)
			code = add_rank_note(
			    r, &more[0],
			    format("%s: GPU timeline not recorded: %s", rk->path, rk->cupti));
		else if (rk->cupti && strncmp(rk->cupti, "yielded", 7) == 0)
			code = add_rank_note(
			    r, &more[1],
			    format("%s: GPU timeline partial: %s", rk->path, rk->cupti));
		else if (rk->cupti && strncmp(rk->cupti, "on: only", 8) == 0)
			code =
			    add_rank_note(r, &more[2],
					  format("%s: GPU timeline limited to what was asked: %s",
						 rk->path, rk->cupti));
		if (code == SS_EXIT_OK && rk->cupti_sample) {
			/* CUPTI-4's windows as asked, or CUPTI-5's (auto) with what it estimated */
			int automatic = strcmp(rk->cupti_sample, "auto") == 0;
			/* CUPTI-7: aggregate mode's windows, ever further apart */
			int aggregate = strcmp(rk->cupti_sample, "aggregate") == 0;
			char *setting =
			    automatic
				? format("auto: tracing every call would have cost about %.1f%% "
					 "of the run",
					 rk->cupti_auto_permille / 10.0)
			    : aggregate ? format("auto in aggregate mode: windows of 50 ms, the "
						 "gaps between them 1 s, 2 s, 4 s, ...")
					: format("%s ms", rk->cupti_sample);
			double traced_s =
			    (rk->cupti_traced_ns >= 0 ? rk->cupti_traced_ns
						      : rk->wall_ns - rk->cupti_paused_ns) /
			    1e9;

			code =
			    !setting
				? SS_EXIT_INTERNAL
				: add_rank_note(
				      r, &more[3],
				      format("%s: GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=%s): "
					     "%lld windows, %.3f s of %.3f s traced: %s",
					     rk->path, setting, rk->cupti_windows, traced_s,
					     rk->wall_ns / 1e9,
					     automatic || aggregate
						 ? "GPU figures are scaled from the traced "
						   "steps (SYNCSPY_CUPTI_SAMPLE=all traces "
						   "the whole run)"
						 : "GPU figures cover the traced part only"));
			free(setting);
		} else if (code == SS_EXIT_OK && rk->cupti_pauses > 0)
			code = add_rank_note(
			    r, &more[4],
			    format("%s: GPU timeline paused %s %lld times, %.3f s of %.3f s: GPU "
				   "figures cover the traced part only",
				   rk->path,
				   rk->capture_range ? "outside the capture range or by the program"
						     : "by the program (syncspy_gpu_trace)",
				   rk->cupti_pauses, rk->cupti_paused_ns / 1e9, rk->wall_ns / 1e9));
		/* What a capture range recorded (docs/recording.md, "Capture ranges") */
		if (code == SS_EXIT_OK && rk->capture_range)
			code = add_note(
			    r,
			    format("%s: capture range (%s): %lld interval%s, %.3f s of %.3f s "
				   "recorded; %lld calls outside %s not recorded%s%s%s: figures, "
				   "steps and findings cover the recorded part only",
				   rk->path, rk->capture_range, rk->capture_ranges,
				   rk->capture_ranges == 1 ? "" : "s",
				   (rk->captured_ns >= 0 ? rk->captured_ns : rk->wall_ns) / 1e9,
				   rk->wall_ns / 1e9, rk->capture_skipped,
				   rk->capture_ranges == 1 ? "it" : "them",
				   rk->capture_skipped_by_class ? " (" : "",
				   rk->capture_skipped_by_class ? rk->capture_skipped_by_class : "",
				   rk->capture_skipped_by_class ? ")" : ""));
		if (code != SS_EXIT_OK)
			break;
		if (r->gpu_ranks && !rk->gpu)
			code = add_rank_note(
			    r, &more[5],
			    format("%s: no GPU timeline (recorded without CUPTI): GPU "
				   "idle time, communication/compute overlap and "
				   "copy-without-overlap not measurable for it",
				   rk->path));
		if (code != SS_EXIT_OK)
			break;

		if (rk->steps == 0)
			code = add_rank_note(
			    r, &more[6],
			    format("%s: no repeating step found (no syncspy_step or NVTX "
				   "step ranges, and no call that recurs at a regular "
				   "period): every call between the first and the last GPU "
				   "work is judged (before: setup, after: teardown), a site "
				   "with %d calls or more all through it as repeating, its "
				   "cost against the wall time",
				   rk->path, SS_FALLBACK_MIN_CALLS));
		if (code == SS_EXIT_OK && rk->dropped_calls > 0) /* calls, per class */
			code = add_rank_note(
			    r, &more[7],
			    format("%s: %lld calls were dropped while recording (%s): "
				   "its counts are lower bounds",
				   rk->path, rk->dropped_calls,
				   rk->dropped_by_class ? rk->dropped_by_class
							: "classes not recorded"));
		else if (code == SS_EXIT_OK && rk->dropped > 0 && rk->dropped_calls < 0)
			code =
			    add_rank_note(r, &more[7],
					  format("%s: %lld calls were dropped while recording: its "
						 "counts are lower bounds",
						 rk->path, rk->dropped));
		if (code == SS_EXIT_OK && rk->backwards > 0)
			code = add_rank_note(
			    r, &more[8],
			    format("%s: %lld call%s with end_ns < start_ns (a clock "
				   "that went back, or a damaged file): counted as 0 ns",
				   rk->path, rk->backwards, rk->backwards == 1 ? "" : "s"));
		if (code == SS_EXIT_OK && !rk->finished)
			code = add_rank_note(r, &more[9],
					     format("%s: unfinished recording (still running, or "
						    "killed): read up to its last commit",
						    rk->path));
		if (strcmp(rk->host, r->ranks[0].host) != 0)
			hosts_differ = 1;
	}
	if (code == SS_EXIT_OK)
		code = add_aggregate_note(r);
	for (size_t k = 0; code == SS_EXIT_OK && k < NOTE_KINDS; k++)
		if (more[k] > SS_NOTES_PER_KIND)
			code = add_note(
			    r,
			    format("%zu more databases: %s (the first %d are named above)",
				   more[k] - SS_NOTES_PER_KIND, note_kinds[k], SS_NOTES_PER_KIND));
	for (size_t i = 0; i < r->nranks; i++) {
		const struct ss_rank *rk = &r->ranks[i];

		if (strcmp(rk->clock_offset_method, "wall-clock") == 0)
			wall_clock++;
		else if (strcmp(rk->clock_offset_method, "collectives") == 0 &&
			 rk->clock_offset_spread_ns > spread)
			spread = rk->clock_offset_spread_ns;
	}
	if (code == SS_EXIT_OK && hosts_differ && wall_clock)
		code = add_note(r, format("ranks ran on several hosts: arrival times at collectives "
					  "are as exact as the hosts' clock synchronization (%zu "
					  "rank%s without blocking collectives to align by)",
					  wall_clock, wall_clock == 1 ? "" : "s"));
	else if (code == SS_EXIT_OK && hosts_differ)
		code = add_note(r, format("ranks ran on several hosts: clocks aligned by the end "
					  "times of blocking collectives (clock_offset_ns; largest "
					  "spread %.3f ms)",
					  ms(spread)));
	return code;
}

/* ------------------------------------------------------------------ entry points */

/* Databases are loaded, merged and folded this many at a time (ANALYSIS-5): what memory holds
 * is each rank's totals and collectives and one finding per (rule, site), not every rank's
 * findings at once; and at most SS_LOAD_THREADS_MAX databases are open. */
#define SS_LOAD_BATCH 256

/* The rank of each finding a cross-rank rule added (not judged yet), found by rank number:
 * an index of ranks[] sorted by rank, searched. */
static const struct ss_rank *judge_base;

static int compare_rank_index(const void *a, const void *b)
{
	long long x = judge_base[*(const size_t *)a].rank, y = judge_base[*(const size_t *)b].rank;

	if (x != y)
		return (x > y) - (x < y);
	return (*(const size_t *)a > *(const size_t *)b) -
	       (*(const size_t *)a < *(const size_t *)b);
}

/* Judges the findings the cross-rank rules added, against the first database of their rank. */
static int judge_rank_findings(struct loader *ld, struct ss_report *report)
{
	size_t *index = malloc((report->nranks ? report->nranks : 1) * sizeof(*index));

	if (!index)
		return out_of_memory(ld);
	for (size_t i = 0; i < report->nranks; i++)
		index[i] = i;
	judge_base = report->ranks;
	qsort(index, report->nranks, sizeof(*index), compare_rank_index);
	for (size_t i = 0; i < report->nfindings; i++) {
		struct ss_finding *f = &report->findings[i];
		size_t lo = 0, hi = report->nranks;

		if (f->severity) /* judged when its database was loaded */
			continue;
		while (lo < hi) { /* the first index of rank f->rank */
			size_t mid = lo + (hi - lo) / 2;

			if (report->ranks[index[mid]].rank < f->rank)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < report->nranks && report->ranks[index[lo]].rank == f->rank) {
			if (!judge_finding(f, &report->ranks[index[lo]])) {
				free(index);
				return out_of_memory(ld);
			}
		} else {
			f->severity = "low";
		}
	}
	free(index);
	return SS_EXIT_OK;
}

/* One rank to load: a database (summary NULL), or rank index of a summary. */
struct source {
	const char *path;
	const char *summary;
	long long index;
};

/* The ranks the paths stand for, in their order: a database is one, a summary (summary.h)
 * its ranks in the order summarize read them. */
static int expand_sources(struct loader *ld, char *const *paths, size_t npaths, struct source **out,
			  size_t *nout)
{
	struct source *sources = NULL;
	size_t n = 0, capacity = 0;

	for (size_t i = 0; i < npaths; i++) {
		long long nranks = 1;
		int summary = ss_summary_is(paths[i]);
		sqlite3 *db;

		if (summary) {
			int code = ss_summary_open(paths[i], &db, &nranks, ld->err, ld->errlen);

			if (code != SS_EXIT_OK) {
				free(sources);
				return code;
			}
			sqlite3_close(db);
		}
		for (long long k = 0; k < nranks; k++) {
			struct source s = {paths[i], summary ? paths[i] : NULL, k};

			if (!PUSH(sources, n, capacity, s)) {
				free(sources);
				return out_of_memory(ld);
			}
		}
	}
	*out = sources;
	*nout = n;
	return SS_EXIT_OK;
}

int ss_analyze(char *const *paths, size_t npaths, const struct ss_analysis_options *options,
	       struct ss_report *report, char *err, size_t errlen)
{
	struct loader ld = {.report = report, .err = err, .errlen = errlen};
	size_t batch;
	int fold = options && options->fold_ranks;
	struct ss_collectives *sets = NULL;
	struct source *sources = NULL;
	struct job *jobs = NULL;
	double t = now_s();
	int code;

	memset(report, 0, sizeof(*report));
	code = expand_sources(&ld, paths, npaths, &sources, &npaths);
	if (code != SS_EXIT_OK)
		return code;
	batch = npaths < SS_LOAD_BATCH ? npaths : SS_LOAD_BATCH;
	report->ranks = calloc(npaths ? npaths : 1, sizeof(*report->ranks));
	if (!report->ranks) {
		free(sources);
		return out_of_memory(&ld);
	}
	jobs = calloc(batch ? batch : 1, sizeof(*jobs));
	sets = calloc(npaths ? npaths : 1, sizeof(*sets));
	if (!jobs || !sets)
		code = out_of_memory(&ld);
	/* Batch by batch: load in parallel, merge in path order (the first failure in path order
	 * wins, as it did one by one), fold (ANALYSIS-5), free the batch's findings. */
	for (size_t b = 0; code == SS_EXIT_OK && b < npaths; b += batch) {
		size_t n = npaths - b < batch ? npaths - b : batch;
		struct pool pool = {.jobs = jobs, .ranks = report->ranks + b, .njobs = n};

		memset(jobs, 0, n * sizeof(*jobs));
		for (size_t i = 0; i < n; i++) {
			jobs[i].path = sources[b + i].path;
			jobs[i].summary = sources[b + i].summary;
			jobs[i].summary_index = sources[b + i].index;
			jobs[i].collectives = &sets[b + i];
			jobs[i].reopen = options && options->reopen;
			jobs[i].options = options;
		}
		load_all(&pool);
		report->nranks = b + n; /* so that ss_report_free frees what load_one began */
		for (size_t i = 0; code == SS_EXIT_OK && i < n; i++) {
			if (options && options->each_rank && jobs[i].meta_loaded &&
			    jobs[i].code == SS_EXIT_OK) {
				code = options->each_rank(options->each_rank_arg,
							  &report->ranks[b + i], &jobs[i].found,
							  &sets[b + i], jobs[i].extra, err, errlen);
				jobs[i].extra = NULL; /* each_rank's */
			}
			if (code == SS_EXIT_OK)
				code = merge_job(&ld, &jobs[i], b + i);
			if (code == SS_EXIT_OK && options && options->progress)
				ss_print_line(stderr, "syncspy: loaded %zu/%zu %s (rank %lld)",
					      b + i + 1, npaths, report->ranks[b + i].path,
					      report->ranks[b + i].rank);
		}
		for (size_t i = 0; i < n; i++) {
			if (jobs[i].extra && options->free_extra)
				options->free_extra(jobs[i].extra);
			job_free(&jobs[i]);
		}
		if (code == SS_EXIT_OK && fold && b + n < npaths && !fold_ranks(report, 0))
			code = out_of_memory(&ld);
	}
	lap(&t, "all", "load and merge");
	if (code == SS_EXIT_OK)
		code = estimate_clocks(&ld, sets, npaths);
	if (code == SS_EXIT_OK)
		code = run_rank_rules(&ld, sets, npaths);
	lap(&t, "all", "cross-rank rules");
	for (size_t i = 0; sets && i < npaths; i++)
		ss_collectives_free(&sets[i]);
	free(sets);
	free(jobs);
	free(sources);
	if (code == SS_EXIT_OK)
		code = judge_rank_findings(&ld, report);
	for (size_t i = 0; code == SS_EXIT_OK && i < report->nranks; i++)
		report->gpu_ranks += report->ranks[i].gpu != 0;
	if (code == SS_EXIT_OK)
		code = add_notes(report) == SS_EXIT_OK ? SS_EXIT_OK : out_of_memory(&ld);
	if (code != SS_EXIT_OK)
		return code;
	/* qsort's array may not be NULL, even for no elements */
	if (report->nfindings)
		qsort(report->findings, report->nfindings, sizeof(*report->findings),
		      compare_findings);
	if (fold && !fold_ranks(report, 1))
		return out_of_memory(&ld);
	if (report->nranks)
		qsort(report->ranks, report->nranks, sizeof(*report->ranks), compare_ranks);
	if (report->nranges)
		qsort(report->ranges, report->nranges, sizeof(*report->ranges),
		      compare_range_stats);
	return SS_EXIT_OK;
}

int ss_steady_window(const char *path, long long *start_ns, long long *end_ns, long long *steps,
		     char *err, size_t errlen)
{
	char *paths[1] = {(char *)path};
	struct ss_analysis_options options = {.reopen = 1};
	struct ss_report r;
	int code = ss_analyze(paths, 1, &options, &r, err, errlen);

	if (code == SS_EXIT_OK) {
		*start_ns = r.ranks[0].steady_start_ns;
		*end_ns = r.ranks[0].steady_end_ns;
		*steps = r.ranks[0].steady_steps;
	}
	ss_report_free(&r);
	return code;
}

void ss_report_free(struct ss_report *report)
{
	for (size_t i = 0; i < report->nranks; i++) {
		free(report->ranks[i].path);
		free(report->ranks[i].host);
		free(report->ranks[i].calls_json);
		free(report->ranks[i].cupti);
		free(report->ranks[i].cupti_sample);
		free(report->ranks[i].dropped_by_class);
		free(report->ranks[i].capture_range);
		free(report->ranks[i].capture_skipped_by_class);
		free(report->ranks[i].steps_name);
	}
	for (size_t i = 0; i < report->nfindings; i++) {
		free(report->findings[i].site);
		free(report->findings[i].detail);
		free(report->findings[i].ranks);
		free(report->findings[i].per_step);
	}
	for (size_t i = 0; i < report->nranges; i++) {
		free(report->ranges[i].name);
		free(report->ranges[i].kind);
	}
	free(report->ranges);
	for (size_t i = 0; i < report->nnotes; i++)
		free(report->notes[i]);
	free(report->ranks);
	free(report->findings);
	free(report->notes);
	memset(report, 0, sizeof(*report));
}
