/*
 * report/text_safe.h: strings from a database made safe for what they are written into.
 *
 * A recording's strings (meta.host, thread names, site texts, API names, NVTX range names) are
 * whatever the recorded program, or whoever edited the file, put there: bytes that are not
 * UTF-8, terminal escape sequences, any control character. Every writer of syncspy goes
 * through these helpers (docs/cli.md, "Strings from a database"):
 *
 *   - JSON (report --format json, the JSON inside the HTML page, export, info --json,
 *     dump --format json): each byte that starts no valid UTF-8 sequence becomes U+FFFD, so
 *     that every document is valid UTF-8; SQLite's JSON functions escape control characters
 *     but copy bytes, so the text they build is filtered as it is written.
 *   - Text for a terminal (report, check, info, diff, error messages): control characters
 *     (C0, DEL, C1 U+0080-U+009F) and bytes that are not UTF-8 are written as \xNN, so that no
 *     string can move the cursor, retitle the terminal, clear the screen or break a line.
 *   - HTML (report --format html, diff --format html): the data goes in as JSON (above, with
 *     every `<` as \u003c: HTML-2) and the page's script puts it into the DOM as text (VIEW-1).
 *   - XML (check --junit), GitHub's workflow commands and Markdown (check under GitHub
 *     Actions), TSV and CSV (dump): each as its function below says.
 *
 * Text that is valid UTF-8 without control characters or the format's own syntax is written
 * byte for byte. This is the one module that escapes text for an output format: a new format
 * adds its escaping here (docs/architecture.md, "Adding an output format"; t409 checks).
 */
#ifndef SYNCSPY_REPORT_TEXT_SAFE_H
#define SYNCSPY_REPORT_TEXT_SAFE_H

#include <stddef.h>
#include <stdio.h>

/* U+FFFD REPLACEMENT CHARACTER, in UTF-8. */
#define SS_REPLACEMENT_UTF8 "\xef\xbf\xbd"

/*
 * Length (1-4) of the valid UTF-8 sequence at s (RFC 3629: no overlong form, no surrogate,
 * nothing past U+10FFFF), with its code point in *cp; 0 when s starts none. A NUL ends any
 * sequence (s[0] == 0 is a sequence of 1: callers stop at the terminator first).
 */
int ss_utf8_sequence(const unsigned char *s, unsigned int *cp);

/* Writes JSON text (SQLite-built, or any finished JSON) with each byte that starts no valid
 * UTF-8 sequence as U+FFFD; html: also every `<` as \u003c (HTML-2 in out_html.c; a `<` can
 * only be inside a string there). */
void ss_put_json_text(FILE *out, const char *json, int html);

/* Writes s as a JSON string (NULL as null): quotes, backslash and control characters escaped,
 * bytes that are not UTF-8 as U+FFFD; html as above. */
void ss_put_json_string(FILE *out, const char *s, int html);

/* Writes text for a terminal: control characters and bytes that are not UTF-8 as \xNN. */
void ss_put_printable(FILE *out, const char *text);

/* Prints the formatted text as one line, control characters and bytes that are not UTF-8 as
 * \xNN (a newline in it too), then a newline: the messages on stderr that quote a database. */
void ss_print_line(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same into a malloc'd copy, or NULL when out of memory. */
char *ss_printable_dup(const char *text);

/*
 * Writes text for XML attribute values and character data (check --junit): & < > " ' as
 * entities; control characters XML 1.0 cannot carry as \xNN; bytes that are not UTF-8 and the
 * two non-characters XML refuses (U+FFFE, U+FFFF) as U+FFFD, so that the file always parses.
 */
void ss_put_xml(FILE *out, const char *text);

/*
 * Writes text for a GitHub workflow command (`::error file=...::message`): '%', CR and LF
 * always (the message), ':' and ',' too in a property (file=, title=), where they would end the
 * value; other control characters and bytes that are not UTF-8 as \xNN, as in the text output.
 */
void ss_put_github(FILE *out, const char *text, int property);

/* Writes text into a GitHub Markdown table cell (check's GITHUB_STEP_SUMMARY; NULL as empty):
 * control characters and bytes that are not UTF-8 as \xNN (as the text output), Markdown's
 * punctuation backslash-escaped (a site glob's `*` is not emphasis, a `|` does not end the
 * cell), `&` as &amp;. */
void ss_put_markdown(FILE *out, const char *text);

/* Writes a TSV value (dump): tab, newline, carriage return and backslash as \t, \n, \r, \\
 * (one row stays one line); other bytes as stored. */
void ss_put_tsv(FILE *out, const char *text);

/* Writes a CSV value (dump, RFC 4180): quoted when it holds a comma, quote or line break, its
 * quotes doubled; other bytes as stored. */
void ss_put_csv(FILE *out, const char *text);

/*
 * text itself when it needs no escaping (*owned = NULL), else an escaped copy that *owned
 * holds for the caller to free. Out of memory, a fixed "(unprintable text)".
 */
const char *ss_printable(const char *text, char **owned);

#endif
