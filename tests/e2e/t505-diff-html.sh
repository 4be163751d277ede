#!/bin/sh
# SPDX-License-Identifier: MIT
# t505: `syncspy diff --format html` writes one self-contained page (report/diff_html.c,
# docs/diff.md "HTML"): the report's CSS and viewer/diff.js inlined verbatim, the report's
# Content-Security-Policy, nothing outside it referred to, exactly the template's two script elements, and one data block that parses
# and holds BEFORE and AFTER as given and the very document `--format json` prints (the same
# content as the text and JSON); a hostile call-site text cannot end the data block. -o FILE
# and standard output get the same bytes; the exit status is the text format's (0, or 1 with
# --fail-on-regression); bad usage writes no page.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"

make_diff_inputs
cd "$tmp/diff" || fail "cd"
"$SYNCSPY" diff --format html -o d.html before.sqlite after.sqlite >stdout 2>stderr ||
	fail "diff --format html: exit $?: $(cat stderr)"
[ -s stdout ] || [ -s stderr ] && fail "output beside the page: $(cat stdout stderr)"
"$SYNCSPY" diff --format json before.sqlite after.sqlite >d.json 2>stderr || fail "json: exit $?"
"$SYNCSPY" diff --format html before.sqlite after.sqlite >stdout.html 2>stderr || fail "html to stdout: exit $?"
cmp -s d.html stdout.html || fail "-o FILE and standard output differ"
"$SYNCSPY" diff --fail-on-regression --format html -o r.html before.sqlite after.sqlite 2>stderr
[ $? -eq 1 ] || fail "--fail-on-regression --format html: want exit 1 (a regression)"
cmp -s d.html r.html || fail "--fail-on-regression changed the page"

# Nothing external, nothing from the data outside its block.
if grep -Eni 'https?:|<link|@import|url\(' d.html >&2; then
	fail "the page refers to something outside itself (above)"
fi
[ "$(grep -oi '</script' d.html | wc -l)" -eq 2 ] || fail "the page has $(grep -oi '</script' d.html | wc -l) </script>"
grep -q '<img' d.html && fail "a call site's markup reached the page unescaped"

"$PYTHON3" - d.html d.json "$TOP_SRCDIR/viewer" "$HOSTILE" <<'PY' || fail "content check failed"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
for name in ("report.css", "diff.js"):
    assert open(sys.argv[3] + "/" + name, encoding="utf-8").read() in html, name + " is not inlined verbatim"
# the report's Content-Security-Policy (no fetch at all), word for word
csp = lambda text: re.findall(r'<meta http-equiv="Content-Security-Policy" content="[^"]*">', text)
assert csp(html) == csp(open(sys.argv[3] + "/report.html", encoding="utf-8").read()) and \
    "default-src 'none'" in csp(html)[0], csp(html)
blocks = re.findall(r'<script type="application/json" id="syncspy-data">(.*?)</script>', html, re.S)
assert len(blocks) == 1, "data blocks: %d" % len(blocks)
assert "<" not in blocks[0], "a '<' in the data block"
data = json.loads(blocks[0])
assert (data["before"], data["after"]) == ("before.sqlite", "after.sqlite"), (data["before"], data["after"])
assert data["diff"] == json.load(open(sys.argv[2])), "the page's diff is not --format json's"
d = data["diff"]
assert d["summary"] == {"gone": 1, "new": 1, "changed": 1, "same": 2}, d["summary"]
assert d["regressions"] == 1, d["regressions"]
new = [f for f in d["findings"] if f["status"] == "new"]
assert [f["site"] for f in new] == [sys.argv[4]], new
PY

# Usage errors: exit 2, one message, no page.
for args in "--format html before.sqlite" "--format chrome before.sqlite after.sqlite" \
	"--format html before.sqlite nothing-here"; do
	rm -f bad.html
	"$SYNCSPY" diff -o bad.html $args >/dev/null 2>err
	code=$?
	[ $code -eq 2 ] || fail "diff $args: exit $code, want 2"
	[ "$(wc -l <err)" -eq 1 ] && grep -q '^syncspy: ' err || fail "diff $args: $(cat err)"
	[ -e bad.html ] && fail "diff $args wrote a page"
done
# export's format is not diff's: the message names diff's (formats.h)
"$SYNCSPY" diff --format chrome before.sqlite after.sqlite 2>err
grep -qx "syncspy: diff: unknown format 'chrome' (text, json or html)" err || fail "unknown format: $(cat err)"
exit 0
