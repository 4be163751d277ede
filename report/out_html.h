/*
 * report/out_html.h: the pages of the viewer: the HTML backend of `syncspy report`, one
 * self-contained file (the viewer of viewer/, inlined at build time) with the report's JSON and
 * a timeline read from the rank databases (docs/viewer.md describes the page and the data it
 * embeds), and the page of `syncspy diff --format html` (diff_html.c, docs/diff.md), written
 * the same way.
 */
#ifndef SYNCSPY_REPORT_OUT_HTML_H
#define SYNCSPY_REPORT_OUT_HTML_H

#include <stdio.h>

#include <sqlite3.h>

/* Calls per rank the timeline holds at most (sync points first); the page says when a rank has
 * more. At about 40 bytes a call this keeps a rank's timeline under 10 MB. The same cap holds for
 * a rank's GPU items (kernels, copies, memsets; the earliest first), counted apart from its
 * calls: about 60 bytes an item, so under 12 MB more. */
#define SS_HTML_CALL_CAP 200000

/* A report of more ranks than this carries the timeline of this many only (docs/viewer.md,
 * "Many ranks"): the ranks the findings are about, in the findings' order, then the first
 * ranks; the page's size then grows by a rank's row of the report, not by its calls. */
#define SS_HTML_TIMELINE_RANKS 64

/*
 * Writes the HTML report to out. report_json is the report's JSON text (docs/report-json.md),
 * embedded as it is (NULL: the page shows the timeline and call sites only). paths are the
 * rank databases, in the order of the JSON's ranks[] (each opened for one pass at a time), for the
 * timeline and the call-site table; at most max_calls calls per rank go into the timeline, and as
 * many GPU items where the database has CUPTI's tables (0: SS_HTML_CALL_CAP each).
 * finding_ranks[i] is the index in paths of the database of the JSON's findings[i] (-1: not
 * known), so that the page links each finding to its timeline; NULL when there are none. Returns an
 * ss_exit code (commands.h); on failure err holds one message, "PATH: what is wrong".
 */
int ss_html_write(FILE *out, const char *report_json, const char *const *paths, size_t ndbs,
		  const long long *finding_ranks, size_t nfindings, long max_calls, char *err,
		  size_t errlen);

/*
 * Writes the HTML page of `syncspy diff` to out: viewer/diff.html with the viewer's CSS (the
 * report's look), data_json (the page's data, docs/diff.md: "HTML") embedded as the report's
 * is (HTML-1, HTML-2) and viewer/diff.js, which draws it. Returns an ss_exit code; on failure
 * err holds one message.
 */
int ss_html_diff_write(FILE *out, const char *data_json, char *err, size_t errlen);

#endif
