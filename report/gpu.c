/*
 * report/gpu.c: the GPU timeline of one database (step 5 of analysis.c's outline), only where
 * the database has CUPTI's tables: communication/compute overlap per rank, the GPU idle time
 * behind host syncs (host-sync, sync-copy: gpu_idle_ns), the step time with the GPU's work in
 * it, then the GPU-timeline rules of rules/registry.c (SS_RULE_GPU) over what it read.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "analysis_int.h"
#include "commands.h"
#include "db.h"

/* ------------------------------------------------------------------ GPU timeline */

/*
 * Step 5, only for databases with the extension tables of CUPTI (docs/cupti.md): gpu_activity
 * (kernels, copies, memsets, syncs as the GPU ran them) and gpu_api (the runtime/driver calls
 * they came from). Without them this costs one lookup (HAS_GPU_SQL). Everything is C over
 * arrays read once: interval unions are a sort and a sweep, so millions of kernels are cheap.
 *   - per rank: communication/compute overlap as HolisticTraceAnalysis defines it;
 *   - host-sync findings: the GPU idle time after each sync (gpu_idle_ns);
 *   - copy-without-overlap findings: H2D/D2H copies beside idle compute.
 * A GPU row is tied to its host call (GPU_JOIN_NS): correlation id -> gpu_api (the earliest
 * record of that id: its thread and start) -> the calls row of that thread that started last at
 * or before the API record's start, at most GPU_JOIN_NS before it.
 */
#define HAS_GPU_SQL                                                                                \
	"SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_activity'),"\
	" EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_api'),"          \
	" EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_paused')"
/* When the GPU timeline was off (syncspy_gpu_trace, SYNCSPY_CUPTI_SAMPLE: CUPTI-3, CUPTI-4) */
#define GPU_PAUSED_SQL "SELECT start_ns, end_ns FROM gpu_paused ORDER BY start_ns"
#define GPU_ACTIVITY_SQL                                                                           \
	"SELECT kind, start_ns, end_ns, coalesce(device, 0), coalesce(correlation_id, 0),"         \
	" coalesce(copy_kind, 0), coalesce(bytes, 0), coalesce(substr(name, 1, 4) = 'nccl', 0),"   \
	" coalesce(stream_id, -1)"                                                                 \
	" FROM gpu_activity WHERE " SS_GPU_TIMED("")
/* The earliest API record of each correlation id: the call the program made (when both layers
 * report a call, the driver call inside a runtime call starts later). */
#define GPU_API_SQL                                                                                \
	"SELECT correlation_id, tid, min(start_ns), max(end_ns) FROM gpu_api"                      \
	" GROUP BY correlation_id"                                                                 \
	" ORDER BY correlation_id"
#define GPU_CALLS_SQL "SELECT id, tid, start_ns, site_id FROM calls"
/* The syncs, with (for an event sync) when the event it waits on was recorded last before it */
#define GPU_SYNCS_SQL                                                                              \
	"WITH ev AS (SELECT id, max(CASE WHEN class = 'E2' THEN start_ns END) OVER (PARTITION BY"  \
	" event ORDER BY start_ns, id ROWS UNBOUNDED PRECEDING) AS recorded FROM calls"            \
	" WHERE event IS NOT NULL AND class IN ('E2', 'S3')),"                                     \
	" lanes AS (SELECT site_id, class FROM calls WHERE class IN ('S2', 'S3')"                  \
	" GROUP BY site_id, class HAVING count(DISTINCT tid) >= 2)"                                \
	" SELECT c.id, coalesce(s.text, '" NO_SITE "'), c.end_ns, c.start_ns, c.class = 'S4',"     \
	" c.tid, c.class = 'S3', ev.recorded, l.site_id IS NOT NULL"                               \
	" FROM calls c LEFT JOIN sites s ON s.id = c.site_id"                                      \
	" LEFT JOIN ev ON ev.id = c.id"                                                            \
	" LEFT JOIN lanes l ON l.site_id = c.site_id AND l.class = c.class"                        \
	" WHERE c.class IN ('S1', 'S2', 'S3', 'S4') ORDER BY c.start_ns"

/* GPU-IDLE-7: the GPU's clock may end the work a sync waited for a little after the host saw
 * the sync return */
#define GPU_LANE_SLACK_NS 1000
/* GPU-IDLE-4: a site's syncs measured behind fewer than this many, the rest unseen (the
 * timeline sampled), say too little to scale to all: one sync measured of 58 took a needless
 * per-step read for a pipeline's wait (t84); the finding keeps the host's time. */
#define SS_GPU_MIN_MEASURED 3

/* CUpti_ActivityMemcpyKind: host to device, device to host. */
#define CUPTI_MEMCPY_HTOD 1
#define CUPTI_MEMCPY_DTOH 2

static int compare_intervals(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

/* Sorts v by (device, start) and merges overlapping intervals of one device in place: the union,
 * per device, sorted. Returns its length. */
static size_t union_intervals(struct interval *v, size_t n)
{
	size_t out = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), compare_intervals);
	for (size_t i = 1; i < n; i++) {
		struct interval *last = &v[out];

		if (v[i].device == last->device && v[i].s <= last->e) {
			if (v[i].e > last->e)
				last->e = v[i].e;
		} else
			v[++out] = v[i];
	}
	return out + 1;
}

long long union_length(const struct interval *v, size_t n)
{
	long long total = 0;

	for (size_t i = 0; i < n; i++)
		total += v[i].e - v[i].s;
	return total;
}

/* Length of the intersection of two unions (each sorted and disjoint, device ignored: the
 * rank's kernels of every device count as one timeline). */
static long long intersection_length(const struct interval *a, size_t na, const struct interval *b,
				     size_t nb)
{
	long long total = 0;
	size_t i = 0, j = 0;

	while (i < na && j < nb) {
		long long s = a[i].s > b[j].s ? a[i].s : b[j].s;
		long long e = a[i].e < b[j].e ? a[i].e : b[j].e;

		if (e > s)
			total += e - s;
		if (a[i].e < b[j].e)
			i++;
		else
			j++;
	}
	return total;
}

/* The first interval of union u (sorted by device, start) of device d that ends after t, or n. */
size_t first_ending_after(const struct interval *u, size_t n, long long d, long long t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u[mid].device < d || (u[mid].device == d && u[mid].e <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && u[lo].device == d ? lo : n;
}

static int compare_targets_by_thread(const void *a, const void *b)
{
	const struct gpu_target *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->api_ns > y->api_ns) - (x->api_ns < y->api_ns);
}

int load_api_first(struct loader *ld, struct db_state *st)
{
	sqlite3_stmt *stmt;
	int rc, code;

	if (st->api_first_loaded || !st->gpu_api)
		return SS_EXIT_OK;
	st->api_first_loaded = 1;
	code = prepare(ld, st, GPU_API_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct api_first first = {sqlite3_column_int64(stmt, 0),
					  sqlite3_column_int64(stmt, 1),
					  sqlite3_column_int64(stmt, 2), column_or(stmt, 3, -1)};

		if (!PUSH(st->api_first, st->napi_first, st->cap_api_first, first)) {
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

static int compare_api_first(const void *a, const void *b)
{
	const struct api_first *x = a, *y = b;

	return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}

const struct api_first *api_first_of(const struct db_state *st, long long correlation)
{
	struct api_first key = {.correlation = correlation};

	return st->napi_first ? bsearch(&key, st->api_first, st->napi_first, sizeof(key),
					compare_api_first)
			      : NULL;
}

/* Ties each target to its host call (GPU_JOIN_NS). Reorders targets (by thread, API start). */
int join_targets(struct loader *ld, struct db_state *st, struct gpu_target *tg, size_t n)
{
	sqlite3_stmt *stmt;
	int rc, code;

	for (size_t i = 0; i < n; i++) {
		tg[i].tid = -1;
		tg[i].call_id = -1;
		tg[i].api_end = -1;
		tg[i].enclosed = 0;
	}
	if (!n || !st->gpu_api)
		return SS_EXIT_OK;
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	for (size_t i = 0; i < n; i++) {
		const struct api_first *first = api_first_of(st, tg[i].correlation);

		if (first) {
			tg[i].tid = first->tid;
			tg[i].api_ns = first->start_ns;
			tg[i].api_end = first->end_ns;
		}
	}
	qsort(tg, n, sizeof(*tg), compare_targets_by_thread);
	code = prepare(ld, st, GPU_CALLS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long id = sqlite3_column_int64(stmt, 0), tid = sqlite3_column_int64(stmt, 1);
		long long start = sqlite3_column_int64(stmt, 2);
		int has_site = sqlite3_column_type(stmt, 3) != SQLITE_NULL;
		long long site = sqlite3_column_int64(stmt, 3);
		size_t lo = 0, hi = n;

		/* the first target of this thread with api_ns >= start */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (tg[mid].tid < tid || (tg[mid].tid == tid && tg[mid].api_ns < start))
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < n && tg[i].tid == tid && tg[i].api_ns - start <= GPU_JOIN_NS;
		     i++)
			if (!tg[i].enclosed &&
			    (tg[i].call_id < 0 || start > tg[i].call_start ||
			     (start == tg[i].call_start && id > tg[i].call_id))) {
				tg[i].call_id = id;
				tg[i].call_start = start;
				tg[i].site_id = site;
				tg[i].has_site = has_site;
			}
		/* A call that started inside the API record is the record's own: a static runtime
		 * reaches the shim through the driver, so the runtime's record (cudaMemcpyAsync)
		 * starts before the call the shim recorded (cuMemcpyHtoDAsync), whose last call
		 * before it is the previous one (the step's kernel launch). The earliest such call
		 * wins over any before the record. */
		for (size_t i = lo;
		     i-- > 0 && tg[i].tid == tid && start - tg[i].api_ns <= GPU_JOIN_NS;)
			if (tg[i].api_end >= start &&
			    (!tg[i].enclosed || start < tg[i].call_start ||
			     (start == tg[i].call_start && id < tg[i].call_id))) {
				tg[i].call_id = id;
				tg[i].call_start = start;
				tg[i].site_id = site;
				tg[i].has_site = has_site;
				tg[i].enclosed = 1;
			}
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

static void gpu_rows_free(struct gpu_rows *g)
{
	free(g->busy);
	free(g->off);
	free(g->kernels);
	free(g->comm);
	free(g->compute);
	free(g->copies);
	free(g->krows);
	free(g->compute_streams);
	free(g->syncs);
	free(g->work);
}

static int load_gpu_rows(struct loader *ld, struct db_state *st, struct gpu_rows *g)
{
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, GPU_ACTIVITY_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(stmt, 0);
		struct interval iv = {sqlite3_column_int64(stmt, 3), sqlite3_column_int64(stmt, 1),
				      sqlite3_column_int64(stmt, 2)};
		long long correlation = sqlite3_column_int64(stmt, 4);
		int ok = 1;

		if (!kind)
			continue;
		if (strcmp(kind, "sync") == 0) {
			struct gpu_target t = {.correlation = correlation, .device = iv.device};

			ok = PUSH(g->syncs, g->nsyncs, g->cap_syncs, t);
		} else if (strcmp(kind, "kernel") == 0 || strcmp(kind, "memcpy") == 0 ||
			   strcmp(kind, "memset") == 0) {
			struct work_row wr = {iv.device, iv.s, iv.e, correlation,
					      sqlite3_column_int64(stmt, 8)};

			ok = PUSH(g->busy, g->nbusy, g->cap_busy, iv) &&
			     PUSH(g->work, g->nwork, g->cap_work, wr);
			if (ok && kind[0] == 'k') {
				struct kernel_row kr = {iv.device, sqlite3_column_int64(stmt, 8),
							iv.s, correlation, -1, iv.e};

				ok = PUSH(g->kernels, g->nkernels, g->cap_kernels, iv) &&
				     PUSH(g->krows, g->nkrows, g->cap_krows, kr);
				struct interval all = {0, iv.s, iv.e}; /* one timeline */

				if (ok && sqlite3_column_int(stmt, 7))
					ok = PUSH(g->comm, g->ncomm, g->cap_comm, all);
				else if (ok)
					ok = PUSH(g->compute, g->ncompute, g->cap_compute, all);
			}
			if (ok && kind[2] == 'm' && kind[3] == 'c') { /* memcpy */
				int copy_kind = sqlite3_column_int(stmt, 5);
				struct copy_row c = {iv.device,
						     iv.s,
						     iv.e,
						     sqlite3_column_int64(stmt, 6),
						     correlation,
						     sqlite3_column_int64(stmt, 8),
						     copy_kind == CUPTI_MEMCPY_HTOD};

				if (copy_kind == CUPTI_MEMCPY_HTOD || copy_kind == CUPTI_MEMCPY_DTOH)
					ok = PUSH(g->copies, g->ncopies, g->cap_copies, c);
			}
		}
		if (!ok) {
			code = out_of_memory(ld);
			break;
		}
	}
	code = end_rows(ld, st, stmt, rc, code);
	if (code != SS_EXIT_OK || !st->gpu_paused)
		return code;
	code = prepare(ld, st, GPU_PAUSED_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct interval off = {0, sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1)};

		if (!PUSH(g->off, g->noff, g->cap_off, off)) {
			code = out_of_memory(ld);
			break;
		}
	}
	return end_rows(ld, st, stmt, rc, code);
}

/* Whether the timeline was off at some time in (from, to]: then GPU activity in between may
 * have gone unrecorded, and "idle" cannot be told from "not recorded". Off intervals are
 * disjoint and in time order, so their ends are too: the first ending after FROM decides. */
int timeline_off_between(const struct gpu_rows *g, long long from, long long to)
{
	size_t lo = 0, hi = g->noff;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->off[mid].e <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->noff && g->off[lo].s < to;
}

struct gpu_site *gpu_site(struct gpu_site **sites, size_t *n, size_t *cap, const char *text,
			  int kind)
{
	for (size_t i = 0; i < *n; i++)
		if ((*sites)[i].kind == kind && strcmp((*sites)[i].site, text) == 0)
			return &(*sites)[i];
	if (!reserve(sites, cap, *n, sizeof(**sites)))
		return NULL;
	(*sites)[*n] = (struct gpu_site){.site = strdup(text), .kind = kind};
	ss_tally_init(&(*sites)[*n].tally);
	ss_tally_init(&(*sites)[*n].off_tally);
	return (*sites)[*n].site ? &(*sites)[(*n)++] : NULL;
}

void gpu_sites_free(struct gpu_site *sites, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(sites[i].site);
	free(sites);
}

/* The device of a sync call: the only device, else the one of its CUPTI sync record. */
static int sync_device(const struct gpu_rows *g, long long only, long long call_id, long long *dev)
{
	if (only >= 0) {
		*dev = only;
		return 1;
	}
	for (size_t i = 0; i < g->nsyncs; i++) /* few syncs: linear */
		if (g->syncs[i].call_id == call_id) {
			*dev = g->syncs[i].device;
			return 1;
		}
	return 0;
}

/* host-sync and sync-copy: per site, the GPU idle time each sync (S1-S4) caused (idle_behind:
 * GPU-IDLE-1 to GPU-IDLE-3); a sync with nothing after it on its device, or with the timeline
 * off at some time before that activity (gpu_paused), is skipped. Sets gpu_idle_ns of this rank's
 * host-sync and sync-copy findings: the steady syncs' for a steady finding, all of them for an
 * `info` one; and the rank's steady_gpu_idle_ns. */
/* A kernel, copy or memset, when its host call issued it (its API record's start; -1 unknown)
 * and on which thread, by (device, start): whether the GPU had work queued when a sync ended,
 * and which work a blocking copy issued itself. */
struct issued_work {
	long long device, s, e, issued, issue_end, tid, stream;
};

static int compare_issued(const void *a, const void *b)
{
	const struct issued_work *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

static struct issued_work *issued_work(const struct db_state *st, const struct gpu_rows *g,
				       size_t *n)
{
	struct issued_work *w = malloc((g->nwork + 1) * sizeof(*w));

	if (!w)
		return NULL;
	for (size_t i = 0; i < g->nwork; i++) {
		const struct api_first *a = api_first_of(st, g->work[i].correlation);

		w[i] = (struct issued_work){
		    g->work[i].device,	g->work[i].s,	 g->work[i].e,	   a ? a->start_ns : -1,
		    a ? a->end_ns : -1, a ? a->tid : -1, g->work[i].stream};
	}
	qsort(w, g->nwork, sizeof(*w), compare_issued);
	*n = g->nwork;
	return w;
}

/* The first work item of device d that starts at or after t, or n. */
static size_t first_starting_at(const struct issued_work *w, size_t n, long long d, long long t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w[mid].device < d || (w[mid].device == d && w[mid].s < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the first kernel or copy to start on device d at or after t had been issued before
 * t: then the GPU was not waiting for the host at t (what idle there was is the GPU's own
 * scheduling: the next work was queued). */
static int queued_at(const struct issued_work *w, size_t n, long long d, long long t)
{
	size_t lo = first_starting_at(w, n, d, t);

	return lo < n && w[lo].device == d && w[lo].issued >= 0 && w[lo].issued < t;
}

/* GPU-IDLE-5: the host's timed calls (sync points, allocations, stream-ordered allocations:
 * those that end after they start), per thread in time order. The host time a sync's gap spent
 * inside them is theirs (their findings' cost: an allocation the pool maps again, a free that
 * syncs the device), not the sync's. */
struct host_call {
	long long tid, s, e;
};
struct host_calls {
	struct host_call *call;
	size_t n, cap;
};
#define HOST_CALLS_SQL                                                                             \
	"SELECT tid, start_ns, end_ns FROM calls WHERE end_ns > start_ns ORDER BY tid, start_ns"

static int load_host_calls(struct loader *ld, struct db_state *st, struct host_calls *h)
{
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, HOST_CALLS_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (!reserve(&h->call, &h->cap, h->n, sizeof(*h->call))) {
			code = out_of_memory(ld);
			break;
		}
		h->call[h->n++] = (struct host_call){sqlite3_column_int64(stmt, 0),
						     sqlite3_column_int64(stmt, 1),
						     sqlite3_column_int64(stmt, 2)};
	}
	return end_rows(ld, st, stmt, rc, code);
}

/* The host time thread tid spent in timed calls that ran inside [from, to]. One still running at
 * `to` (a later sync the host entered while the GPU ran work the timeline did not show as
 * busy) is not counted: what it waited for is not known here. */
static long long host_time_in(const struct host_calls *h, long long tid, long long from,
			      long long to)
{
	size_t lo = 0, hi = h->n;
	long long sum = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->call[mid].tid < tid || (h->call[mid].tid == tid && h->call[mid].s < from))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < h->n && h->call[lo].tid == tid && h->call[lo].s < to; lo++)
		if (h->call[lo].e <= to)
			sum += h->call[lo].e - h->call[lo].s;
	return sum;
}

/* A sync of the host thread tid over [start, end] on device dev, and the GPU idle time it
 * caused (GPU-IDLE-1 to GPU-IDLE-3); returns 1 with *idle set, 0 when it cannot be measured
 * (nothing after it on the device), -1 when the timeline was off in between (GPU-IDLE-4). */
struct sync_call {
	long long dev, tid, start, end;
	int copy;	   /* a blocking copy (S4): it issues work of its own */
	int earlier_event; /* an event sync (S3) on an event recorded in an earlier step */
};

/* Whether work X is the call's own: issued inside the call, or by a runtime call around it (a
 * static runtime's copy reaches the shim as the driver call inside cudaMemcpy: its API record,
 * the runtime's, starts before the call the shim recorded and ends after it). */
static int issued_by(const struct issued_work *x, const struct sync_call *c)
{
	return x->tid == c->tid && x->issued >= 0 &&
	       ((x->issued >= c->start && x->issued <= c->end) ||
		(x->issued <= c->start && x->issue_end >= c->end));
}

static int idle_behind(const struct gpu_rows *g, const struct issued_work *w, size_t nw,
		       const struct host_calls *h, const struct sync_call *c, long long *idle)
{
	size_t k = first_ending_after(g->busy, g->nbusy, c->dev, c->end);

	*idle = 0;
	/* GPU-IDLE-2: a wait on an event of an earlier step is a ring's or a double buffer's
	 * flow control (or a result read a step late, as the advice says): it waits on old work,
	 * not on the queue the host just filled. The host's rows say so, so it holds with the
	 * timeline off too: a sampled run whose windows missed every one of a ring's waits gave
	 * them the host's time for cost (t603). A last sync with nothing after it on a timeline
	 * that stayed on is still not measurable, as any other. */
	int off_after = timeline_off_between(g, c->end, k == g->nbusy ? LLONG_MAX : g->busy[k].s);
	if (!c->copy && c->earlier_event && (k < g->nbusy || off_after))
		return 1;
	if (k == g->nbusy) /* nothing ran on the device after it, or nothing was recorded */
		return off_after ? -1 : 0;
	if (!c->copy) {
		/* GPU-IDLE-1: busy when the sync ended (a pipeline's wait), or the next work was
		 * queued before its end: the GPU was not waiting for the host */
		if (off_after)
			return -1; /* the timeline was off in between: not measured (CUPTI-3) */
		if (g->busy[k].s <= c->end || queued_at(w, nw, c->dev, c->end))
			return 1;
		*idle = g->busy[k].s - c->end;
		/* GPU-IDLE-5: less the host's time in other timed calls before that work */
		*idle -= host_time_in(h, c->tid, c->end, g->busy[k].s);
		if (*idle < 0)
			*idle = 0;
		/* GPU-IDLE-2: the sync waited for the GPU when work ran on the device during it.
		 * One that found the device idle drained nothing: the GPU idled already, behind the
		 * host (a host-bound step), and what the sync took from it is the call's own time.
		 */
		if (k == 0 || g->busy[k - 1].device != c->dev || g->busy[k - 1].e < c->start) {
			long long own_time = c->end - c->start;
			int before = k > 0 && g->busy[k - 1].device == c->dev;

			/* GPU-IDLE-4: "idle" since the last work seen, but the timeline was off
			 * since then (a window opened while work queued before it ran, on
			 * another stream or behind an event): whether the sync drained work is
			 * not known */
			if (timeline_off_between(g, before ? g->busy[k - 1].e : LLONG_MIN, c->end))
				return -1;

			if (*idle > own_time)
				*idle = own_time;
		}
		return 1;
	}
	/* GPU-IDLE-3: a blocking copy issues its own copy (on the GPU before, during or just
	 * after the call): that copy is no work the GPU had queued. Its time inside the call
	 * (the host and the compute both waiting on the transfer, which a pinned asynchronous
	 * copy would overlap) counts, and so does the gap after the call until the first work
	 * the call did not issue, less the copy's own time in that gap; nothing counts when
	 * other work was running at the call's end or the next work was queued before it. */
	long long own_in = 0, own_after = 0;
	size_t i = first_starting_at(w, nw, c->dev, c->start);
	/* GPU-IDLE-4: its own copy is part of what it cost, so the timeline must have been on
	 * through the call: a window that opened during it (at another thread's sync point,
	 * CUPTI-4) saw its gap and not its copy (t603) */
	if (timeline_off_between(g, c->start, c->end))
		return -1;
	/* earlier work running through the call's end (a union of busy intervals also holds the
	 * call's own copy, whose GPU end may pass the call's by the clocks' skew: not that) */
	if (g->busy[k].s <= c->end && g->busy[k].s < c->start)
		for (size_t j = i; j-- > 0 && w[j].device == c->dev && w[j].e > g->busy[k].s;)
			if (w[j].e > c->end && !issued_by(&w[j], c))
				return 1;
	const struct issued_work *next = NULL;

	for (; i < nw && w[i].device == c->dev && !next; i++) {
		const struct issued_work *x = &w[i];
		int own = issued_by(x, c);

		if (own) {
			long long a = x->s > c->start ? x->s : c->start;
			long long b = x->e < c->end ? x->e : c->end;

			own_in += b > a ? b - a : 0;
			a = x->s > c->end ? x->s : c->end;
			own_after += x->e > a ? x->e - a : 0;
		} else if (x->s < c->end) {
			if (x->e > c->end)
				return 1; /* other work running at the call's end */
		} else
			next = x;
	}
	if (!next)
		return timeline_off_between(g, c->end, LLONG_MAX) ? -1 : 0;
	if (timeline_off_between(g, c->end, next->s))
		return -1;
	if (next->issued >= 0 && next->issued < c->end)
		return 1; /* queued before the call ended */
	long long gap = next->s - c->end - own_after;

	*idle = own_in + (gap > 0 ? gap : 0);
	return 1;
}

size_t traced_steps(const struct db_state *st, const struct gpu_rows *g, unsigned char **traced)
{
	size_t steady = ss_steps_steady(&st->steps), n = 0;

	*traced = NULL;
	if (!g->noff || !steady)
		return steady;
	*traced = calloc(steady, 1);
	if (!*traced)
		return SIZE_MAX; /* out of memory */
	for (size_t i = 0; i < steady; i++) {
		size_t step = st->steps.first_steady + i;

		(*traced)[i] = !timeline_off_between(g, st->steps.start[step] - 1,
						     st->steps.start[step + 1]);
		n += (*traced)[i];
	}
	return n;
}

/* GPU-IDLE-6: a steady sync whose next work on its device was issued, or started, after the
 * steady steps ended, and that was followed by an idle of more than FINAL_DRAIN_STEPS steps, is
 * the loop's final drain: the gap after it is the program's teardown (a reference solve on the
 * host before the results are read back: c110 of examples/corpus), no cost of the loop. An idle
 * of a step's order is the last iteration's own (the step detection may count the loop's last
 * iteration as teardown: t221). The start counts too: a static runtime's API record of the next
 * copy may start a little before the driver call the shim recorded, inside the last step. */
#define FINAL_DRAIN_STEPS 4
static int loop_final_drain(const struct db_state *st, const struct issued_work *w, size_t nw,
			    const struct sync_call *c, long long idle)
{
	size_t step, lo = first_starting_at(w, nw, c->dev, c->end);

	if (st->steps.step_ns <= 0 || idle <= FINAL_DRAIN_STEPS * st->steps.step_ns ||
	    ss_steps_phase(&st->steps, c->start, &step) != SS_PHASE_STEADY || lo >= nw ||
	    w[lo].device != c->dev)
		return 0;
	return (w[lo].issued >= 0 &&
		ss_steps_phase(&st->steps, w[lo].issued, &step) == SS_PHASE_TEARDOWN) ||
	       ss_steps_phase(&st->steps, w[lo].s, &step) == SS_PHASE_TEARDOWN;
}

/* GPU-IDLE-7: whether another thread's work ran on another stream of the device during a sync
 * of a site that several threads sync at (request threads, each waiting for its own stream: c109
 * of examples/corpus): lanes side by side. The stream it waited for is that of the last work to
 * end by its end. */
static int other_lane_beside(const struct issued_work *w, size_t nw, const struct sync_call *c)
{
	long long synced = -1, last_end = LLONG_MIN;
	/* work that began a second before the sync, at most: a bound on the scan */
	size_t lo = first_starting_at(w, nw, c->dev, c->start - 1000000000LL);

	for (size_t j = lo; j < nw && w[j].device == c->dev && w[j].s < c->end; j++)
		if (w[j].e <= c->end + GPU_LANE_SLACK_NS && w[j].e > last_end) {
			last_end = w[j].e;
			synced = w[j].stream;
		}
	for (size_t j = lo; j < nw && w[j].device == c->dev && w[j].s < c->end; j++)
		if (w[j].e > c->start && w[j].stream != synced && w[j].tid >= 0 &&
		    w[j].tid != c->tid)
			return 1;
	return 0;
}

/* GPU-IDLE-7: a site's lanes ran side by side when a quarter of its syncs the timeline saw had
 * another lane's work beside them (c118 of examples/corpus: 16 of 30), and then each of its syncs
 * is one lane's, the others' beside it or not (in c118 a lane's GPU work is short beside its host
 * work); lanes that a lock held across the sync serializes never do (c105: 0 of 53), and there
 * the next lane's work waited for the sync. */
static int lanes_side_by_side(const struct gpu_site *site)
{
	return site->lane_beside > 0 && site->lane_beside * 4 >= site->lane_seen;
}

/* GPU-IDLE-7, the first pass over GPU_SYNCS_SQL's rows (STMT, reset after; finalized on an
 * error): each site that several threads sync at gets its lane_seen and lane_beside. */
static int count_lanes(struct loader *ld, struct db_state *st, sqlite3_stmt *stmt,
		       const struct gpu_rows *g, long long only, const struct issued_work *w,
		       size_t nw, struct gpu_site **sites, size_t *n, size_t *cap)
{
	int rc;

	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long dev, id = sqlite3_column_int64(stmt, 0);
		const char *text = (const char *)sqlite3_column_text(stmt, 1);

		if (!sqlite3_column_int(stmt, 8) || !sync_device(g, only, id, &dev))
			continue;
		struct sync_call call = {.dev = dev,
					 .tid = sqlite3_column_int64(stmt, 5),
					 .start = sqlite3_column_int64(stmt, 3),
					 .end = sqlite3_column_int64(stmt, 2)};
		if (timeline_off_between(g, call.start, call.end))
			continue;
		struct gpu_site *site = gpu_site(sites, n, cap, text ? text : NO_SITE, 0);

		if (!site) {
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
		site->lane_seen++;
		site->lane_beside += other_lane_beside(w, nw, &call);
	}
	if (rc != SQLITE_DONE)
		return step_failed(ld, st, stmt, rc);
	sqlite3_reset(stmt);
	return SS_EXIT_OK;
}

/* GPU-IDLE-4: what N measured items came to, scaled to TOTAL of them (no overflow: 128 bits). */
long long scale_to(long long value, long long n, long long total)
{
	if (n <= 0 || total == n)
		return value;
	return (long long)((__int128)value * total / n);
}

static int gpu_idle_rule(struct loader *ld, struct db_state *st, struct gpu_rows *g)
{
	struct issued_work *work = NULL;
	size_t nwork = 0;
	struct gpu_site *sites = NULL;
	size_t nsites = 0, cap = 0;
	long long only = g->nbusy ? g->busy[0].device : -1;
	sqlite3_stmt *stmt;
	long long steady_measured = 0, steady_off = 0; /* steady syncs seen, and missed (off) */
	struct host_calls host = {0};
	int rc, code;

	for (size_t i = 1; i < g->nbusy; i++)
		if (g->busy[i].device != only)
			only = -1;
	if (only < 0 && g->nsyncs) {
		code = join_targets(ld, st, g->syncs, g->nsyncs);
		if (code != SS_EXIT_OK)
			return code;
	}
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	work = issued_work(st, g, &nwork);
	if (!work)
		return out_of_memory(ld);
	code = load_host_calls(ld, st, &host);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, GPU_SYNCS_SQL, &stmt);
	if (code == SS_EXIT_OK)
		code = count_lanes(ld, st, stmt, g, only, work, nwork, &sites, &nsites, &cap);
	if (code != SS_EXIT_OK) {
		free(work);
		free(host.call);
		gpu_sites_free(sites, nsites);
		return code;
	}
	st->rank->steady_gpu_idle_ns = 0;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		long long id = sqlite3_column_int64(stmt, 0), end = sqlite3_column_int64(stmt, 2);
		const char *text = (const char *)sqlite3_column_text(stmt, 1);
		long long start = sqlite3_column_int64(stmt, 3);
		int copy = sqlite3_column_int(stmt, 4);
		long long tid = sqlite3_column_int64(stmt, 5);
		int event_sync = sqlite3_column_int(stmt, 6);
		long long recorded = column_or(stmt, 7, -1);
		size_t sync_step, record_step;
		struct gpu_site *site;
		long long dev, idle;
		size_t step;

		if (!sync_device(g, only, id, &dev))
			continue;
		struct sync_call call = {dev, tid, start, end, copy, 0};

		if (event_sync && recorded >= 0) {
			enum ss_phase ps = ss_steps_phase(&st->steps, start, &sync_step);
			enum ss_phase pr = ss_steps_phase(&st->steps, recorded, &record_step);

			/* recorded in an earlier step, or before the steps began */
			call.earlier_event = ps == SS_PHASE_STEADY &&
					     (pr != SS_PHASE_STEADY || record_step < sync_step);
		}

		int measured = idle_behind(g, work, nwork, &host, &call, &idle);
		if (!measured)
			continue;
		site = gpu_site(&sites, &nsites, &cap, text ? text : NO_SITE, copy);
		if (!site) {
			code = out_of_memory(ld);
			break;
		}
		if (measured > 0 && idle > 0 &&
		    ((!copy && loop_final_drain(st, work, nwork, &call, idle)) ||
		     (sqlite3_column_int(stmt, 8) &&
		      (lanes_side_by_side(site) || other_lane_beside(work, nwork, &call)))))
			idle = 0;
		int steady = ss_steps_phase(&st->steps, start, &step) == SS_PHASE_STEADY;
		if (measured < 0) { /* GPU-IDLE-4: counted, to scale the others to it */
			ss_tally_add(&site->off_tally, &st->steps, start, 0, 1);
			steady_off += steady;
			continue;
		}
		site->n++;
		site->ns += idle;
		ss_tally_add(&site->tally, &st->steps, start, idle, 1);
		if (steady) {
			st->rank->steady_gpu_idle_ns += idle;
			steady_measured++;
		}
	}
	/* GPU-IDLE-4: the steady syncs the timeline missed idled as the ones it saw, on average;
	 * too few seen to stand for them, unknown as none */
	if (steady_off && steady_measured >= SS_GPU_MIN_MEASURED)
		st->rank->steady_gpu_idle_ns = scale_to(st->rank->steady_gpu_idle_ns, steady_measured,
							steady_measured + steady_off);
	else if (steady_off)
		st->rank->steady_gpu_idle_ns = -1; /* unknown, not 0 */
	code = end_rows(ld, st, stmt, rc, code);
	for (size_t i = 0; code == SS_EXIT_OK && i < ld->report->nfindings; i++) {
		struct ss_finding *f = &ld->report->findings[i];
		const struct gpu_site *hit = NULL;
		int copy = f->rule == ss_rule_sync_copy.id, steady;
		long long idle = 0;
		char *detail;

		if (f->rule != ss_rule_host_sync.id && !copy)
			continue;
		steady = strcmp(f->phase, "steady") == 0;
		for (size_t j = 0; j < nsites && !hit; j++)
			if (sites[j].kind == copy && strcmp(sites[j].site, f->site) == 0)
				hit = &sites[j];
		long long seen = 0, missed = 0; /* GPU-IDLE-4 */
		if (hit) {
			seen = steady ? hit->tally.n : hit->tally.all_n;
			missed = steady ? hit->off_tally.n : hit->off_tally.all_n;
		}
		/* GPU-IDLE-4: none of these syncs measured, or too few to stand for the rest */
		if (hit && missed && seen < SS_GPU_MIN_MEASURED && (seen || !copy)) {
			detail = seen ? format("%s; GPU idle behind it: measured behind only %lld of "
					       "these %lld syncs (the GPU timeline sampled), too few to "
					       "stand for the others: judged by the host's time",
					       f->detail, seen, seen + missed)
				      : format("%s; GPU idle behind it: not measured (the GPU "
					       "timeline was off behind all %lld of these syncs)",
					       f->detail, missed);
			if (!detail) {
				code = out_of_memory(ld);
				break;
			}
			free(f->detail);
			f->detail = detail;
			continue;
		}
		if (hit && seen == 0)
			hit = NULL; /* none measured in this phase */
		if (hit)
			f->gpu_idle_ns = idle =
			    scale_to(steady ? hit->tally.ns : hit->tally.all_ns, seen, seen + missed);
		if (copy && !hit)
			continue; /* a blocking copy says nothing when nothing is measured */
		if (hit && missed)
			detail = format("%s; GPU idle behind it: %.3f ms (measured behind %lld of "
					"these %lld syncs while the GPU timeline was on, scaled to all)",
					f->detail, ms(idle), seen, seen + missed);
		else
			detail = hit ? format("%s; GPU idle behind it: %.3f ms", f->detail, ms(idle))
				     : format("%s; GPU idle behind it: not measurable (no GPU "
					      "activity after these syncs)",
					      f->detail);
		if (!detail) {
			code = out_of_memory(ld);
			break;
		}
		free(f->detail);
		f->detail = detail;
	}
	free(work);
	free(host.call);
	gpu_sites_free(sites, nsites);
	return code;
}

int compare_gpu_sites(const void *a, const void *b)
{
	return strcmp(((const struct gpu_site *)a)->site, ((const struct gpu_site *)b)->site);
}

static int compare_krows_by_stream(const void *a, const void *b)
{
	const struct kernel_row *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

/* Fills krows[].launch_ns (the earliest API record of the kernel's correlation id: the call the
 * program made), then sorts krows by (device, stream, start). */
static int kernel_launch_times(struct loader *ld, struct db_state *st, struct gpu_rows *g)
{
	int code;

	if (!g->nkrows)
		return SS_EXIT_OK;
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	for (size_t i = 0; i < g->nkrows; i++) {
		const struct api_first *first = api_first_of(st, g->krows[i].correlation);

		if (first)
			g->krows[i].launch_ns = first->start_ns;
	}
	qsort(g->krows, g->nkrows, sizeof(*g->krows), compare_krows_by_stream);
	/* One pass over the sorted rows: per device, the stream whose kernels ran longest (a
	 * loader stream runs as many kernels as the compute stream, a short one per batch). */
	long long best_ns = 0;
	for (size_t i = 0; i < g->nkrows;) {
		size_t j = i;
		long long ns = 0;

		while (j < g->nkrows && g->krows[j].device == g->krows[i].device &&
		       g->krows[j].stream == g->krows[i].stream) {
			ns += g->krows[j].e - g->krows[j].s;
			j++;
		}
		struct compute_stream cs = {g->krows[i].device, g->krows[i].stream};
		struct compute_stream *last =
		    g->ncompute_streams ? &g->compute_streams[g->ncompute_streams - 1] : NULL;

		if (!last || last->device != cs.device) {
			if (!PUSH(g->compute_streams, g->ncompute_streams, g->cap_compute_streams,
				  cs))
				return out_of_memory(ld);
			best_ns = ns;
		} else if (ns > best_ns) {
			*last = cs;
			best_ns = ns;
		}
		i = j;
	}
	return SS_EXIT_OK;
}

/* The compute stream of a device (the stream whose kernels ran longest); -2 when it ran none.
 * A few devices: a linear search. */
long long compute_stream_of(const struct gpu_rows *g, long long device)
{
	for (size_t i = 0; i < g->ncompute_streams; i++)
		if (g->compute_streams[i].device == device)
			return g->compute_streams[i].stream;
	return -2;
}

int kernel_between(const struct gpu_rows *g, long long device, long long from, long long to)
{
	size_t k = first_ending_after(g->kernels, g->nkernels, device, from);

	return k < g->nkernels && g->kernels[k].s < to;
}

long long copy_start_slack(const struct correlated *r)
{
	return (r->e - r->s) / 4 > COPY_START_SLACK_MIN_NS ? (r->e - r->s) / 4
							   : COPY_START_SLACK_MIN_NS;
}

static int compare_copy_pointers(const void *a, const void *b)
{
	const struct copy_row *x = *(const struct copy_row *const *)a,
			      *y = *(const struct copy_row *const *)b;

	return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}

const struct copy_row **copies_by_correlation(const struct gpu_rows *g)
{
	const struct copy_row **index = malloc((g->ncopies ? g->ncopies : 1) * sizeof(*index));

	if (!index)
		return NULL;
	for (size_t i = 0; i < g->ncopies; i++)
		index[i] = &g->copies[i];
	qsort(index, g->ncopies, sizeof(*index), compare_copy_pointers);
	return index;
}

const struct copy_row *copy_of_correlation(const struct copy_row **index, size_t n,
					   long long correlation)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (index[mid]->correlation < correlation)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && index[lo]->correlation == correlation ? index[lo] : NULL;
}

/* The first kernel of (device, stream) that starts at or after t, or NULL. */
const struct kernel_row *next_kernel_on_stream(const struct gpu_rows *g, long long device,
					       long long stream, long long t)
{
	size_t lo = 0, hi = g->nkrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct kernel_row *k = &g->krows[mid];

		if (k->device < device || (k->device == device && k->stream < stream) ||
		    (k->device == device && k->stream == stream && k->s < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->nkrows && g->krows[lo].device == device && g->krows[lo].stream == stream
		   ? &g->krows[lo]
		   : NULL;
}

/* Whether the database has the GPU tables (one lookup of the schema). */
int check_gpu_tables(struct loader *ld, struct db_state *st)
{
	sqlite3_stmt *stmt;
	int code = query_row(ld, st, HAS_GPU_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	st->rank->gpu = sqlite3_column_int(stmt, 0);
	st->gpu_api = sqlite3_column_int(stmt, 1);
	st->gpu_paused = sqlite3_column_int(stmt, 2);
	sqlite3_finalize(stmt);
	return SS_EXIT_OK;
}

/*
 * The step time with the GPU's work in it. A host that runs ahead (syncing once at the end)
 * enqueues a step in microseconds while the GPU takes milliseconds: its host steps say nothing
 * of throughput. The steady steps end when the last kernel or copy they issued has run (STEPS-1:
 * issued by a call in a steady step); their time over their number is the step time, when it is
 * longer than the host's median step.
 */
static int gpu_step_time(struct loader *ld, struct db_state *st, const struct gpu_rows *g)
{
	struct ss_rank *rk = st->rank;
	long long end, first;
	size_t steady = ss_steps_steady(&st->steps), step;
	int code;

	if (!steady)
		return SS_EXIT_OK;
	code = load_api_first(ld, st);
	if (code != SS_EXIT_OK)
		return code;
	first = st->steps.start[st->steps.first_steady];
	end = st->steps.start[st->steps.nsteps];
	for (size_t i = 0; i < g->nkrows; i++) {
		const struct api_first *a = api_first_of(st, g->krows[i].correlation);

		if (a && g->krows[i].e > end &&
		    ss_steps_phase(&st->steps, a->start_ns, &step) == SS_PHASE_STEADY)
			end = g->krows[i].e;
	}
	for (size_t i = 0; i < g->ncopies; i++) {
		const struct api_first *a = api_first_of(st, g->copies[i].correlation);

		if (a && g->copies[i].e > end &&
		    ss_steps_phase(&st->steps, a->start_ns, &step) == SS_PHASE_STEADY)
			end = g->copies[i].e;
	}
	if ((end - first) / (long long)steady > rk->step_ns)
		rk->step_ns = (end - first) / (long long)steady;
	return SS_EXIT_OK;
}

/* Step 5 (nothing without the GPU tables): overlap per rank, the GPU idle time behind host syncs
 * and the step time, then the GPU-timeline rules. */
int run_gpu(struct loader *ld, struct db_state *st)
{
	struct ss_rank *rk = st->rank;
	struct gpu_rows g = {0};
	int code;

	if (!rk->gpu)
		return SS_EXIT_OK;
	code = load_gpu_rows(ld, st, &g);
	if (code == SS_EXIT_OK) {
		long long during;

		g.nbusy = union_intervals(g.busy, g.nbusy);
		g.nkernels = union_intervals(g.kernels, g.nkernels);
		g.ncomm = union_intervals(g.comm, g.ncomm);
		g.ncompute = union_intervals(g.compute, g.ncompute);
		rk->comm_ns = union_length(g.comm, g.ncomm);
		during = intersection_length(g.comm, g.ncomm, g.compute, g.ncompute);
		rk->comm_overlap = rk->comm_ns > 0 ? (double)during / (double)rk->comm_ns : -1;
		rk->exposed_comm_ns = rk->comm_ns - during;
		code = gpu_idle_rule(ld, st, &g);
	}
	if (code == SS_EXIT_OK)
		code = gpu_step_time(ld, st, &g);
	if (code == SS_EXIT_OK)
		code = kernel_launch_times(ld, st, &g);
	/* the GPU-timeline rules (SS_RULE_GPU), in registry order */
	for (size_t r = 0; code == SS_EXIT_OK && r < ss_nrules; r++)
		if (ss_rules[r]->phase == SS_RULE_GPU &&
		    !(st->rank->aggregate && ss_rules[r]->needs_enqueue_rows)) /* ANALYSIS-6 */
			code = ss_rules[r]->run_gpu(ld, st, &g);
	gpu_rows_free(&g);
	return code;
}

/* ------------------------------------------------------------------ a call's GPU rows */

static int compare_correlated(const void *a, const void *b)
{
	const struct correlated *x = a, *y = b;

	return (x->correlation > y->correlation) - (x->correlation < y->correlation);
}

struct correlated *correlate_work(const struct gpu_rows *g, size_t *n)
{
	struct correlated *rows = malloc((g->nwork ? g->nwork : 1) * sizeof(*rows));
	size_t m = 0;

	if (!rows)
		return NULL;
	for (size_t i = 0; i < g->nwork; i++)
		rows[i] = (struct correlated){g->work[i].correlation, g->work[i].device,
					      g->work[i].s, g->work[i].e};
	qsort(rows, g->nwork, sizeof(*rows), compare_correlated);
	for (size_t i = 0; i < g->nwork; i++) {
		if (m && rows[m - 1].correlation == rows[i].correlation) {
			if (rows[i].s < rows[m - 1].s)
				rows[m - 1].s = rows[i].s;
			if (rows[i].e > rows[m - 1].e)
				rows[m - 1].e = rows[i].e;
		} else {
			rows[m++] = rows[i];
		}
	}
	*n = m;
	return rows;
}

static int compare_api_by_thread(const void *a, const void *b)
{
	const struct api_first *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

struct api_first *api_by_thread(const struct db_state *st)
{
	struct api_first *by_thread =
	    malloc((st->napi_first ? st->napi_first : 1) * sizeof(*by_thread));

	if (!by_thread)
		return NULL;
	if (st->napi_first)
		memcpy(by_thread, st->api_first, st->napi_first * sizeof(*by_thread));
	qsort(by_thread, st->napi_first, sizeof(*by_thread), compare_api_by_thread);
	return by_thread;
}

/* The API record of the call a thread made at START: the record that encloses it (a static
 * runtime's record starts before the driver call the shim recorded), else the first that
 * starts at or after it, within GPU_JOIN_NS. BY_THREAD is sorted by (tid, start). */
static const struct api_first *api_of_call(const struct api_first *by_thread, size_t n,
					   long long tid, long long start)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first record of the thread starting after START */
		size_t mid = lo + (hi - lo) / 2;

		if (by_thread[mid].tid < tid ||
		    (by_thread[mid].tid == tid && by_thread[mid].start_ns <= start))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && by_thread[lo - 1].tid == tid && by_thread[lo - 1].end_ns >= start)
		return &by_thread[lo - 1];
	if (lo > 0 && by_thread[lo - 1].tid == tid && by_thread[lo - 1].start_ns == start)
		return &by_thread[lo - 1];
	if (lo < n && by_thread[lo].tid == tid && by_thread[lo].start_ns - start <= GPU_JOIN_NS)
		return &by_thread[lo];
	return NULL;
}

const struct correlated *work_of_call(const struct api_first *by_thread, size_t napi,
				      const struct correlated *rows, size_t nrows, long long tid,
				      long long start)
{
	const struct api_first *a = api_of_call(by_thread, napi, tid, start);
	struct correlated key;

	if (!a)
		return NULL;
	key.correlation = a->correlation;
	return bsearch(&key, rows, nrows, sizeof(key), compare_correlated);
}

/* ------------------------------------------------------------------ a GPU rule's calls and holds
 */

int call_rows_open(struct loader *ld, struct db_state *st, const struct gpu_rows *g,
		   struct call_rows *j)
{
	int code = load_api_first(ld, st);

	memset(j, 0, sizeof(*j));
	if (code != SS_EXIT_OK || !st->napi_first || !ss_steps_steady(&st->steps))
		return code;
	j->seen = traced_steps(st, g, &j->traced);
	j->by_thread = api_by_thread(st);
	j->rows = correlate_work(g, &j->nrows);
	if (j->seen == SIZE_MAX || !j->by_thread || !j->rows) {
		call_rows_close(j);
		return out_of_memory(ld);
	}
	if (g->noff && !j->seen)
		call_rows_close(j); /* the timeline saw no steady step whole */
	return SS_EXIT_OK;
}

void call_rows_close(struct call_rows *j)
{
	free(j->by_thread);
	free(j->rows);
	free(j->traced);
	memset(j, 0, sizeof(*j));
}

const struct correlated *call_rows_of(const struct db_state *st, const struct call_rows *j,
				      long long tid, long long start)
{
	return work_of_call(j->by_thread, st->napi_first, j->rows, j->nrows, tid, start);
}

int call_rows_steady_seen(const struct db_state *st, const struct call_rows *j, long long t)
{
	size_t step;

	return ss_steps_phase(&st->steps, t, &step) == SS_PHASE_STEADY &&
	       (!j->traced || j->traced[step - st->steps.first_steady]);
}

void held_sites_free(struct held_site *sites, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(sites[i].site);
		free(sites[i].holds);
	}
	free(sites);
}

struct held_site *held_site(struct held_site **sites, size_t *n, size_t *cap, const char *text)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*sites)[i].site, text) == 0)
			return &(*sites)[i];
	if (!reserve(sites, cap, *n, sizeof(**sites)))
		return NULL;
	struct held_site *s = &(*sites)[*n];
	memset(s, 0, sizeof(*s));
	s->site = xstrdup(text);
	if (!s->site)
		return NULL;
	ss_tally_init(&s->tally);
	(*n)++;
	return s;
}

int held_site_add(struct held_site *s, const struct ss_steps *steps, long long start,
		  long long held, long long idle)
{
	if (!PUSH(s->holds, s->nholds, s->cap_holds, held))
		return 0;
	s->n++;
	s->held += held;
	s->idle += idle;
	if (held > s->worst)
		s->worst = held;
	ss_tally_add(&s->tally, steps, start, idle, 1);
	return 1;
}

static int compare_long_long(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

long long held_site_finish(struct held_site *s, size_t seen, size_t steady)
{
	long long median;

	qsort(s->holds, s->nholds, sizeof(*s->holds), compare_long_long);
	median = s->holds[s->nholds / 2];
	if (seen < steady) { /* GPU-IDLE-4 */
		s->n = scale_to(s->n, (long long)seen, (long long)steady);
		s->idle = scale_to(s->idle, (long long)seen, (long long)steady);
		s->held = scale_to(s->held, (long long)seen, (long long)steady);
		s->bytes = scale_to(s->bytes, (long long)seen, (long long)steady);
		s->tally.steps = scale_to(s->tally.steps, (long long)seen, (long long)steady);
	}
	return median;
}

void held_scaled_note(char *buf, size_t size, size_t seen, size_t steady)
{
	buf[0] = 0;
	if (seen < steady)
		snprintf(buf, size,
			 " (scaled from the %zu of %zu steady steps the GPU timeline saw whole)",
			 seen, steady);
}

struct ss_finding *add_held_finding(struct loader *ld, struct db_state *st,
				    const struct ss_rule *rule, const struct held_site *s,
				    long long bytes, long long cost, char *detail, int *code)
{
	int recurring = ss_steps_recurring(&st->steps, s->tally.steps, s->n);

	*code = add_finding(ld, rule, st->rank, s->n, s->held, s->worst, bytes, cost,
			    xstrdup(s->site), detail);
	if (*code != SS_EXIT_OK)
		return NULL;
	struct ss_finding *f = &ld->report->findings[ld->report->nfindings - 1];
	set_phase(f, &st->steps, recurring, s->tally.steps);
	return f;
}

int load_enqueues(struct loader *ld, struct db_state *st, const char *sql, struct enqueue **work,
		  size_t *n)
{
	size_t cap = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, sql, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct enqueue q = {sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
				    sqlite3_column_int64(stmt, 2)};

		if (!PUSH(*work, *n, cap, q)) {
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

size_t first_enqueue(const struct enqueue *work, size_t n, long long stream, long long t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (work[mid].stream < stream ||
		    (work[mid].stream == stream && work[mid].start < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
