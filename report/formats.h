/*
 * report/formats.h: the one table of syncspy's output formats, and the one way a command
 * picks one (docs/architecture.md, "Adding an output format").
 *
 * As uftrace keeps its output backends behind one ops struct, each format is one row: its
 * name (the --format word), the extension of a file written in it, what it is, and the writer
 * that each command offering it uses, behind that command's ops struct: a report backend
 * (output.h), an export backend (export.h), a diff writer (diff.h); NULL where the command
 * does not offer it. `report --format`, `export --format` and `diff --format` look their word
 * up here, and their help (`syncspy help CMD`, `syncspy help formats`) and their messages
 * name the formats from here; the bash completion, the manual page and docs/cli.md are held to
 * the table by tests/e2e/t407. A command's default is the first format of the table it offers.
 */
#ifndef SYNCSPY_REPORT_FORMATS_H
#define SYNCSPY_REPORT_FORMATS_H

#include <stddef.h>
#include <stdio.h>

struct ss_report_ops;
struct ss_export_ops;
struct ss_diff_ops;

/* The commands that take --format from the table, and their names (their SS_COMMANDS names). */
enum ss_format_command { SS_FORMAT_REPORT, SS_FORMAT_EXPORT, SS_FORMAT_DIFF, SS_FORMAT_COMMANDS };

struct ss_format {
	const char *name;	 /* the --format word */
	const char *extension;	 /* of a file in this format, without the dot */
	const char *description; /* for `syncspy help formats` */
	const struct ss_report_ops *report;
	const struct ss_export_ops *export;
	const struct ss_diff_ops *diff;
};

extern const struct ss_format ss_formats[];
extern const size_t ss_nformats;

/* The command named name ("report", ...), or -1 when it takes no --format from the table. */
int ss_format_command_named(const char *name);

/* Whether command offers f. */
int ss_format_offered(const struct ss_format *f, enum ss_format_command command);

/* The format command uses without --format: the first of the table it offers. */
const struct ss_format *ss_format_default(enum ss_format_command command);

/*
 * The format named name that command offers. Otherwise NULL, after one message on stderr,
 * "syncspy: COMMAND: unknown format 'NAME' (text, json or html)", the caller's exit status
 * then being SS_EXIT_INPUT (bad usage).
 */
const struct ss_format *ss_format_option(enum ss_format_command command, const char *name);

/*
 * Writes the names of the formats command offers, in table order: between each two sep, and
 * last before the final one ("|" "|": text|json|html; ", " " or ": text, json or html);
 * first_suffix after the first (the default), "" for none.
 */
void ss_format_names(FILE *out, enum ss_format_command command, const char *sep, const char *last,
		     const char *first_suffix);

/* `syncspy help formats`: the table. */
void ss_formats_help(FILE *out);

#endif
