/*
 * report/rules/sync_copy.c: the sync-copy rule (docs/rules.md), a site rule on the aggregate
 * (SS_RULE_SITE): copies that block the host (class S4) per call site. With a GPU timeline,
 * gpu.c sets the GPU idle time behind them, as for host-sync.
 */
#include "../analysis_int.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s; %lld bytes; worst %.3f ms", apis, bytes, ms(worst));
}

const struct ss_rule ss_rule_sync_copy = {
    .id = "sync-copy",
    .advice = "Use cudaMemcpyAsync from pinned memory on a non-default stream and synchronize "
	      "only where the result is needed (for one scalar, read it a step later).",
    .phase = SS_RULE_SITE,
    .cost = SS_COST_GPU_IDLE,
    .sql = SITE_RULE_SQL("g.class = 'S4'"),
    .min_count = 1,
    .keeps_bytes = 1,
    .detail = detail,
};
