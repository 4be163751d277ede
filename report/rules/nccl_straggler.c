/*
 * report/rules/nccl_straggler.c: the nccl-straggler rule (docs/rules.md), a cross-rank rule
 * (SS_RULE_RANKS): the rank that starts the collectives of a communicator last, most often,
 * once the clocks are aligned (ranks.c, ANALYSIS-4).
 */
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

extern const struct ss_rule ss_rule_nccl_straggler; /* at the end: its findings name it */

/* nccl-straggler: the last rank must start a collective this much after the first one. */
#define SS_STRAGGLER_MIN_NS 1000000LL

/* nccl-straggler (load_arrivals, run_straggler_rule) is C over the pass's N2 calls: the k-th
 * call of each collective on each communicator (by id_hash, the same on every rank), by start
 * time; send/recv are point to point and not compared. */

/* One rank's series of one (id_hash, op), for the comparison across ranks. */
struct series_ref {
	const struct ss_series *se;
	size_t rank_index; /* the job's index: path order */
};

static int compare_series_refs(const void *a, const void *b)
{
	const struct series_ref *x = a, *y = b;
	int c = strcmp(x->se->hash, y->se->hash);

	if (c)
		return c;
	c = strcmp(x->se->op, y->se->op);
	if (c)
		return c;
	return (x->rank_index > y->rank_index) - (x->rank_index < y->rank_index);
}

/* What one rank did at one communicator's collectives: the late-arrival totals. */
struct late_stats {
	long long times, total, worst;
	int first;
};

/* When a rank started the k-th call of a series, on the report's axis (ANALYSIS-4). */
static long long arrival(const struct loader *ld, const struct series_ref *ref, size_t k)
{
	return ref->se->c[k].start_ns - ld->report->ranks[ref->rank_index].clock_offset_ns;
}

/*
 * nccl-straggler, per communicator (id_hash): each instance (op, k) that at least two ranks
 * reached is compared; when the last rank started at least SS_STRAGGLER_MIN_NS after the first,
 * every rank that started last is late by that much. The rank late most often (then by the
 * most time, then the first in path order) is the finding, one per communicator, in id_hash
 * order. Each rank's series is ordered by time, so instance k is the k-th element of each.
 */
static int run_straggler_rule(struct loader *ld, const struct ss_collectives *sets, size_t njobs)
{
	struct series_ref *refs = NULL;
	struct late_stats *per = calloc(njobs ? njobs : 1, sizeof(*per));
	size_t nrefs = 0, capacity = 0;
	int code = SS_EXIT_OK, corrected = 0;

	for (size_t j = 0; j < njobs; j++)
		corrected |= ld->report->ranks[j].clock_offset_ns != 0;

	if (!per)
		return out_of_memory(ld);
	for (size_t j = 0; j < njobs; j++)
		for (size_t i = 0; i < sets[j].nseries; i++) {
			if (!reserve(&refs, &capacity, nrefs, sizeof(*refs))) {
				free(per);
				free(refs);
				return out_of_memory(ld);
			}
			refs[nrefs++] = (struct series_ref){&sets[j].series[i], j};
		}
	if (nrefs)
		qsort(refs, nrefs, sizeof(*refs), compare_series_refs);
	for (size_t h = 0, hend; code == SS_EXIT_OK && h < nrefs; h = hend) {
		const char *hash = refs[h].se->hash;
		long long instances = 0, nranks = 0;
		size_t best = njobs;

		for (hend = h; hend < nrefs && strcmp(refs[hend].se->hash, hash) == 0; hend++)
			;
		memset(per, 0, njobs * sizeof(*per));
		for (size_t o = h, oend; o < hend; o = oend) {
			size_t longest = 0;

			for (oend = o; oend < hend && strcmp(refs[oend].se->op, refs[o].se->op) == 0;
			     oend++)
				if (refs[oend].se->n > longest)
					longest = refs[oend].se->n;
			for (size_t k = 0; k < longest; k++) {
				long long first_t = 0, last_t = 0, n = 0;

				for (size_t r = o; r < oend; r++) {
					long long t;

					if (refs[r].se->n <= k)
						continue;
					t = arrival(ld, &refs[r], k);
					if (n++ == 0)
						first_t = last_t = t;
					else if (t < first_t)
						first_t = t;
					else if (t > last_t)
						last_t = t;
				}
				if (n < 2)
					continue;
				instances++;
				if (n > nranks)
					nranks = n;
				if (last_t - first_t < SS_STRAGGLER_MIN_NS)
					continue;
				for (size_t r = o; r < oend; r++) {
					struct late_stats *p = &per[refs[r].rank_index];
					long long late = last_t - first_t;

					if (refs[r].se->n <= k || arrival(ld, &refs[r], k) != last_t)
						continue;
					if (p->times++ == 0 || late > p->worst)
						p->worst = late;
					p->total += late;
					if (k == 0)
						p->first = 1;
				}
			}
		}
		for (size_t j = 0; j < njobs; j++) {
			if (!per[j].times)
				continue;
			if (best == njobs || per[j].times > per[best].times ||
			    (per[j].times == per[best].times && per[j].total > per[best].total))
				best = j;
		}
		if (best == njobs)
			continue;
		code = add_finding(
		    ld, &ss_rule_nccl_straggler, &ld->report->ranks[best], per[best].times,
		    per[best].total, per[best].worst, -1, -1, format("communicator %s", hash),
		    format("last to start %lld of %lld collectives of communicator %s (%lld ranks), "
			   "%.3f ms after the first rank at worst%s; blocked_ns is the earliest "
			   "ranks' wait, from host start times aligned by wall clock%s",
			   per[best].times, instances, hash, nranks, ms(per[best].worst),
			   per[best].first ? "; late at the first collective too" : "",
			   corrected ? " corrected by the ranks' clock offsets" : ""));
	}
	free(per);
	free(refs);
	return code;
}


const struct ss_rule ss_rule_nccl_straggler = {
    .id = "nccl-straggler",
    .advice = "Look at what this rank does before the collective (data loading, host syncs, "
	      "uneven work): every other rank waits for it.",
    .phase = SS_RULE_RANKS,
    .needs_enqueue_rows = 1, /* the k-th call of each collective: N2 rows */
    .run_ranks = run_straggler_rule,
};
