#!/bin/sh
# SPDX-License-Identifier: MIT
# t214: a kernel launched with <<<...>>> is named by its launching line, not by nvcc's host
# stub. tests/progs/stub_launch.c has nvcc's host code shape: the line pushes the launch
# configuration (__cudaPushCallConfiguration), the stub pops it and calls __cudaLaunchKernel.
# Through a shared runtime the shim keeps the push's return address and gives it to the launch
# (interpose/cudart.c): the enqueue rows' sites, and the legacy-stream finding made of them,
# name the marked lines; nested launches take their own lines; a runtime-API launch keeps its
# own return address.
. "$E2E_DIR/lib.sh"
src="$TOP_SRCDIR/tests/progs/stub_launch.c"
# the line a site "FILE:LINE in FUNCTION" names must carry MARK
site_is() { # site mark
	case $1 in
	*/progs/stub_launch.c:*) ;;
	*) fail "site without file:line of stub_launch.c: $1" ;;
	esac
	line=${1##*stub_launch.c:}
	line=${line%% *}
	sed -n "${line}p" "$src" | grep -q "$2" || fail "$1: line $line is not the $2 line"
}
under_shim "$PROGS/stub_launch" legacy >/dev/null || fail "legacy failed"
"$SYNCSPY" report --format json "$out" >"$tmp/r.json" || fail "report failed"
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.site') FROM
	json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'legacy-stream'" >"$tmp/sites"
[ "$(wc -l <"$tmp/sites")" -eq 1 ] || fail "legacy-stream findings: $(cat "$tmp/sites")"
site_is "$(cat "$tmp/sites")" LAUNCH-LEGACY
# every launch row: two sites (the two lines), none inside the stub
one_db
golden "SELECT api, count(*), count(DISTINCT site) FROM api_calls WHERE class = 'E1' GROUP BY api" <<'END'
__cudaLaunchKernel|10|2
END
golden "SELECT count(*) FROM api_calls WHERE class = 'E1' AND site LIKE '%device_stub%'" <<'END'
0
END
rm -rf "$out"
under_shim "$PROGS/stub_launch" nested >/dev/null || fail "nested failed"
one_db
# in call order: the inner launch (popped first), the outer one, the runtime-API one; their
# lines come from the report's reading of the module+offset (report/lines.c), through dump
"$SQLITE3" -batch "$db" "SELECT api FROM api_calls WHERE class = 'E1' ORDER BY start_ns" >"$tmp/apis"
printf '%s\n' __cudaLaunchKernel __cudaLaunchKernel cudaLaunchKernel | diff -u - "$tmp/apis" >&2 ||
	fail "launches"
command -v addr2line >/dev/null 2>&1 || skip "no addr2line"
"$SQLITE3" -batch "$db" "SELECT printf('%x', s.module_offset - 1) FROM calls c JOIN sites s ON s.id = c.site_id
	WHERE c.class = 'E1' ORDER BY c.start_ns" >"$tmp/offsets"
n=0
for mark in LAUNCH-INNER LAUNCH-OUTER LAUNCH-API; do
	n=$((n + 1))
	offset=$(sed -n "${n}p" "$tmp/offsets")
	where=$(addr2line -e "$PROGS/stub_launch" "0x$offset")
	site_is "$(cd "$(dirname "${where%%:*}")" && pwd -P)/$(basename "$where") in ?" "$mark"
done
