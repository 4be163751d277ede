/*
 * report/rules/pool_trim_in_loop.c: the pool-trim-in-loop rule (docs/rules.md), a site rule on
 * the aggregate (SS_RULE_SITE): a memory pool trimmed (cudaMemPoolTrimTo, cuMemPoolTrimTo)
 * every step of the steady state. Then ss_pool_trim_regrowth: the slow stream-ordered
 * allocations that follow (async-alloc-slow) are the trim's cost, not lines to fix, and are
 * folded into its finding.
 */
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s: the pool gives its unused memory back to the OS each time, so the "
		      "next stream-ordered allocation from it maps memory again (worst trim "
		      "%.3f ms)",
		      apis, ms(worst));
}

const struct ss_rule ss_rule_pool_trim_in_loop = {
    .id = "pool-trim-in-loop",
    .advice = "Trim the pool once, when the work is done (or under memory pressure), not every "
	      "step: keep its memory with a release threshold "
	      "(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes)) so the "
	      "allocations of the next step are served from it.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL("a.name IN ('cudaMemPoolTrimTo', 'cuMemPoolTrimTo')"),
    .min_count = 2,
    .detail = detail,
};

/* A steady finding of rule RULE, the costliest, else NULL. */
static struct ss_finding *costliest_steady(struct ss_report *r, const char *rule)
{
	struct ss_finding *best = NULL;

	for (size_t i = 0; i < r->nfindings; i++) {
		struct ss_finding *f = &r->findings[i];

		if (f->rule == rule && !f->cleared && strcmp(f->phase, "steady") == 0 &&
		    (!best || f->blocked_ns > best->blocked_ns))
			best = f;
	}
	return best;
}

/* A pool trimmed every step maps its memory again at the next allocations: those allocations'
 * async-alloc-slow findings are the trim's cost (c72 of examples/corpus: the allocation lines
 * carry no marker), folded into the trim's finding, which then costs both. */
int ss_pool_trim_regrowth(struct loader *ld, struct db_state *st)
{
	struct ss_report *r = ld->report;
	struct ss_finding *trim = costliest_steady(r, ss_rule_pool_trim_in_loop.id);
	int code = SS_EXIT_OK;

	(void)st;
	for (size_t i = 0; trim && code == SS_EXIT_OK && i < r->nfindings; i++) {
		struct ss_finding *f = &r->findings[i];

		if (f->rule == ss_rule_async_alloc_slow.id && !f->cleared &&
		    strcmp(f->phase, "steady") == 0) {
			code = fold_finding(ld, trim, f, "allocations",
					    " that mapped the trimmed memory again",
					    "the pool mapping again the memory a trim gave back every "
					    "step: the trim's finding carries this cost");
		}
	}
	return code;
}
