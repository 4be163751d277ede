/*
 * report/summary.c: reading the summaries `syncspy summarize` writes (summary.h): telling one
 * from a database by its header (SUMMARY-1), opening and checking it, the collectives' compact
 * encoding, and loading one of its ranks into the analysis as load_one would have loaded the
 * rank's database (SUMMARY-2). cmd_summarize.c writes them; cmd_check.c reads their check rows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "analysis_int.h"
#include "commands.h"
#include "summary.h"

/* ------------------------------------------------------------------ telling and opening */

int ss_summary_is(const char *path)
{
	unsigned char header[100];
	FILE *f = fopen(path, "rb");
	size_t n;
	uint32_t id;

	if (!f)
		return 0;
	n = fread(header, 1, sizeof(header), f);
	fclose(f);
	if (n < sizeof(header) || memcmp(header, "SQLite format 3", 16) != 0)
		return 0;
	/* the header's application_id: a big-endian 32-bit integer at offset 68 */
	id = (uint32_t)header[68] << 24 | (uint32_t)header[69] << 16 | (uint32_t)header[70] << 8 |
	     header[71];
	return id == SS_SUMMARY_APPLICATION_ID;
}

int ss_summary_failure(sqlite3 *db, int rc, const char *path, char *err, size_t errlen)
{
	if ((rc & 0xff) == SQLITE_NOMEM) {
		snprintf(err, errlen, "out of memory");
		return SS_EXIT_INTERNAL;
	}
	snprintf(err, errlen, "%s: damaged syncspy summary: %s", path,
		 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	return SS_EXIT_INPUT;
}

/* "PATH: damaged syncspy summary: WHAT" (exit 2). */
static int damaged(char *err, size_t errlen, const char *path, const char *what)
{
	snprintf(err, errlen, "%s: damaged syncspy summary: %s", path, what);
	return SS_EXIT_INPUT;
}

/* Every column the readers select, so that a summary missing one fails here, not midway. */
#define SUMMARY_PROBE_SQL                                                                          \
	"SELECT (SELECT value FROM meta WHERE key = 'kind'),"                                      \
	" (SELECT value FROM meta WHERE key = 'summary_version'), (SELECT count(*) FROM ranks),"   \
	" (SELECT max(idx) FROM ranks), (SELECT count(*) FROM strings),"                           \
	" (SELECT count(*) FROM (SELECT " SS_SUMMARY_RANK_FIELDS(                                  \
	    SS_SUMMARY_COLUMN) " check_rank, check_dropped FROM ranks LIMIT 0)),"                  \
			       " (SELECT count(*) FROM (SELECT idx, rule, severity, phase, "       \
			       "cleared, steps, cost_ns,"                                          \
			       "  cost_per_step_ns, share, count, blocked_ns, worst_ns, bytes, "   \
			       "estimate_ns, gpu_idle_ns,"                                         \
			       "  site, detail FROM findings LIMIT 0)),"                           \
			       " (SELECT count(*) FROM (SELECT idx, name, kind, instances, "       \
			       "sync_min, sync_median,"                                            \
			       "  sync_max, sync_total, blocked_median_ns, blocked_max_ns FROM "   \
			       "ranges LIMIT 0)),"                                                 \
			       " (SELECT count(*) FROM (SELECT idx, hash, op, n, calls FROM "      \
			       "collectives LIMIT 0)),"                                            \
			       " (SELECT count(*) FROM (SELECT idx, class, api, site, "            \
			       "outside_steady, calls, blocked_ns"                                 \
			       "  FROM check_rows LIMIT 0)), (SELECT count(*) FROM (SELECT name "  \
			       "FROM apis LIMIT 0))"

int ss_summary_open(const char *path, sqlite3 **out, long long *nranks, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	const char *kind;
	int rc, code = SS_EXIT_OK;

	*out = NULL;
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, SUMMARY_PROBE_SQL, -1, &stmt, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
		rc = SQLITE_OK;
	if (rc != SQLITE_OK) {
		code = ss_summary_failure(db, rc, path, err, errlen);
		goto out;
	}
	kind = (const char *)sqlite3_column_text(stmt, 0);
	if (!kind || strcmp(kind, SS_SUMMARY_KIND) != 0) {
		code = damaged(err, errlen, path, "no meta.kind '" SS_SUMMARY_KIND "'");
		goto out;
	}
	if (sqlite3_column_type(stmt, 1) != SQLITE_INTEGER ||
	    sqlite3_column_int64(stmt, 1) != SS_SUMMARY_VERSION) {
		snprintf(err, errlen,
			 "%s: syncspy summary version %s; this syncspy reads version %d (summarize "
			 "the databases again with this syncspy)",
			 path,
			 sqlite3_column_text(stmt, 1) ? (const char *)sqlite3_column_text(stmt, 1)
						      : "(none)",
			 SS_SUMMARY_VERSION);
		code = SS_EXIT_INPUT;
		goto out;
	}
	*nranks = sqlite3_column_int64(stmt, 2);
	/* ranks are numbered 0..n-1: readers look them up by idx */
	if (*nranks == 0 || sqlite3_column_int64(stmt, 3) != *nranks - 1) {
		code = damaged(err, errlen, path,
			       *nranks ? "ranks.idx not numbered from 0" : "no ranks");
		goto out;
	}
out:
	sqlite3_finalize(stmt);
	if (code != SS_EXIT_OK)
		sqlite3_close(db);
	else
		*out = db;
	return code;
}

/* ------------------------------------------------------------------ the collectives' blobs */

static uint64_t zigzag(long long v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static long long unzigzag(uint64_t u)
{
	return (long long)(u >> 1) ^ -(long long)(u & 1);
}

static size_t put_varint(unsigned char *p, uint64_t u)
{
	size_t n = 0;

	do {
		p[n++] = (unsigned char)((u & 0x7f) | (u > 0x7f ? 0x80 : 0));
		u >>= 7;
	} while (u);
	return n;
}

/* Reads one varint at *at (advanced) of blob[0..len): 0 when it runs past the end. */
static int get_varint(const unsigned char *blob, size_t len, size_t *at, uint64_t *u)
{
	*u = 0;
	for (int shift = 0; shift < 64 && *at < len; shift += 7) {
		unsigned char b = blob[(*at)++];

		*u |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 1;
	}
	return 0;
}

/*
 * Collectives of a step recur at a regular period and last about as long as the last one: per
 * call, the delta of its start's delta (dd) and its duration's change (dl) are small numbers.
 * The blob is a sequence of varints: an odd one 2 * zigzag(dd) + 1 followed by zigzag(dl) is
 * one call; an even one 2 * N is N calls with dd = dl = 0 (a perfectly regular stretch).
 */
int ss_summary_encode_calls(const struct ss_collective_call *c, size_t n, unsigned char **out,
			    size_t *len)
{
	unsigned char *p = malloc(n * 20 + 1);
	long long prev_start = 0, prev_delta = 0, prev_dur = 0;
	size_t at = 0, run = 0;

	if (!p)
		return 0;
	for (size_t k = 0; k <= n; k++) {
		long long delta = 0, dur = 0;

		if (k < n) {
			delta = c[k].start_ns - prev_start;
			dur = c[k].end_ns - c[k].start_ns;
			if (k > 0 && delta == prev_delta && dur == prev_dur) {
				run++;
				prev_start = c[k].start_ns;
				continue;
			}
		}
		if (run) /* the regular stretch before this call (or the end) */
			at += put_varint(p + at, 2 * (uint64_t)run);
		run = 0;
		if (k == n)
			break;
		at += put_varint(p + at, 2 * zigzag(delta - prev_delta) + 1);
		at += put_varint(p + at, zigzag(dur - prev_dur));
		prev_start = c[k].start_ns;
		prev_delta = delta;
		prev_dur = dur;
	}
	*out = p;
	*len = at;
	return 1;
}

int ss_summary_decode_calls(const unsigned char *blob, size_t len, struct ss_collective_call *c,
			    size_t n)
{
	long long prev_start = 0, prev_delta = 0, prev_dur = 0;
	size_t at = 0, k = 0;

	while (k < n) {
		uint64_t h, b, repeat = 1;

		if (!get_varint(blob, len, &at, &h))
			return 0;
		if (h & 1) {
			if (!get_varint(blob, len, &at, &b))
				return 0;
			/* unsigned arithmetic: a damaged blob wraps instead of overflowing */
			prev_delta = (long long)((uint64_t)prev_delta + (uint64_t)unzigzag(h >> 1));
			prev_dur = (long long)((uint64_t)prev_dur + (uint64_t)unzigzag(b));
		} else {
			repeat = h >> 1;
			if (repeat == 0 || repeat > n - k)
				return 0;
		}
		if (!c) { /* checking only */
			k += repeat;
			continue;
		}
		for (; repeat; repeat--, k++) {
			c[k].start_ns = (long long)((uint64_t)prev_start + (uint64_t)prev_delta);
			c[k].end_ns = (long long)((uint64_t)c[k].start_ns + (uint64_t)prev_dur);
			prev_start = c[k].start_ns;
		}
	}
	return at == len;
}

/* ------------------------------------------------------------------ one rank, for the analysis */

/* Reading a rank's text columns: the text of their strings id (SUMMARY-3). */
#define TEXT_OF(col)		  "(SELECT text FROM strings WHERE id = " col ")"
#define SELECT_LL(field)	  "r." #field ","
#define SELECT_INT(field)	  "r." #field ","
#define SELECT_DBL(field)	  "r." #field ","
#define SELECT_SRC(field)	  TEXT_OF("r." #field) ","
#define SELECT_STR(field)	  "r." #field " IS NOT NULL, " TEXT_OF("r." #field) ","
#define SELECT_FIELD(field, kind) SELECT_##kind(field)
#define RANK_SQL		  "SELECT " SS_SUMMARY_RANK_FIELDS(SELECT_FIELD) " 0 FROM ranks r WHERE r.idx = ?1"
#define FINDINGS_SQL                                                                               \
	"SELECT " TEXT_OF("rule") ", " TEXT_OF("severity") ", " TEXT_OF(                           \
	    "phase") ","                                                                           \
		     " cleared IS NOT NULL, steps, cost_ns, cost_per_step_ns, share, count, "      \
		     "blocked_ns,"                                                                 \
		     " worst_ns, bytes, estimate_ns, gpu_idle_ns, " TEXT_OF("site") ", " TEXT_OF(  \
			 "detail") " FROM findings WHERE idx = ?1 ORDER BY rowid"
#define RANGES_SQL                                                                                 \
	"SELECT " TEXT_OF("name") ", " TEXT_OF(                                                    \
	    "kind") ", instances, sync_min, sync_median,"                                          \
		    " sync_max, sync_total, blocked_median_ns, blocked_max_ns FROM ranges WHERE "  \
		    "idx = ?1"                                                                     \
		    " ORDER BY rowid"
#define COLLECTIVES_SQL                                                                            \
	"SELECT " TEXT_OF("hash") ", " TEXT_OF("op") ", n, calls FROM collectives WHERE idx = ?1"  \
						     " ORDER BY rowid"

/* What reading a rank's row needs: the statement, the next column, and whether all was well. */
struct row_reader {
	sqlite3_stmt *stmt;
	int col;
	const char *bad; /* the first column that did not hold what it must */
};

static long long read_ll(struct row_reader *rr, const char *name)
{
	int col = rr->col++;

	if (sqlite3_column_type(rr->stmt, col) != SQLITE_INTEGER) {
		if (!rr->bad)
			rr->bad = name;
		return -1;
	}
	return sqlite3_column_int64(rr->stmt, col);
}

static double read_dbl(struct row_reader *rr, const char *name)
{
	int col = rr->col++, type = sqlite3_column_type(rr->stmt, col);

	if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) {
		if (!rr->bad)
			rr->bad = name;
		return -1;
	}
	return sqlite3_column_double(rr->stmt, col);
}

/* A text column (a strings id, NULL for none): NULL, or its text strdup'd. A dangling id, or
 * no memory, sets bad. */
static char *read_str(struct row_reader *rr, const char *name)
{
	int has = sqlite3_column_int(rr->stmt, rr->col++);
	const char *text = (const char *)sqlite3_column_text(rr->stmt, rr->col++);
	char *copy;

	if (!has)
		return NULL;
	copy = text ? strdup(text) : NULL;
	if (!copy && !rr->bad)
		rr->bad = name;
	return copy;
}

static const char *read_src(struct row_reader *rr, const char *name)
{
	const char *text = (const char *)sqlite3_column_text(rr->stmt, rr->col++);

	for (size_t i = 0; text && i < SS_STEPS_SOURCES; i++)
		if (strcmp(text, ss_steps_source_names[i]) == 0)
			return ss_steps_source_names[i];
	if (!rr->bad)
		rr->bad = name;
	return ss_steps_source_names[0];
}

#define READ_LL(field)	rk->field = read_ll(&rr, #field);
#define READ_INT(field) rk->field = (int)read_ll(&rr, #field);
#define READ_DBL(field) rk->field = read_dbl(&rr, #field);
#define READ_SRC(field) rk->field = read_src(&rr, #field);
#define READ_STR(field)                                                                            \
	free(rk->field);                                                                           \
	rk->field = read_str(&rr, #field);
#define READ_FIELD(field, kind) READ_##kind(field)

/* The static text of a stored one among choices; NULL when it is none of them. */
static const char *one_of(const char *text, const char *const *choices)
{
	for (; text && *choices; choices++)
		if (strcmp(text, *choices) == 0)
			return *choices;
	return NULL;
}

static int read_findings(struct loader *ld, sqlite3 *db, const char *path, struct ss_rank *rk,
			 long long idx)
{
	static const char *const severities[] = {"high", "medium", "low", "info", NULL};
	static const char *const phases[] = {"steady", "once", NULL};
	sqlite3_stmt *stmt;
	int rc = sqlite3_prepare_v2(db, FINDINGS_SQL, -1, &stmt, NULL), code = SS_EXIT_OK;

	if (rc != SQLITE_OK)
		return ss_summary_failure(db, rc, path, ld->err, ld->errlen);
	sqlite3_bind_int64(stmt, 1, idx);
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct row_reader rr = {.stmt = stmt, .col = 4};
		const struct ss_rule *rule = NULL;
		const char *rule_id = (const char *)sqlite3_column_text(stmt, 0);
		const char *severity =
		    one_of((const char *)sqlite3_column_text(stmt, 1), severities);
		const char *phase = one_of((const char *)sqlite3_column_text(stmt, 2), phases);
		const char *site = (const char *)sqlite3_column_text(stmt, 14);
		const char *detail = (const char *)sqlite3_column_text(stmt, 15);
		long long steps, cost, per_step, count, blocked, worst, bytes, estimate, idle;
		double share;
		struct ss_finding *f;

		for (size_t r = 0; rule_id && r < ss_nrules; r++)
			if (strcmp(ss_rules[r]->id, rule_id) == 0 &&
			    ss_rules[r]->phase != SS_RULE_RANKS)
				rule = ss_rules[r];
		steps = read_ll(&rr, "steps");
		cost = read_ll(&rr, "cost_ns");
		per_step = read_ll(&rr, "cost_per_step_ns");
		share = read_dbl(&rr, "share");
		count = read_ll(&rr, "count");
		blocked = read_ll(&rr, "blocked_ns");
		worst = read_ll(&rr, "worst_ns");
		bytes = read_ll(&rr, "bytes");
		estimate = read_ll(&rr, "estimate_ns");
		idle = read_ll(&rr, "gpu_idle_ns");
		if (!rule || !severity || !phase || !site || !detail || rr.bad) {
			snprintf(ld->err, ld->errlen,
				 "%s: damaged syncspy summary: a finding of rank %lld has %s", path,
				 rk->rank,
				 !rule	     ? "no rule this syncspy knows"
				 : !severity ? "no severity"
				 : !phase    ? "no phase"
				 : !site     ? "no site"
				 : !detail   ? "no detail"
					     : rr.bad);
			code = SS_EXIT_INPUT;
			break;
		}
		code = add_finding(ld, rule, rk, count, blocked, worst, bytes, estimate,
				   strdup(site), strdup(detail));
		if (code != SS_EXIT_OK)
			break;
		f = &ld->report->findings[ld->report->nfindings - 1];
		if (rule->advice_for) { /* the site's own advice, from the APIs its detail opens with */
			char *apis = strndup(detail, strcspn(detail, ";"));
			const char *advice = apis ? rule->advice_for(apis) : NULL;

			free(apis);
			if (advice)
				f->advice = advice;
		}
		f->severity = severity;
		f->phase = phase;
		f->steps = steps;
		f->cost_ns = cost;
		f->cost_per_step_ns = per_step;
		f->share = share;
		f->gpu_idle_ns = idle;
		/* judged already: the detail says why it was cleared; the flag is what is read */
		f->cleared = sqlite3_column_int(stmt, 3) ? "cleared (see the detail)" : NULL;
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = ss_summary_failure(db, rc, path, ld->err, ld->errlen);
	sqlite3_finalize(stmt);
	return code;
}

static int read_ranges(struct loader *ld, sqlite3 *db, const char *path, struct job *job,
		       const struct ss_rank *rk, long long idx)
{
	sqlite3_stmt *stmt;
	int rc = sqlite3_prepare_v2(db, RANGES_SQL, -1, &stmt, NULL), code = SS_EXIT_OK;

	if (rc != SQLITE_OK)
		return ss_summary_failure(db, rc, path, ld->err, ld->errlen);
	sqlite3_bind_int64(stmt, 1, idx);
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct row_reader rr = {.stmt = stmt, .col = 2};
		const char *name = (const char *)sqlite3_column_text(stmt, 0);
		const char *kind = (const char *)sqlite3_column_text(stmt, 1);
		struct ss_range_stat rs = {.rank = rk->rank, .path = rk->path};

		rs.instances = read_ll(&rr, "instances");
		rs.sync_min = read_ll(&rr, "sync_min");
		rs.sync_median = read_ll(&rr, "sync_median");
		rs.sync_max = read_ll(&rr, "sync_max");
		rs.sync_total = read_ll(&rr, "sync_total");
		rs.blocked_median_ns = read_ll(&rr, "blocked_median_ns");
		rs.blocked_max_ns = read_ll(&rr, "blocked_max_ns");
		if (!name || !kind || rr.bad) {
			code = damaged(ld->err, ld->errlen, path,
				       rr.bad ? "a range without its figures"
					      : "a range without a name");
			break;
		}
		rs.name = strdup(name);
		rs.kind = strdup(kind);
		if (!rs.name || !rs.kind ||
		    !reserve(&job->found.ranges, &job->ranges_capacity, job->found.nranges,
			     sizeof(rs))) {
			free(rs.name);
			free(rs.kind);
			code = out_of_memory(ld);
			break;
		}
		job->found.ranges[job->found.nranges++] = rs;
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = ss_summary_failure(db, rc, path, ld->err, ld->errlen);
	sqlite3_finalize(stmt);
	return code;
}

static int read_collectives(struct loader *ld, sqlite3 *db, const char *path,
			    struct ss_collectives *set, long long idx)
{
	sqlite3_stmt *stmt;
	int rc = sqlite3_prepare_v2(db, COLLECTIVES_SQL, -1, &stmt, NULL), code = SS_EXIT_OK;

	if (rc != SQLITE_OK)
		return ss_summary_failure(db, rc, path, ld->err, ld->errlen);
	sqlite3_bind_int64(stmt, 1, idx);
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const unsigned char *blob = sqlite3_column_blob(stmt, 3);
		size_t len = (size_t)sqlite3_column_bytes(stmt, 3);
		long long n = sqlite3_column_int64(stmt, 2);
		const char *hash, *op;
		struct ss_series *grown, *se;

		/* the blob is checked to hold n calls before n is allocated (a damaged n) */
		if (sqlite3_column_type(stmt, 2) != SQLITE_INTEGER || n < 1 ||
		    !ss_summary_decode_calls(blob, len, NULL, (size_t)n) ||
		    !sqlite3_column_text(stmt, 0) || !sqlite3_column_text(stmt, 1)) {
			code = damaged(ld->err, ld->errlen, path,
				       "a collective series without its calls");
			break;
		}
		hash = ss_collectives_string(set, (const char *)sqlite3_column_text(stmt, 0));
		op = ss_collectives_string(set, (const char *)sqlite3_column_text(stmt, 1));
		grown = realloc(set->series, (set->nseries + 1) * sizeof(*grown));
		if (!hash || !op || !grown) {
			if (grown)
				set->series = grown;
			code = out_of_memory(ld);
			break;
		}
		set->series = grown;
		se = &set->series[set->nseries];
		*se = (struct ss_series){.hash = hash, .op = op};
		se->c = malloc((size_t)n * sizeof(*se->c));
		if (!se->c) {
			code = out_of_memory(ld);
			break;
		}
		se->n = se->capacity = (size_t)n;
		set->nseries++;
		if (!ss_summary_decode_calls(blob, len, se->c, se->n)) {
			code = damaged(ld->err, ld->errlen, path,
				       "a collective series whose calls do not decode");
			break;
		}
	}
	if (code == SS_EXIT_OK && rc != SQLITE_DONE)
		code = ss_summary_failure(db, rc, path, ld->err, ld->errlen);
	sqlite3_finalize(stmt);
	return code;
}

int summary_load_rank(struct loader *ld, struct job *job, struct ss_rank *rk)
{
	const char *path = job->summary;
	struct row_reader rr = {0};
	sqlite3 *db = NULL;
	long long nranks;
	int rc, code = ss_summary_open(path, &db, &nranks, ld->err, ld->errlen);

	if (code != SS_EXIT_OK)
		return code;
	rc = sqlite3_prepare_v2(db, RANK_SQL, -1, &rr.stmt, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(rr.stmt, 1, job->summary_index);
		rc = sqlite3_step(rr.stmt);
	}
	if (rc != SQLITE_ROW) {
		code = ss_summary_failure(db, rc, path, ld->err, ld->errlen);
		goto out;
	}
	SS_SUMMARY_RANK_FIELDS(READ_FIELD)
	if (!rr.bad && (!rk->path || !rk->host || !rk->calls_json))
		rr.bad = !rk->path ? "path" : !rk->host ? "host" : "calls_json";
	if (rr.bad) {
		snprintf(ld->err, ld->errlen, "%s: damaged syncspy summary: rank %lld: no %s", path,
			 job->summary_index, rr.bad);
		code = SS_EXIT_INPUT;
		goto out;
	}
	job->meta_loaded = 1; /* the duplicate-rank check can run */
	code = read_findings(ld, db, path, rk, job->summary_index);
	if (code == SS_EXIT_OK)
		code = read_ranges(ld, db, path, job, rk, job->summary_index);
	if (code == SS_EXIT_OK)
		code = read_collectives(ld, db, path, job->collectives, job->summary_index);
out:
	sqlite3_finalize(rr.stmt);
	sqlite3_close(db);
	return code;
}
