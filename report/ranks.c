/*
 * report/ranks.c: across ranks, the clock alignment (ANALYSIS-4): each rank's clock offset
 * against the reference rank, fitted on the blocking collectives both made, before the
 * cross-rank rules of rules/registry.c (SS_RULE_RANKS) compare their start times.
 * ss_clock_samples and ss_clock_fit are analysis.h's: export_chrome.c aligns its databases
 * with them too.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis_int.h"
#include "commands.h"

/* ------------------------------------------------------------------ clock alignment */

int ss_clock_samples(const struct ss_collective_call *x, size_t nx,
		     const struct ss_collective_call *ref, size_t nref, long long **samples,
		     size_t *nsamples, size_t *capacity)
{
	for (size_t k = 0; k < nx && k < nref; k++) {
		if (x[k].end_ns - x[k].start_ns < SS_CLOCK_WAIT_MIN_NS &&
		    ref[k].end_ns - ref[k].start_ns < SS_CLOCK_WAIT_MIN_NS)
			continue; /* nobody waited: an enqueue, its end says nothing */
		if (!reserve(samples, capacity, *nsamples, sizeof(**samples)))
			return -1;
		(*samples)[(*nsamples)++] = x[k].end_ns - ref[k].end_ns;
	}
	return 0;
}

int ss_clock_fit(long long *samples, size_t n, long long *offset_ns, long long *spread_ns)
{
	long long median;

	if (n < SS_CLOCK_MIN_SAMPLES)
		return 0;
	qsort(samples, n, sizeof(*samples), compare_ll);
	median = samples[(n - 1) / 2];
	for (size_t i = 0; i < n; i++)
		samples[i] = samples[i] < median ? median - samples[i] : samples[i] - median;
	qsort(samples, n, sizeof(*samples), compare_ll);
	*offset_ns = median;
	*spread_ns = samples[(n - 1) / 2];
	return 1;
}


/*
 * ANALYSIS-4: each rank's clock offset against the reference rank (the first in rank order).
 * Same host as the reference: 0, exactly (one CLOCK_MONOTONIC, one wall clock). Another host:
 * the median over the collectives both ranks made on a shared communicator (same id_hash, same
 * API, k-th call) of end(rank) - end(reference), wall-clock mapped, when at least
 * SS_CLOCK_MIN_SAMPLES of them were blocking (ss_clock_samples); else 0, by the wall clock.
 */
int estimate_clocks(struct loader *ld, const struct ss_collectives *sets, size_t nsets)
{
	struct ss_rank *ranks = ld->report->ranks;
	long long *samples = NULL;
	size_t ref = 0, capacity = 0;

	for (size_t i = 1; i < nsets; i++)
		if (compare_ranks(&ranks[i], &ranks[ref]) < 0)
			ref = i;
	for (size_t i = 0; i < nsets; i++) {
		struct ss_rank *rk = &ranks[i];
		size_t n = 0;

		rk->clock_offset_ns = 0;
		rk->clock_offset_spread_ns = 0;
		rk->clock_offset_method = "same-host";
		if (i == ref || strcmp(rk->host, ranks[ref].host) == 0)
			continue;
		for (size_t a = 0; a < sets[i].nseries; a++)
			for (size_t b = 0; b < sets[ref].nseries; b++) {
				const struct ss_series *x = &sets[i].series[a],
						       *y = &sets[ref].series[b];

				if (strcmp(x->hash, y->hash) != 0 || strcmp(x->op, y->op) != 0)
					continue;
				if (ss_clock_samples(x->c, x->n, y->c, y->n, &samples, &n,
						     &capacity) != 0) {
					free(samples);
					return out_of_memory(ld);
				}
			}
		if (ss_clock_fit(samples, n, &rk->clock_offset_ns, &rk->clock_offset_spread_ns)) {
			rk->clock_offset_method = "collectives";
		} else {
			rk->clock_offset_method = "wall-clock";
			rk->clock_offset_spread_ns = -1;
		}
	}
	free(samples);
	return SS_EXIT_OK;
}
