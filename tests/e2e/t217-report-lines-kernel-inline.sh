#!/bin/sh
# SPDX-License-Identifier: MIT
# t217: a call made inside a kernel's host-side function that optimized host code inlined into
# the launching function (nvcc -O2 -g: `k<<<...>>>` names k's __global__ line otherwise) is
# named by the line k was inlined at (report/lines.c, kernel_host_function): both kernels of
# tests/progs/kernel_inline.c, the one with a C++-mangled stub and the extern "C" one.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/kernel_inline.c
under_shim "$PROGS/kernel_inline" >"$tmp/stdout" 2>&1 || fail "program failed: $(cat "$tmp/stdout")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/r.json" || fail "report failed"
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.site') FROM
	json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync' ORDER BY 1" >"$tmp/sites"
for tag in mangled-kernel c-kernel; do
	line=$(grep -n "@site $tag" "$src" | cut -d: -f1)
	grep -q "/progs/kernel_inline.c:$line in main\$" "$tmp/sites" ||
		fail "$tag: no host-sync finding at kernel_inline.c:$line in main (sites: $(cat "$tmp/sites"))"
done
[ "$(wc -l <"$tmp/sites")" -eq 2 ] || fail "host-sync findings: $(cat "$tmp/sites")"
