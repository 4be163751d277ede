/*
 * report/rules/legacy_stream.c: the legacy-stream rule (docs/rules.md), a site rule on the
 * aggregate (SS_RULE_SITE): work on the legacy default stream while something else needed it
 * not to serialize: the process also used blocking streams of its own (:other_streams), or two
 * threads or more shared it (:legacy_threads); both set by load.c's pass, in the steady state
 * when there are steps. The work is the enqueues (E1), a device-to-device blocking copy (S4 of
 * dir 3: cudaMemcpy and cuMemcpyDtoD return at once, their copy queued on the legacy stream),
 * and, when threads share it, a sync of the legacy stream itself (S2), which waits for every
 * thread's work there. Event records (E2) there are reported only when no work (E1) is: the
 * work's fix, a stream of its own, takes its records along, and a record beside work is no line
 * of its own to change.
 */
#include "../analysis_int.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	if (st->legacy_threads && !st->other_streams)
		return format("%s on the legacy default stream, which several threads shared: "
			      "the work and syncs of each wait for the others'",
			      apis);
	return format("%s on the legacy default stream while the process also used other "
		      "streams%s",
		      apis, st->legacy_threads ? " and other threads used it too" : "");
}

const struct ss_rule ss_rule_legacy_stream = {
    .id = "legacy-stream",
    .advice = "Give this work a stream of its own (cudaStreamNonBlocking) or build with "
	      "--default-stream per-thread (CUDA_API_PER_THREAD_DEFAULT_STREAM works only "
	      "before the CUDA headers, which nvcc includes first): the legacy stream "
	      "serializes with every blocking stream and every thread's work on it.",
    .phase = SS_RULE_SITE,
    .sql = SITE_RULE_SQL(
	"g.legacy AND (:other_streams OR :legacy_threads) AND (g.class = 'E1'"
	" OR (g.class = 'S4' AND g.dir = 3) OR (g.class = 'S2' AND :legacy_threads)"
	" OR (g.class = 'E2' AND"
	" NOT EXISTS (SELECT 1 FROM temp.ss_agg w WHERE w.class = 'E1' AND w.legacy)))"),
    .min_count = 1,
    .detail = detail,
};
