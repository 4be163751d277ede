/*
 * report/diff_html.c: `syncspy diff --format html`, the diff as one self-contained page
 * (docs/diff.md, "HTML"). The page holds what the JSON format prints, as it prints it (the same
 * writer, into memory), with BEFORE and AFTER as given:
 *
 *     {"before": "BEFORE", "after": "AFTER", "diff": the diff's JSON}
 *
 * and viewer/diff.js draws it with the report's look (viewer/report.css). out_html.c writes the
 * page as it writes the report's: nothing but itself (HTML-1), no byte of the data able to end
 * its <script> element (HTML-2), every string put into the page as text (VIEW-1).
 */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "diff.h"
#include "out_html.h"
#include "text_safe.h"

static int html_write(FILE *out, const struct ss_diff *d)
{
	char *data = NULL, err[1024];
	size_t len = 0;
	FILE *mem = open_memstream(&data, &len);
	int code;

	if (!mem)
		return ss_error(SS_EXIT_INTERNAL, "out of memory");
	fputs("{\"before\": ", mem);
	ss_put_json_string(mem, d->before_arg, 0);
	fputs(", \"after\": ", mem);
	ss_put_json_string(mem, d->after_arg, 0);
	fputs(",\n\"diff\": ", mem);
	code = ss_diff_json_ops.write(mem, d);
	fputs("}", mem);
	if (fclose(mem) != 0 && code == SS_EXIT_OK)
		code = ss_error(SS_EXIT_INTERNAL, "out of memory");
	if (code == SS_EXIT_OK) {
		code = ss_html_diff_write(out, data, err, sizeof(err));
		if (code != SS_EXIT_OK)
			ss_error(code, "%s", err);
	}
	free(data);
	return code;
}

const struct ss_diff_ops ss_diff_html_ops = {.write = html_write};
