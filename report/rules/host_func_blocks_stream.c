/*
 * report/rules/host_func_blocks_stream.c: the host-func-blocks-stream rule (docs/rules.md), a
 * GPU-timeline rule (SS_RULE_GPU): host functions queued in a stream (cudaLaunchHostFunc,
 * cudaStreamAddCallback and the driver's cuLaunchHostFunc, cuStreamAddCallback), or captured
 * into a graph as its host node and run by each launch of the graph, that held the stream's
 * later work back while they ran on the host; the cost is the GPU idle time while they held it.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

/*
 * A host function runs on a driver thread once the stream's earlier work is done, and "will
 * block later work in the stream" until it returns (the driver API's cuStreamAddCallback). The
 * GPU timeline has no row for it, but it shows the hole it leaves: on the host function's
 * stream, the work queued just before it ended (P), the work queued just after it (N) had been
 * launched, and N started only later. Per host function the stream was held from
 * max(P's end, the host function's launch, N's launch) to N's start; what that cost is the GPU
 * idle time inside that interval on the device (other streams may have kept it busy: a
 * callback on a logging stream holds nothing the compute waits for).
 *
 * The host-function machinery has a floor of its own, some 20-100 us on an H200 between the
 * work before a tiny callback and the work after it (the clean c24, c58, d15 and d26 of
 * examples/corpus); a site whose median hold is below HOST_FUNC_MIN_HOLD_NS is a callback
 * that does little, not one that holds the stream: not flagged. P and N are found among the
 * enqueues the host recorded on the same stream handle (E1 calls, S4/S5 copies), each tied to
 * its GPU rows by its API record (GPU_JOIN_NS, as gpu.c ties GPU rows to calls, backwards), at
 * most NEIGHBOUR_WALK enqueues away (a memset or event between them has no GPU row of its own;
 * on a per-thread default stream, the same thread's only).
 * Steady host functions only (steps.h), and with the timeline sampled only the holds it saw
 * whole, scaled to all steady steps (GPU-IDLE-4).
 *
 * A host function queued while its stream was capturing (between a BeginCapture and the
 * EndCapture of that stream) never runs then: it is a host node of the graph the capture made,
 * and it runs at every launch of an executable graph instantiated from that graph (calls.ptr
 * holds the graph of captures and instantiations, calls.aux the executable of instantiations and
 * launches). Each such launch is one run of the host function, at the host function's site: P
 * is the launch itself (the host node taken as the graph's last: a host node mid-graph holds
 * the graph's own later nodes, which this does not see) and N the stream's next work.
 */
#define HOST_FUNC_MIN_HOLD_NS 150000LL
#define NEIGHBOUR_WALK	      16
#define HOST_FUNC_APIS                                                                             \
	"('cudaLaunchHostFunc', 'cudaLaunchHostFunc_ptsz', 'cudaStreamAddCallback',"               \
	" 'cudaStreamAddCallback_ptsz', 'cuLaunchHostFunc', 'cuLaunchHostFunc_ptsz',"              \
	" 'cuStreamAddCallback', 'cuStreamAddCallback_ptsz')"
/* The host functions queued, with their stream and site, in time order. */
#define HOST_FUNCS_SQL                                                                             \
	"SELECT c.stream, c.start_ns, coalesce(s.text, '" NO_SITE "'), c.tid FROM calls c"         \
	" JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"                    \
	" WHERE a.name IN " HOST_FUNC_APIS " AND c.stream IS NOT NULL ORDER BY c.start_ns"
/* Captures' begin (the runtime's, its ToGraph form, the driver's) and end:
 * LIKE patterns on apis.name, as SS_INSTANTIATE_LIKE. */
#define BEGIN_CAPTURE_LIKE "'cu%StreamBeginCapture%'"
#define END_CAPTURE_LIKE   "'cu%StreamEndCapture%'"
/* The captures (BeginCapture: 0, EndCapture: 1, with the graph it made in ptr) and the
 * instantiations (the graph read in ptr, the executable made in aux), in time order, matched
 * with the host functions in C by binary searches in sorted copies (a correlated subquery per
 * host function would read the calls table once per host function; a scan per host function
 * is quadratic in a program that captures and queues every step). */
#define CAPTURES_SQL                                                                               \
	"SELECT c.stream, c.start_ns, a.name LIKE " END_CAPTURE_LIKE ", c.ptr FROM calls c"        \
	" JOIN apis a ON a.id = c.api_id WHERE (a.name LIKE " BEGIN_CAPTURE_LIKE                   \
	" OR a.name LIKE " END_CAPTURE_LIKE ") AND c.stream IS NOT NULL ORDER BY c.start_ns"
#define INSTANTIATIONS_SQL                                                                         \
	"SELECT c.ptr, c.aux, c.start_ns FROM calls c JOIN apis a ON a.id = c.api_id"              \
	" WHERE a.name LIKE " SS_INSTANTIATE_LIKE " AND c.ptr IS NOT NULL AND c.aux IS NOT NULL"   \
	" ORDER BY c.start_ns"
/* The launches of executable graphs, in time order. */
#define GRAPH_LAUNCHES_SQL                                                                         \
	"SELECT c.aux, c.stream, c.start_ns, c.tid FROM calls c JOIN apis a ON a.id = c.api_id"    \
	" WHERE a.name LIKE " SS_GRAPH_LAUNCH_LIKE                                                 \
	" AND c.aux IS NOT NULL AND c.stream IS NOT NULL"                                          \
	" ORDER BY c.start_ns"
/* The other work queued on the streams of host functions and graph launches, by stream and
 * time. */
#define STREAM_WORK_SQL                                                                            \
	"SELECT c.stream, c.start_ns, c.tid FROM calls c JOIN apis a ON a.id = c.api_id"           \
	" WHERE c.class IN ('E1', 'S4', 'S5') AND a.name NOT IN " HOST_FUNC_APIS                   \
	" AND c.stream IN (SELECT c2.stream FROM calls c2 JOIN apis a2 ON a2.id = c2.api_id"       \
	" WHERE a2.name IN " HOST_FUNC_APIS " OR a2.name LIKE " SS_GRAPH_LAUNCH_LIKE ")"           \
	" ORDER BY c.stream, c.start_ns"

extern const struct ss_rule ss_rule_host_func_blocks_stream;

struct host_func {
	long long stream, start;
	char *site;
	long long tid;
	int graph; /* a host node, run by a graph launch */
};

static int same_stream(const struct host_func *h, const struct enqueue *q)
{
	return ss_same_stream(q->stream, q->tid, h->stream, h->tid);
}

/* The GPU idle time of DEVICE in [from, to]: the interval less the busy union inside it. */
static long long idle_between(const struct gpu_rows *g, long long device, long long from,
			      long long to)
{
	long long idle = to - from;

	for (size_t k = first_ending_after(g->busy, g->nbusy, device, from);
	     k < g->nbusy && g->busy[k].device == device && g->busy[k].s < to; k++) {
		long long s = g->busy[k].s > from ? g->busy[k].s : from;
		long long e = g->busy[k].e < to ? g->busy[k].e : to;

		if (e > s)
			idle -= e - s;
	}
	return idle > 0 ? idle : 0;
}

/* A capture call (CAPTURES_SQL) and an instantiation (INSTANTIATIONS_SQL); order: their row's
 * place in time order, the tie-break that keeps sorted copies in that order among equal keys. */
struct capture_call {
	long long stream, start;
	int end;
	long long graph; /* EndCapture: the graph it made, 0 when it failed */
	size_t order;
};

struct instantiation {
	long long graph, exec, start;
	size_t order;
};

/* An executable graph with a host node: made at `made`, its host function's site. */
struct host_node_exec {
	long long exec, made;
	const char *site; /* the host function's (owned by funcs) */
	size_t order;
};

/* The sorts below: by a key, then a time, then the row's order (a stable sort's result). */
static int compare_key_time_order(long long key_a, long long key_b, long long time_a,
				  long long time_b, size_t order_a, size_t order_b)
{
	if (key_a != key_b)
		return key_a < key_b ? -1 : 1;
	if (time_a != time_b)
		return time_a < time_b ? -1 : 1;
	return (order_a > order_b) - (order_a < order_b);
}

/* Captures by stream, then time: a host function's capture is a binary search away, so that a
 * program capturing and queueing every step for hours costs O(n log n), not O(n^2). */
static int compare_capture_by_stream(const void *a, const void *b)
{
	const struct capture_call *x = a, *y = b;

	return compare_key_time_order(x->stream, y->stream, x->start, y->start, x->order, y->order);
}

/* EndCaptures by the graph they made, then time (graph_remade) */
static int compare_capture_by_graph(const void *a, const void *b)
{
	const struct capture_call *x = a, *y = b;

	return compare_key_time_order(x->graph, y->graph, x->start, y->start, x->order, y->order);
}

static int compare_instantiation(const void *a, const void *b)
{
	const struct instantiation *x = a, *y = b;

	return compare_key_time_order(x->graph, y->graph, x->start, y->start, x->order, y->order);
}

static int compare_host_node_exec(const void *a, const void *b)
{
	const struct host_node_exec *x = a, *y = b;

	return compare_key_time_order(x->exec, y->exec, x->made, y->made, x->order, y->order);
}

/* The first of the n elements of size `size`, sorted by cmp, that cmp does not place before
 * key: a lower bound. The keys below set `order` to choose the bound: SIZE_MAX, after every
 * element of the same key and time; 0, before them. */
static size_t lower_bound(const void *base, size_t n, size_t size, const void *key,
			  int (*cmp)(const void *, const void *))
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp((const char *)base + mid * size, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The graph the capture of host function H's stream made, when H was queued while its stream
 * was capturing (the stream's last capture call at or before H a BeginCapture, its next one an
 * EndCapture), with when the capture ended; 0 otherwise. BY_STREAM: the capture calls sorted by
 * compare_capture_by_stream. */
static long long captured_into(const struct capture_call *by_stream, size_t n,
			       const struct host_func *h, long long *ended)
{
	/* past the stream's capture calls at or before H */
	struct capture_call key = {.stream = h->stream, .start = h->start, .order = SIZE_MAX};
	size_t next =
	    lower_bound(by_stream, n, sizeof(*by_stream), &key, compare_capture_by_stream);

	if (next == 0 || next == n || by_stream[next - 1].stream != h->stream ||
	    by_stream[next].stream != h->stream)
		return 0;
	if (by_stream[next - 1].end || !by_stream[next].end)
		return 0; /* not capturing, or a new capture began: H's was never ended */
	*ended = by_stream[next].start;
	return by_stream[next].graph;
}

/* Whether another capture made a graph at GRAPH's address in (from, to): a graph destroyed and
 * its address given to a new one, which an instantiation at TO may have read instead. ENDS: the
 * EndCaptures sorted by compare_capture_by_graph. */
static int graph_remade(const struct capture_call *ends, size_t n, long long graph, long long from,
			long long to)
{
	/* past the graph's EndCaptures at or before FROM */
	struct capture_call key = {.graph = graph, .start = from, .order = SIZE_MAX};
	size_t i = lower_bound(ends, n, sizeof(*ends), &key, compare_capture_by_graph);

	return i < n && ends[i].graph == graph && ends[i].start < to;
}

/* Each launch of an executable graph made from a graph with a captured host function, as one run
 * of that host function right after the launch (at its start + 1 ns: the launch is its P).
 * FUNCS holds the host functions queued (captured ones among them) when it is called. */
static int add_graph_host_nodes(struct loader *ld, struct db_state *st, struct host_func **funcs,
				size_t *nfuncs, size_t *cap_funcs)
{
	struct capture_call *caps = NULL, *ends = NULL;
	struct instantiation *insts = NULL;
	struct host_node_exec *execs = NULL;
	size_t ncaps = 0, cap_caps = 0, nends = 0, ninsts = 0, cap_insts = 0, nexecs = 0;
	size_t cap_execs = 0, ndirect = *nfuncs;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, CAPTURES_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct capture_call c = {sqlite3_column_int64(stmt, 0),
					 sqlite3_column_int64(stmt, 1), sqlite3_column_int(stmt, 2),
					 sqlite3_column_int64(stmt, 3), ncaps};
		if (!PUSH(caps, ncaps, cap_caps, c))
			code = out_of_memory(ld);
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code != SS_EXIT_OK || !ncaps)
		goto done; /* no capture: no host node */
	ends = malloc(ncaps * sizeof(*ends));
	if (!ends) {
		code = out_of_memory(ld);
		goto done;
	}
	for (size_t i = 0; i < ncaps; i++)
		if (caps[i].end)
			ends[nends++] = caps[i];
	qsort(caps, ncaps, sizeof(*caps), compare_capture_by_stream);
	qsort(ends, nends, sizeof(*ends), compare_capture_by_graph);
	code = prepare(ld, st, INSTANTIATIONS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		goto done;
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct instantiation x = {sqlite3_column_int64(stmt, 0),
					  sqlite3_column_int64(stmt, 1),
					  sqlite3_column_int64(stmt, 2), ninsts};
		if (!PUSH(insts, ninsts, cap_insts, x))
			code = out_of_memory(ld);
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code == SS_EXIT_OK && ninsts) /* (qsort's base may not be NULL, even for 0) */
		qsort(insts, ninsts, sizeof(*insts), compare_instantiation);
	for (size_t i = 0; code == SS_EXIT_OK && i < ndirect; i++) {
		long long ended = 0, graph = captured_into(caps, ncaps, &(*funcs)[i], &ended);
		struct instantiation key = {.graph = graph, .start = LLONG_MIN}; /* its first */

		/* the instantiations of that graph after its capture ended, in time order */
		for (size_t k = graph ? lower_bound(insts, ninsts, sizeof(*insts), &key,
						    compare_instantiation)
				      : ninsts;
		     code == SS_EXIT_OK && k < ninsts && insts[k].graph == graph; k++) {
			struct host_node_exec x = {insts[k].exec, insts[k].start, (*funcs)[i].site,
						   nexecs};

			if (insts[k].start <= ended ||
			    graph_remade(ends, nends, graph, ended, insts[k].start))
				continue;
			if (!PUSH(execs, nexecs, cap_execs, x))
				code = out_of_memory(ld);
		}
	}
	if (code != SS_EXIT_OK || !nexecs)
		goto done;
	qsort(execs, nexecs, sizeof(*execs), compare_host_node_exec);
	code = prepare(ld, st, GRAPH_LAUNCHES_SQL, &stmt);
	if (code != SS_EXIT_OK)
		goto done;
	while (code == SS_EXIT_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long exec = sqlite3_column_int64(stmt, 0);
		long long start = sqlite3_column_int64(stmt, 2);
		struct host_node_exec key = {.exec = exec, .made = start};
		/* the latest instantiation of that executable before the launch (among equal
		 * times, the last made) */
		size_t at =
		    lower_bound(execs, nexecs, sizeof(*execs), &key, compare_host_node_exec);

		if (at == 0 || execs[at - 1].exec != exec)
			continue;
		struct host_func f = {sqlite3_column_int64(stmt, 1), start + 1,
				      xstrdup(execs[at - 1].site), sqlite3_column_int64(stmt, 3),
				      1};
		if (!f.site || !PUSH(*funcs, *nfuncs, *cap_funcs, f)) {
			free(f.site);
			code = out_of_memory(ld);
		}
	}
	code = end_rows(ld, st, stmt, rc, code);
done:
	free(caps);
	free(ends);
	free(insts);
	free(execs);
	return code;
}

/* Loads the host functions (those graph launches run included) and the other enqueues of their
 * streams; 0 host functions: none. */
static int load_queued(struct loader *ld, struct db_state *st, struct host_func **funcs,
		       size_t *nfuncs, struct enqueue **work, size_t *nwork)
{
	sqlite3_stmt *stmt;
	size_t cap_funcs = 0;
	int rc, code = prepare(ld, st, HOST_FUNCS_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct host_func f = {sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
				      xstrdup((const char *)sqlite3_column_text(stmt, 2)),
				      sqlite3_column_int64(stmt, 3), 0};

		if (!f.site || !PUSH(*funcs, *nfuncs, cap_funcs, f)) {
			free(f.site);
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	code = end_rows(ld, st, stmt, rc, SS_EXIT_OK);
	if (code == SS_EXIT_OK && *nfuncs)
		code = add_graph_host_nodes(ld, st, funcs, nfuncs, &cap_funcs);
	if (code != SS_EXIT_OK || !*nfuncs)
		return code;
	return load_enqueues(ld, st, STREAM_WORK_SQL, work, nwork);
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

		if (median < HOST_FUNC_MIN_HOLD_NS)
			continue; /* the machinery's own floor: a callback that does little */
		struct ss_finding *f = add_held_finding(
		    ld, st, &ss_rule_host_func_blocks_stream, s, -1, s->idle,
		    format(
			"%lld %s held their stream %.3f ms in all (median %.3f ms, worst %.3f ms): "
			"the work queued behind each had been launched and waited for it; the "
			"GPU sat idle %.3f ms of that time%s",
			s->n,
			s->graph ? "runs of a host node captured into a graph, one per launch of "
				   "the graph,"
				 : "host functions",
			ms(s->held), ms(median), ms(s->worst), ms(s->idle), scaled),
		    &code);
		if (!f)
			break;
		const char *advice = ss_rule_host_func_blocks_stream.advice_for(f->detail);
		if (advice)
			f->advice = advice;
	}
	return code;
}

static int host_func_rule(struct loader *ld, struct db_state *st, const struct gpu_rows *g)
{
	struct host_func *funcs = NULL;
	struct enqueue *work = NULL;
	struct call_rows j = {0};
	struct held_site *sites = NULL;
	size_t nfuncs = 0, nwork = 0, nsites = 0, cap_sites = 0;
	int code = load_queued(ld, st, &funcs, &nfuncs, &work, &nwork);

	if (code == SS_EXIT_OK && nfuncs)
		code = call_rows_open(ld, st, g, &j);
	if (code != SS_EXIT_OK || !j.by_thread)
		goto done;
	for (size_t i = 0; i < nfuncs; i++) {
		const struct host_func *h = &funcs[i];
		const struct correlated *before = NULL, *after = NULL;
		const struct enqueue *next = NULL;
		size_t at = first_enqueue(work, nwork, h->stream, h->start);

		if (!call_rows_steady_seen(st, &j, h->start))
			continue; /* not steady, or a step the timeline saw in part */
		for (size_t k = at, walked = 0;
		     k > 0 && work[k - 1].stream == h->stream && walked < NEIGHBOUR_WALK && !before;
		     k--)
			if (same_stream(h, &work[k - 1])) {
				before = call_rows_of(st, &j, work[k - 1].tid, work[k - 1].start);
				walked++;
			}
		for (size_t k = at, walked = 0;
		     k < nwork && work[k].stream == h->stream && walked < NEIGHBOUR_WALK && !after;
		     k++)
			if (same_stream(h, &work[k])) {
				after = call_rows_of(st, &j, work[k].tid, work[k].start);
				next = &work[k];
				walked++;
			}
		if (!before || !after || before->device != after->device)
			continue;
		long long ready = before->e;
		if (h->start > ready)
			ready = h->start;
		if (next->start > ready)
			ready = next->start;
		if (after->s <= ready || timeline_off_between(g, ready, after->s))
			continue; /* nothing held back, or not seen whole */
		struct held_site *site = held_site(&sites, &nsites, &cap_sites, h->site);
		if (!site || !held_site_add(site, &st->steps, h->start, after->s - ready,
					    idle_between(g, after->device, ready, after->s))) {
			code = out_of_memory(ld);
			goto done;
		}
		site->graph |= h->graph;
	}
	code = add_findings(ld, st, sites, nsites, j.seen, ss_steps_steady(&st->steps));
done:
	for (size_t i = 0; i < nfuncs; i++)
		free(funcs[i].site);
	free(funcs);
	free(work);
	call_rows_close(&j);
	held_sites_free(sites, nsites);
	return code;
}

/* A graph's host node has a fix of its own. DETAIL: the finding's detail, or its opening (a
 * summary gives the text up to the first ';', summary.c). */
static const char *advice_for(const char *detail)
{
	if (!strstr(detail, "host node captured into a graph"))
		return NULL;
	return "Take the host node out of the graph: end the graph with an event record, and run "
	       "the host work on a thread of your own after cudaEventSynchronize on it (one launch "
	       "behind), so the next launch's work does not wait for the host.";
}

const struct ss_rule ss_rule_host_func_blocks_stream = {
    .id = "host-func-blocks-stream",
    .advice = "Take the host work out of the stream: record an event where the data is ready "
	      "and run the function on a host thread of your own after cudaEventSynchronize "
	      "(one step behind), or queue it on a side stream that waits on that event, so "
	      "the stream's later work does not wait for the host.",
    .phase = SS_RULE_GPU,
    .cost = SS_COST_ESTIMATE,
    .needs_enqueue_rows = 1, /* the host functions and their neighbours are enqueue rows */
    .min_share_permille = 10,
    .run_gpu = host_func_rule,
    .advice_for = advice_for,
};
