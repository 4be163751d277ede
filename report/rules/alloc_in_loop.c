/*
 * report/rules/alloc_in_loop.c: the alloc-in-loop rule (docs/rules.md), a site rule on the
 * aggregate (SS_RULE_SITE): allocations and frees that synchronize the device (class S6 without
 * a direction), per call site, once the site recurs in the steady state (steps.h).
 */
#include "../analysis_int.h"

/* alloc-in-loop: a site with fewer calls is not reported even as `info` (one cudaMalloc per
 * buffer at setup is how programs start). Whether it costs per step is steps.h's question. */
#define SS_LOOP_MIN_CALLS 2

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s (each one synchronizes the device)", apis);
}

const struct ss_rule ss_rule_alloc_in_loop = {
    .id = "alloc-in-loop",
    .advice = "Allocate once before the loop and reuse the buffer, or use a caching allocator or "
	      "cudaMallocAsync/cudaFreeAsync, which do not synchronize the device.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL("g.class = 'S6' AND g.dir IS NULL"),
    .min_count = SS_LOOP_MIN_CALLS,
    .detail = detail,
};
