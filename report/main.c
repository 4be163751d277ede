/*
 * report/main.c: the `syncspy` command's dispatcher and its help.
 *
 * It finds the subcommand in SS_COMMANDS (commands.h) and runs it; everything else a subcommand
 * needs lives in its own cmd_NAME.c. `help` is here because it describes the table itself, the
 * SYNCSPY_* variables of include/syncspy/env.h and the output formats of formats.h.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

#include <sqlite3.h>

#include "syncspy/env.h"
#include "syncspy/schema.h"
#include "commands.h"
#include "formats.h"
#include "git_version.h"
#include "text_safe.h"

struct ss_command {
	const char *name;
	ss_command_fn run;
	const char *args;
	const char *summary;
	const char *options;
};

static const struct ss_command commands[] = {
#define SS_COMMAND_ENTRY(name, args, summary, options) {#name, cmd_##name, args, summary, options},
    SS_COMMANDS(SS_COMMAND_ENTRY)
#undef SS_COMMAND_ENTRY
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct ss_command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* The message is one line with its control characters escaped (text_safe.h): it often quotes
 * a database (a path, a schema_version, a name), which can hold anything. */
int ss_error(int code, const char *fmt, ...)
{
	va_list ap;
	char *message = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&message, fmt, ap);
	va_end(ap);
	ss_print_line(stderr, "syncspy: %s", n < 0 ? "out of memory (writing a message)" : message);
	if (n >= 0)
		free(message);
	return code;
}

int ss_bad_option(const char *command, int ch, char **argv)
{
	/* optopt is 0 for a long option: the offending word is the one getopt just consumed. */
	if (ch == ':') {
		if (optopt)
			return ss_error(SS_EXIT_INPUT, "%s: option -%c needs an argument", command,
					optopt);
		return ss_error(SS_EXIT_INPUT, "%s: option %s needs an argument", command,
				argv[optind - 1]);
	}
	if (optopt)
		return ss_error(SS_EXIT_INPUT, "%s: unknown option -%c (see 'syncspy help %s')",
				command, optopt, command);
	return ss_error(SS_EXIT_INPUT, "%s: unknown option %s (see 'syncspy help %s')", command,
			argv[optind - 1], command);
}

/* The placeholders of SS_COMMANDS' texts for the formats a command offers (formats.h). */
#define FORMATS_MARK	    "@FORMATS@"
#define FORMAT_CHOICES_MARK "@FORMAT_CHOICES@"

/* Writes text with the placeholders replaced by the formats command offers (formats.h). */
static void put_help_text(FILE *out, const char *text, int command)
{
	const char *at;

	while ((at = strchr(text, '@')) != NULL) {
		int formats = strncmp(at, FORMATS_MARK, strlen(FORMATS_MARK)) == 0;
		int choices = strncmp(at, FORMAT_CHOICES_MARK, strlen(FORMAT_CHOICES_MARK)) == 0;

		fwrite(text, 1, (size_t)(at - text), out);
		if (command < 0 || (!formats && !choices)) {
			fputc('@', out);
			text = at + 1;
			continue;
		}
		if (formats)
			ss_format_names(out, (enum ss_format_command)command, "|", "|", "");
		else
			ss_format_names(out, (enum ss_format_command)command, ", ", " or ",
					" (default)");
		text = at + strlen(formats ? FORMATS_MARK : FORMAT_CHOICES_MARK);
	}
	fputs(text, out);
}

void ss_command_usage(FILE *out, const char *name)
{
	const struct ss_command *cmd = find_command(name);
	int command;

	if (!cmd)
		return;
	command = ss_format_command_named(cmd->name);
	fprintf(out, "usage: syncspy %s ", cmd->name);
	put_help_text(out, cmd->args, command);
	fprintf(out, "\n\n%s.\n", cmd->summary);
	if (cmd->options[0]) {
		fputc('\n', out);
		put_help_text(out, cmd->options, command);
	}
}

static void print_usage(FILE *out)
{
	fputs("usage: syncspy COMMAND [ARGS...]\n"
	      "       syncspy --help | --version\n"
	      "\n"
	      "Reads the databases libsyncspy.so writes (one per process: LD_PRELOAD=libsyncspy.so "
	      "PROGRAM).\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "Exit status:\n"
	      "  0  success\n"
	      "  1  `check`: over budget; `diff --fail-on-regression`: a regression\n"
	      "  2  bad input or usage (the message on stderr says which)\n"
	      "  3  internal error\n"
	      "\n"
	      "'syncspy help COMMAND' describes one command, 'syncspy help env' the SYNCSPY_*\n"
	      "environment variables of the recording library, 'syncspy help formats' the output\n"
	      "formats.\n",
	      out);
}

/* The words `syncspy help env` uses for the types of env.h. */
#define SS_ENV_TYPE_INT	 "integer"
#define SS_ENV_TYPE_BOOL "0 or 1"
#define SS_ENV_TYPE_STR	 "string"

/* Prints text after indent, broken at spaces so that lines stay within 100 columns. */
static void print_wrapped(FILE *out, const char *indent, const char *text)
{
	const size_t width = 100 - strlen(indent);

	while (*text) {
		size_t len = strlen(text), cut = len;

		if (len > width) {
			cut = width;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (cut == 0) /* one word longer than the line: leave it whole */
				cut = strcspn(text, " ");
		}
		fprintf(out, "%s%.*s\n", indent, (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
	}
}

/* Prints the table of include/syncspy/env.h: the one place the variables are declared. */
static void print_env_help(FILE *out)
{
	fputs("Environment variables read by libsyncspy.so (once, when it loads):\n", out);
#define SS_ENV_HELP(name, type, def, desc)                                                         \
	fprintf(out, "\n  %s (%s, default: %s)\n", #name, SS_ENV_TYPE_##type, def);                \
	print_wrapped(out, "      ", desc);
	SS_ENV_VARS(SS_ENV_HELP)
#undef SS_ENV_HELP
}

int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		print_usage(stdout);
		return SS_EXIT_OK;
	}
	if (argc > 2)
		return ss_error(SS_EXIT_INPUT,
				"help: one topic at most (a command, 'env' or 'formats')");
	if (strcmp(argv[1], "env") == 0) {
		print_env_help(stdout);
		return SS_EXIT_OK;
	}
	if (strcmp(argv[1], "formats") == 0) {
		ss_formats_help(stdout);
		return SS_EXIT_OK;
	}
	if (!find_command(argv[1]))
		return ss_error(SS_EXIT_INPUT, "help: unknown topic '%s' (see 'syncspy help')",
				argv[1]);
	ss_command_usage(stdout, argv[1]);
	return SS_EXIT_OK;
}

/* A full disk or a closed pipe must not look like success to a script. */
static int finish_output(int code)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int err = errno;

		ss_error(SS_EXIT_INTERNAL, "cannot write the output: %s",
			 err ? strerror(err) : "write error");
		return SS_EXIT_INTERNAL;
	}
	return code;
}

int main(int argc, char **argv)
{
	const struct ss_command *cmd;

	if (argc < 2) {
		print_usage(stderr);
		return SS_EXIT_INPUT;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return finish_output(cmd_help(1, argv + 1));
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		/* SS_GIT_VERSION: the commit of a git build, else "release" (report/Makefile.am) */
		printf("syncspy %s (%s%s; database schema version %d, SQLite %s)\n",
		       PACKAGE_VERSION, strcmp(SS_GIT_VERSION, "release") == 0 ? "" : "git ",
		       SS_GIT_VERSION, SS_SCHEMA_VERSION, sqlite3_libversion());
		return finish_output(SS_EXIT_OK);
	}
	if (argv[1][0] == '-')
		return ss_error(SS_EXIT_INPUT, "unknown option %s (see 'syncspy help')", argv[1]);
	cmd = find_command(argv[1]);
	if (!cmd)
		return ss_error(SS_EXIT_INPUT, "unknown command '%s' (see 'syncspy help')",
				argv[1]);
	return finish_output(cmd->run(argc - 1, argv + 1));
}
