#!/bin/sh
# SPDX-License-Identifier: MIT
# t854: children that use CUDA and leave at once with _exit() (issue 18 item 4). The shim
# names a database .partial only once its schema is committed (interpose/dbfile.c), so no
# child leaves an empty or unreadable .partial: every file in the directory reads, and
# `report DIR` and `check DIR` exit 0. Then the reading side: beside the parent's good database,
# an empty .partial and one without a committed schema are skipped with a note each (report/db.c,
# the directory listing), and still refused when named on the command line.
. "$E2E_DIR/lib.sh"
SYNCSPY_QUIET=1 under_shim "$PROGS/scenarios" quick-exit 48 >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "scenario failed: $(cat "$tmp/stderr")"
grep -q 'quick-exit 48 children, 0 failed' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
for f in "$out"/*.sqlite.partial; do
	[ -e "$f" ] || continue
	[ -s "$f" ] || fail "empty file left: $f"
	db=$f
	golden "SELECT count(*) FROM meta WHERE key = 'schema_version'" <<'END'
1
END
done
cat >"$tmp/budget.json" <<'END'
{"version": 1, "limits": [{"class": "sync", "max_count": 1000000}]}
END
"$SYNCSPY" report "$out" >"$tmp/report" 2>"$tmp/report.err" ||
	fail "report DIR: exit $?: $(cat "$tmp/report.err")"
"$SYNCSPY" check --budget "$tmp/budget.json" "$out" >"$tmp/check" 2>"$tmp/check.err" ||
	fail "check DIR: exit $?: $(cat "$tmp/check.err")"

# The reading side, on files made here: the parent's database and two unfinished ones.
mkdir "$tmp/dir" || fail "mkdir"
cp "$out"/syncspy-*[0-9].sqlite "$tmp/dir/" || fail "no finished database from the parent"
: >"$tmp/dir/syncspy-host-1.sqlite.partial"
"$SQLITE3" "$tmp/dir/syncspy-host-2.sqlite.partial" "CREATE TABLE t(x)" || fail "sqlite3"
"$SYNCSPY" report "$tmp/dir" >"$tmp/report" 2>"$tmp/report.err" ||
	fail "report DIR with unfinished files: exit $?: $(cat "$tmp/report.err")"
[ "$(grep -c '^syncspy: note: skipped ' "$tmp/report.err")" -eq 2 ] ||
	fail "expected two notes: $(cat "$tmp/report.err")"
grep -q 'skipped .*syncspy-host-1.sqlite.partial: empty' "$tmp/report.err" ||
	fail "no note for the empty file: $(cat "$tmp/report.err")"
grep -q 'skipped .*syncspy-host-2.sqlite.partial: an unfinished recording' "$tmp/report.err" ||
	fail "no note for the file without a schema: $(cat "$tmp/report.err")"
"$SYNCSPY" check --budget "$tmp/budget.json" "$tmp/dir" >"$tmp/check" 2>"$tmp/check.err" ||
	fail "check DIR with unfinished files: exit $?: $(cat "$tmp/check.err")"
grep -q '1 recording' "$tmp/check" || fail "check counted: $(cat "$tmp/check")"
"$SYNCSPY" report "$tmp/dir/syncspy-host-1.sqlite.partial" >/dev/null 2>&1
[ $? -eq 2 ] || fail "an empty file named on the command line is still bad input"
exit 0
