/*
 * report/rules/stack_limit_in_loop.c: the stack-limit-in-loop rule (docs/rules.md), a site rule
 * on the aggregate (SS_RULE_SITE): changes of the per-thread stack size
 * (cudaDeviceSetLimit(cudaLimitStackSize, ...), cuCtxSetLimit(CU_LIMIT_STACK_SIZE, ...): class
 * S6, interpose/wrapper.h's LIMIT; the other limits are X1) per call site, once the site recurs
 * in the steady state (steps.h). A guard that raises the stack around one launch and puts the
 * old value back (examples/corpus c90, d42) makes two sites, each a wait for the device.
 */
#include "../analysis_int.h"

/* stack-limit-in-loop: a site with fewer calls is not reported (setting the limit once at setup
 * is the fix). */
#define SS_STACK_LIMIT_MIN_CALLS 2

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s (each change of the stack size waits for all work on the device); worst "
		      "%.3f ms",
		      apis, ms(worst));
}

const struct ss_rule ss_rule_stack_limit_in_loop = {
    .id = "stack-limit-in-loop",
    .advice = "Set the stack size once before the loop, to the largest any kernel needs, instead "
	      "of raising and restoring it around launches: each change waits for all work on the "
	      "device.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL("g.class = 'S6' AND a.name IN ('cudaDeviceSetLimit', 'cuCtxSetLimit')"),
    .min_count = SS_STACK_LIMIT_MIN_CALLS,
    .detail = detail,
};
