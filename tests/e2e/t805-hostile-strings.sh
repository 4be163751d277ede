#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t805-hostile-strings.sh: hostile strings in a database (issue 18, item 9) through
# every output, documented in docs/cli.md ("Strings from a database"):
#   - bytes that are not UTF-8 (a stray 0xff, a cut sequence, an overlong form, a surrogate) in
#     meta.host, thread names, site texts, API names and NVTX range names: report --format json,
#     the JSON inside the HTML page, export, info --json and dump --format json stay valid
#     UTF-8 JSON (python3's json module on a strict UTF-8 decode), with U+FFFD in their place;
#   - terminal escapes (ESC]0;...BEL retitles, ESC[2J clears) and other control bytes, in the
#     same strings and in meta.schema_version: no byte below 0x20 but \n and \t, no DEL and no
#     C1 control reaches report's or check's text, info's text or any message on stderr: they
#     read \x1b, \x07, ...;
#   - a very long site text (64 KiB) goes through all of it.
#
# env: SYNCSPY, SQLITE3, PYTHON3 (set by tests/Makefile.am). Exit 0 pass, 1 fail, 77 skip.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] && "$PYTHON3" -c 'import json' 2>/dev/null || skip "no python3"

SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/good.sqlite" \
	>/dev/null || fail "make-db.sh failed"
h=$tmp/hostile.sqlite
cp "$tmp/good.sqlite" "$h"
# X'..' cast to TEXT stores the bytes as they are: what a damaged or hand-made file can hold.
"$SQLITE3" -batch "$h" "
UPDATE meta SET value = 'node' || char(27) || ']0;pwned' || char(7) || CAST(X'ff' AS TEXT)
	|| char(27) || '[2J' || CAST(X'c29b' AS TEXT) || '31m' WHERE key = 'host';
UPDATE meta SET value = 'exit' || char(27) || '[2J' WHERE key = 'exit_reason';
UPDATE threads SET name = 'main' || CAST(X'c3' AS TEXT) || 'x' || CAST(X'eda080' AS TEXT)
	|| char(27) || '[31m' || char(127) WHERE tid = 4242;
UPDATE sites SET text = 'train.py:42 ' || CAST(X'fe' AS TEXT) || char(27) || '[2J'
	|| char(1, 2, 3, 8, 11, 12, 13, 10, 9) || ' loss.item()' WHERE id = 1;
UPDATE sites SET text = 'train.py:37 ' || CAST(X'f4908080' AS TEXT)
	|| replace(hex(zeroblob(32768)), '00', 'x' || CAST(X'e2' AS TEXT)) WHERE id = 2;
UPDATE apis SET name = 'cudaStreamSynchronize' || char(27) || '[2J' || CAST(X'80' AS TEXT)
	WHERE name = 'cudaStreamSynchronize';
INSERT INTO ranges(tid, kind, name, start_ns, end_ns, depth) VALUES (4242, 'nvtx',
	'step' || CAST(X'c0af' AS TEXT) || char(27) || ']0;t' || char(7), 1000000000000,
	1000070000000, 0);" || fail "cannot write the hostile strings"
"$SQLITE3" -batch "$h" "SELECT length(CAST(text AS BLOB)) > 65536 FROM sites WHERE id = 2" |
	grep -qx 1 || fail "the long site text is not long"

# json_ok FILE [html|clean]: strict UTF-8, and JSON (html: the page's embedded document), with a
# U+FFFD where the bad bytes were (clean: a table without any).
json_ok() {
	"$PYTHON3" - "$1" "${2:-json}" <<'EOF' || fail "$1 is not valid UTF-8 JSON (above)"
import json, re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: raises on a bad byte
if sys.argv[2] == "html":
    m = re.search(r'<script type="application/json" id="syncspy-data">(.*?)</script>', text, re.S)
    text = m.group(1)
doc = json.loads(text)
if sys.argv[2] != "clean" and "\ufffd" not in text:
    sys.exit("no U+FFFD where the bad bytes were")
EOF
}

# text_ok FILE: what a terminal may see: strict UTF-8, no control character but \n and \t
# (C0, DEL, C1), and the escapes written out.
text_ok() {
	"$PYTHON3" - "$1" <<'EOF' || fail "$1 has bytes a terminal must not see (above)"
import re, sys
data = open(sys.argv[1], "rb").read()
text = data.decode("utf-8")
bad = re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
if bad:
    at = bad.start()
    sys.exit("raw control character %r at %d: %r" % (bad.group(), at, text[max(0, at - 40):at + 10]))
EOF
}

run() { # run NAME WANT_CODE COMMAND...: stdout in $tmp/NAME.out, stderr in $tmp/NAME.err
	name=$1 want=$2
	shift 2
	timeout 120 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	code=$?
	[ "$code" = "$want" ] || fail "$* exited $code (want $want): $(head -c 600 "$tmp/$name.err")"
	text_ok "$tmp/$name.err"
}

run report 0 "$SYNCSPY" report "$h"
text_ok "$tmp/report.out"
grep -qF 'node\x1b]0;pwned\x07\xff\x1b[2J\xc2\x9b31m' "$tmp/report.out" ||
	fail "the host is not shown escaped: $(grep -a node "$tmp/report.out")"
grep -qF 'train.py:42 \xfe\x1b[2J\x01\x02\x03\x08\x0b\x0c\x0d\x0a\x09 loss.item()' "$tmp/report.out" ||
	fail "the site is not shown escaped: $(grep -a train.py:42 "$tmp/report.out")"
grep -qF 'step\xc0\xaf\x1b]0;t\x07' "$tmp/report.out" || fail "the range name is not shown escaped"

run json 0 "$SYNCSPY" report --format json "$h"
json_ok "$tmp/json.out"
run html 0 "$SYNCSPY" report --format html -o "$tmp/r.html" "$h"
json_ok "$tmp/r.html" html
run export 0 "$SYNCSPY" export -o "$tmp/trace.json" "$h"
json_ok "$tmp/trace.json"
run info_json 0 "$SYNCSPY" info --json "$h"
json_ok "$tmp/info_json.out"
run info 0 "$SYNCSPY" info "$h"
text_ok "$tmp/info.out"
for table in meta threads sites ranges api_calls calls; do
	run dump_$table 0 "$SYNCSPY" dump --table $table --format json "$h"
	if [ $table = calls ]; then json_ok "$tmp/dump_$table.out" clean; else json_ok "$tmp/dump_$table.out"; fi
done

# check: a breach lists the sites and APIs, a range limit names the range, a limit on an API
# name the recordings lack quotes it in the error.
cat >"$tmp/budget.json" <<'EOF'
{"version": 1, "limits": [
  {"name": "few syncs", "max_count": 1},
  {"range": "step*", "max_count_per_range": 1}
]}
EOF
run check 1 "$SYNCSPY" check --budget "$tmp/budget.json" "$h"
text_ok "$tmp/check.out"
grep -qF 'cudaStreamSynchronize\x1b[2J\x80' "$tmp/check.out" ||
	fail "check does not show the API name escaped: $(cat -v "$tmp/check.out")"
printf '{"version": 1, "limits": [{"api": "x\\u001b]0;t\\u0007", "max_count": 1}]}\n' >"$tmp/api.json"
run check_api 2 "$SYNCSPY" check --budget "$tmp/api.json" "$h"
grep -qF 'no API named "x\x1b]0;t\x07"' "$tmp/check_api.err" ||
	fail "the error does not quote the API escaped: $(cat -v "$tmp/check_api.err")"
GITHUB_ACTIONS=true
export GITHUB_ACTIONS
run check_gh 1 "$SYNCSPY" check --budget "$tmp/budget.json" --junit "$tmp/j.xml" "$h"
text_ok "$tmp/check_gh.out"
"$PYTHON3" -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$tmp/j.xml" ||
	fail "the JUnit file does not parse"
unset GITHUB_ACTIONS

# A schema_version that is an escape sequence: bad input, and the message shows it escaped.
cp "$tmp/good.sqlite" "$tmp/version.sqlite"
"$SQLITE3" -batch "$tmp/version.sqlite" "UPDATE meta SET value = '2' || char(27) || '[2J'
	|| CAST(X'ff' AS TEXT) WHERE key = 'schema_version'" || fail "cannot edit schema_version"
for cmd in report check info export dump; do
	case $cmd in
	check) set -- check --budget "$tmp/budget.json" ;;
	export) set -- export -o "$tmp/v.json" ;;
	*) set -- $cmd ;;
	esac
	run version_$cmd 2 "$SYNCSPY" "$@" "$tmp/version.sqlite"
	grep -qF '\x1b[2J\xff' "$tmp/version_$cmd.err" ||
		fail "$cmd: the message does not show schema_version escaped: $(cat -v "$tmp/version_$cmd.err")"
done

# The good database: none of this shows (its strings are written byte for byte: the golden
# tests hold its outputs).
run good 0 "$SYNCSPY" report "$tmp/good.sqlite"
grep -q '\\x' "$tmp/good.out" && fail "an escape in the report of the good database"
exit 0
