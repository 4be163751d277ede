/*
 * report/rules/graph_instantiate_in_loop.c: the graph-instantiate-in-loop rule (docs/rules.md),
 * a site rule on the aggregate (SS_RULE_SITE): CUDA graphs instantiated again and again in the
 * steady state (every cudaGraphInstantiate* and cuGraphInstantiate* entry point: class X1), per
 * call site. Instantiation checks and lays out the whole graph on the host, so a graph captured
 * and instantiated every step costs more host time than its launches save; the cost is that host
 * time. Then ss_graph_exec_destroys: where the executable graphs instantiated every step are also
 * destroyed every step, the destroy's line is flagged too, right after the instantiation's (the
 * pairing: report/paired_lines.c).
 */
#include "../analysis_int.h"
#include "../commands.h"

/* A graph instantiated once per shape at setup is how graphs are used: two or more calls at a
 * site that recur in the steady state (steps.h) are a rebuild per step. The same holds for the
 * destroys of their executable graphs. */
#define SS_INSTANTIATE_MIN_CALLS 2

/* The entry points, in SQL (a.name: apis.name). */
#define INSTANTIATE_APIS "a.name LIKE " SS_INSTANTIATE_LIKE
#define DESTROY_APIS	 "a.name IN ('cudaGraphExecDestroy', 'cuGraphExecDestroy')"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s (each one builds an executable graph on the host); worst %.3f ms", apis,
		      ms(worst));
}

/* cost SS_COST_ESTIMATE: an instantiation's finding has no estimate and costs its host time; a
 * destroy's finding costs what the one fix of both lines saves (ss_graph_exec_destroys). */
const struct ss_rule ss_rule_graph_instantiate_in_loop = {
    .id = "graph-instantiate-in-loop",
    .advice = "Instantiate the graph once and replay it with cudaGraphLaunch; when its parameters "
	      "change, update the executable graph (cudaGraphExecUpdate, or "
	      "cudaGraphExecKernelNodeSetParams) instead of capturing and instantiating it again.",
    .phase = SS_RULE_SITE,
    .cost = SS_COST_ESTIMATE,
    .sql = SITE_RULE_SQL("g.class = 'X1' AND " INSTANTIATE_APIS),
    .min_count = SS_INSTANTIATE_MIN_CALLS,
    .detail = detail,
};

/* ------------------------------------------------------------------ destroyed every step */

/* Every successful instantiation and destroy in time order, with the executable graph it made
 * or destroyed (calls.aux: CREATED_GRAPH_EXEC in interpose/wrapper.h) and its site. */
#define EXECS_SQL                                                                                  \
	"SELECT c.aux, " DESTROY_APIS ", coalesce(s.text, '" NO_SITE "') FROM calls c"             \
	" JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"                    \
	" WHERE c.class = 'X1' AND c.ret = 0 AND c.aux IS NOT NULL"                                \
	" AND (" INSTANTIATE_APIS " OR " DESTROY_APIS ") ORDER BY c.start_ns, c.id"

/* The destroy sites with enough calls, with the run's and the steady state's figures
 * (SITE_RULE_SQL's columns). */
#define DESTROY_SITES_SQL SITE_RULE_SQL("g.class = 'X1' AND " DESTROY_APIS)

/*
 * The executable graph instantiated every step is often destroyed every step too (capture,
 * instantiate, launch, destroy): the destroy's line is part of the same rebuild and changes with
 * the same fix, as an allocation's free does (alloc-in-loop flags both lines). A destroy site
 * whose calls recur in the steady state and destroy what a steady instantiation finding's site
 * made (most of them, where several) gets a finding of its own. The pair is one cost: the
 * instantiation's finding takes the destroys' host time into its own (its detail names them),
 * and the destroy's finding costs that same total as its estimate (what the one fix saves), so
 * both rank alike and the destroy's, with less host time of its own, comes right after. A
 * destroy after the loop (teardown) does not recur in the steady state and is never flagged.
 */
int ss_graph_exec_destroys(struct loader *ld, struct db_state *st)
{
	static const struct ss_line_pairing destroys = {
	    .rule = &ss_rule_graph_instantiate_in_loop,
	    .calls_sql = EXECS_SQL,
	    .use_sites_sql = DESTROY_SITES_SQL,
	    .use_releases = 1,
	    .uses = "destroys",
	    .of_what = "of the executable graphs it made",
	    .every_step = "destroys every step the executable graph instantiated at",
	    .fix = "instantiate it once before the loop and update it (cudaGraphExecUpdate, or "
		   "cudaGraphExecKernelNodeSetParams for kernel parameters) instead of destroying "
		   "and instantiating it again",
	};

	return ss_pair_lines(ld, st, &destroys, 1);
}
