/*
 * report/rules/memset_pinned.c: the memset-pinned rule (docs/rules.md), a site rule on the
 * aggregate (SS_RULE_SITE): blocking cudaMemset on pinned or managed host memory (class S6,
 * direction 6).
 */
#include "../analysis_int.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s; %lld bytes; worst %.3f ms", apis, bytes, ms(worst));
}

const struct ss_rule ss_rule_memset_pinned = {
    .id = "memset-pinned",
    .advice = "Clear host memory with memset on the host, or use cudaMemsetAsync on a stream, "
	      "instead of a blocking cudaMemset on pinned or managed memory.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL("g.class = 'S6' AND g.dir = 6"),
    .min_count = 1,
    .keeps_bytes = 1,
    .detail = detail,
};
