/*
 * report/rules/copy_held_by_event.c: the copy-held-by-event rule (docs/rules.md), a GPU-timeline
 * rule (SS_RULE_GPU): a copy on a stream of its own that waited, by an event, for compute it
 * could have overlapped, and then ran alone while the compute waited for it. The program built
 * a copy stream to overlap, and an event wait undid it: typically one event recorded at the end
 * of every step and waited on before the next upload (cudaEventRecord "captures in event the
 * contents of stream at the time of this call", and a record overwrites the previous one), so
 * the upload waits for all of the previous step instead of for the kernel that last read its
 * buffer (examples/corpus c99; c104 is the fix, one event per buffer). The line to fix is the
 * wait's, not the copy's.
 *
 * Per async copy call C (E1, at least COPY_HELD_MIN_BYTES) whose stream's previous call (E1-E3,
 * any thread) was a stream wait on an event whose latest record before it was on another stream,
 * with nothing queued on that stream after the record (the wait is on all it had queued: a ring
 * whose events are recorded after each slot's reader leaves later work to overlap), such that on
 * the GPU timeline:
 *   - C's copy is an upload (a download waits for the kernel that made its data: d48 of
 *     examples/corpus, whose download shares the upload stream, is another problem), not on its
 *     device's compute stream (copy-without-overlap's case), and no kernel ran on the device
 *     while it ran;
 *   - it was held: it started at least its own time and COPY_HELD_MIN_NS after the call, right
 *     after a kernel of the device ended (within HELD_SLACK), so it waited for that compute;
 *   - the compute waited for it: the compute stream's next kernel was launched before it ended.
 * The cost is the copy's GPU time, what an overlap would win back at most, per site of the wait.
 * A single buffer that every step uploads into and computes on (d03 of examples/corpus) shows the
 * same: its wait is needed, and overlap needs a second buffer, as the advice says.
 * Steady copies only; with the timeline sampled, the steps it saw whole, scaled (GPU-IDLE-4).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

extern const struct ss_rule ss_rule_copy_held_by_event;

/* below: a result read, whose latency no overlap hides (copy-without-overlap's floor) */
#define COPY_HELD_MIN_BYTES (64 * 1024)
/* a copy held less than this after its call was queued, not held back */
#define COPY_HELD_MIN_NS 50000LL

/* The async copies and the stream operations before them, by stream and time: each row with the
 * event, the site and the latest record of that event before it (for a wait: on which stream,
 * at which site). */
#define STREAM_OPS_SQL                                                                             \
	"SELECT c.stream, c.start_ns, c.tid, c.class, c.event,"                                    \
	" c.class = 'E1' AND a.name LIKE '%emcpy%' AND coalesce(c.bytes, 0) >= ?1,"                \
	" coalesce(s.text, '" NO_SITE "')"                                                         \
	" FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"       \
	" WHERE c.class IN ('E1', 'E2', 'E3') AND c.stream IS NOT NULL"                            \
	" ORDER BY c.stream, c.start_ns, c.id"
/* The enqueues, by stream and time (queued_after). */
#define ENQUEUES_SQL                                                                               \
	"SELECT stream, start_ns, tid FROM calls WHERE class = 'E1' AND stream IS NOT NULL"        \
	" ORDER BY stream, start_ns"
/* The event records, by event and time. */
#define RECORDS_SQL                                                                                \
	"SELECT c.event, c.start_ns, c.stream, c.tid, coalesce(s.text, '" NO_SITE "')"             \
	" FROM calls c LEFT JOIN sites s ON s.id = c.site_id"                                      \
	" WHERE c.class = 'E2' AND c.event IS NOT NULL AND c.stream IS NOT NULL"                   \
	" ORDER BY c.event, c.start_ns, c.id"

struct stream_op {
	long long stream, start, tid, event;
	int wait, copy; /* E3; an E1 copy of at least COPY_HELD_MIN_BYTES */
	char *site;
};
struct record {
	long long event, start, stream, tid;
	char *site;
};
/* The latest record of EVENT that started before T (RECORDS sorted by event, start), or NULL. */
static const struct record *record_before(const struct record *r, size_t n, long long event,
					  long long t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].event < event || (r[mid].event == event && r[mid].start < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && r[lo - 1].event == event ? &r[lo - 1] : NULL;
}

/* Whether work was queued on the stream of record REC (WORK: the enqueues by stream and time)
 * after it and before T: then a wait at T on REC's event leaves that work free to overlap what
 * follows the wait (a ring of slots, each event recorded after the slot's reader). Without such
 * work the wait is on all that stream had queued (c99: one event recorded at the end of every
 * step). */
static int queued_after(const struct enqueue *work, size_t n, const struct record *rec, long long t)
{
	for (size_t k = first_enqueue(work, n, rec->stream, rec->start + 1);
	     k < n && work[k].stream == rec->stream && work[k].start < t; k++)
		if (ss_same_stream(work[k].stream, work[k].tid, rec->stream, rec->tid))
			return 1;
	return 0;
}

static int load_ops(struct loader *ld, struct db_state *st, struct stream_op **ops, size_t *nops,
		    struct record **recs, size_t *nrecs)
{
	size_t cap = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, STREAM_OPS_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	sqlite3_bind_int64(stmt, 1, COPY_HELD_MIN_BYTES);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *class = (const char *)sqlite3_column_text(stmt, 3);
		struct stream_op o = {sqlite3_column_int64(stmt, 0),
				      sqlite3_column_int64(stmt, 1),
				      sqlite3_column_int64(stmt, 2),
				      sqlite3_column_int64(stmt, 4),
				      class && strcmp(class, "E3") == 0,
				      sqlite3_column_int(stmt, 5),
				      NULL};

		if (o.wait && sqlite3_column_type(stmt, 4) == SQLITE_NULL)
			o.wait = 0; /* a wait whose event was not recorded */
		if ((o.wait && !(o.site = xstrdup((const char *)sqlite3_column_text(stmt, 6)))) ||
		    !PUSH(*ops, *nops, cap, o)) {
			free(o.site);
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	code = end_rows(ld, st, stmt, rc, SS_EXIT_OK);
	if (code != SS_EXIT_OK || !*nops)
		return code;
	cap = 0;
	code = prepare(ld, st, RECORDS_SQL, &stmt);
	if (code != SS_EXIT_OK)
		return code;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct record r = {sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
				   sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3),
				   xstrdup((const char *)sqlite3_column_text(stmt, 4))};

		if (!r.site || !PUSH(*recs, *nrecs, cap, r)) {
			free(r.site);
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

/* Whether copy R (one correlation's rows, on device R->device) was held for compute it could
 * have overlapped and then held the compute up (the conditions at the top of this file). */
static int held_for_compute(const struct gpu_rows *g, const struct correlated *r,
			    const struct copy_row *copy, long long issued)
{
	long long own = r->e - r->s, compute = compute_stream_of(g, r->device);

	if (!copy || !copy->h2d || copy->stream == compute)
		return 0; /* no upload (a download waits for the kernel that made its data), or
			     copy-without-overlap's */
	if (kernel_between(g, r->device, r->s, r->e))
		return 0; /* a kernel ran beside it */
	if (r->s - issued < own || r->s - issued < COPY_HELD_MIN_NS)
		return 0; /* queued, not held */
	if (!kernel_between(g, r->device, r->s - copy_start_slack(r), r->s))
		return 0; /* it did not start as compute ended: held by something else */
	const struct kernel_row *next = next_kernel_on_stream(g, r->device, compute, r->e);
	if (!next || next->launch_ns < 0 || next->launch_ns >= r->e)
		return 0; /* no compute waited behind it */
	return !timeline_off_between(g, issued, r->e);
}

/* Per site of a wait (SITES, by held_site), where its event was last recorded (the first held
 * copy's record). */
struct wait_extra {
	char *record_site;
};

static int add_findings(struct loader *ld, struct db_state *st, struct held_site *sites,
			const struct wait_extra *extra, size_t nsites, size_t seen, size_t steady)
{
	int code = SS_EXIT_OK;
	char scaled[128];

	held_scaled_note(scaled, sizeof(scaled), seen, steady);
	for (size_t i = 0; code == SS_EXIT_OK && i < nsites; i++) {
		struct held_site *s = &sites[i];
		long long median = held_site_finish(s, seen, steady);

		add_held_finding(
		    ld, st, &ss_rule_copy_held_by_event, s, s->bytes, s->held,
		    format(
			"%lld uploads on a stream of their own waited here for an event last "
			"recorded on another stream at %s, started only as that stream's compute "
			"ended, and ran %.3f ms in all (median %.3f ms) while no kernel ran and "
			"the compute waited for them: copy and compute took turns; an overlap "
			"wins back at most that time%s",
			s->n, extra[i].record_site, ms(s->held), ms(median), scaled),
		    &code);
	}
	return code;
}

static int copy_held_by_event_rule(struct loader *ld, struct db_state *st, const struct gpu_rows *g)
{
	struct stream_op *ops = NULL;
	struct record *recs = NULL;
	const struct copy_row **copies = NULL;
	struct enqueue *work = NULL;
	struct held_site *sites = NULL;
	struct wait_extra *extra = NULL;
	struct call_rows j = {0};
	size_t nops = 0, nrecs = 0, nwork = 0, nsites = 0, cap_sites = 0, cap_extra = 0;
	int code = g->ncopies ? load_ops(ld, st, &ops, &nops, &recs, &nrecs) : SS_EXIT_OK;

	if (code == SS_EXIT_OK && nrecs)
		code = load_enqueues(ld, st, ENQUEUES_SQL, &work, &nwork);
	if (code == SS_EXIT_OK && nrecs)
		code = call_rows_open(ld, st, g, &j);
	if (code != SS_EXIT_OK || !j.by_thread)
		goto done;
	copies = copies_by_correlation(g);
	if (!copies) {
		code = out_of_memory(ld);
		goto done;
	}
	for (size_t i = 1; code == SS_EXIT_OK && i < nops; i++) {
		const struct stream_op *c = &ops[i], *w = &ops[i - 1];
		const struct copy_row *copy;
		const struct record *rec;
		const struct correlated *r;

		if (!c->copy || !w->wait || !ss_same_stream(c->stream, c->tid, w->stream, w->tid) ||
		    !call_rows_steady_seen(st, &j, c->start))
			continue;
		rec = record_before(recs, nrecs, w->event, w->start);
		if (!rec || ss_same_stream(rec->stream, rec->tid, w->stream, w->tid) ||
		    queued_after(work, nwork, rec, w->start))
			continue; /* the event orders nothing across streams, or not after all */
		r = call_rows_of(st, &j, c->tid, c->start);
		copy = r ? copy_of_correlation(copies, g->ncopies, r->correlation) : NULL;
		if (!r || !held_for_compute(g, r, copy, c->start))
			continue;
		size_t before = nsites;
		struct held_site *site = held_site(&sites, &nsites, &cap_sites, w->site);
		if (site && nsites > before) { /* a new site: where its event was recorded */
			if (reserve(&extra, &cap_extra, before, sizeof(*extra)))
				extra[before] = (struct wait_extra){xstrdup(rec->site)};
			if (cap_extra <= before || !extra[before].record_site)
				site = NULL;
		}
		if (!site || !held_site_add(site, &st->steps, c->start, r->e - r->s, 0)) {
			code = out_of_memory(ld);
			break;
		}
		site->bytes += copy->bytes;
	}
	if (code == SS_EXIT_OK)
		code =
		    add_findings(ld, st, sites, extra, nsites, j.seen, ss_steps_steady(&st->steps));
done:
	for (size_t i = 0; i < nops; i++)
		free(ops[i].site);
	for (size_t i = 0; i < nrecs; i++)
		free(recs[i].site);
	for (size_t i = 0; extra && i < nsites && i < cap_extra; i++)
		free(extra[i].record_site);
	free(ops);
	free(recs);
	free((void *)copies);
	free(work);
	free(extra);
	held_sites_free(sites, nsites);
	call_rows_close(&j);
	return code;
}

const struct ss_rule ss_rule_copy_held_by_event = {
    .id = "copy-held-by-event",
    .advice =
	"Make the copy wait only for the kernel that last read its buffer: give each copy in "
	"flight a buffer of its own (double buffering), record one event per buffer right "
	"after the last kernel that reads it, and make the copy's stream wait on that one (an "
	"event holds only its latest record, so one event recorded at the end of every step "
	"makes the next copy wait for the whole step), so that the copy runs beside the "
	"compute.",
    .phase = SS_RULE_GPU,
    .cost = SS_COST_ESTIMATE,
    .needs_enqueue_rows = 1, /* the copies, waits and records are enqueue rows */
    .min_share_permille = 10,
    .run_gpu = copy_held_by_event_rule,
};
