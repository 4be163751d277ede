#!/bin/sh
# SPDX-License-Identifier: MIT
# t220: a sync reached through a header-only library's templates inlined several levels deep
# (tests/progs/include/fakecuda/nested_sync.h, as thrust::count_if reaches cub::SyncStream;
# built -O2 -g) is named by the program's line: report/lines.c follows the inlined chain from
# its innermost instance (dwarf_getscopes_die), where the scopes by address stop after the
# innermost link and the site kept its module+offset text; and where the innermost scopes are
# lexical blocks inside the innermost inlined function.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/nested_toolkit" >"$tmp/stdout" 2>&1 || fail "program failed: $(cat "$tmp/stdout")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/r.json" || fail "report failed"
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.site') FROM
	json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync'" >"$tmp/sites"
line=$(grep -n '@site nested-count' "$TOP_SRCDIR/tests/progs/nested_toolkit.cc" | cut -d: -f1)
case $(head -n1 "$tmp/sites") in
*/progs/nested_toolkit.cc:"$line in main") ;;
*) fail "host-sync site: '$(cat "$tmp/sites")' (want nested_toolkit.cc:$line in main)" ;;
esac
# The allocation whose innermost scopes are lexical blocks of the innermost inlined function
# (thrust::cuda_cub::malloc's, the corpus' c27 on the H200 in session 10: its site kept its
# module+offset text) is named by the program's line too.
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.site') FROM
	json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'alloc-in-loop'
	AND json_extract(value, '\$.detail') LIKE 'cudaMalloc x%'" >"$tmp/alloc"
line=$(grep -n '@site nested-alloc' "$TOP_SRCDIR/tests/progs/nested_toolkit.cc" | cut -d: -f1)
[ "$(wc -l <"$tmp/alloc")" -eq 1 ] && grep -q "/progs/nested_toolkit.cc:$line in main\$" "$tmp/alloc" ||
	fail "alloc-in-loop sites of cudaMalloc: '$(cat "$tmp/alloc")' (want nested_toolkit.cc:$line in main)"
