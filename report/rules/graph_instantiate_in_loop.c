/*
 * report/rules/graph_instantiate_in_loop.c: the graph-instantiate-in-loop rule (docs/rules.md),
 * a site rule on the aggregate (SS_RULE_SITE): CUDA graphs instantiated again and again in the
 * steady state (cudaGraphInstantiate, cudaGraphInstantiateWithFlags, cuGraphInstantiateWithFlags:
 * class X1), per call site. Instantiation checks and lays out the whole graph on the host, so a
 * graph captured and instantiated every step costs more host time than its launches save; the
 * cost is that host time (SS_COST_HOST).
 */
#include "../analysis_int.h"

/* A graph instantiated once per shape at setup is how graphs are used: two or more calls at a
 * site that recur in the steady state (steps.h) are a rebuild per step. */
#define SS_INSTANTIATE_MIN_CALLS 2

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s (each one builds an executable graph on the host); worst %.3f ms", apis,
		      ms(worst));
}

const struct ss_rule ss_rule_graph_instantiate_in_loop = {
    .id = "graph-instantiate-in-loop",
    .advice = "Instantiate the graph once and replay it with cudaGraphLaunch; when its parameters "
	      "change, update the executable graph (cudaGraphExecUpdate, or "
	      "cudaGraphExecKernelNodeSetParams) instead of capturing and instantiating it again.",
    .phase = SS_RULE_SITE,
    .cost = SS_COST_HOST,
    .sql = SITE_RULE_SQL("g.class = 'X1' AND a.name IN ('cudaGraphInstantiate',"
			 " 'cudaGraphInstantiateWithFlags', 'cuGraphInstantiateWithFlags')"),
    .min_count = SS_INSTANTIATE_MIN_CALLS,
    .detail = detail,
};
