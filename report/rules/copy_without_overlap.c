/*
 * report/rules/copy_without_overlap.c: the copy-without-overlap rule (docs/rules.md), a
 * GPU-timeline rule (SS_RULE_GPU): copies of the steady state that ran while the compute they
 * fed waited behind them on the same stream; the cost is what an overlap could win back.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../analysis_int.h"
#include "../commands.h"

/*
 * copy-without-overlap: H2D/D2H copies of the steady state (steps.h), recurring there, during
 * which no kernel ran on their device, on a device that ran kernels in the steady state, of at
 * least COPY_OVERLAP_MIN_BYTES, on the device's compute stream (the stream that ran most of its
 * kernels), and that held the compute up: the next kernel of that stream had been launched
 * before the copy ended and started only after it. A copy on a
 * stream of its own, or one that found no compute waiting, cost nothing an overlap (a copy
 * issued earlier on a side stream) would win back. Per site of the host call (GPU_JOIN_NS; "(no
 * call site)" when the copy joins no call or the call has no site).
 */
#define COPY_OVERLAP_MIN_BYTES (64 * 1024) /* below: a latency-bound read of a result */
#define GPU_SITE_SQL	       "SELECT text FROM sites WHERE id = ?"
/* A sync point (S1-S6) of the thread ending in [?2, ?3]: the host drained the GPU there. */
#define DRAINED_SQL                                                                                \
	"SELECT 1 FROM calls WHERE tid = ?1 AND class IN ('S1', 'S2', 'S3', 'S4', 'S5', 'S6')"    \
	" AND end_ns BETWEEN ?2 AND ?3 LIMIT 1"

/* Whether the device sat idle before copy C because its host thread had just drained it: the
 * last work before the copy ended, then a sync of that thread ended, then the copy was issued.
 * The copy then had no earlier work to overlap with, and what it costs is the sync's (its
 * finding gives it: a per-step allocation that synchronizes, d12 of examples/corpus); a copy
 * queued behind running work (c08) is not. Returns 0 or 1, or -1 on a database error. */
static int drained_before(const struct gpu_rows *g, const struct api_first *a,
			  const struct copy_row *c, sqlite3_stmt *drained)
{
	size_t k = first_ending_after(g->busy, g->nbusy, c->device, c->s);
	long long idle_since;

	if (!a || k == g->nbusy || g->busy[k].s < c->s)
		return 0; /* unknown issuer, or work ran right up to the copy */
	idle_since = k > 0 && g->busy[k - 1].device == c->device ? g->busy[k - 1].e : LLONG_MIN;
	sqlite3_bind_int64(drained, 1, a->tid);
	sqlite3_bind_int64(drained, 2, idle_since);
	sqlite3_bind_int64(drained, 3, a->start_ns);
	int rc = sqlite3_step(drained);
	sqlite3_reset(drained);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* Whether the host issued the copy late to an idle device: nothing ran or waited on the device
 * from the copy's issue to its start, and it had sat idle before the issue for at least the
 * copy's own time. The copy would then have fitted whole in that idle time had the host issued
 * it earlier; no compute was there to overlap it with, and the step waited for the host, late
 * with the copy's data (a server decoding its next request: d59, d52, d55, c109, d38 of
 * examples/corpus, idle 0.1-2.6 ms before copies of 0.04-0.5 ms). A loop that issues its copy
 * as soon as the GPU catches up (12_stream_prefetcher's bad variant: idle 13 us before a 40 us
 * copy on the H200) or queues it behind running work (c08) is flagged. */
static int issued_late_to_idle_device(const struct gpu_rows *g, const struct api_first *a,
				      const struct copy_row *c)
{
	if (!a || a->start_ns >= c->s)
		return 0;
	size_t k = first_ending_after(g->busy, g->nbusy, c->device, a->start_ns);

	if (k < g->nbusy && g->busy[k].s < c->s)
		return 0; /* work ran or waited between the issue and the copy */
	long long idle_since =
	    k > 0 && g->busy[k - 1].device == c->device ? g->busy[k - 1].e : LLONG_MIN;

	return idle_since == LLONG_MIN || a->start_ns - idle_since >= c->e - c->s;
}

/* When a copy was issued: its API record's start (the host call, on the recording's clock),
 * else its own start. The host runs ahead of the GPU, so a step's copies may run on the GPU
 * after the host has left the step: the phase of a GPU record is its host call's (STEPS-1). */
static long long copy_issued(const struct db_state *st, const struct copy_row *c)
{
	const struct api_first *a = api_first_of(st, c->correlation);

	return a ? a->start_ns : c->s;
}

static int copy_rule(struct loader *ld, struct db_state *st, const struct gpu_rows *g)
{
	/* the steady state's start: the first steady step's, or the recording's (steps.h) */
	long long steady_ns = st->steps.nsteps ? st->steps.start[st->steps.first_steady]
					       : st->rank->start_mono_ns;
	struct gpu_target *tg = NULL;
	struct gpu_site *sites = NULL;
	size_t ntg = 0, cap_tg = 0, nsites = 0, cap_sites = 0;
	sqlite3_stmt *lookup = NULL, *drained = NULL;
	int code = load_api_first(ld, st);
	/* GPU-IDLE-4: with the timeline paused or sampled, the steady steps it saw whole stand
	 * for all of them: copies of the others are left out, the rest scaled up */
	unsigned char *traced = NULL;
	size_t steady = ss_steps_steady(&st->steps), seen = traced_steps(st, g, &traced);

	if (seen == SIZE_MAX)
		return out_of_memory(ld);
	if (code == SS_EXIT_OK && !(g->noff && !seen))
		code = prepare(ld, st, DRAINED_SQL, &drained);
	if (code != SS_EXIT_OK || (g->noff && !seen)) {
		free(traced);
		return code;
	}
	for (size_t i = 0; i < g->ncopies; i++) {
		const struct copy_row *c = &g->copies[i];
		struct gpu_target t = {.correlation = c->correlation, .index = i};
		size_t step;

		if (ss_steps_phase(&st->steps, copy_issued(st, c), &step) != SS_PHASE_STEADY ||
		    kernel_between(g, c->device, c->s, c->e))
			continue; /* not in the steady state, or a kernel ran beside it */
		if (traced && !traced[step - st->steps.first_steady])
			continue; /* a step the timeline saw in part */
		if (first_ending_after(g->kernels, g->nkernels, c->device, steady_ns) == g->nkernels)
			continue; /* the device computes nothing in the steady state */
		if (c->bytes < COPY_OVERLAP_MIN_BYTES)
			continue; /* a result read: latency, nothing to overlap */
		if (c->stream != compute_stream_of(g, c->device))
			continue; /* a copy stream of its own: the compute was not behind it */
		const struct kernel_row *next = next_kernel_on_stream(g, c->device, c->stream, c->e);
		if (!next || next->launch_ns < 0 || next->launch_ns >= c->e)
			continue; /* no compute was waiting behind it */
		int drained_by_sync = drained_before(g, api_first_of(st, c->correlation), c, drained);
		if (drained_by_sync < 0) {
			code = end_rows(ld, st, drained, SQLITE_ERROR, SS_EXIT_OK);
			drained = NULL; /* finalized there */
			break;
		}
		if (drained_by_sync)
			continue; /* the host had just emptied the GPU: nothing to overlap with */
		if (issued_late_to_idle_device(g, api_first_of(st, c->correlation), c))
			continue; /* the device idled longer than the copy before it: the host was
				     late */
		if (!PUSH(tg, ntg, cap_tg, t)) {
			free(tg);
			free(traced);
			sqlite3_finalize(drained);
			return out_of_memory(ld);
		}
	}
	free(traced);
	sqlite3_finalize(drained);
	if (code != SS_EXIT_OK || !ntg) {
		free(tg);
		return code;
	}
	code = join_targets(ld, st, tg, ntg);
	if (code == SS_EXIT_OK)
		code = prepare(ld, st, GPU_SITE_SQL, &lookup);
	for (size_t i = 0; code == SS_EXIT_OK && i < ntg; i++) {
		const struct copy_row *c = &g->copies[tg[i].index];
		const char *text = NULL;
		struct gpu_site *site;
		long long ns = c->e - c->s;

		if (tg[i].call_id >= 0 && tg[i].has_site) {
			sqlite3_bind_int64(lookup, 1, tg[i].site_id);
			if (sqlite3_step(lookup) == SQLITE_ROW)
				text = (const char *)sqlite3_column_text(lookup, 0);
		}
		site = gpu_site(&sites, &nsites, &cap_sites, text ? text : NO_SITE, 0);
		sqlite3_reset(lookup);
		if (!site) {
			code = out_of_memory(ld);
			break;
		}
		if (site->n++ == 0 || ns > site->worst)
			site->worst = ns;
		site->ns += ns;
		ss_tally_add(&site->tally, &st->steps, copy_issued(st, c), ns, 1);
		site->bytes += c->bytes;
		if (c->h2d)
			site->h2d++;
		else
			site->d2h++;
	}
	sqlite3_finalize(lookup);
	free(tg);
	if (nsites)
		qsort(sites, nsites, sizeof(*sites), compare_gpu_sites);
	/* An overlap wins back at most the copies' time and at most the compute that could run
	 * beside them: a copy-bound program (copies 10 ms, kernels 0.3 ms) gains 0.3 ms. */
	long long compute_ns = scale_to(union_length(g->kernels, g->nkernels), (long long)seen,
					(long long)steady);
	char scaled[128] = "";
	if (seen < steady)
		snprintf(scaled, sizeof(scaled),
			 " (scaled from the %zu of %zu steady steps the GPU timeline saw whole)", seen,
			 steady);
	for (size_t i = 0; code == SS_EXIT_OK && i < nsites; i++) {
		struct gpu_site *s = &sites[i];

		if (seen < steady) { /* GPU-IDLE-4 */
			s->n = scale_to(s->n, (long long)seen, (long long)steady);
			s->ns = scale_to(s->ns, (long long)seen, (long long)steady);
			s->bytes = scale_to(s->bytes, (long long)seen, (long long)steady);
			s->h2d = scale_to(s->h2d, (long long)seen, (long long)steady);
			s->d2h = scale_to(s->d2h, (long long)seen, (long long)steady);
			s->tally.steps = scale_to(s->tally.steps, (long long)seen, (long long)steady);
		}
		/* not every step's (the first steps' or a few): `info` */
		int steady = ss_steps_recurring(&st->steps, s->tally.steps, s->n);
		long long gain = s->ns < compute_ns ? s->ns : compute_ns;

		code = add_finding(
		    ld, &ss_rule_copy_without_overlap, st->rank, s->n, s->ns, s->worst, s->bytes,
		    gain, xstrdup(s->site),
		    format("%lld H2D and %lld D2H copies (%lld bytes) ran %.3f ms on the copy engine "
			   "while no kernel ran on their device, each with the next kernel of its "
			   "stream already launched and waiting behind it; blocked_ns is that GPU copy "
			   "time; an overlap wins back at most %.3f ms (the kernels ran %.3f ms)%s",
			   s->h2d, s->d2h, s->bytes, ms(s->ns), ms(gain), ms(compute_ns), scaled));
		if (code == SS_EXIT_OK)
			set_phase(&ld->report->findings[ld->report->nfindings - 1], &st->steps, steady,
				  s->tally.steps);
	}
	gpu_sites_free(sites, nsites);
	return code;
}


const struct ss_rule ss_rule_copy_without_overlap = {
    .id = "copy-without-overlap",
    .advice = "Issue the copy from pinned memory on a separate stream ahead of the kernels that "
	      "need it (prefetch the next batch during the current step), so the copy engine and "
	      "the compute run at the same time.",
    .phase = SS_RULE_GPU,
    .cost = SS_COST_ESTIMATE,
    .needs_enqueue_rows = 1, /* a copy's site is its host call's row */
    .min_share_permille = 10, /* at most 1% of the step to win back: info */
    .run_gpu = copy_rule,
};
