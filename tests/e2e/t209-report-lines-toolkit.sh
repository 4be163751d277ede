#!/bin/sh
# SPDX-License-Identifier: MIT
# t209: a sync point reached through toolkit code inlined into the program (cuda_runtime.h's
# typed cudaMalloc<T>, built -O2 -g) is named by the program's line that called it, not by the
# header's (report/lines.c): the alloc-in-loop finding names toolkit_inline.cc's marked line.
. "$E2E_DIR/lib.sh"
prog=$PROGS/toolkit_inline
under_shim "$prog" >"$tmp/stdout" 2>&1 || fail "program failed: $(cat "$tmp/stdout")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/r.json" || fail "report failed"
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.site') FROM
	json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'alloc-in-loop'" >"$tmp/sites"
line=$(grep -n '@site typed-malloc' "$TOP_SRCDIR/tests/progs/toolkit_inline.cc" | cut -d: -f1)
site=$(head -n1 "$tmp/sites")
case $site in
*/progs/toolkit_inline.cc:"$line in main") ;;
*cuda_runtime.h*) fail "site names the toolkit's header: $site" ;;
*) fail "alloc-in-loop site: '$site' (want toolkit_inline.cc:$line in main; findings: $(cat "$tmp/sites"))" ;;
esac
