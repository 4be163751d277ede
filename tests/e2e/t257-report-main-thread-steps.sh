#!/bin/sh
# SPDX-License-Identifier: MIT
# t257: the main thread's loop, not a busier helper's (STEPS-8 of report/steps.h; t156 of
# examples/corpus). gpu_loop helper-backward: each iteration the main thread runs 6 solver steps,
# a kernel and a wait for it each (the wait at MARK:solver-step-sync), then a helper thread named
# as torch's autograd thread is makes 6 passes of 10 launches while the main thread waits. The
# helper makes the most calls, and its own loop (a pass every 10 of its calls) would leave the
# main thread's waits in one step of six: under the 20% a site needs to recur, so `info`. The
# main thread's loop (a solver step every 2 of its calls) gives the GPU work every step, runs
# through the helper's and has as many steps: it is the program's, and the wait is a steady
# host-sync with a cost per step. Its last step ends before the main thread's host work after
# the loop.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
sync_line=$(grep -n "MARK:solver-step-sync" "$src" | cut -d: -f1)
[ -n "$sync_line" ] || fail "gpu_loop.c: no solver step's sync"
cd "$PROGS" || fail "no $PROGS"
under_shim ./gpu_loop 40 helper-backward >"$tmp/stdout" 2>&1 || fail "gpu_loop helper-backward: $(cat "$tmp/stdout")"
grep -q '^done 40 steps$' "$tmp/stdout" || fail "gpu_loop helper-backward: $(cat "$tmp/stdout")"
one_db
# the helper made the most calls (the premise)
golden "SELECT (SELECT count(*) FROM calls c JOIN threads t ON t.tid = c.tid WHERE t.name = 'pt_autograd_0') > 2 * (SELECT count(*) FROM calls WHERE tid = (SELECT value FROM meta WHERE key = 'pid'))" <<'END'
1
END
"$SYNCSPY" report --format json "$db" >"$tmp/report.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
# the steps: the main thread's solver steps, 6 an iteration
rq "SELECT json_extract(value, '\$.steps.source'), json_extract(value, '\$.steps.count'),
	json_extract(value, '\$.steps.name') LIKE '%gpu_loop.c:% in helper_backward, every 2 calls of the main thread'
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranks'))" >"$tmp/steps"
echo "detected|240|1" | diff -u - "$tmp/steps" >&2 || fail "the steps are not the main thread's: $(cat "$tmp/steps")"
# the warm-up lasts until the helper's steady state: the first iteration's solver steps
rq "SELECT json_extract(value, '\$.steps.steady') BETWEEN 230 AND 235
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranks'))" >"$tmp/steady"
echo 1 | diff -u - "$tmp/steady" >&2 || fail "the steady steps: $(cat "$tmp/report.json")"
# the last step ends before the main thread's 200 ms of host work after the loop, which comes
# before its last sync (no longer than its longest steady step)
last_sync=$(q "SELECT max(c.start_ns) FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaStreamSynchronize'")
rq "SELECT json_extract(value, '\$.steps.steady_end_ns') < $last_sync - 100000000
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranks'))" >"$tmp/end"
echo 1 | diff -u - "$tmp/end" >&2 || fail "the last step takes in the host work after the loop"
# the wait: a steady host-sync in every steady step, with a cost per step
rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.phase'),
	json_extract(value, '\$.severity') != 'info', json_extract(value, '\$.cost_per_step_ns') > 0
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') = '$src:$sync_line in helper_backward'" >"$tmp/sync"
echo "host-sync|steady|1|1" | diff -u - "$tmp/sync" >&2 || fail "the solver step's wait: $(cat "$tmp/sync")"
finish
