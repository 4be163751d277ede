/*
 * report/cmd_report.c: `syncspy report DB|DIR... [--format text|json|html] [-o FILE]`, the
 * findings of one or many rank databases merged into one report.
 *
 * The analysis (analysis.c) builds the model; one backend of output.h, picked by --format in
 * formats.h's table, prints it. docs/rules.md explains the findings, docs/report-json.md the
 * JSON, docs/viewer.md the HTML page. A bad database stops the report with exit 2: a merge of a
 * run with one rank missing would compare the wrong things.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "commands.h"
#include "db.h"
#include "lines.h"
#include "formats.h"
#include "outfile.h"
#include "output.h"
#include "summary.h"

static int print_report(const struct ss_report_ops *ops, FILE *out, const struct ss_report *r)
{
	int code = ops->begin(out, r);

	for (size_t i = 0; code == SS_EXIT_OK && i < r->nranks; i++)
		code = ops->rank(out, r, &r->ranks[i]);
	for (size_t i = 0; code == SS_EXIT_OK && i < r->nfindings; i++)
		code = ops->finding(out, r, &r->findings[i]);
	if (code == SS_EXIT_OK)
		code = ops->end(out, r);
	return code;
}

int cmd_report(int argc, char **argv)
{
	static const struct option options[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"progress", no_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ss_analysis_options analysis = {.progress = isatty(STDERR_FILENO), .fold_ranks = 1};
	const struct ss_format *format = ss_format_default(SS_FORMAT_REPORT);
	const char *output = NULL;
	struct ss_db_list list = {0};
	struct ss_report report;
	struct ss_outfile file;
	char err[1024];
	int ch, code, closed;

	opterr = 0;
	optind = 0; /* glibc: start a fresh scan */
	while ((ch = getopt_long(argc, argv, ":f:o:h", options, NULL)) != -1) {
		switch (ch) {
		case 'f':
			format = ss_format_option(SS_FORMAT_REPORT, optarg);
			if (!format)
				return SS_EXIT_INPUT;
			break;
		case 'o':
			output = optarg;
			break;
		case 'p':
			analysis.progress = 1;
			break;
		case 'h':
			ss_command_usage(stdout, "report");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("report", ch, argv);
		}
	}
	if (optind == argc)
		return ss_error(SS_EXIT_INPUT, "report: name at least one database or directory");
	code = ss_db_expand(argc - optind, argv + optind, &list, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", err);
	}
	ss_db_dedupe(&list); /* one file, one rank */
	/* the page draws each rank's timeline from its database: a summary has none */
	for (size_t i = 0; format->report == &ss_report_html_ops && i < list.count; i++)
		if (ss_summary_is(list.paths[i])) {
			code =
			    ss_error(SS_EXIT_INPUT,
				     "%s: a summary: the HTML report draws each rank's timeline "
				     "from its database (name the databases, or use --format text "
				     "or json with summaries)",
				     list.paths[i]);
			ss_db_list_free(&list);
			return code;
		}
	code = ss_analyze(list.paths, list.count, &analysis, &report, err, sizeof(err));
	ss_db_list_free(&list);
	if (code != SS_EXIT_OK) {
		ss_report_free(&report);
		return ss_error(code, "%s", err);
	}
	/* The output file is opened only now: a failed analysis leaves an old report in place,
	 * and a failed write too (outfile.h: replaced whole, once written). */
	code = ss_outfile_open(output ? output : "-", &file, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_report_free(&report);
		return ss_error(code, "%s", err);
	}
	code = print_report(format->report, file.file, &report);
	ss_report_free(&report);
	closed = ss_outfile_close(&file, code == SS_EXIT_OK, err, sizeof(err));
	if (closed != SS_EXIT_OK && code == SS_EXIT_OK)
		code = ss_error(closed, "%s", err);
	return code;
}
