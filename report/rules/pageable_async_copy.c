/*
 * report/rules/pageable_async_copy.c: the pageable-async-copy rule (docs/rules.md), a site rule
 * on the aggregate (SS_RULE_SITE): async copies from pageable memory (class S5), which run
 * synchronously; the cost is an estimate against pinned copies (load.c measures the pinned
 * bandwidth from the run's blocking pinned copies where it can).
 */
#include "../analysis_int.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	const char *source = "default";

	if (st->measured[1] || st->measured[2])
		source = "measured from this run's blocking pinned copies";
	return format("%s; %lld bytes; estimate: %.3f ms lost against pinned copies at "
		      "%.1f GB/s H2D, %.1f GB/s D2H (%s)",
		      apis, bytes, ms(estimate), st->bw[1] / 1e9, st->bw[2] / 1e9, source);
}

const struct ss_rule ss_rule_pageable_async_copy = {
    .id = "pageable-async-copy",
    .advice = "Allocate the host buffer pinned (cudaHostAlloc, tensor.pin_memory(), "
	      "DataLoader(pin_memory=True)) so the async copy returns at once and overlaps.",
    .phase = SS_RULE_SITE,
    .cost = SS_COST_ESTIMATE,
    .sql = SITE_RULE_SQL("g.class = 'S5'"),
    .min_count = 1,
    .keeps_bytes = 1,
    .keeps_estimate = 1,
    .detail = detail,
};
