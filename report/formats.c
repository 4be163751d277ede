/*
 * report/formats.c: the table of output formats (formats.h) and the lookups every command
 * with --format makes in it. Adding a format: one row here, its writer behind the ops struct of
 * each command that offers it (docs/architecture.md, "Adding an output format").
 */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "diff.h"
#include "export.h"
#include "formats.h"
#include "output.h"

const struct ss_format ss_formats[] = {
    {
	.name = "text",
	.extension = "txt",
	.description = "text for a terminal or a log",
	.report = &ss_report_text_ops,
	.diff = &ss_diff_text_ops,
    },
    {
	.name = "json",
	.extension = "json",
	.description = "one JSON document (docs/report-json.md, docs/diff.md)",
	.report = &ss_report_json_ops,
	.diff = &ss_diff_json_ops,
    },
    {
	.name = "html",
	.extension = "html",
	.description = "one self-contained HTML page, offline (docs/viewer.md, docs/diff.md)",
	.report = &ss_report_html_ops,
	.diff = &ss_diff_html_ops,
    },
    {
	.name = "chrome",
	.extension = "json",
	.description = "Chrome trace-event JSON, for Perfetto (docs/export.md)",
	.export = &ss_export_chrome,
    },
};
const size_t ss_nformats = sizeof(ss_formats) / sizeof(ss_formats[0]);

/* The commands of enum ss_format_command, by their SS_COMMANDS names. */
static const char *const command_names[SS_FORMAT_COMMANDS] = {
    [SS_FORMAT_REPORT] = "report",
    [SS_FORMAT_EXPORT] = "export",
    [SS_FORMAT_DIFF] = "diff",
};

int ss_format_command_named(const char *name)
{
	for (int c = 0; c < SS_FORMAT_COMMANDS; c++)
		if (strcmp(command_names[c], name) == 0)
			return c;
	return -1;
}

int ss_format_offered(const struct ss_format *f, enum ss_format_command command)
{
	switch (command) {
	case SS_FORMAT_REPORT:
		return f->report != NULL;
	case SS_FORMAT_EXPORT:
		return f->export != NULL;
	case SS_FORMAT_DIFF:
		return f->diff != NULL;
	default:
		return 0;
	}
}

const struct ss_format *ss_format_default(enum ss_format_command command)
{
	for (size_t i = 0; i < ss_nformats; i++)
		if (ss_format_offered(&ss_formats[i], command))
			return &ss_formats[i];
	return NULL; /* every command of the enum has one: t407 */
}

void ss_format_names(FILE *out, enum ss_format_command command, const char *sep, const char *last,
		     const char *first_suffix)
{
	size_t total = 0, n = 0;

	for (size_t i = 0; i < ss_nformats; i++)
		total += (size_t)ss_format_offered(&ss_formats[i], command);
	for (size_t i = 0; i < ss_nformats; i++) {
		if (!ss_format_offered(&ss_formats[i], command))
			continue;
		if (n)
			fputs(n + 1 == total ? last : sep, out);
		fputs(ss_formats[i].name, out);
		if (n++ == 0)
			fputs(first_suffix, out);
	}
}

const struct ss_format *ss_format_option(enum ss_format_command command, const char *name)
{
	char *list = NULL;
	size_t len = 0;
	FILE *mem;

	for (size_t i = 0; i < ss_nformats; i++)
		if (ss_format_offered(&ss_formats[i], command) &&
		    strcmp(ss_formats[i].name, name) == 0)
			return &ss_formats[i];
	mem = open_memstream(&list, &len);
	if (!mem) {
		ss_error(SS_EXIT_INPUT, "%s: unknown format '%s'", command_names[command], name);
		return NULL;
	}
	ss_format_names(mem, command, ", ", " or ", "");
	fclose(mem);
	ss_error(SS_EXIT_INPUT, "%s: unknown format '%s' (%s)", command_names[command], name, list);
	free(list);
	return NULL;
}

void ss_formats_help(FILE *out)
{
	fputs("Output formats (--format of report, export and diff; a command's default is the "
	      "first it offers):\n\n",
	      out);
	fprintf(out, "  %-7s %-6s %-13s %s\n", "format", "file", "commands", "what it is");
	for (size_t i = 0; i < ss_nformats; i++) {
		const struct ss_format *f = &ss_formats[i];
		char commands[64] = "";

		for (int c = 0; c < SS_FORMAT_COMMANDS; c++) {
			if (!ss_format_offered(f, (enum ss_format_command)c))
				continue;
			if (commands[0])
				strcat(commands, " ");
			strcat(commands, command_names[c]);
		}
		fprintf(out, "  %-7s .%-5s %-13s %s\n", f->name, f->extension, commands,
			f->description);
	}
}
