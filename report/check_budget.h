/*
 * report/check_budget.h: the budget file of `syncspy check`, read and validated.
 *
 * The file is JSON (docs/budget.md describes every key). It is parsed only by SQLite's JSON
 * functions (json_valid, json_type, json_each) on a connection the caller passes, so there is
 * no JSON parser of our own. Validation is strict: an unknown key, a value of the wrong type, a
 * negative limit or a contradiction is an input error whose message names the JSON path of the
 * problem, e.g. "$.limits[2].max_count: expected a non-negative integer".
 */
#ifndef SYNCSPY_REPORT_CHECK_BUDGET_H
#define SYNCSPY_REPORT_CHECK_BUDGET_H

#include <stddef.h>

#include <sqlite3.h>

/* The budget file versions this syncspy reads. */
#define SS_BUDGET_VERSION 1

/* The largest budget file read (16 MiB: 100,000 limits fit), and the longest GLOB pattern of a
 * "site", "range" or "allow" entry (SQLite refuses longer ones at run time). Beyond either, the
 * budget is bad input. */
#define SS_BUDGET_MAX_BYTES   (16 << 20)
#define SS_BUDGET_PATTERN_MAX 4096

/* One element of $.limits. A selector left out matches everything. */
struct ss_budget_limit {
	char *path;	     /* its JSON path, "$.limits[N]", for messages */
	char *name;	     /* "name": the user's label, or NULL */
	char *cls;	     /* "class": "sync" (S1-S7, the default) or one sync class */
	char *api;	     /* "api": an API name (exact), or NULL */
	char *site;	     /* "site": a GLOB on the call-site text, or NULL */
	char *range;	     /* "range": an NVTX range name, or NULL */
	long long rank;	     /* "rank": only the recordings of this rank; -1: every rank */
	int per_rank;	     /* "per_rank": check each rank on its own */
	long long max_count; /* the maxima; -1 (or < 0.0): not given */
	double max_blocked_ms;
	long long max_count_per_range;
	double max_blocked_ms_per_range;
	double max_count_per_step; /* with "warmup": {"steady": true}; < 0.0: not given */
	double max_blocked_ms_per_step;
};

struct ss_budget {
	double warmup_seconds;	/* "warmup": {"seconds": S}; < 0: none */
	long long warmup_calls; /* "warmup": {"calls": N}; < 0: none */
	int warmup_steady;	/* "warmup": {"steady": true}: only the steady state counts */
	char **allow;		/* "allow": GLOBs of call sites never counted */
	size_t allow_count;
	struct ss_budget_limit *limits;
	size_t limit_count;
};

/*
 * Reads and validates the budget file at path, using the JSON functions of db (any open
 * connection; an in-memory one will do). Returns SS_EXIT_OK, or SS_EXIT_INPUT with
 * "PATH: what is wrong" in err (SS_EXIT_INTERNAL for out of memory or an SQLite without JSON).
 * On failure budget holds nothing to free.
 */
int ss_budget_load(sqlite3 *db, const char *path, struct ss_budget *budget, char *err,
		   size_t errlen);
void ss_budget_free(struct ss_budget *budget);

#endif
