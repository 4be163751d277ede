/*
 * report/rules/host_sync.c: the host-sync rule (docs/rules.md), a site rule on the aggregate
 * (SS_RULE_SITE): device, stream and event synchronizations (classes S1, S2, S3) per call site.
 * With a GPU timeline, gpu.c sets the GPU idle time behind them (gpu_idle_ns), which becomes
 * their cost (SS_COST_GPU_IDLE: analysis.c, judge_finding). Then ss_sync_same_operation: a
 * sync with no user frame that is the same operation as a sync with one is folded into it; and
 * ss_autotune_model_call: cuDNN's autotuning of a model's convolutions is named by the line that
 * calls the model.
 */
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"
#include "../db.h"
#include "syncspy/python_frames.h"

static char *detail(const struct db_state *st, const char *apis, long long worst, long long bytes,
		    long long estimate, long long rows)
{
	if (st->rank->gpu) /* run_gpu appends the GPU idle time */
		return format("%s; worst %.3f ms", apis, ms(worst));
	return format("%s; worst %.3f ms; GPU idle time behind it: not measurable without "
		      "GPU timeline",
		      apis, ms(worst));
}

/* ss_sync_then_free's mark, in the opening of both its findings' details (a summary's findings
 * get their advice back from it), and their advice */
#define SYNC_FREE_MARK "a free of stream-ordered memory"
#define SYNC_THEN_FREE_ADVICE                                                                      \
	"Free stream-ordered memory with cudaFreeAsync (cuMemFreeAsync) on the stream that "       \
	"used it: the free is then ordered after that work, and neither the host's wait before "   \
	"it nor this call's is needed."

static const char *advice_for(const char *apis)
{
	return strstr(apis, SS_AUTOTUNE_MARK) ? SS_AUTOTUNE_ADVICE
	       : strstr(apis, SYNC_FREE_MARK) ? SYNC_THEN_FREE_ADVICE
					      : NULL;
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
    .burst_recurs = 1, /* a periodic evaluation's per-sample reads (steps.h STEPS-9) */
    .detail = detail,
    .advice_for = advice_for,
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

/* The native frame torch's autograd engine runs a backward node from (torch::autograd::Engine::
 * evaluate_function, mangled): a sync below it ran in a backward pass. */
#define BACKWARD_FRAME "autograd6Engine17evaluate_function"

/* A native stack's innermost frame (its first line): the instruction after the sync's call. */
#define INNERMOST_FRAME "substr(k.frames, 1, instr(k.frames || char(10), char(10)) - 1)"

/* A native stack's innermost ATen operator frame (at::_ops::NAME::call or ::redispatch, mangled
 * _ZN2at4_ops...), where it has one (instr(k.frames, '_ZN2at4_ops') > 0): the operator the sync
 * ran in. */
#define OP_FRAME                                                                                   \
	"substr(k.frames, instr(k.frames, '_ZN2at4_ops'),"                                         \
	" instr(substr(k.frames, instr(k.frames, '_ZN2at4_ops')) || char(10), char(10)) - 1)"

/* Per innermost frame and operator frame of the syncs (S1-S4) at the site :site: how many ran in
 * a backward pass, and how many did not. */
#define BACKWARD_FRAMES_SQL                                                                        \
	"SELECT " INNERMOST_FRAME ", CASE WHEN instr(k.frames, '_ZN2at4_ops') > 0 THEN " OP_FRAME  \
	" ELSE '' END, sum(instr(k.frames, '" BACKWARD_FRAME "') > 0),"                            \
	" sum(instr(k.frames, '" BACKWARD_FRAME "') = 0)"                                          \
	" FROM calls c JOIN sites s ON s.id = c.site_id JOIN stacks k ON k.id = c.native_stack_id" \
	" WHERE instr(:classes, c.class) > 0 AND s.text = :site GROUP BY 1, 2"

/* Sites of syncs (S1-S4) on a user line, outside any backward pass, whose innermost frame is
 * :frame in the operator frame :op: the forward operations that sync at the same instruction of
 * the same operator. */
#define FORWARD_SITES_SQL                                                                          \
	"SELECT DISTINCT s.text FROM calls c JOIN sites s ON s.id = c.site_id"                     \
	" JOIN stacks k ON k.id = c.native_stack_id"                                               \
	" WHERE instr(:classes, c.class) > 0 AND s.text != :site"                                  \
	" AND s.text GLOB '*:[0-9]* in *' AND " INNERMOST_FRAME " = :frame"                        \
	" AND instr(k.frames, '_ZN2at4_ops') > 0 AND " OP_FRAME " = :op"                           \
	" AND instr(k.frames, '" BACKWARD_FRAME "') = 0"

static int sync_rule(const struct ss_finding *f);

/* The classes of the calls of a finding that backward_operations folds (the syncs of host-sync
 * and sync-copy, the staged copies of pageable-async-copy), "" for the other rules. */
static const char *folded_classes(const struct ss_finding *f)
{
	if (sync_rule(f))
		return "S1 S2 S3 S4";
	return f->rule == ss_rule_pageable_async_copy.id ? "S5" : "";
}

/* The steady finding at site of f's kind (a sync's, or a staged copy's), if any. */
static struct ss_finding *steady_finding_like(struct ss_report *r, const char *site,
					      const struct ss_finding *f)
{
	for (size_t i = 0; i < r->nfindings; i++) {
		struct ss_finding *g = &r->findings[i];

		if (strcmp(folded_classes(g), folded_classes(f)) == 0 && !g->cleared &&
		    strcmp(g->phase, "steady") == 0 && strcmp(g->site, site) == 0)
			return g;
	}
	return NULL;
}

/* The syncs of a backward pass are named by the user's `backward()` line (docs/attribution.md,
 * PYTHON-1), but the fix is the forward's: the backward of `h[mask]` (IndexBackward0) syncs in
 * nonzero as the forward's indexing did, and the forward's rewrite removes both. A steady sync
 * finding whose syncs all ran below the autograd engine's evaluate_function, at instructions
 * where a steady sync finding on another user line syncs outside a backward pass (the same
 * innermost frame in the same ATen operator's frame: the same operation; the backward of a
 * convolution that autotunes in convolution_backward as the forward did in cudnn_convolution is
 * another operation, examples/corpus t74), is folded into that finding: the one whose call count
 * is nearest its own (a forward sync per backward sync), then the first in report order. */
static int backward_operations(struct loader *ld, struct db_state *st)
{
	struct ss_report *r = ld->report;
	sqlite3_stmt *frames = NULL, *forward = NULL;
	int code = SS_EXIT_OK;

	for (size_t i = 0; code == SS_EXIT_OK && i < r->nfindings; i++) {
		struct ss_finding *f = &r->findings[i], *owner = NULL;
		int in_backward = 0, outside = 0, rc;

		if (!*folded_classes(f) || f->cleared || strcmp(f->phase, "steady") != 0 ||
		    strstr(f->site, " in ") == NULL)
			continue; /* only steady syncs (or staged copies) on a user line */
		if (!frames && (code = prepare(ld, st, BACKWARD_FRAMES_SQL, &frames)) != SS_EXIT_OK)
			break;
		if (!forward && (code = prepare(ld, st, FORWARD_SITES_SQL, &forward)) != SS_EXIT_OK)
			break;
		sqlite3_reset(frames);
		sqlite3_bind_text(frames, sqlite3_bind_parameter_index(frames, ":site"), f->site,
				  -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(frames, sqlite3_bind_parameter_index(frames, ":classes"),
				  folded_classes(f), -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(frames)) == SQLITE_ROW) {
			in_backward += sqlite3_column_int(frames, 2) > 0;
			outside += sqlite3_column_int(frames, 3) > 0;
		}
		if (rc != SQLITE_DONE) {
			code = ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
			break;
		}
		if (!in_backward || outside)
			continue; /* not all of them in a backward pass */
		sqlite3_reset(frames);
		while (code == SS_EXIT_OK && sqlite3_step(frames) == SQLITE_ROW) {
			const char *frame = (const char *)sqlite3_column_text(frames, 0);
			const char *op = (const char *)sqlite3_column_text(frames, 1);

			if (!frame || !*frame || !op || !*op)
				continue; /* no operator: nothing says which operation */
			sqlite3_reset(forward);
			sqlite3_bind_text(forward, sqlite3_bind_parameter_index(forward, ":site"),
					  f->site, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(forward, sqlite3_bind_parameter_index(forward, ":frame"),
					  frame, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(forward, sqlite3_bind_parameter_index(forward, ":op"), op,
					  -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(forward,
					  sqlite3_bind_parameter_index(forward, ":classes"),
					  folded_classes(f), -1, SQLITE_STATIC);
			while (sqlite3_step(forward) == SQLITE_ROW) {
				struct ss_finding *g = steady_finding_like(
				    r, (const char *)sqlite3_column_text(forward, 0), f);

				if (g && g != f &&
				    (!owner ||
				     llabs(g->count - f->count) < llabs(owner->count - f->count)))
					owner = g;
			}
		}
		if (owner)
			code = fold_finding(ld, owner, f, sync_rule(f) ? "syncs" : "copies",
					    " of the same operation in the backward pass",
					    "the backward pass of an operation on another line, "
					    "whose finding carries this cost");
	}
	sqlite3_finalize(frames);
	sqlite3_finalize(forward);
	return code;
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
	if (code == SS_EXIT_OK)
		code = backward_operations(ld, st);
	return code;
}

/* A native stack in a convolution cuDNN autotunes (torch.backends.cudnn.benchmark): the forward's
 * at::native::cudnn_convolution (or _transpose), the backward's at::native::convolution_backward
 * (mangled). In the steady state only autotuning syncs there: a new input shape's trial runs,
 * timed with device and event syncs, each in trial workspaces the caching allocator allocates. */
#define AUTOTUNE_STACK                                                                             \
	"coalesce(instr(k.frames, 'cudnn_convolution') > 0"                                        \
	" OR instr(k.frames, '_ZN2at6native20convolution_backward') > 0, 0)"

/* Per Python stack of the calls at the site :site of class S6 (:alloc 1) or S1-S3 (:alloc 0):
 * its frames, its calls, and those in an autotuned convolution. */
#define AUTOTUNE_CALLS_SQL                                                                         \
	"SELECT p.frames, count(*), sum(" AUTOTUNE_STACK ") FROM calls c"                          \
	" JOIN sites s ON s.id = c.site_id LEFT JOIN stacks k ON k.id = c.native_stack_id"         \
	" LEFT JOIN stacks p ON p.id = c.py_stack_id WHERE s.text = :site"                         \
	" AND c.class IN ('S1', 'S2', 'S3', 'S6') AND (c.class = 'S6') = :alloc"                   \
	" GROUP BY c.py_stack_id"

/* One steady finding's calls in autotuned convolutions (AUTOTUNE_STACK), and the model call
 * line of those that have one (the line of the most of them). */
struct autotuned {
	long long calls, tuned, best;
	char model_call[1024];
};

static int autotuned_calls(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt,
			   const struct ss_finding *f, struct autotuned *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	sqlite3_reset(stmt);
	sqlite3_bind_text(stmt, sqlite3_bind_parameter_index(stmt, ":site"), f->site, -1,
			  SQLITE_TRANSIENT);
	sqlite3_bind_int(stmt, sqlite3_bind_parameter_index(stmt, ":alloc"),
			 f->rule == ss_rule_alloc_in_loop.id);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *frames = (const char *)sqlite3_column_text(stmt, 0);
		long long tuned = sqlite3_column_int64(stmt, 2);
		char line[1024];

		a->calls += sqlite3_column_int64(stmt, 1);
		a->tuned += tuned;
		if (tuned > a->best && frames &&
		    ss_python_model_call_line(frames, line, sizeof(line))) {
			a->best = tuned;
			snprintf(a->model_call, sizeof(a->model_call), "%s", line);
		}
	}
	if (rc != SQLITE_DONE)
		return ss_db_failure(st->db, rc, st->path, ld->err, ld->errlen);
	return SS_EXIT_OK;
}

/* Whether a finding's calls are the autotuning's: nine syncs in ten at least ran in autotuned
 * convolutions (the others a step's once-only calls on the same line: the backward's cuBLAS
 * handle, made at its first matrix product); one allocation in ten at least, when a sync
 * finding showed the autotuning. The autotuning empties the caching allocator's cache to fit its
 * trial workspaces (its cudaFree calls), so the tensors the line's operators make next are
 * allocated afresh (cudaMalloc below empty_cuda, in no convolution: t74's 72 of 93 at line 42):
 * in the steady state the caching allocator calls cudaMalloc only for what it lost or never
 * had. */
static int autotuning_calls(const struct autotuned *a, int allocations)
{
	return a->tuned > 0 && a->tuned * 10 >= a->calls * (allocations ? 1 : 9);
}

/* cuDNN's autotuning (torch.backends.cudnn.benchmark = True) runs again for every new input
 * shape: in the steady state, a step whose shapes change (a padded length, a last partial batch
 * every step) syncs the device and allocates in each of the model's convolutions. Its syncs name
 * the line of each convolution inside the model's forward (conv1d in a block), where nothing is
 * to fix; the fix is the shapes the step feeds the model, or the flag (examples/corpus t74). A
 * steady host-sync or alloc-in-loop finding whose calls are the autotuning's (autotuning_calls)
 * gets SS_AUTOTUNE_MARK in its detail's opening and its advice (summary.c finds it
 * there); one whose stacks pass through an nn.Module call is named by the user line outside the
 * outermost one (the model's call in the step: ss_python_model_call_line), folded into the
 * finding of the same rule there, or moved there when none is (the first one; the others fold
 * into it). The backward's syncs (on the autograd thread, named by the backward() line:
 * PYTHON-1) have no module call above them and keep their line. Runs after the GPU timeline's
 * figures are in. */
int ss_autotune_model_call(struct loader *ld, struct db_state *st)
{
	struct ss_report *r = ld->report;
	sqlite3_stmt *stmt = NULL;
	int code = SS_EXIT_OK, tuning = 0;

	for (int pass = 0; pass < 2 && code == SS_EXIT_OK; pass++) {
		const char *rule = pass == 0 ? ss_rule_host_sync.id : ss_rule_alloc_in_loop.id;

		if (pass == 1 && !tuning)
			break; /* no sync showed autotuning */
		for (size_t i = 0; code == SS_EXIT_OK && i < r->nfindings; i++) {
			struct ss_finding *f = &r->findings[i], *owner;
			struct autotuned a;
			size_t opening;
			char *detail, *site;
			int moves;

			if (f->rule != rule || f->cleared || strcmp(f->phase, "steady") != 0 ||
			    strstr(f->site, " in ") == NULL)
				continue; /* only steady findings on a user line */
			if (!stmt &&
			    (code = prepare(ld, st, AUTOTUNE_CALLS_SQL, &stmt)) != SS_EXIT_OK)
				break;
			if ((code = autotuned_calls(ld, st, stmt, f, &a)) != SS_EXIT_OK)
				break;
			if (!autotuning_calls(&a, pass == 1))
				continue;
			tuning = 1;
			moves = a.best && strcmp(a.model_call, f->site) != 0;
			owner = moves ? ss_steady_finding(r, rule, a.model_call) : NULL;
			opening = strcspn(f->detail, ";");
			detail = format("%.*s, in cuDNN's " SS_AUTOTUNE_MARK "%s%s%s", (int)opening,
					f->detail, moves && !owner ? " of the convolution at " : "",
					moves && !owner ? f->site : "", f->detail + opening);
			site = moves && !owner ? xstrdup(a.model_call) : NULL;
			if (!detail || (moves && !owner && !site)) {
				free(detail);
				code = out_of_memory(ld);
				break;
			}
			free(f->detail);
			f->detail = detail;
			f->advice = SS_AUTOTUNE_ADVICE;
			if (owner)
				code = fold_finding(
				    ld, owner, f, pass == 0 ? "syncs" : "allocations",
				    " of the autotuning of another of the model's "
				    "convolutions",
				    "cuDNN's autotuning in the model called on another line, "
				    "whose finding carries this cost");
			else if (site) { /* the first at the model's call: the others fold into it
					  */
				free(f->site);
				f->site = site;
			}
		}
	}
	sqlite3_finalize(stmt);
	return code;
}

/* Whether any synchronous free of stream-ordered memory was recorded (X1: interpose/wrapper.h,
 * FREE): the window below reads every call, so only then. */
#define ANY_ASYNC_FREE_SQL                                                                         \
	"SELECT 1 FROM calls WHERE class = 'X1' AND api_id IN (SELECT id FROM apis"                \
	" WHERE name IN ('cudaFree', 'cuMemFree', 'cuMemFree_v2')) LIMIT 1"
/* Per sync site (S1-S3) and the site of the free that followed a sync there at once on its
 * thread: how many times. */
#define SYNC_THEN_FREE_SQL                                                                         \
	"WITH n AS (SELECT c.site_id, c.class, lead(c.class) OVER w AS next_class,"                \
	" lead(c.api_id) OVER w AS next_api, lead(c.site_id) OVER w AS next_site FROM calls c"     \
	" WINDOW w AS (PARTITION BY c.tid ORDER BY c.id))"                                         \
	" SELECT s.text, f.text, count(*) FROM n JOIN sites s ON s.id = n.site_id"                 \
	" JOIN sites f ON f.id = n.next_site WHERE n.class IN ('S1', 'S2', 'S3')"                  \
	" AND n.next_class = 'X1' AND n.next_api IN (SELECT id FROM apis"                          \
	" WHERE name IN ('cudaFree', 'cuMemFree', 'cuMemFree_v2')) GROUP BY s.text, f.text"
int ss_sync_then_free(struct loader *ld, struct db_state *st)
{
	struct ss_report *r = ld->report;
	sqlite3_stmt *stmt = NULL;
	int rc, code, any = 0;

	for (size_t i = 0; i < r->nfindings && !any; i++)
		any = r->findings[i].rule == ss_rule_host_sync.id && !r->findings[i].cleared &&
		      strcmp(r->findings[i].phase, "steady") == 0;
	if (!any || (code = prepare(ld, st, ANY_ASYNC_FREE_SQL, &stmt)) != SS_EXIT_OK)
		return any ? code : SS_EXIT_OK;
	rc = sqlite3_step(stmt);
	code = end_rows(ld, st, stmt, rc == SQLITE_ROW ? SQLITE_DONE : rc, SS_EXIT_OK);
	if (code != SS_EXIT_OK || rc != SQLITE_ROW)
		return code; /* no such free */
	if ((code = prepare(ld, st, SYNC_THEN_FREE_SQL, &stmt)) != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *sync_site = (const char *)sqlite3_column_text(stmt, 0);
		const char *free_site = (const char *)sqlite3_column_text(stmt, 1);
		long long n = sqlite3_column_int64(stmt, 2);
		struct ss_finding *owner = ss_steady_finding(r, ss_rule_host_sync.id, sync_site);

		/* most of the sync's calls free at once after it; a line with a finding keeps it
		 * (ANALYSIS-2) */
		if (!owner || owner->cleared || 2 * n < owner->count || !free_site ||
		    strstr(free_site, " in ") == NULL)
			continue;
		int taken = 0;
		for (size_t i = 0; i < r->nfindings && !taken; i++)
			taken = strcmp(r->findings[i].site, free_site) == 0;
		if (taken)
			continue;
		struct ss_finding copy = *owner; /* owner moves when the findings grow */
		size_t opening = strcspn(owner->detail, ";");
		char *more =
		    format("%.*s, followed by " SYNC_FREE_MARK " at %s that it waits for%s",
			   (int)opening, owner->detail, free_site, owner->detail + opening);
		if (!more) {
			code = out_of_memory(ld);
			break;
		}
		free(owner->detail);
		owner->detail = more;
		owner->advice = SYNC_THEN_FREE_ADVICE;
		code = add_finding(
		    ld, &ss_rule_host_sync, st->rank, n, copy.blocked_ns, copy.worst_ns, -1,
		    copy.estimate_ns, xstrdup(free_site),
		    format(
			"cudaFree x%lld, " SYNC_FREE_MARK " (cudaMallocAsync's) each, right after "
			"the sync at %s, which waits so that the free is safe: that sync's finding "
			"carries the cost",
			n, copy.site));
		if (code != SS_EXIT_OK)
			break;
		struct ss_finding *f = &r->findings[r->nfindings - 1];
		f->gpu_idle_ns = copy.gpu_idle_ns;
		f->advice = SYNC_THEN_FREE_ADVICE;
		set_phase(f, &st->steps, 1, copy.steps);
	}
	return end_rows(ld, st, stmt, rc, code);
}
