/*
 * report/rules/host_sync.c: the host-sync rule (docs/rules.md), a site rule on the aggregate
 * (SS_RULE_SITE): device, stream and event synchronizations (classes S1, S2, S3) per call site.
 * With a GPU timeline, gpu.c sets the GPU idle time behind them (gpu_idle_ns), which becomes
 * their cost (SS_COST_GPU_IDLE: analysis.c, judge_finding).
 */
#include "../analysis_int.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	if (st->rank->gpu) /* run_gpu appends the GPU idle time */
		return format("%s; worst %.3f ms", apis, ms(worst));
	return format("%s; worst %.3f ms; GPU idle time behind it: not measurable without "
		      "GPU timeline",
		      apis, ms(worst));
}

const struct ss_rule ss_rule_host_sync = {
    .id = "host-sync",
    .advice = "Move the result read (.item(), a stream or device sync) out of the step loop or "
	      "later in it, or wait on an event with cudaStreamWaitEvent so the host keeps queuing "
	      "work.",
    .phase = SS_RULE_SITE,
    .cost = SS_COST_GPU_IDLE,
    .sql = SITE_RULE_SQL("g.class IN ('S1', 'S2', 'S3')"),
    .min_count = 1,
    .detail = detail,
};
