/*
 * report/rules/graph_exec_shared.c: the graph-exec-shared rule (docs/rules.md), a GPU-timeline
 * rule (SS_RULE_GPU): one executable graph launched on several streams. cuGraphLaunch: "Only
 * one instance of hGraphExec may be executing at a time. Each launch is ordered behind both any
 * previous work in hStream and any previous launches of hGraphExec. To execute a graph
 * concurrently, it must be instantiated multiple times into multiple executable graphs." Lanes
 * (tenants, pipeline stages) that share one executable graph run one after the other whatever
 * their streams (examples/corpus d43; d45 is the fix, one instantiation per lane).
 *
 * Per launch L whose previous launch P of the same executable graph went to another stream: L
 * could start once it was launched and the work queued before it on its own stream had ended
 * (ready); when P was still running then and L started only after P ended, L was held from ready
 * until its start. The cost is that time, an estimate of what the lanes would have overlapped
 * (the GPU was busy with P meanwhile: GPU idle time is not the measure). Steady launches only
 * (steps.h); with the timeline sampled, the holds it saw whole, scaled to all steady steps
 * (GPU-IDLE-4).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

extern const struct ss_rule ss_rule_graph_exec_shared;

/* How far back on a launch's stream the work before it is looked for (a memset or an event
 * record between them has no GPU row of its own), as host-func-blocks-stream does. */
#define NEIGHBOUR_WALK 16
/* L started after P ended, within this much: launch latency, not overlap */
#define ORDERED_SLACK_NS 20000LL

/* The graph launches, by executable graph and time. */
#define LAUNCHES_SQL                                                                               \
	"SELECT c.aux, c.stream, c.start_ns, c.tid, coalesce(s.text, '" NO_SITE "')"               \
	" FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"       \
	" WHERE a.name LIKE " SS_GRAPH_LAUNCH_LIKE                                                 \
	" AND c.aux IS NOT NULL AND c.stream IS NOT NULL"                                          \
	" ORDER BY c.aux, c.start_ns"
/* The work queued on the streams of graph launches (the launches too), by stream and time. */
#define STREAM_WORK_SQL                                                                            \
	"SELECT c.stream, c.start_ns, c.tid FROM calls c WHERE c.class IN ('E1', 'S4', 'S5')"      \
	" AND c.stream IN (SELECT c2.stream FROM calls c2 JOIN apis a2 ON a2.id = c2.api_id"       \
	" WHERE a2.name LIKE " SS_GRAPH_LAUNCH_LIKE ") ORDER BY c.stream, c.start_ns"

struct launch {
	long long exec, stream, start, tid;
	char *site;
};

static int load_rows(struct loader *ld, struct db_state *st, struct launch **launches,
		     size_t *nlaunches, struct enqueue **work, size_t *nwork)
{
	size_t cap = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, LAUNCHES_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct launch l = {sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
				   sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3),
				   xstrdup((const char *)sqlite3_column_text(stmt, 4))};

		if (!l.site || !PUSH(*launches, *nlaunches, cap, l)) {
			free(l.site);
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	code = end_rows(ld, st, stmt, rc, SS_EXIT_OK);
	if (code != SS_EXIT_OK || !*nlaunches)
		return code;
	return load_enqueues(ld, st, STREAM_WORK_SQL, work, nwork);
}

/* The last enqueue of STREAM (and, on a per-thread default stream, of TID) before T in WORK
 * (sorted by stream, start) that has GPU rows, at most NEIGHBOUR_WALK enqueues back. */
static const struct correlated *work_before(const struct db_state *st, const struct call_rows *j,
					    const struct enqueue *work, size_t n, long long stream,
					    long long tid, long long t)
{
	size_t lo = first_enqueue(work, n, stream, t);

	for (size_t k = lo, walked = 0;
	     k > 0 && work[k - 1].stream == stream && walked < NEIGHBOUR_WALK; k--) {
		const struct correlated *r;

		if (!ss_same_stream(work[k - 1].stream, work[k - 1].tid, stream, tid))
			continue;
		walked++;
		r = call_rows_of(st, j, work[k - 1].tid, work[k - 1].start);
		if (r)
			return r;
	}
	return NULL;
}

/* Whether the launches of one executable graph, LAUNCHES[from..to), went to several streams. */
static int several_streams(const struct launch *launches, size_t from, size_t to)
{
	for (size_t i = from + 1; i < to; i++)
		if (!ss_same_stream(launches[i].stream, launches[i].tid, launches[from].stream,
				    launches[from].tid))
			return 1;
	return 0;
}

static int add_findings(struct loader *ld, struct db_state *st, struct held_site *sites,
			size_t nsites, size_t seen, size_t steady)
{
	int code = SS_EXIT_OK;
	char scaled[128];

	held_scaled_note(scaled, sizeof(scaled), seen, steady);
	for (size_t i = 0; code == SS_EXIT_OK && i < nsites; i++) {
		struct held_site *s = &sites[i];
		long long median = held_site_finish(s, seen, steady);

		add_held_finding(ld, st, &ss_rule_graph_exec_shared, s, -1, s->held,
				 format("%lld launches of an executable graph that other streams "
					"launch too waited for its launch there to end, %.3f ms "
					"in all (median %.3f ms, worst %.3f ms): launches of one "
					"executable graph never run at the same time%s",
					s->n, ms(s->held), ms(median), ms(s->worst), scaled),
				 &code);
	}
	return code;
}

static int graph_exec_shared_rule(struct loader *ld, struct db_state *st, const struct gpu_rows *g)
{
	struct launch *launches = NULL;
	struct enqueue *work = NULL;
	struct call_rows j = {0};
	struct held_site *sites = NULL;
	size_t nlaunches = 0, nwork = 0, nsites = 0, cap_sites = 0;
	int code = load_rows(ld, st, &launches, &nlaunches, &work, &nwork);

	if (code == SS_EXIT_OK && nlaunches > 1)
		code = call_rows_open(ld, st, g, &j);
	if (code != SS_EXIT_OK || !j.by_thread)
		goto done;
	for (size_t from = 0, to; code == SS_EXIT_OK && from < nlaunches; from = to) {
		for (to = from + 1; to < nlaunches && launches[to].exec == launches[from].exec;
		     to++)
			;
		if (!several_streams(launches, from, to))
			continue;
		for (size_t i = from + 1; i < to; i++) {
			const struct launch *l = &launches[i], *p = &launches[i - 1];
			const struct correlated *rl, *rp, *before;

			if (ss_same_stream(l->stream, l->tid, p->stream, p->tid) ||
			    !call_rows_steady_seen(st, &j, l->start))
				continue;
			rl = call_rows_of(st, &j, l->tid, l->start);
			rp = call_rows_of(st, &j, p->tid, p->start);
			if (!rl || !rp || rl->device != rp->device)
				continue;
			before = work_before(st, &j, work, nwork, l->stream, l->tid, l->start);
			long long ready = l->start;
			if (before && before->e > ready)
				ready = before->e;
			if (rp->e <= ready || rl->s + ORDERED_SLACK_NS < rp->e || rl->s <= ready ||
			    timeline_off_between(g, ready, rl->s))
				continue; /* not held by P, run beside it, or not seen whole */
			struct held_site *site = held_site(&sites, &nsites, &cap_sites, l->site);
			if (!site || !held_site_add(site, &st->steps, l->start, rl->s - ready, 0)) {
				code = out_of_memory(ld);
				goto done;
			}
		}
	}
	if (code == SS_EXIT_OK)
		code = add_findings(ld, st, sites, nsites, j.seen, ss_steps_steady(&st->steps));
done:
	for (size_t i = 0; i < nlaunches; i++)
		free(launches[i].site);
	free(launches);
	free(work);
	call_rows_close(&j);
	held_sites_free(sites, nsites);
	return code;
}

const struct ss_rule ss_rule_graph_exec_shared = {
    .id = "graph-exec-shared",
    .advice = "Instantiate the graph once per stream that launches it (one executable graph per "
	      "lane), so that the lanes' launches can run side by side: launches of one "
	      "executable graph are ordered behind each other whatever their streams.",
    .phase = SS_RULE_GPU,
    .cost = SS_COST_ESTIMATE,
    .needs_enqueue_rows = 1, /* the launches and the work before them are enqueue rows */
    .min_share_permille = 10,
    .run_gpu = graph_exec_shared_rule,
};
