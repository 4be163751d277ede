/*
 * report/rules/legacy_stream.c: the legacy-stream rule (docs/rules.md), a site rule on the
 * aggregate (SS_RULE_SITE): work enqueued on the legacy default stream (classes E1, E2) while
 * the process also used blocking streams of its own (:other_streams, set by load.c's pass: in
 * the steady state when there are steps). Event records (E2) there are reported only when no
 * work (E1) is: the work's fix, a stream of its own, takes its records along, and a record
 * beside work is no line of its own to change.
 */
#include "../analysis_int.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	return format("%s on the legacy default stream while the process also used other "
		      "streams",
		      apis);
}

const struct ss_rule ss_rule_legacy_stream = {
    .id = "legacy-stream",
    .advice = "Give this work a stream of its own (cudaStreamNonBlocking) or build with "
	      "--default-stream per-thread: the legacy stream serializes with every blocking "
	      "stream.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL(
	"g.legacy AND :other_streams AND (g.class = 'E1' OR (g.class = 'E2' AND"
	" NOT EXISTS (SELECT 1 FROM temp.ss_agg w WHERE w.class = 'E1' AND w.legacy)))"),
    .min_count = 1,
    .detail = detail,
};
