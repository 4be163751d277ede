/*
 * report/cmd_diff.c: `syncspy diff [--format text|json|html] [-o FILE] [--fail-on-regression]
 * [--threshold PERCENT] BEFORE AFTER`: what a change did to a workload, from a recording
 * before and one after it (each a database or a directory of rank databases; docs/diff.md).
 * The comparison is diff.h's model; its text and JSON writers are here, the HTML page in
 * diff_html.c, all three picked through the table of formats.h.
 *
 * Each side is analyzed on its own with the model of analysis.h, as `syncspy report` would
 * (BEFORE and AFTER are never merged as ranks of one run). Findings are matched by (rule, rank,
 * site): gone (only before), new (only after), changed (count or severity differ, or the cost
 * per step of a steady finding moved by more than DIFF_CHANGE_PERCENT), same.
 * Ranks are paired in the order of the model (by rank, then path) and their step figures
 * printed side by side. A regression (docs/diff.md) is a new finding above `info`, a matched
 * steady finding whose cost per step rose by more than the threshold (and DIFF_NOISE_NS), or a
 * rank whose sync
 * points per step rose by more than it; with --fail-on-regression the command then exits 1.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "db.h"
#include "diff.h"
#include "formats.h"
#include "outfile.h"
#include "text_safe.h"

/* A matched finding whose cost per step (or blocked time) moved by less than this is "same". */
#define DIFF_CHANGE_PERCENT 10.0
/* A cost per step that rose by less than this (ns) is timing noise, never a regression. */
#define DIFF_NOISE_NS 100000LL
/* The default --threshold: a rise of more than this many percent is a regression. */
#define DIFF_THRESHOLD_PERCENT 20.0

const char *const ss_diff_status_names[4] = {"gone", "new", "changed", "same"};

static int same_key(const struct ss_finding *a, const struct ss_finding *b)
{
	return strcmp(a->rule, b->rule) == 0 && a->rank == b->rank && strcmp(a->site, b->site) == 0;
}

/* How much b is above a, in percent (a rise from 0 is infinite, 0 to 0 is 0). */
static double rise_percent(double a, double b)
{
	if (a <= 0)
		return b > 0 ? INFINITY : 0;
	return (b - a) * 100.0 / a;
}

static int push(struct ss_diff *d, enum ss_diff_status status, const struct ss_finding *before,
		const struct ss_finding *after)
{
	struct ss_diff_item *items = realloc(d->items, (d->nitems + 1) * sizeof(*items));

	if (!items)
		return -1;
	d->items = items;
	items[d->nitems++] = (struct ss_diff_item){status, before, after, 0};
	d->counts[status]++;
	return 0;
}

static int steady(const struct ss_finding *f)
{
	return f && strcmp(f->severity, "info") != 0;
}

static int compare(struct ss_diff *d)
{
	const struct ss_report *b = &d->before, *a = &d->after;

	/* AFTER's order (ANALYSIS-1) for what it has, then what is gone in BEFORE's order. */
	for (size_t i = 0; i < a->nfindings; i++) {
		const struct ss_finding *fa = &a->findings[i], *fb = NULL;
		enum ss_diff_status status = SS_DIFF_NEW;

		for (size_t j = 0; j < b->nfindings && !fb; j++)
			if (same_key(&b->findings[j], fa))
				fb = &b->findings[j];
		if (fb) {
			/* the cost per step where both are steady; times of what happened once
			 * (info) are noise: their count and severity say what changed */
			double moved = fa->cost_per_step_ns >= 0 && fb->cost_per_step_ns >= 0
					   ? fabs(rise_percent((double)fb->cost_per_step_ns,
							       (double)fa->cost_per_step_ns))
					   : 0;

			status = fa->count != fb->count ||
					 strcmp(fa->severity, fb->severity) != 0 ||
					 moved > DIFF_CHANGE_PERCENT
				     ? SS_DIFF_CHANGED
				     : SS_DIFF_SAME;
		}
		if (push(d, status, fb, fa) != 0)
			return -1;
		struct ss_diff_item *it = &d->items[d->nitems - 1];
		if (status == SS_DIFF_NEW && steady(fa))
			it->regression = 1;
		if (fb && steady(fa) && fa->cost_per_step_ns >= 0 && fb->cost_per_step_ns >= 0 &&
		    fa->cost_per_step_ns - fb->cost_per_step_ns > DIFF_NOISE_NS &&
		    rise_percent((double)fb->cost_per_step_ns, (double)fa->cost_per_step_ns) >
			d->threshold)
			it->regression = 1;
		d->regressions += (size_t)it->regression;
	}
	for (size_t j = 0; j < b->nfindings; j++) {
		int found = 0;

		for (size_t i = 0; i < a->nfindings && !found; i++)
			found = same_key(&b->findings[j], &a->findings[i]);
		if (!found && push(d, SS_DIFF_GONE, &b->findings[j], NULL) != 0)
			return -1;
	}
	d->npairs = b->nranks > a->nranks ? b->nranks : a->nranks;
	d->rank_regression = calloc(d->npairs ? d->npairs : 1, sizeof(int));
	if (!d->rank_regression)
		return -1;
	for (size_t i = 0; i < b->nranks && i < a->nranks; i++) {
		const struct ss_rank *rb = &b->ranks[i], *ra = &a->ranks[i];

		if (rb->steady_steps > 0 && ra->steady_steps > 0 &&
		    rise_percent((double)rb->steady_sync_points / (double)rb->steady_steps,
				 (double)ra->steady_sync_points / (double)ra->steady_steps) >
			d->threshold) {
			d->rank_regression[i] = 1;
			d->regressions++;
		}
	}
	return 0;
}

/* ---- text ---- */

static void put_ms(FILE *out, long long ns)
{
	if (ns < 0)
		fputs("-", out);
	else
		fprintf(out, "%.3f", (double)ns / 1e6);
}

static void rank_label(char *buf, size_t len, const struct ss_rank *rk, size_t i)
{
	if (!rk)
		snprintf(buf, len, "-");
	else if (rk->rank >= 0)
		snprintf(buf, len, "rank %lld", rk->rank);
	else
		snprintf(buf, len, "#%zu", i + 1);
}

/* The step figures of one rank, "-" where it has none: steps, syncs, blocked, idle per step. */
static void step_figures(const struct ss_rank *rk, char fig[4][32])
{
	for (int k = 0; k < 4; k++)
		strcpy(fig[k], "-");
	if (!rk || rk->steady_steps <= 0)
		return;
	double n = (double)rk->steady_steps;
	snprintf(fig[0], 32, "%lld", rk->steady_steps);
	snprintf(fig[1], 32, "%.2f", (double)rk->steady_sync_points / n);
	snprintf(fig[2], 32, "%.3f", (double)rk->steady_blocked_ns / 1e6 / n);
	if (rk->steady_gpu_idle_ns >= 0)
		snprintf(fig[3], 32, "%.3f", (double)rk->steady_gpu_idle_ns / 1e6 / n);
}

static void text_finding(FILE *out, const char *label, const struct ss_finding *f)
{
	char *owned = NULL;

	fprintf(out, "%s%s %s", label, f->rule, f->severity);
	if (f->rank >= 0)
		fprintf(out, " rank %lld", f->rank);
	fprintf(out, " %s", ss_printable(f->site, &owned));
	free(owned);
}

static void text_numbers(FILE *out, const struct ss_finding *f)
{
	fprintf(out, "count %lld, blocked ", f->count);
	put_ms(out, f->blocked_ns);
	fputs(" ms, cost/step ", out);
	put_ms(out, f->cost_per_step_ns);
	fputs(" ms", out);
}

static int print_text(FILE *out, const struct ss_diff *d)
{
	fprintf(out,
		"syncspy diff: %zu rank%s before, %zu after\n\nsteps per rank (before -> after):\n",
		d->before.nranks, d->before.nranks == 1 ? "" : "s", d->after.nranks);
	fprintf(out, "  %-8s  %-14s  %-16s  %-20s  %s\n", "rank", "steady steps", "syncs/step",
		"blocked ms/step", "gpu idle ms/step");
	for (size_t i = 0; i < d->npairs; i++) {
		const struct ss_rank *rb = i < d->before.nranks ? &d->before.ranks[i] : NULL;
		const struct ss_rank *ra = i < d->after.nranks ? &d->after.ranks[i] : NULL;
		char label[48], fb[4][32], fa[4][32], cell[4][72];

		rank_label(label, sizeof(label), ra ? ra : rb, i);
		step_figures(rb, fb);
		step_figures(ra, fa);
		for (int k = 0; k < 4; k++)
			snprintf(cell[k], sizeof(cell[k]), "%s -> %s", fb[k], fa[k]);
		fprintf(out, "  %-8s  %-14s  %-16s  %-20s  %s%s\n", label, cell[0], cell[1],
			cell[2], cell[3], d->rank_regression[i] ? "  REGRESSION" : "");
	}
	fprintf(out, "\nfindings: %zu gone, %zu new, %zu changed, %zu same\n",
		d->counts[SS_DIFF_GONE], d->counts[SS_DIFF_NEW], d->counts[SS_DIFF_CHANGED],
		d->counts[SS_DIFF_SAME]);
	for (int pass = SS_DIFF_GONE; pass <= SS_DIFF_CHANGED; pass++) {
		for (size_t i = 0; i < d->nitems; i++) {
			const struct ss_diff_item *it = &d->items[i];
			char label[16];

			if ((int)it->status != pass)
				continue;
			snprintf(label, sizeof(label), "%-8s", ss_diff_status_names[it->status]);
			if (it->status == SS_DIFF_GONE) {
				text_finding(out, label, it->before);
				fputs(it->regression ? "  REGRESSION\n          " : "\n          ",
				      out);
				text_numbers(out, it->before);
			} else if (it->status == SS_DIFF_NEW) {
				text_finding(out, label, it->after);
				fputs(it->regression ? "  REGRESSION\n          " : "\n          ",
				      out);
				text_numbers(out, it->after);
			} else {
				text_finding(out, label, it->after);
				fputs(it->regression ? "  REGRESSION\n" : "\n", out);
				fprintf(out, "          count %lld -> %lld, blocked ",
					it->before->count, it->after->count);
				put_ms(out, it->before->blocked_ns);
				fputs(" -> ", out);
				put_ms(out, it->after->blocked_ns);
				fputs(" ms, cost/step ", out);
				put_ms(out, it->before->cost_per_step_ns);
				fputs(" -> ", out);
				put_ms(out, it->after->cost_per_step_ns);
				fputs(" ms", out);
				if (strcmp(it->before->severity, it->after->severity) != 0)
					fprintf(out, ", severity %s -> %s", it->before->severity,
						it->after->severity);
			}
			fputc('\n', out);
		}
	}
	fprintf(out, "\nregressions: %zu (threshold %g%%)\n", d->regressions, d->threshold);
	return SS_EXIT_OK;
}

const struct ss_diff_ops ss_diff_text_ops = {.write = print_text};

/* ---- JSON (docs/diff.md) ---- */

static void json_number(FILE *out, long long v)
{
	if (v < 0)
		fputs("null", out);
	else
		fprintf(out, "%lld", v);
}

static void json_steps(FILE *out, const struct ss_rank *rk)
{
	if (!rk) {
		fputs("null", out);
		return;
	}
	fputs("{\"path\": ", out);
	ss_put_json_string(out, rk->path, 0);
	fputs(", \"steady_steps\": ", out);
	fprintf(out, "%lld", rk->steady_steps);
	if (rk->steady_steps > 0) {
		double n = (double)rk->steady_steps;

		fprintf(out, ", \"sync_points_per_step\": %.17g, \"blocked_ns_per_step\": %lld",
			(double)rk->steady_sync_points / n,
			rk->steady_blocked_ns / rk->steady_steps);
		fputs(", \"gpu_idle_ns_per_step\": ", out);
		json_number(out, rk->steady_gpu_idle_ns >= 0
				     ? rk->steady_gpu_idle_ns / rk->steady_steps
				     : -1);
	} else {
		fputs(", \"sync_points_per_step\": null, \"blocked_ns_per_step\": null, "
		      "\"gpu_idle_ns_per_step\": null",
		      out);
	}
	fputc('}', out);
}

static void json_side(FILE *out, const struct ss_finding *f)
{
	if (!f) {
		fputs("null", out);
		return;
	}
	fputs("{\"severity\": ", out);
	ss_put_json_string(out, f->severity, 0);
	fputs(", \"phase\": ", out);
	ss_put_json_string(out, f->phase, 0);
	fprintf(out, ", \"count\": %lld, \"blocked_ns\": %lld, \"cost_per_step_ns\": ", f->count,
		f->blocked_ns);
	json_number(out, f->cost_per_step_ns);
	fputc('}', out);
}

static int print_json(FILE *out, const struct ss_diff *d)
{
	fprintf(out, "{\"version\": 1, \"threshold_percent\": %g, \"regressions\": %zu,\n",
		d->threshold, d->regressions);
	fprintf(out,
		" \"summary\": {\"gone\": %zu, \"new\": %zu, \"changed\": %zu, \"same\": %zu},\n",
		d->counts[SS_DIFF_GONE], d->counts[SS_DIFF_NEW], d->counts[SS_DIFF_CHANGED],
		d->counts[SS_DIFF_SAME]);
	fputs(" \"ranks\": [", out);
	for (size_t i = 0; i < d->npairs; i++) {
		const struct ss_rank *rb = i < d->before.nranks ? &d->before.ranks[i] : NULL;
		const struct ss_rank *ra = i < d->after.nranks ? &d->after.ranks[i] : NULL;
		const struct ss_rank *rk = ra ? ra : rb;

		fputs(i ? ",\n  {\"rank\": " : "\n  {\"rank\": ", out);
		json_number(out, rk->rank);
		fputs(", \"before\": ", out);
		json_steps(out, rb);
		fputs(", \"after\": ", out);
		json_steps(out, ra);
		fprintf(out, ", \"regression\": %s}", d->rank_regression[i] ? "true" : "false");
	}
	fputs("],\n \"findings\": [", out);
	for (size_t i = 0; i < d->nitems; i++) {
		const struct ss_diff_item *it = &d->items[i];
		const struct ss_finding *f = it->after ? it->after : it->before;

		fputs(i ? ",\n  {\"status\": " : "\n  {\"status\": ", out);
		ss_put_json_string(out, ss_diff_status_names[it->status], 0);
		fputs(", \"rule\": ", out);
		ss_put_json_string(out, f->rule, 0);
		fputs(", \"rank\": ", out);
		json_number(out, f->rank);
		fputs(", \"site\": ", out);
		ss_put_json_string(out, f->site, 0);
		fputs(", \"before\": ", out);
		json_side(out, it->before);
		fputs(", \"after\": ", out);
		json_side(out, it->after);
		fprintf(out, ", \"regression\": %s}", it->regression ? "true" : "false");
	}
	fputs("]}\n", out);
	return SS_EXIT_OK;
}

const struct ss_diff_ops ss_diff_json_ops = {.write = print_json};

/* Analyzes one side (a database or a directory) into *report. */
static int load_side(const char *arg, struct ss_report *report)
{
	struct ss_analysis_options options = {0};
	struct ss_db_list list = {0};
	char *argv[] = {(char *)arg};
	char err[1024];
	int code = ss_db_expand(1, argv, &list, err, sizeof(err));

	if (code == SS_EXIT_OK) {
		ss_db_dedupe(&list);
		code = ss_analyze(list.paths, list.count, &options, report, err, sizeof(err));
	}
	ss_db_list_free(&list);
	if (code != SS_EXIT_OK)
		ss_error(code, "%s", err);
	return code;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option options[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"fail-on-regression", no_argument, NULL, 'F'},
	    {"threshold", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const struct ss_format *format = ss_format_default(SS_FORMAT_DIFF);
	const char *output = "-";
	struct ss_diff d = {.threshold = DIFF_THRESHOLD_PERCENT};
	int ch, code, closed, fail_on_regression = 0;
	struct ss_outfile file;
	char err[1024], *end;

	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, argv, ":f:o:h", options, NULL)) != -1) {
		switch (ch) {
		case 'f':
			format = ss_format_option(SS_FORMAT_DIFF, optarg);
			if (!format)
				return SS_EXIT_INPUT;
			break;
		case 'o':
			output = optarg;
			break;
		case 'F':
			fail_on_regression = 1;
			break;
		case 't':
			d.threshold = strtod(optarg, &end);
			if (end == optarg || *end || !(d.threshold >= 0) || isinf(d.threshold))
				return ss_error(
				    SS_EXIT_INPUT,
				    "diff: --threshold: expected a percentage >= 0, got '%s'",
				    optarg);
			break;
		case 'h':
			ss_command_usage(stdout, "diff");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("diff", ch, argv);
		}
	}
	if (argc - optind != 2)
		return ss_error(SS_EXIT_INPUT, "diff: name two recordings: BEFORE AFTER");
	d.before_arg = argv[optind];
	d.after_arg = argv[optind + 1];
	code = load_side(argv[optind], &d.before);
	if (code == SS_EXIT_OK) {
		code = load_side(argv[optind + 1], &d.after);
		if (code != SS_EXIT_OK)
			ss_report_free(&d.after);
	}
	if (code != SS_EXIT_OK) {
		ss_report_free(&d.before);
		return code;
	}
	if (compare(&d) != 0)
		code = ss_error(SS_EXIT_INTERNAL, "diff: out of memory");
	if (code == SS_EXIT_OK) {
		code = ss_outfile_open(output, &file, err, sizeof(err));
		if (code != SS_EXIT_OK) {
			ss_error(code, "%s", err);
		} else {
			code = format->diff->write(file.file, &d);
			closed = ss_outfile_close(&file, code == SS_EXIT_OK, err, sizeof(err));
			if (closed != SS_EXIT_OK && code == SS_EXIT_OK)
				code = ss_error(closed, "%s", err);
		}
	}
	if (code == SS_EXIT_OK && fail_on_regression && d.regressions)
		code = SS_EXIT_OVER_BUDGET;
	free(d.items);
	free(d.rank_regression);
	ss_report_free(&d.before);
	ss_report_free(&d.after);
	return code;
}
