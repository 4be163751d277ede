#!/bin/sh
# SPDX-License-Identifier: MIT
# t242: GPU rows tied to their calls by stream order (CUPTI-12, CUPTI-13: report/gpu_order.c) on
# the CPU stand-ins, CUPTI included. By default no API hook is made (no API record, no callback):
# the report ties each stream's kernels to the calls that queued them, the map of handles to
# CUPTI's streams voted by all the ops in correlation order against all the calls in time
# order. Recorded with `correlate` as well, the callbacks' ties and the order's can be compared
# (SYNCSPY_REPORT_TIES=order; tests/gpu/check_order.py, which the GPU suite runs on the H100):
# every kernel tied to the same call in a plain loop, a graph captured each step (the captured
# launches made no row), four threads on streams of their own, windows of a sampled timeline
# detached between them (CUPTI-8), the same with the last rows before a pause lost, a stream
# created each step beside the legacy stream, and copies that made no row before each launch. By default: meta.cupti_correlation, the
# ties in `syncspy dump --table gpu_api` (layer `order`), the GPU idle time after syncs and the
# Chrome trace's flows, as with the callbacks.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
# Every call traced (the sampler's windows are one case below, not a matter of timing in all)
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=all
both=kernel,memcpy,memset,sync,event,correlate

# check_order.py's verdict on one database: every op tied by the callbacks tied by the order to
# the same call, the findings the same both ways. The ops compared are those the callbacks tied:
# at least nine in ten of WANT_OPS (on a loaded machine, or under a sanitizer, a callback can come
# more than 1 ms after its call started, the report's join window, and that tie is lost: seen,
# one of 120 and one of 60).
same_ties() {
	"$PYTHON3" "$TOP_SRCDIR/tests/gpu/check_order.py" "$SYNCSPY" "$db" >"$tmp/$1.order" 2>&1 ||
		fail "$1: the order's ties differ: $(cat "$tmp/$1.order")"
	set -- "$1" $(sed -n 's/^total\t\([0-9]*\)\t\([0-9.]*\).*/\1 \2/p' "$tmp/$1.order")
	[ "$#" = 3 ] && [ "$((10 * $2))" -ge "$((9 * WANT_OPS))" ] && [ "$3" = 1.0000 ] ||
		fail "$1: $2 ops, $3 of them tied to the same call (want about $WANT_OPS, all): $(cat "$tmp/$1.order")"
}

# A plain loop.
SYNCSPY_CUPTI_KINDS=$both under_shim "$PROGS/gpu_loop" 30 >"$tmp/plain.out" 2>&1 ||
	fail "gpu_loop failed: $(cat "$tmp/plain.out")"
one_db
WANT_OPS=60 same_ties plain

# A graph captured, instantiated and launched each step: the captured launches queue nothing.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_KINDS=$both under_shim "$PROGS/gpu_loop" 20 graph >"$tmp/graph.out" 2>&1 ||
	fail "gpu_loop graph failed: $(cat "$tmp/graph.out")"
one_db
WANT_OPS=20 same_ties graph

# Four threads, a stream each.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_KINDS=$both under_shim "$PROGS/gpu_loop" 30 lanes >"$tmp/lanes.out" 2>&1 ||
	fail "gpu_loop lanes failed: $(cat "$tmp/lanes.out")"
one_db
[ "$(q "SELECT count(DISTINCT stream_id) FROM gpu_activity WHERE kind = 'kernel'")" = 4 ] || fail "lanes: not four streams"
WANT_OPS=120 same_ties lanes

# Sampled, CUPTI detached between windows: each window's rows tied within it.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_KINDS=$both SYNCSPY_CUPTI_SAMPLE=20/60 under_shim "$PROGS/gpu_loop" 200 >"$tmp/sample.out" 2>&1 ||
	fail "gpu_loop sampled failed: $(cat "$tmp/sample.out")"
one_db
[ "$(q "SELECT value >= 2 FROM meta WHERE key = 'cupti_windows'")" = 1 ] || fail "sampled: fewer than 2 windows"
[ "$(q "SELECT count(*) >= 2 FROM gpu_paused")" = 1 ] || fail "sampled: no pause"
WANT_OPS=20 same_ties sample
# The rows of the last kernels before the first pause lost (a GPU may drop work still queued at
# a detach; the stand-in never does): the next window's kernels are not tied to their calls.
cp "$db" "$tmp/dropped.sqlite" && db=$tmp/dropped.sqlite
q "DELETE FROM gpu_activity WHERE id IN (SELECT id FROM gpu_activity WHERE kind = 'kernel'
	AND start_ns < (SELECT min(start_ns) FROM gpu_paused) ORDER BY start_ns DESC LIMIT 3)"
WANT_OPS=20 same_ties dropped

# A stream per step beside the legacy stream, in one thread.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_KINDS=$both under_shim "$PROGS/gpu_loop" 20 stream-per-step >"$tmp/churn.out" 2>&1 ||
	fail "gpu_loop stream-per-step failed: $(cat "$tmp/churn.out")"
one_db
[ "$(q "SELECT count(DISTINCT stream_id) FROM gpu_activity WHERE kind = 'kernel'")" = 21 ] ||
	fail "stream-per-step: not 21 streams"
WANT_OPS=60 same_ties churn

# Copies before each launch whose rows the stand-in does not make (as a copy of nothing on a
# GPU): no copy call takes its step's kernel (tests/progs/steady.c, detect).
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_KINDS=$both under_shim "$PROGS/steady" detect >"$tmp/copies.out" 2>&1 ||
	fail "steady detect failed: $(cat "$tmp/copies.out")"
one_db
[ "$(q "SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaMemcpyAsync'")" -ge 19 ] ||
	fail "steady detect: no copies before its launches"
WANT_OPS=19 same_ties copies

# The default: no API hook, the ties from the order.
rm -rf "$out" && mkdir -p "$out"
STANDIN_CUPTI_REPORT=$tmp/alone.standin under_shim "$PROGS/gpu_loop" 30 >"$tmp/alone.out" 2>&1 ||
	fail "gpu_loop (default) failed: $(cat "$tmp/alone.out")"
one_db
golden "SELECT key || '=' || value FROM meta WHERE key IN ('cupti', 'cupti_correlation') ORDER BY key" <<'END'
cupti=on
cupti_correlation=stream order
END
[ "$(sed -n 's/^api_records //p' "$tmp/alone.standin")" = 0 ] && [ "$(sed -n 's/^correlation_callbacks //p' "$tmp/alone.standin")" = 0 ] ||
	fail "the default made API records or callbacks: $(cat "$tmp/alone.standin")"
golden "SELECT count(*) FROM gpu_api" <<'END'
0
END
"$SYNCSPY" dump --table gpu_api "$db" >"$tmp/alone.api" || fail "dump of the order's ties"
[ "$(grep -c "	order	.*	cudaLaunchKernel	" "$tmp/alone.api")" = 60 ] ||
	fail "the order tied $(grep -c "	order	" "$tmp/alone.api") of 60 kernels: $(head "$tmp/alone.api")"
# each tie names a launch the loop made, and the kernel ran after it started
q "SELECT correlation_id, start_ns FROM gpu_activity WHERE kind = 'kernel'" | tr '|' ' ' >"$tmp/alone.kernels"
awk -F'\t' 'NR > 2 { print $1, $5 }' "$tmp/alone.api" | sort >"$tmp/alone.ties"
sort "$tmp/alone.kernels" | join - "$tmp/alone.ties" | awk '$3 > $2 { bad++ } END { print bad + 0 }' >"$tmp/alone.late"
[ "$(cat "$tmp/alone.late")" = 0 ] || fail "kernels tied to calls made after they ran: $(cat "$tmp/alone.late")"
[ "$(awk -F'\t' 'NR > 2 { print $5 }' "$tmp/alone.api" | sort -u | while read -r t; do
	q "SELECT count(*) FROM calls WHERE start_ns = $t AND class = 'E1'"; done | sort -u)" = 1 ] ||
	fail "a tie names no launch of the loop"
# The device syncs of steps 10 and 20 have GPU work after them: measured, as with the callbacks.
"$SYNCSPY" report --format json "$db" >"$tmp/alone.json" || fail "report of the default run"
[ "$(rq "SELECT json_extract(value, '\$.gpu_idle_ns') IS NOT NULL FROM json_each(json_extract(readfile('$tmp/alone.json'), '\$.findings')) WHERE json_extract(value, '\$.count') = 3")" = 1 ] ||
	fail "the device syncs' GPU idle time was not measured: $(cat "$tmp/alone.json")"
# the Chrome trace's flows start at the calls the order tied
"$SYNCSPY" export --format chrome -o "$tmp/alone.trace.json" "$db" || fail "export of the default run"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/alone.trace.json'), '\$.traceEvents')) WHERE json_extract(value, '\$.ph') = 's'")" = 60 ] ||
	fail "flows of the order's ties: $(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/alone.trace.json'), '\$.traceEvents')) WHERE json_extract(value, '\$.ph') = 's'")"
# export's filters apply to the ties: --syncs-only keeps no flow, a range over the whole run all
"$SYNCSPY" export --format chrome --syncs-only -o "$tmp/syncs.trace.json" "$db" || fail "export --syncs-only"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/syncs.trace.json'), '\$.traceEvents')) WHERE json_extract(value, '\$.ph') = 's'")" = 0 ] ||
	fail "flows with --syncs-only"
"$SYNCSPY" export --format chrome --start 0 --end 3600 -o "$tmp/range.trace.json" "$db" || fail "export --start/--end"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/range.trace.json'), '\$.traceEvents')) WHERE json_extract(value, '\$.ph') = 's'")" = 60 ] ||
	fail "flows of the order's ties in a range over the whole run"
finish
