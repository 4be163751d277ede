/*
 * report/cmd_report.c: `syncspy report DB|DIR... [--format text|json|html] [-o FILE]`, the
 * findings of one or many rank databases merged into one report.
 *
 * The analysis (analysis.c) builds the model; one backend of output.h prints it. docs/rules.md
 * explains the findings, docs/report-json.md the JSON. A bad database stops the report with exit
 * 2: a merge of a run with one rank missing would compare the wrong things.
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
#include "out_html.h"
#include "outfile.h"
#include "output.h"

/* The HTML backend (report/out_html.c, with viewer/) takes the JSON document and the open rank
 * databases; it is linked in when it is built, and `--format html` says so until then. */
#pragma weak ss_html_write

static const struct ss_report_ops *find_backend(const char *format)
{
	if (strcmp(format, "text") == 0)
		return &ss_report_text_ops;
	if (strcmp(format, "json") == 0)
		return &ss_report_json_ops;
	return NULL;
}

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

/* HTML: the JSON document, rendered into memory, plus the databases in the order of ranks[]
 * (out_html.c opens one at a time). */
static int print_html(FILE *out, const struct ss_report *r)
{
	const char **paths = calloc(r->nranks ? r->nranks : 1, sizeof(*paths));
	char err[1024], *json = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&json, &len);
	int code = paths && mem ? SS_EXIT_OK : SS_EXIT_INTERNAL;

	if (code == SS_EXIT_OK)
		code = print_report(&ss_report_json_ops, mem, r);
	if (mem)
		fclose(mem);
	long long *finding_ranks = calloc(r->nfindings ? r->nfindings : 1, sizeof(*finding_ranks));

	if (!finding_ranks)
		code = SS_EXIT_INTERNAL;
	for (size_t i = 0; paths && i < r->nranks; i++)
		paths[i] = r->ranks[i].path;
	/* each finding's database, as an index in ranks[]: the page links it to its timeline */
	for (size_t i = 0; finding_ranks && i < r->nfindings; i++) {
		finding_ranks[i] = -1;
		for (size_t k = 0; k < r->nranks; k++)
			if (r->findings[i].path == r->ranks[k].path)
				finding_ranks[i] = (long long)k;
	}
	if (code == SS_EXIT_OK) {
		code = ss_html_write(out, json, paths, r->nranks, finding_ranks, r->nfindings, 0,
				     err, sizeof(err));
		if (code != SS_EXIT_OK)
			ss_error(code, "%s", err);
	}
	free(finding_ranks);
	free(paths);
	free(json);
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
	const struct ss_report_ops *ops;
	const char *format = "text", *output = NULL;
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
			format = optarg;
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
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0 &&
	    strcmp(format, "html") != 0)
		return ss_error(SS_EXIT_INPUT, "report: unknown format '%s' (text, json or html)",
				format);
	ops = find_backend(format);
	if (!ops && !ss_html_write)
		return ss_error(SS_EXIT_INPUT, "report: html output is not built yet");
	if (optind == argc)
		return ss_error(SS_EXIT_INPUT, "report: name at least one database or directory");
	code = ss_db_expand(argc - optind, argv + optind, &list, err, sizeof(err));
	if (code != SS_EXIT_OK) {
		ss_db_list_free(&list);
		return ss_error(code, "%s", err);
	}
	ss_db_dedupe(&list); /* one file, one rank */
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
	code = ops ? print_report(ops, file.file, &report) : print_html(file.file, &report);
	ss_report_free(&report);
	closed = ss_outfile_close(&file, code == SS_EXIT_OK, err, sizeof(err));
	if (closed != SS_EXIT_OK && code == SS_EXIT_OK)
		code = ss_error(closed, "%s", err);
	return code;
}
