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
 *   - Text for a terminal (report, check, info, error messages): control characters (C0,
 *     DEL, C1 U+0080-U+009F) and bytes that are not UTF-8 are written as \xNN, so that no
 *     string can move the cursor, retitle the terminal, clear the screen or break a line.
 *
 * Text that is valid UTF-8 without control characters is written byte for byte.
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
 * text itself when it needs no escaping (*owned = NULL), else an escaped copy that *owned
 * holds for the caller to free. Out of memory, a fixed "(unprintable text)".
 */
const char *ss_printable(const char *text, char **owned);

#endif
