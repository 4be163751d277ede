#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t804-many-databases.sh: the set of databases a command is given (issue 18, item 13):
# one file named twice, through a symlink, or as a directory and a file in it is one rank
# (report, check, export; a note on stderr), and 1,030 databases under `ulimit -n 1024` report
# as text and HTML, export and check (no "Too many open files": one file open per pass).
#
# env: as tests/e2e/lib.sh says. Exit 0 pass, 1 fail.

. "$E2E_DIR/lib.sh"
mkdir "$tmp/run"
sh "$make_db" "$tmp/run/r0.sqlite" || { echo "FAIL: make-db.sh"; exit 1; }
ln -s r0.sqlite "$tmp/run/link.sqlite"
echo '{"version": 1, "limits": [{"max_count": 1000}]}' >"$tmp/budget.json"

# The directory (r0 and its link) and r0 again: one rank, two notes.
"$SYNCSPY" report --format json -o "$tmp/r.json" "$tmp/run" "$tmp/run/r0.sqlite" 2>"$tmp/err" ||
	bad "report of one database named three ways: $(cat "$tmp/err")"
[ "$("$SQLITE3" :memory: "SELECT json_array_length(readfile('$tmp/r.json'), '\$.ranks')")" = 1 ] ||
	bad "one database named three ways is not one rank"
grep -qxF "syncspy: note: $tmp/run/r0.sqlite is the same file as $tmp/run/link.sqlite: read once" \
	"$tmp/err" || bad "no note for the repeated name: $(cat "$tmp/err")"
[ "$(grep -c 'read once' "$tmp/err")" = 2 ] || bad "want two notes: $(cat "$tmp/err")"
"$SYNCSPY" export -o "$tmp/t.json" "$tmp/run" "$tmp/run/r0.sqlite" 2>"$tmp/err" || bad "export"
grep -qF "export: 1 database," "$tmp/err" || bad "export counted: $(cat "$tmp/err")"
"$SYNCSPY" check --budget "$tmp/budget.json" "$tmp/run" "$tmp/run/r0.sqlite" >"$tmp/out" 2>/dev/null
grep -qF "budget $tmp/budget.json: 1 recording, 46 sync points" "$tmp/out" ||
	bad "check counted: $(head -1 "$tmp/out")"

# 1,030 ranks of one process (copies) under a limit of 1024 open files.
mkdir "$tmp/many"
i=0
while [ $i -lt 1030 ]; do
	cp "$tmp/run/r0.sqlite" "$tmp/many/r$i.sqlite"
	i=$((i + 1))
done
(
	ulimit -n 1024 || exit 77
	"$SYNCSPY" report "$tmp/many" >/dev/null 2>"$tmp/err1" || echo "report: $(cat "$tmp/err1")"
	"$SYNCSPY" report --format html -o "$tmp/m.html" "$tmp/many" 2>"$tmp/err2" ||
		echo "report --format html: $(cat "$tmp/err2")"
	"$SYNCSPY" export -o "$tmp/m.json" "$tmp/many" 2>"$tmp/err3" || echo "export: $(cat "$tmp/err3")"
	"$SYNCSPY" check --budget "$tmp/budget.json" "$tmp/many" >/dev/null 2>"$tmp/err4"
	[ $? -le 1 ] || echo "check: $(cat "$tmp/err4")"
) >"$tmp/many.out"
[ -s "$tmp/many.out" ] && bad "1030 databases under ulimit -n 1024: $(cat "$tmp/many.out")"

finish
