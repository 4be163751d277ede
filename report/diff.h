/*
 * report/diff.h: what `syncspy diff` compares (two reports of analysis.h, one per recording;
 * report/cmd_diff.c, docs/diff.md) and its writers, one per format of the table in formats.h:
 * text and JSON in cmd_diff.c, HTML in diff_html.c. A writer prints the comparison only: what
 * is gone, new, changed or a regression is decided in cmd_diff.c.
 */
#ifndef SYNCSPY_REPORT_DIFF_H
#define SYNCSPY_REPORT_DIFF_H

#include <stddef.h>
#include <stdio.h>

#include "analysis.h"

enum ss_diff_status { SS_DIFF_GONE, SS_DIFF_NEW, SS_DIFF_CHANGED, SS_DIFF_SAME };

/* One matched (rule, rank, site): its finding on each side, NULL on the side it is missing from. */
struct ss_diff_item {
	enum ss_diff_status status;
	const struct ss_finding *before, *after;
	int regression;
};

struct ss_diff {
	const char *before_arg, *after_arg; /* BEFORE and AFTER as given */
	struct ss_report before, after;
	struct ss_diff_item *items; /* AFTER's order (ANALYSIS-1), then what is gone in BEFORE's */
	size_t nitems;
	size_t counts[4]; /* per status */
	size_t regressions;
	int *rank_regression; /* per pair of ranks: syncs per step rose */
	size_t npairs;	      /* ranks paired in the order of the model: max of both sides */
	double threshold;     /* --threshold, percent */
};

/* The names of the statuses: "gone", "new", "changed", "same". */
extern const char *const ss_diff_status_names[4];

/* A format of `syncspy diff`: write returns an ss_exit code, having printed its message. */
struct ss_diff_ops {
	int (*write)(FILE *out, const struct ss_diff *diff);
};

extern const struct ss_diff_ops ss_diff_text_ops; /* cmd_diff.c */
extern const struct ss_diff_ops ss_diff_json_ops; /* cmd_diff.c, docs/diff.md */
extern const struct ss_diff_ops ss_diff_html_ops; /* diff_html.c, with viewer/diff.js */

#endif
