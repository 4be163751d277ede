/*
 * report/rules/graph_instantiate_in_loop.c: the graph-instantiate-in-loop rule (docs/rules.md),
 * a site rule on the aggregate (SS_RULE_SITE): CUDA graphs instantiated again and again in the
 * steady state (every cudaGraphInstantiate* and cuGraphInstantiate* entry point: class X1), per
 * call site. Instantiation checks and lays out the whole graph on the host, so a graph captured
 * and instantiated every step costs more host time than its launches save; the cost is that host
 * time. Then ss_graph_exec_destroys: where the executable graphs instantiated every step are also
 * destroyed every step, the destroy's line is flagged too, right after the instantiation's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

/* A graph instantiated once per shape at setup is how graphs are used: two or more calls at a
 * site that recur in the steady state (steps.h) are a rebuild per step. The same holds for the
 * destroys of their executable graphs. */
#define SS_INSTANTIATE_MIN_CALLS 2

/* The entry points, in SQL (a.name: apis.name): LIKE is case-blind and '_' matches any
 * character, which these names cannot confuse. */
#define INSTANTIATE_APIS "a.name LIKE 'cu%GraphInstantiate%'"
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

struct exec_call {
	long long exec;
	size_t order; /* in time */
	int destroy;
	char *site;
};

/* How often a destroy site destroyed what an instantiation site made. */
struct exec_pair {
	char *destroy_site, *instantiate_site;
	long long n;
};

static int compare_exec_calls(const void *a, const void *b)
{
	const struct exec_call *x = a, *y = b;

	if (x->exec != y->exec)
		return x->exec < y->exec ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* This rule's finding at site (steady ones only when steady is set), or NULL. */
static struct ss_finding *finding_at(struct ss_report *r, const char *site, int steady)
{
	for (size_t i = 0; i < r->nfindings; i++) {
		struct ss_finding *f = &r->findings[i];

		if (f->rule == ss_rule_graph_instantiate_in_loop.id && strcmp(f->site, site) == 0 &&
		    (!steady || (!f->cleared && strcmp(f->phase, "steady") == 0)))
			return f;
	}
	return NULL;
}

/* Reads EXECS_SQL and pairs each destroy with the latest instantiation of the same executable
 * graph before it (a handle's address comes back for later graphs). */
static int pair_destroys(struct loader *ld, struct db_state *st, struct exec_pair **pairs,
			 size_t *npairs)
{
	struct exec_call *calls = NULL;
	size_t n = 0, cap = 0, cap_pairs = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, EXECS_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct exec_call one = {sqlite3_column_int64(stmt, 0), n,
					sqlite3_column_int(stmt, 1),
					xstrdup((const char *)sqlite3_column_text(stmt, 2))};

		if (!one.site || !PUSH(calls, n, cap, one)) {
			free(one.site);
			code = out_of_memory(ld);
			break;
		}
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK && n > 1)
		qsort(calls, n, sizeof(*calls), compare_exec_calls);
	/* per executable graph, in time order: a destroy pairs with the instantiation last seen */
	for (size_t i = 0, made = SIZE_MAX; code == SS_EXIT_OK && i < n; i++) {
		if (i == 0 || calls[i].exec != calls[i - 1].exec)
			made = SIZE_MAX;
		if (!calls[i].destroy) {
			made = i;
			continue;
		}
		if (made == SIZE_MAX)
			continue; /* made before the recording, or by an entry point not recorded */
		size_t p = 0;
		while (p < *npairs && (strcmp((*pairs)[p].destroy_site, calls[i].site) != 0 ||
				       strcmp((*pairs)[p].instantiate_site, calls[made].site) != 0))
			p++;
		if (p == *npairs) {
			struct exec_pair pair = {xstrdup(calls[i].site), xstrdup(calls[made].site),
						 0};

			if (!pair.destroy_site || !pair.instantiate_site ||
			    !PUSH(*pairs, *npairs, cap_pairs, pair)) {
				free(pair.destroy_site);
				free(pair.instantiate_site);
				code = out_of_memory(ld);
				break;
			}
		}
		(*pairs)[p].n++;
		made = SIZE_MAX; /* destroyed: a second destroy of the handle pairs with nothing */
	}
	for (size_t i = 0; i < n; i++)
		free(calls[i].site);
	free(calls);
	return code;
}

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
	struct ss_report *r = ld->report;
	struct exec_pair *pairs = NULL;
	size_t npairs = 0, any = 0, first = r->nfindings, nowners = 0, cap_owners = 0;
	char **owners = NULL; /* the instantiation site of each destroy finding added */
	sqlite3_stmt *stmt;
	int rc, code;

	while (any < r->nfindings &&
	       !(r->findings[any].rule == ss_rule_graph_instantiate_in_loop.id &&
		 strcmp(r->findings[any].phase, "steady") == 0))
		any++;
	if (any == r->nfindings)
		return SS_EXIT_OK; /* no graph rebuilt every step: no destroy to pair */
	code = pair_destroys(ld, st, &pairs, &npairs);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, DESTROY_SITES_SQL, &stmt);
	if (code != SS_EXIT_OK)
		goto out;
	bind_named_int(stmt, ":min_count", SS_INSTANTIATE_MIN_CALLS);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *site = (const char *)sqlite3_column_text(stmt, 0);
		long long count = sqlite3_column_int64(stmt, 8);
		long long blocked = sqlite3_column_int64(stmt, 9);
		long long worst = sqlite3_column_int64(stmt, 10);
		long long steady_rows = sqlite3_column_int64(stmt, 13);
		long long steps = sqlite3_column_int64(stmt, 14);
		const char *apis = (const char *)sqlite3_column_text(stmt, 15);
		struct ss_finding *owner = NULL;
		long long paired = 0;

		if (!site || !ss_steps_recurring(&st->steps, steps, steady_rows))
			continue; /* setup or teardown: how graphs are released */
		for (size_t p = 0; p < npairs; p++) {
			struct ss_finding *f;

			if (strcmp(pairs[p].destroy_site, site) != 0 || pairs[p].n <= paired ||
			    !(f = finding_at(r, pairs[p].instantiate_site, 1)))
				continue;
			owner = f;
			paired = pairs[p].n;
		}
		if (!owner || finding_at(r, site, 0))
			continue; /* ANALYSIS-2: a line that also instantiates keeps its one finding
				   */
		char *more = format("%s; and %lld destroys (%.3f ms) of the executable graphs it "
				    "made, at %s",
				    owner->detail, count, ms(blocked), site);
		char *owner_site = xstrdup(owner->site); /* owner moves when the findings grow */
		if (!more || !owner_site || !PUSH(owners, nowners, cap_owners, owner_site)) {
			free(more);
			free(owner_site);
			code = out_of_memory(ld);
			break;
		}
		free(owner->detail);
		owner->detail = more;
		owner->blocked_ns += blocked;
		code =
		    add_finding(ld, &ss_rule_graph_instantiate_in_loop, st->rank, count, blocked,
				worst, -1, -1, xstrdup(site),
				format("%s: destroys every step the executable graph instantiated "
				       "at %s, whose finding carries these calls' host time; "
				       "instantiate it once before the loop and update it "
				       "(cudaGraphExecUpdate, or cudaGraphExecKernelNodeSetParams "
				       "for kernel parameters) instead of destroying and "
				       "instantiating it again",
				       apis ? apis : "", owner_site));
		if (code != SS_EXIT_OK)
			break;
		set_phase(&r->findings[r->nfindings - 1], &st->steps, 1, steps);
	}
	code = end_rows(ld, st, stmt, rc, code);
	/* each destroy's cost: its instantiation's, every destroy of its graphs included */
	for (size_t i = 0; code == SS_EXIT_OK && i < nowners; i++)
		r->findings[first + i].estimate_ns = finding_at(r, owners[i], 1)->blocked_ns;
out:
	for (size_t p = 0; p < npairs; p++) {
		free(pairs[p].destroy_site);
		free(pairs[p].instantiate_site);
	}
	free(pairs);
	for (size_t i = 0; i < nowners; i++)
		free(owners[i]);
	free(owners);
	return code;
}
