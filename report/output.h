/*
 * report/output.h: the output backends of `syncspy report`, one per format, behind one ops
 * struct (as uftrace's dump backends); formats.h's table names them. cmd_report.c calls begin,
 * then rank for every rank (in rank order), then finding for every finding (ANALYSIS-1 order),
 * then end. A backend keeps its state in its own file; every callback returns an ss_exit code,
 * having printed its message.
 */
#ifndef SYNCSPY_REPORT_OUTPUT_H
#define SYNCSPY_REPORT_OUTPUT_H

#include <stdio.h>

#include "analysis.h"

struct ss_report_ops {
	int (*begin)(FILE *out, const struct ss_report *report);
	int (*rank)(FILE *out, const struct ss_report *report, const struct ss_rank *rank);
	int (*finding)(FILE *out, const struct ss_report *report, const struct ss_finding *finding);
	int (*end)(FILE *out, const struct ss_report *report);
};

extern const struct ss_report_ops ss_report_text_ops;
extern const struct ss_report_ops ss_report_json_ops;
extern const struct ss_report_ops ss_report_html_ops; /* out_html.c: the JSON document in a page */

/* The JSON document's own version (docs/report-json.md): fields are only added within a major
 * version. */
#define SS_REPORT_JSON_VERSION "2.1"

#endif
