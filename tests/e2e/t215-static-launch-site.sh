#!/bin/sh
# SPDX-License-Identifier: MIT
# t215: launches and copies through a CUDA runtime linked into the program (nvcc's default
# static cudart) are named by the program's line, not by the runtime function that called the
# driver nor by nvcc's kernel stub. tests/progs/static_launch.c carries such a "runtime"
# (cuda*-named, static functions reaching the driver through cuGetProcAddress) and <<<>>>'s
# host-code shape; the shim learns the frames between its driver wrapper and the user's code
# once per path (interpose/native.c) and reads the user's return address from the stack
# afterwards. Each of the four enqueue lines has its 5 rows and one site, which lies on the
# marked line; a driver launch the program makes itself keeps its own line; the legacy-stream
# finding names the legacy launch's line; a launch through the kernel's host-side function (a
# frame of its own, unoptimized) names the launching line, not that function's; a polling loop through the runtime's query names the
# loop's line.
. "$E2E_DIR/lib.sh"
src="$TOP_SRCDIR/tests/progs/static_launch.c"
site_is() { # site mark
	case $1 in
	*/progs/static_launch.c:*) ;;
	*) fail "site without file:line of static_launch.c: $1" ;;
	esac
	line=${1##*static_launch.c:}
	line=${line%% *}
	sed -n "${line}p" "$src" | grep -q "$2" || fail "$1: line $line is not the $2 line"
}
under_shim "$PROGS/static_launch" >"$tmp/stdout" || fail "program failed"
grep -q 'static launch ok' "$tmp/stdout" || fail "wrong output"
one_db
golden "SELECT api, count(*), count(DISTINCT site) FROM api_calls WHERE class = 'E1' GROUP BY api ORDER BY api" <<'END'
cuLaunchKernel|21|5
cuMemcpyHtoDAsync_v2|5|1
END
# each row's site, in call order: the first round's four enqueues name the four lines
command -v addr2line >/dev/null 2>&1 || skip "no addr2line"
q "SELECT printf('%x', s.module_offset - 1) FROM calls c JOIN sites s ON s.id = c.site_id
	WHERE c.class = 'E1' ORDER BY c.start_ns LIMIT 5" >"$tmp/offsets"
n=0
for mark in LAUNCH-CREATED LAUNCH-LEGACY COPY DIRECT HOSTFN; do
	n=$((n + 1))
	where=$(addr2line -e "$PROGS/static_launch" "0x$(sed -n "${n}p" "$tmp/offsets")")
	site_is "$(cd "$(dirname "${where%%:*}")" && pwd -P)/$(basename "$where")" "$mark"
done
# the polling loop through the static runtime's query: one S7 row on the POLL line
q "SELECT printf('%x', s.module_offset - 1) FROM calls c JOIN sites s ON s.id = c.site_id
	WHERE c.class = 'S7'" >"$tmp/poll"
[ "$(wc -l <"$tmp/poll")" -eq 1 ] || fail "polling rows: $(cat "$tmp/poll")"
where=$(addr2line -e "$PROGS/static_launch" "0x$(cat "$tmp/poll")")
site_is "$(cd "$(dirname "${where%%:*}")" && pwd -P)/$(basename "$where")" POLL
"$SYNCSPY" report --format json "$out" >"$tmp/r.json" || fail "report failed"
rq "SELECT json_extract(value, '\$.site') FROM
	json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'legacy-stream'" >"$tmp/sites"
[ "$(wc -l <"$tmp/sites")" -eq 1 ] || fail "legacy-stream findings: $(cat "$tmp/sites")"
site_is "$(cat "$tmp/sites")" LAUNCH-LEGACY
