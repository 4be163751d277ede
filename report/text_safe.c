/*
 * report/text_safe.c: strings from a database made safe for what each command writes them
 * into: JSON, a terminal, XML, GitHub's workflow commands and Markdown, TSV and CSV (text_safe.h
 * says which writer uses what). The one module that escapes text for an output format, with
 * one implementation of the UTF-8 check for all of them.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "text_safe.h"

int ss_utf8_sequence(const unsigned char *s, unsigned int *cp)
{
	int len, i;
	unsigned int v;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, v = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, v = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, v = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) /* a NUL too */
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond Unicode */
	if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10ffff ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Writes the bytes [from, to) when there are any. */
static void put_run(FILE *out, const unsigned char *from, const unsigned char *to)
{
	if (to > from)
		fwrite(from, 1, (size_t)(to - from), out);
}

void ss_put_json_text(FILE *out, const char *json, int html)
{
	const unsigned char *p = (const unsigned char *)json, *run = p;
	unsigned int cp;

	while (*p) {
		int len;

		if (*p < 0x80 && (*p != '<' || !html)) {
			p++;
			continue;
		}
		if (*p == '<') {
			put_run(out, run, p);
			fputs("\\u003c", out);
			run = ++p;
			continue;
		}
		len = ss_utf8_sequence(p, &cp);
		if (len) {
			p += len;
			continue;
		}
		put_run(out, run, p);
		fputs(SS_REPLACEMENT_UTF8, out);
		run = ++p;
	}
	put_run(out, run, p);
}

void ss_put_json_string(FILE *out, const char *s, int html)
{
	const unsigned char *p = (const unsigned char *)s, *run;
	unsigned int cp;

	if (!s) {
		fputs("null", out);
		return;
	}
	putc('"', out);
	run = p;
	while (*p) {
		int len = 1;
		const char *escape = NULL;
		char hex[8];

		if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\' && (*p != '<' || !html)) {
			p++;
			continue;
		}
		if (*p >= 0x80 && (len = ss_utf8_sequence(p, &cp)) > 0) {
			p += len;
			continue;
		}
		switch (*p) {
		case '"':
			escape = "\\\"";
			break;
		case '\\':
			escape = "\\\\";
			break;
		case '\n':
			escape = "\\n";
			break;
		case '\t':
			escape = "\\t";
			break;
		default:
			if (*p >= 0x80) {
				escape = SS_REPLACEMENT_UTF8;
			} else { /* a control character, DEL or (html) `<` */
				snprintf(hex, sizeof(hex), "\\u%04x", *p);
				escape = hex;
			}
		}
		put_run(out, run, p);
		fputs(escape, out);
		run = ++p;
	}
	put_run(out, run, p);
	putc('"', out);
}

/*
 * The terminal form of text, into out (when not NULL) and into buf (when not NULL, large
 * enough: the length a first call without it returned, plus the NUL). Returns its length.
 */
static size_t printable(const char *text, FILE *out, char *buf)
{
	const unsigned char *p = (const unsigned char *)text, *run = p;
	size_t n = 0;
	unsigned int cp;

#define EMIT(s, len)                                                                               \
	do {                                                                                       \
		if (out)                                                                           \
			fwrite((s), 1, (len), out);                                                \
		if (buf)                                                                           \
			memcpy(buf + n, (s), (len));                                               \
		n += (len);                                                                        \
	} while (0)
	while (*p) {
		int len = 1, escape;

		if (*p >= 0x20 && *p < 0x7f) {
			p++;
			continue;
		}
		if (*p < 0x80) {
			escape = 1; /* C0 or DEL */
		} else {
			len = ss_utf8_sequence(p, &cp);
			escape = len == 0 || cp < 0xa0; /* not UTF-8, or C1 (U+0080-U+009F) */
			if (!len)
				len = 1;
		}
		if (!escape) {
			p += len;
			continue;
		}
		EMIT(run, (size_t)(p - run));
		for (int i = 0; i < len; i++) {
			char hex[5];

			snprintf(hex, sizeof(hex), "\\x%02x", p[i]);
			EMIT(hex, (size_t)4);
		}
		p += len;
		run = p;
	}
	EMIT(run, (size_t)(p - run));
#undef EMIT
	if (buf)
		buf[n] = '\0';
	return n;
}

void ss_put_printable(FILE *out, const char *text)
{
	printable(text, out, NULL);
}

void ss_print_line(FILE *out, const char *fmt, ...)
{
	va_list ap;
	char *line = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fputs("(out of memory)\n", out);
		return;
	}
	printable(line, out, NULL);
	fputc('\n', out);
	free(line);
}

char *ss_printable_dup(const char *text)
{
	char *copy = malloc(printable(text, NULL, NULL) + 1);

	if (copy)
		printable(text, NULL, copy);
	return copy;
}

const char *ss_printable(const char *text, char **owned)
{
	*owned = NULL;
	if (printable(text, NULL, NULL) == strlen(text))
		return text; /* nothing escaped: the same bytes */
	*owned = ss_printable_dup(text);
	return *owned ? *owned : "(unprintable text)";
}

/* XML (check --junit): text_safe.h. */
void ss_put_xml(FILE *out, const char *text)
{
	const unsigned char *c = (const unsigned char *)text;

	while (*c) {
		unsigned int cp;
		int len = ss_utf8_sequence(c, &cp);

		/* not UTF-8, or one of the two non-characters XML refuses */
		if (len == 0 || cp == 0xfffe || cp == 0xffff) {
			fputs(SS_REPLACEMENT_UTF8, out);
			c++;
			continue;
		}
		switch (*c) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&apos;", out);
			break;
		case '\t':
		case '\n':
			fputc(*c, out);
			break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				fprintf(out, "\\x%02x", *c);
			else
				fwrite(c, 1, (size_t)len, out);
		}
		c += len;
	}
}

/* GitHub workflow commands (check under GITHUB_ACTIONS): text_safe.h. */
void ss_put_github(FILE *out, const char *text, int property)
{
	for (const char *c = text; *c; c++) {
		const unsigned char *u = (const unsigned char *)c;
		unsigned int cp = *u;
		int len = *u < 0x80 ? 1 : ss_utf8_sequence(u, &cp);

		if (len == 0 || (len > 1 && cp < 0xa0)) /* not UTF-8, or C1: byte by byte */
			fprintf(out, "\\x%02x", *u);
		else if (len > 1)
			fwrite(c, 1, (size_t)len, out), c += len - 1;
		else if (*c == '%')
			fputs("%25", out);
		else if (*c == '\r')
			fputs("%0D", out);
		else if (*c == '\n')
			fputs("%0A", out);
		else if (property && *c == ':')
			fputs("%3A", out);
		else if (property && *c == ',')
			fputs("%2C", out);
		else if (*u < 0x20 || *u == 0x7f)
			fprintf(out, "\\x%02x", *u);
		else
			fputc(*c, out);
	}
}

/* A GitHub Markdown table cell (check's GITHUB_STEP_SUMMARY): text_safe.h. */
void ss_put_markdown(FILE *out, const char *text)
{
	char *owned = NULL;

	for (const char *c = ss_printable(text ? text : "", &owned); *c; c++) {
		if (*c == '&')
			fputs("&amp;", out);
		else if (strchr("\\`*_[]<>|#~!", *c))
			fprintf(out, "\\%c", *c);
		else
			fputc(*c, out);
	}
	free(owned);
}

/* TSV (dump): text_safe.h. */
void ss_put_tsv(FILE *out, const char *text)
{
	for (; *text; text++) {
		switch (*text) {
		case '\t':
			fputs("\\t", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		default:
			fputc(*text, out);
		}
	}
}

/* CSV (dump): text_safe.h. */
void ss_put_csv(FILE *out, const char *text)
{
	if (!text[strcspn(text, ",\"\r\n")]) {
		fputs(text, out);
		return;
	}
	fputc('"', out);
	for (; *text; text++) {
		if (*text == '"')
			fputc('"', out);
		fputc(*text, out);
	}
	fputc('"', out);
}
