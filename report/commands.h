/*
 * report/commands.h: the table of `syncspy` subcommands and what they share (exit codes, the
 * one way of reporting an error).
 *
 * One source file per subcommand: cmd_NAME.c defines cmd_NAME(). To add a subcommand, add a
 * line to SS_COMMANDS and the file to report/Makefile.am; main.c and `syncspy help` pick it up.
 */
#ifndef SYNCSPY_REPORT_COMMANDS_H
#define SYNCSPY_REPORT_COMMANDS_H

#include <stdio.h>

#include "syncspy/env.h" /* SS_DEFAULT_OUTPUT_DIR, in run's help */

/* Exit codes of every subcommand; docs/cli.md and `syncspy help` document them. */
enum ss_exit {
	SS_EXIT_OK = 0,
	SS_EXIT_OVER_BUDGET = 1, /* `check`: over budget; `diff --fail-on-regression`: regressed */
	SS_EXIT_INPUT = 2,	 /* bad input or usage: the message says what to fix */
	SS_EXIT_INTERNAL = 3,	 /* a bug, out of memory, a write error */
};

/*
 * X(name, arguments, summary, options): options is the text `syncspy help NAME` prints under
 * the synopsis, one "  --opt  meaning\n" line per option (empty for none). In both, the
 * formats of formats.h's table that the command offers stand for @FORMATS@ (text|json|html)
 * and @FORMAT_CHOICES@ (text (default), json or html).
 */
#define SS_COMMANDS(X)                                                                             \
	X(help, "[COMMAND | env | formats]",                                                       \
	  "print this help, a command's help, the SYNCSPY_* environment variables or the output "  \
	  "formats",                                                                               \
	  "")                                                                                      \
	X(run,                                                                                     \
	  "[-o DIR] [--cupti|--no-cupti] [--cupti-sample MODE] [--cupti-pause HOW] [--delay S] "   \
	  "[--duration S] [--capture-range cudaProfilerApi|nvtx] [--nvtx-capture NAME] "           \
	  "[--aggregate] "                                                                         \
	  "[--] CMD [ARGS...]",                                                                    \
	  "run CMD (and its children) with libsyncspy.so preloaded, then summarize the recording", \
	  "  -o DIR      where the databases go (default " SS_DEFAULT_OUTPUT_DIR                   \
	  "; made absolute)\n"                                                                     \
	  "  --cupti     set SYNCSPY_CUPTI=1, the default (GPU-side activity through CUPTI)\n"     \
	  "  --no-cupti  set SYNCSPY_CUPTI=0 (host side only)\n"                                   \
	  "  --cupti-sample MODE  set SYNCSPY_CUPTI_SAMPLE: auto (the default: windows when "      \
	  "tracing every call costs too much), all (the whole run), or ON/PERIOD (ON ms of every " \
	  "PERIOD ms)\n"                                                                           \
	  "  --cupti-pause HOW  set SYNCSPY_CUPTI_PAUSE: detach (the default: CUPTI detached "     \
	  "where the GPU timeline is off and attached again after: docs/cupti.md, CUPTI-8) or "    \
	  "disable (CUPTI's kinds disabled there, CUPTI staying attached)\n"                       \
	  "  --delay S   set SYNCSPY_DELAY: record nothing for the first S seconds\n"              \
	  "  --duration S  set SYNCSPY_DURATION: record S seconds (after the delay)\n"             \
	  "  --capture-range cudaProfilerApi  record between cudaProfilerStart and "               \
	  "cudaProfilerStop\n"                                                                     \
	  "  --capture-range nvtx --nvtx-capture NAME  record inside the NVTX ranges named NAME\n" \
	  "  --aggregate  set SYNCSPY_MODE=aggregate: sync points one row each, enqueues counted " \
	  "per site (runs of hours: the file grows with syncs and steps, not enqueues)\n"          \
	  "  exit status: CMD's; 128+N when signal N ended it; 127 when CMD is not found\n")       \
	X(check,                                                                                   \
	  "--budget FILE [--junit FILE] [--top N] DB|DIR|SUMMARY... | --init [-o FILE] "           \
	  "DB|DIR|SUMMARY...",                                                                     \
	  "exit 1 when recordings sync more than a budget allows, naming the call sites",          \
	  "  --budget FILE  the JSON budget: limits per class, API, call site, rank\n"             \
	  "  --junit FILE   also write a JUnit XML report (one testcase per limit and rank)\n"     \
	  "  --top N        call sites listed per breach (default 5)\n"                            \
	  "  --init         write a budget from a good run instead (docs/budget.md)\n"             \
	  "  -o FILE        with --init: where the budget goes (default: standard output)\n"       \
	  "  GITHUB_ACTIONS=true: each breach is also printed as an ::error:: annotation\n"        \
	  "  GITHUB_STEP_SUMMARY=FILE: a Markdown table of the checks is appended to FILE\n"       \
	  "  exit status: 0 within budget, 1 over budget, 2 bad budget, database or usage\n")      \
	X(diff,                                                                                    \
	  "[--format @FORMATS@] [-o FILE] [--fail-on-regression] [--threshold PERCENT] "           \
	  "BEFORE AFTER",                                                                          \
	  "compare two recordings: findings gone, new and changed, and each rank's step figures",  \
	  "  --format F            @FORMAT_CHOICES@: docs/diff.md\n"                               \
	  "  -o FILE               write the diff to FILE instead of standard output\n"            \
	  "  --fail-on-regression  exit 1 when AFTER regressed (docs/diff.md)\n"                   \
	  "  --threshold PERCENT   a cost or syncs per step up by more is a regression (default "  \
	  "20)\n"                                                                                  \
	  "  exit status: 0 done, 1 regression (with --fail-on-regression), 2 bad input\n")        \
	X(dump, "[--table T] [--format tsv|csv|json] [--where SQL] DB|DIR...",                     \
	  "print the rows of one table of each database, for scripts",                             \
	  "  --table T    api_calls (default), calls, meta, sites, threads, comms, streams,\n"     \
	  "               stacks, ranges; aggregate mode's enqueue_aggregates,\n"                  \
	  "               enqueue_histogram, step_figures; the GPU timeline's\n"                   \
	  "               gpu_activity, gpu_api\n"                                                 \
	  "  --format F   tsv (default: '# PATH' line, header line), csv, json (one array)\n"      \
	  "  --where SQL  only rows where the SQL expression holds (read-only connection)\n")      \
	X(export, "[--format @FORMATS@] [--start S] [--end S] [--syncs-only] -o FILE DB|DIR...",   \
	  "write one trace of all databases for a timeline viewer (Perfetto, chrome://tracing)",   \
	  "  --format F       @FORMAT_CHOICES@: docs/export.md\n"                                  \
	  "  -o FILE          the trace file, written whole or not at all; - for standard "        \
	  "output\n"                                                                               \
	  "  --start S        only what starts S seconds or more after each recording's start\n"   \
	  "  --end S          only what starts before S seconds after it\n"                        \
	  "  --syncs-only     only the host sync points (S1-S7): no enqueues, flows or GPU "       \
	  "work\n")                                                                                \
	X(info, "[--json] [--check] DB|DIR...",                                                    \
	  "print each database's metadata, calls per API and class, and dropped events",           \
	  "  --json   one JSON array with one object per database\n"                               \
	  "  --check  read every page first (PRAGMA quick_check): slower, finds all damage\n"      \
	  "  DIR      stands for the *.sqlite and *.sqlite.partial files inside it\n")             \
	X(report, "[--format @FORMATS@] [-o FILE] [--progress] DB|DIR|SUMMARY...",                 \
	  "merge rank databases into one report: per-rank totals and findings with fix advice",    \
	  "  --format F   @FORMAT_CHOICES@: docs/report-json.md, docs/viewer.md\n"                 \
	  "  -o FILE      write the report to FILE instead of standard output\n"                   \
	  "  --progress   one line on stderr per database loaded (default when stderr is a "       \
	  "TTY)\n")                                                                                \
	X(summarize, "-o SUMMARY [--progress] DB|DIR...",                                          \
	  "write a small summary of the databases here, for report and check to read in their "    \
	  "place (a job's nodes)",                                                                 \
	  "  -o SUMMARY   the summary file (written whole or not at all)\n"                        \
	  "  --progress   one line on stderr per database read (default when stderr is a TTY)\n"   \
	  "  run one per node under the job's launcher, then: syncspy report SUMMARY...\n"         \
	  "  (docs/cli.md, \"Large jobs\")\n")                                                     \
	X(symbolize, "[--restore] DB|DIR...",                                                      \
	  "write native call sites' file:line into the databases (for machines without the "       \
	  "binary)",                                                                               \
	  "  --restore  put the recorded site texts back (kept in the sites_recorded table)\n"     \
	  "  exit status: 0 written, 2 bad database, no libdw.so.1 or usage, 3 write error\n")     \
	X(schema, "[--lookups] [--extensions]",                                                    \
	  "print the SQL schema this syncspy writes and reads",                                    \
	  "  --lookups     also print the rows of the classes, memkinds and dirs tables\n"         \
	  "  --extensions  also print the tables a recording has only with their data (modules,\n" \
	  "                gpu_activity, gpu_api)\n")

/* A subcommand gets its own argument vector (argv[0] is its name) and returns an ss_exit. */
typedef int (*ss_command_fn)(int argc, char **argv);

#define SS_COMMAND_DECLARE(name, args, summary, options) int cmd_##name(int argc, char **argv);
SS_COMMANDS(SS_COMMAND_DECLARE)
#undef SS_COMMAND_DECLARE

/* Prints "syncspy: MESSAGE\n" on stderr, control characters escaped (text_safe.h), and returns
 * code, for `return ss_error(...)`. */
int ss_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the synopsis, summary and options of one subcommand to out. */
void ss_command_usage(FILE *out, const char *name);

/*
 * Reports an option getopt_long rejected and returns SS_EXIT_INPUT. Subcommands run getopt_long
 * with opterr = 0 and an option string starting with ':' (so that every message starts with
 * "syncspy: "); ch is what it returned, '?' (unknown option) or ':' (missing argument).
 */
int ss_bad_option(const char *command, int ch, char **argv);

#endif
