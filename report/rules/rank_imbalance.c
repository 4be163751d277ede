/*
 * report/rules/rank_imbalance.c: the rank-imbalance rule (docs/rules.md), a cross-rank rule
 * (SS_RULE_RANKS): a rank whose sync points or blocked time differ from the ranks' median. It
 * also sets each rank's `deviates` flags, which the outputs mark.
 */
#include <stddef.h>
#include <stdlib.h>

#include "../analysis_int.h"
#include "../commands.h"

extern const struct ss_rule ss_rule_rank_imbalance; /* at the end: its findings name it */

/* rank-imbalance: blocked time must also differ from the median by this much (noise floor). */
#define SS_IMBALANCE_MIN_NS 1000000LL

/* The median of one per-rank total (the lower middle value for an even count). */
static long long median_of(const struct ss_report *r, size_t offset)
{
	long long *values = malloc(r->nranks * sizeof(*values)), m;

	if (!values)
		return 0;
	for (size_t i = 0; i < r->nranks; i++)
		values[i] = *(const long long *)((const char *)&r->ranks[i] + offset);
	qsort(values, r->nranks, sizeof(*values), compare_ll);
	m = values[(r->nranks - 1) / 2];
	free(values);
	return m;
}

static int deviates(long long value, long long median)
{
	long long diff = value > median ? value - median : median - value;

	return diff * 100 > median * SS_IMBALANCE_PERCENT && diff > 0;
}

static long long percent(long long value, long long median)
{
	return median ? (value - median) * 100 / median : 100;
}

static int run_imbalance_rule(struct loader *ld, const struct ss_collectives *sets, size_t nsets)
{
	struct ss_report *r = ld->report;
	long long m_sync, m_blocked, m_copies, m_nccl;

	if (r->nranks < 2)
		return SS_EXIT_OK;
	/* Ranks of one job only: databases without a rank are separate programs (a directory of
	 * unrelated recordings), whose differences say nothing. */
	for (size_t i = 0; i < r->nranks; i++)
		if (r->ranks[i].rank < 0)
			return SS_EXIT_OK;
	m_sync = median_of(r, offsetof(struct ss_rank, sync_points));
	m_blocked = median_of(r, offsetof(struct ss_rank, blocked_ns));
	m_copies = median_of(r, offsetof(struct ss_rank, copies));
	m_nccl = median_of(r, offsetof(struct ss_rank, nccl_ops));
	for (size_t i = 0; i < r->nranks; i++) {
		struct ss_rank *rk = &r->ranks[i];
		long long diff = rk->blocked_ns - m_blocked;
		int code;

		if (diff < 0)
			diff = -diff;
		if (deviates(rk->sync_points, m_sync))
			rk->deviates |= SS_DEV_SYNC_POINTS;
		if (deviates(rk->blocked_ns, m_blocked) && diff >= SS_IMBALANCE_MIN_NS)
			rk->deviates |= SS_DEV_BLOCKED;
		if (deviates(rk->copies, m_copies))
			rk->deviates |= SS_DEV_COPIES;
		if (deviates(rk->nccl_ops, m_nccl))
			rk->deviates |= SS_DEV_NCCL_OPS;
		if (!(rk->deviates & (SS_DEV_SYNC_POINTS | SS_DEV_BLOCKED)))
			continue;
		code = add_finding(
		    ld, &ss_rule_rank_imbalance, rk, rk->sync_points, diff, -1, -1, -1,
		    format("(whole rank)"),
		    format("sync points %lld (median %lld, %+lld%%), blocked %.3f ms (median %.3f "
			   "ms, %+lld%%); blocked_ns is the difference from the median",
			   rk->sync_points, m_sync, percent(rk->sync_points, m_sync),
			   ms(rk->blocked_ns), ms(m_blocked), percent(rk->blocked_ns, m_blocked)));
		if (code != SS_EXIT_OK)
			return code;
	}
	return SS_EXIT_OK;
}

const struct ss_rule ss_rule_rank_imbalance = {
    .id = "rank-imbalance",
    .advice = "Compare this rank's findings with the other ranks': a rank that syncs or waits "
	      "more than the others slows every collective down to its pace.",
    .phase = SS_RULE_RANKS,
    .run_ranks = run_imbalance_rule,
};
