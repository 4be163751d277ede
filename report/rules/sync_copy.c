/*
 * report/rules/sync_copy.c: the sync-copy rule (docs/rules.md), a site rule on the aggregate
 * (SS_RULE_SITE): copies that block the host (class S4) per call site. With a GPU timeline,
 * gpu.c sets the GPU idle time behind them, as for host-sync. An *Async copy is S4 only from
 * host to host (the shim's ss_describe_copy: "fully synchronous with respect to the host"), a
 * copy that has another fix: no stream at all.
 */
#include <string.h>

#include "../analysis_int.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s%s; %lld bytes; worst %.3f ms", apis,
		      strstr(apis, "Async")
			  ? " (host to host: the call waits for the stream's earlier "
			    "work, then copies)"
			  : "",
		      bytes, ms(worst));
}

static const char *advice_for(const char *apis)
{
	if (!strstr(apis, "Async"))
		return NULL;
	return "A host-to-host copy queued on a stream runs synchronously: the host waits for all "
	       "earlier work of the stream. Copy with memcpy on the host instead, once an event "
	       "recorded after the data's producer has completed (a step later, double "
	       "buffered).";
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
    .advice_for = advice_for,
};
