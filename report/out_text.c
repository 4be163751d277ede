/*
 * report/out_text.c: the `--format text` backend of `syncspy report`: plain aligned text for a
 * terminal or a golden test. A per-rank table (a '*' marks a total more than
 * SS_IMBALANCE_PERCENT from the median of the ranks), the sync points per NVTX range or step
 * (only when the recordings have ranges), the findings in ANALYSIS-1 order, each with what was
 * seen and the fix, then what could not be measured.
 *
 * Every string that can come from a database (hosts, sites, range and step names, details,
 * notes) is written through safe(): control characters and bytes that are not UTF-8 as \xNN
 * (text_safe.h), so that nothing in a recording reaches the terminal as an escape sequence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "output.h"
#include "text_safe.h"

/* The escaped copies safe() made, one per slot, until the slot is used again or the end. */
enum { SAFE_HOST, SAFE_NAME, SAFE_SITE, SAFE_DETAIL, SAFE_SLOTS };
static char *safe_owned[SAFE_SLOTS];

/* s as the terminal may see it (text_safe.h): s itself when it needs no escaping. */
static const char *safe(const char *s, int slot)
{
	free(safe_owned[slot]);
	return ss_printable(s, &safe_owned[slot]);
}

static void safe_free(void)
{
	for (int i = 0; i < SAFE_SLOTS; i++) {
		free(safe_owned[i]);
		safe_owned[i] = NULL;
	}
}

static int host_width;

static int text_begin(FILE *out, const struct ss_report *report)
{
	host_width = 4;
	for (size_t i = 0; i < report->nranks; i++)
		if ((int)strlen(safe(report->ranks[i].host, SAFE_HOST)) > host_width)
			host_width = (int)strlen(safe(report->ranks[i].host, SAFE_HOST));
	fprintf(out, "syncspy report: %zu rank%s, %zu finding%s\n\nranks:\n", report->nranks,
		report->nranks == 1 ? "" : "s", report->nfindings,
		report->nfindings == 1 ? "" : "s");
	fprintf(out, "  %5s  %-*s  %8s  %11s  %12s  %12s  %8s  %9s  %10s", "rank", host_width,
		"host", "pid", "wall_ms", "sync_points", "blocked_ms", "copies", "nccl_ops",
		"nccl_ms");
	/* GPU columns only when some rank has a GPU timeline (docs/cupti.md) */
	if (report->gpu_ranks)
		fprintf(out, "  %10s  %7s  %13s", "comm_ms", "overlap", "exposed_ms");
	fputc('\n', out);
	return SS_EXIT_OK;
}

static const char *mark(const struct ss_rank *rk, unsigned bit)
{
	return rk->deviates & bit ? "*" : " ";
}

static int text_rank(FILE *out, const struct ss_report *report, const struct ss_rank *rk)
{
	char rank[24] = "-";

	if (rk->rank >= 0)
		snprintf(rank, sizeof(rank), "%lld", rk->rank);
	fprintf(out, "  %5s  %-*s  %8lld  %11.3f  %11lld%s  %11.3f%s  %7lld%s  %9lld  %10.3f", rank,
		host_width, safe(rk->host, SAFE_HOST), rk->pid, (double)rk->wall_ns / 1e6,
		rk->sync_points, mark(rk, SS_DEV_SYNC_POINTS), (double)rk->blocked_ns / 1e6,
		mark(rk, SS_DEV_BLOCKED), rk->copies, mark(rk, SS_DEV_COPIES), rk->nccl_ops,
		(double)rk->nccl_ns / 1e6);
	if (report->gpu_ranks) {
		char comm[32] = "-", overlap[32] = "-", exposed[32] = "-";

		if (rk->gpu) {
			snprintf(comm, sizeof(comm), "%.3f", (double)rk->comm_ns / 1e6);
			snprintf(exposed, sizeof(exposed), "%.3f",
				 (double)rk->exposed_comm_ns / 1e6);
			if (rk->comm_overlap >= 0)
				snprintf(overlap, sizeof(overlap), "%.3f", rk->comm_overlap);
		}
		fprintf(out, "  %10s  %7s  %13s", comm, overlap, exposed);
	}
	fputc('\n', out);
	return SS_EXIT_OK;
}

static int findings_started;

/* Range names wider than this are cut in the table (the JSON has them whole). */
#define RANGE_NAME_WIDTH_MAX 32

/* The per-range table: one line per (rank, range name), sync points and blocked time per
 * instance. Nothing at all without ranges, so reports of recordings without NVTX stay as they
 * were. */
static void print_ranges(FILE *out, const struct ss_report *report)
{
	int width = 4;

	if (!report->nranges)
		return;
	for (size_t i = 0; i < report->nranges; i++)
		if ((int)strlen(safe(report->ranges[i].name, SAFE_NAME)) > width)
			width = (int)strlen(safe(report->ranges[i].name, SAFE_NAME));
	if (width > RANGE_NAME_WIDTH_MAX)
		width = RANGE_NAME_WIDTH_MAX;
	fprintf(out, "\nranges (sync points and blocked ms per instance; top %d names per rank):\n",
		SS_RANGE_NAMES_MAX);
	fprintf(out, "  %5s  %-*s  %-8s  %9s  %8s  %11s  %8s  %17s  %14s\n", "rank", width, "name",
		"kind", "instances", "sync_min", "sync_median", "sync_max", "blocked_median_ms",
		"blocked_max_ms");
	for (size_t i = 0; i < report->nranges; i++) {
		const struct ss_range_stat *r = &report->ranges[i];
		char rank[24] = "-";

		if (r->rank >= 0)
			snprintf(rank, sizeof(rank), "%lld", r->rank);
		fprintf(out, "  %5s  %-*.*s  %-8s  %9lld  %8lld  %11lld  %8lld  %17.3f  %14.3f\n",
			rank, width, width, safe(r->name, SAFE_NAME), safe(r->kind, SAFE_DETAIL),
			r->instances, r->sync_min, r->sync_median, r->sync_max,
			(double)r->blocked_median_ns / 1e6, (double)r->blocked_max_ns / 1e6);
	}
}

/* The clock alignment of each rank (docs/rules.md), only when some rank is off the reference's
 * host: reports of one host stay as they were. */
static void print_clocks(FILE *out, const struct ss_report *report)
{
	int other_host = 0;

	for (size_t i = 0; i < report->nranks; i++)
		other_host |= strcmp(report->ranks[i].clock_offset_method, "same-host") != 0;
	if (!other_host)
		return;
	fputs("\nclock alignment (offset against the first rank, after the wall clock):\n", out);
	fprintf(out, "  %5s  %-*s  %12s  %-11s  %10s\n", "rank", host_width, "host", "offset_ms",
		"method", "spread_ms");
	for (size_t i = 0; i < report->nranks; i++) {
		const struct ss_rank *rk = &report->ranks[i];
		char rank[24] = "-", spread[32] = "-";

		if (rk->rank >= 0)
			snprintf(rank, sizeof(rank), "%lld", rk->rank);
		if (rk->clock_offset_spread_ns >= 0)
			snprintf(spread, sizeof(spread), "%.3f",
				 (double)rk->clock_offset_spread_ns / 1e6);
		fprintf(out, "  %5s  %-*s  %12.3f  %-11s  %10s\n", rank, host_width,
			safe(rk->host, SAFE_HOST), (double)rk->clock_offset_ns / 1e6,
			rk->clock_offset_method, spread);
	}
}

/* Each rank's step and its per-step figures (docs/rules.md, "Steady state"). */
static void print_steps(FILE *out, const struct ss_report *report)
{
	fputs("\nsteps (steady state, after the warm-up step):\n", out);
	fprintf(out, "  %5s  %8s  %6s  %6s  %10s  %10s  %14s  %15s  %s\n", "rank", "pid", "steps",
		"steady", "step_ms", "syncs/step", "blocked_ms/step", "gpu_idle_ms/step", "found");
	for (size_t i = 0; i < report->nranks; i++) {
		const struct ss_rank *rk = &report->ranks[i];
		char rank[24] = "-", step[32] = "-", syncs[32] = "-", blocked[32] = "-",
		     idle[32] = "-";

		if (rk->rank >= 0)
			snprintf(rank, sizeof(rank), "%lld", rk->rank);
		if (rk->steady_steps > 0) {
			snprintf(step, sizeof(step), "%.3f", (double)rk->step_ns / 1e6);
			snprintf(syncs, sizeof(syncs), "%.2f",
				 (double)rk->steady_sync_points / (double)rk->steady_steps);
			snprintf(blocked, sizeof(blocked), "%.3f",
				 (double)rk->steady_blocked_ns / 1e6 / (double)rk->steady_steps);
			if (rk->steady_gpu_idle_ns >= 0)
				snprintf(idle, sizeof(idle), "%.3f",
					 (double)rk->steady_gpu_idle_ns / 1e6 /
					     (double)rk->steady_steps);
		}
		fprintf(out, "  %5s  %8lld  %6lld  %6lld  %10s  %10s  %14s  %15s  %s%s%s\n", rank,
			rk->pid, rk->steps, rk->steady_steps, step, syncs, blocked, idle,
			safe(rk->steps_source, SAFE_DETAIL), rk->steps_name ? ": " : "",
			rk->steps_name ? safe(rk->steps_name, SAFE_NAME) : "");
	}
}

/* Ends the rank table (with its legend when a rank is marked) and starts the findings. */
static void start_findings(FILE *out, const struct ss_report *report)
{
	int marked = 0;

	for (size_t i = 0; i < report->nranks; i++)
		marked |= report->ranks[i].deviates != 0;
	if (marked)
		fprintf(out, "  (* more than %d%% from the median of the ranks)\n",
			SS_IMBALANCE_PERCENT);
	print_clocks(out, report);
	print_steps(out, report);
	print_ranges(out, report);
	if (!report->nfindings || strcmp(report->findings[0].severity, "info") == 0)
		fputs("\nfindings: none in the steady state\n", out);
	else
		fputs("\nfindings (costliest per step first):\n", out);
	findings_started = 1;
}

/* Runs of consecutive ranks a finding's rank list shows before "...": the JSON has them all. */
#define RANK_RUNS_MAX 8

/* "rank R", or for a finding folded over ranks (ANALYSIS-5) "ranks 0-7,9 (9, worst 3)". */
static void rank_label(char *buf, size_t len, const struct ss_finding *f)
{
	size_t used, runs = 0;

	if (f->nranks < 2) {
		if (f->rank >= 0)
			snprintf(buf, len, "rank %lld", f->rank);
		else
			snprintf(buf, len, "rank -");
		return;
	}
	used = (size_t)snprintf(buf, len, "ranks ");
	for (size_t i = 0; i < f->nranks && used < len; runs++) {
		size_t j = i;

		while (j + 1 < f->nranks && f->ranks[j + 1] == f->ranks[j] + 1)
			j++;
		if (runs == RANK_RUNS_MAX) {
			used += (size_t)snprintf(buf + used, len - used, ",...");
			break;
		}
		used += (size_t)(j > i ? snprintf(buf + used, len - used, "%s%lld-%lld",
						  runs ? "," : "", f->ranks[i], f->ranks[j])
				       : snprintf(buf + used, len - used, "%s%lld", runs ? "," : "",
						  f->ranks[i]));
		i = j + 1;
	}
	if (used < len)
		snprintf(buf + used, len - used, " (%zu, worst %lld)", f->nranks, f->rank);
}

static int text_finding(FILE *out, const struct ss_report *report, const struct ss_finding *f)
{
	char rank[160];

	if (!findings_started)
		start_findings(out, report);
	rank_label(rank, sizeof(rank), f);
	/* ANALYSIS-1: the info findings come last, under their own heading */
	if (strcmp(f->severity, "info") == 0 && findings_started == 1) {
		fputs("\nonce, not in the steady state (info: no cost per step):\n", out);
		findings_started = 2;
	}
	/* what happened once is one line (the JSON has its detail); a steady finding the GPU
	 * timeline cleared keeps its detail, which says why */
	if (strcmp(f->phase, "once") == 0) {
		fprintf(out, "  [%s] %s  %s  (%lld call%s, %.3f ms)  %s\n", f->severity, f->rule,
			rank, f->count, f->count == 1 ? "" : "s", (double)f->blocked_ns / 1e6,
			safe(f->site, SAFE_SITE));
		return SS_EXIT_OK;
	}
	fprintf(out, "  [%s] %s  %s  %s\n", f->severity, f->rule, rank, safe(f->site, SAFE_SITE));
	fprintf(out, "      count %lld, %.3f ms blocked: %s\n", f->count,
		(double)f->blocked_ns / 1e6, safe(f->detail, SAFE_DETAIL));
	/* ANALYSIS-5: the figures above are the worst rank's; how the others compare */
	if (f->nranks > 1 && f->per_step_max_ns >= 0)
		fprintf(
		    out,
		    "      across the ranks: cost per step min %.3f ms, median %.3f ms, max %.3f "
		    "ms\n",
		    (double)f->per_step_min_ns / 1e6, (double)f->per_step_median_ns / 1e6,
		    (double)f->per_step_max_ns / 1e6);
	if (strcmp(f->severity, "info") != 0)
		fprintf(out, "      fix: %s\n", safe(f->advice, SAFE_DETAIL));
	return SS_EXIT_OK;
}

static int text_end(FILE *out, const struct ss_report *report)
{
	if (!findings_started)
		start_findings(out, report);
	findings_started = 0;
	if (report->nnotes)
		fputs("\nnotes:\n", out);
	for (size_t i = 0; i < report->nnotes; i++)
		fprintf(out, "  - %s\n", safe(report->notes[i], SAFE_DETAIL));
	safe_free();
	return SS_EXIT_OK;
}

const struct ss_report_ops ss_report_text_ops = {
    .begin = text_begin,
    .rank = text_rank,
    .finding = text_finding,
    .end = text_end,
};
