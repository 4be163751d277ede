/*
 * report/rules/host_sync.c: the host-sync rule (docs/rules.md), a site rule on the aggregate
 * (SS_RULE_SITE): device, stream and event synchronizations (classes S1, S2, S3) per call site.
 * With a GPU timeline, gpu.c sets the GPU idle time behind them (gpu_idle_ns), which becomes
 * their cost (SS_COST_GPU_IDLE: analysis.c, judge_finding). Then ss_sync_same_operation: a
 * sync with no user frame that is the same operation as a sync with one is folded into it.
 */
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

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

/* Sites of syncs (S1-S4) whose native stacks pass through the frame FRAME (a site's text) and
 * that name a user line ("FILE:LINE in FUNCTION"), most calls first. */
#define SAME_OPERATION_SQL                                                                         \
	"SELECT s.text FROM calls c JOIN sites s ON s.id = c.site_id"                              \
	" JOIN stacks k ON k.id = c.native_stack_id"                                               \
	" WHERE c.class IN ('S1', 'S2', 'S3', 'S4') AND s.text != :frame"                          \
	" AND s.text GLOB '*:[0-9]* in *' AND instr(k.frames, :frame) > 0"                         \
	" GROUP BY s.text ORDER BY count(*) DESC"

static int sync_rule(const struct ss_finding *f)
{
	return f->rule == ss_rule_host_sync.id || f->rule == ss_rule_sync_copy.id;
}

/* A sync inside a framework that no user frame reaches (torch's autograd thread runs the
 * backward pass of `scores[mask]`, whose nonzero syncs as the forward's did, with no Python
 * frame of its own) is the same operation as a sync whose native stack passes through the
 * same instruction and that names a user line (the forward's): it is that line's cost. Its
 * finding is `info`, and its figures are added to the user line's finding (docs/rules.md,
 * host-sync). Runs after the GPU timeline's figures are in. */
int ss_sync_same_operation(struct loader *ld, struct db_state *st)
{
	struct ss_report *r = ld->report;
	sqlite3_stmt *stmt = NULL;
	int code = SS_EXIT_OK;

	for (size_t i = 0; code == SS_EXIT_OK && i < r->nfindings; i++) {
		struct ss_finding *f = &r->findings[i], *owner = NULL;

		if (!sync_rule(f) || f->cleared || strcmp(f->phase, "steady") != 0 ||
		    strcmp(f->site, NO_SITE) == 0 || strstr(f->site, " in ") != NULL)
			continue; /* only steady syncs without a user line */
		if (!stmt && (code = prepare(ld, st, SAME_OPERATION_SQL, &stmt)) != SS_EXIT_OK)
			break;
		sqlite3_reset(stmt);
		sqlite3_bind_text(stmt, sqlite3_bind_parameter_index(stmt, ":frame"), f->site, -1,
				  SQLITE_TRANSIENT);
		while (!owner && sqlite3_step(stmt) == SQLITE_ROW) {
			const char *text = (const char *)sqlite3_column_text(stmt, 0);

			for (size_t j = 0; text && j < r->nfindings && !owner; j++) {
				struct ss_finding *g = &r->findings[j];

				if (g != f && sync_rule(g) && !g->cleared &&
				    strcmp(g->phase, "steady") == 0 && strcmp(g->site, text) == 0)
					owner = g;
			}
		}
		if (owner)
			code = fold_finding(ld, owner, f, "syncs",
					    " of the same operation reached without a user frame "
					    "(another thread: a backward pass)",
					    "the same operation as a sync on a user line (its finding "
					    "carries this cost)");
	}
	sqlite3_finalize(stmt);
	return code;
}
