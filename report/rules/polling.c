/*
 * report/rules/polling.c: the polling rule (docs/rules.md), a site rule on the aggregate
 * (SS_RULE_SITE): loops of stream or event queries (class S7; the pass counts a loop's queries
 * into one row), per call site.
 */
#include "../analysis_int.h"

/* polling: a site's loops must make this many queries each, on average. */
#define SS_POLL_MIN_QUERIES 2

/* A query that finds the work done at once is a check, not a loop: torch's caching allocators
 * ask an event once per block they may reuse. */
static int keep(long long count, long long rows)
{
	return count >= SS_POLL_MIN_QUERIES * rows;
}

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%lld polling loops: %s", rows, apis);
}

const struct ss_rule ss_rule_polling = {
    .id = "polling",
    .advice = "Replace the query loop by cudaEventSynchronize with a blocking-sync event, or a "
	      "host function callback, so the CPU is free while the GPU works.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL("g.class = 'S7'"),
    .min_count = 1,
    .keep = keep,
    .detail = detail,
};
