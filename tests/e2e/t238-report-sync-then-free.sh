#!/bin/sh
# SPDX-License-Identifier: MIT
# t238: a sync that waits only so that a free of stream-ordered memory is safe (cudaMallocAsync's
# buffer freed with cudaFree right after cudaStreamSynchronize: c106 of examples/corpus) names
# both lines (report/rules/host_sync.c, ss_sync_then_free): the sync's host-sync finding says
# why it waits and advises cudaFreeAsync, and the free's line gets a finding of its own with the
# same cost and advice. Freed with cudaFreeAsync on the stream (the fix), the free's line has no
# finding and no finding speaks of it. gpu_loop sync-free and free-async on the stand-ins.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
line() { grep -n "MARK:$1\$\|MARK:$1 " "$src" | cut -d: -f1; }
report() { # MODE: the findings of gpu_loop MODE's report, "rule|line|severity|advice", by line
	rm -rf "$out" && mkdir -p "$out"
	under_shim "$PROGS/gpu_loop" 60 "$1" >"$tmp/$1.out" 2>&1 || fail "gpu_loop $1: $(cat "$tmp/$1.out")"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/$1.json" 2>"$tmp/err" || fail "report $1: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.rule'), replace(substr(json_extract(value, '\$.site'),
		instr(json_extract(value, '\$.site'), 'gpu_loop.c:') + 11), ' in main', ''),
		json_extract(value, '\$.severity') <> 'info', json_extract(value, '\$.advice') LIKE '%cudaFreeAsync%'
		FROM json_each(json_extract(readfile('$tmp/$1.json'), '\$.findings'))
		WHERE json_extract(value, '\$.site') LIKE '%gpu_loop.c:%' ORDER BY 2"
}
sync=$(line sync-before-free) free=$(line free-after-sync) async_free=$(line free-async)
report sync-free >"$tmp/sync-free"
grep -qx "host-sync|$sync|1|1" "$tmp/sync-free" || fail "the sync's finding: $(cat "$tmp/sync-free")"
grep -qx "host-sync|$free|1|1" "$tmp/sync-free" || fail "no finding at the free: $(cat "$tmp/sync-free")"
rq "SELECT json_extract(value, '\$.detail') FROM json_each(json_extract(readfile('$tmp/sync-free.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') LIKE '%gpu_loop.c:$free %'" >"$tmp/free-detail"
grep -q "a free of stream-ordered memory (cudaMallocAsync.s) each, right after the sync at .*gpu_loop.c:$sync in main" "$tmp/free-detail" ||
	fail "the free's detail: $(cat "$tmp/free-detail")"
# the two cost the same: the sync's cost, once for both lines of the one fix
[ "$(rq "SELECT count(DISTINCT json_extract(value, '\$.cost_ns')) FROM json_each(json_extract(readfile('$tmp/sync-free.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') LIKE '%gpu_loop.c:$sync %' OR json_extract(value, '\$.site') LIKE '%gpu_loop.c:$free %'")" = 1 ] ||
	fail "the sync and the free cost differently"

report free-async >"$tmp/free-async"
grep -q "|$async_free|" "$tmp/free-async" && fail "a finding at cudaFreeAsync: $(cat "$tmp/free-async")"
grep -q "|1$" "$tmp/free-async" && fail "cudaFreeAsync advised to the fix: $(cat "$tmp/free-async")"
finish
