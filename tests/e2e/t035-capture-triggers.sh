#!/bin/sh
# SPDX-License-Identifier: MIT
# t035: capture ranges started and stopped by the program (SHIM-6, interpose/capture.c):
# cudaProfilerStart/Stop and cuProfilerStart/Stop in SYNCSPY_CAPTURE_RANGE=cudaProfilerApi mode,
# syncspy_start/syncspy_stop in every mode, an NVTX range in nvtx mode. progs/capture makes 4
# steps (a kernel and a stream sync) before the range, 6 in it (each marked syncspy_step), 5
# after: only the 6 have rows; the calls outside are counted per class in meta, the capture
# table holds the intervals, the GPU timeline (the CUPTI stand-in) is off outside them, the
# profiler calls still reach the driver (the program may run under nsys too), and the report
# finds the steps in the captured part and says what was captured.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1

# Without a capture range the program's profiler calls are two more calls: everything recorded.
under_shim "$PROGS/capture" profiler >"$tmp/all.out" 2>&1 || fail "capture profiler failed: $(cat "$tmp/all.out")"
grep -q '^profiler 1 1$' "$tmp/all.out" || fail "the profiler API did not reach the driver: $(cat "$tmp/all.out")"
one_db
golden "SELECT class, count(*) FROM calls GROUP BY class ORDER BY class;
	SELECT count(*) FROM sqlite_master WHERE name = 'capture';
	SELECT count(*) FROM meta WHERE key GLOB 'capture*'" <<'END'
E1|15
S2|15
X1|4
0
0
END

# What every triggered mode must leave: the 6 steps' rows, 20 calls counted outside, 6 kernels
# on the GPU timeline, all inside the capture intervals.
check_captured() {
	golden "SELECT count(*) FROM calls WHERE class = 'E1';
		SELECT count(*) FROM calls WHERE class = 'S2';
		SELECT value FROM meta WHERE key = 'capture_skipped_calls';
		SELECT value FROM meta WHERE key = 'capture_skipped_by_class';
		SELECT count(*) FROM calls c WHERE NOT EXISTS (SELECT 1 FROM capture k
			WHERE c.start_ns >= k.start_ns AND c.start_ns <= k.end_ns);
		SELECT count(*) FROM gpu_activity WHERE kind = 'kernel';
		SELECT count(*) FROM gpu_activity g WHERE kind = 'kernel' AND NOT EXISTS
			(SELECT 1 FROM capture k WHERE g.start_ns >= k.start_ns);
		SELECT count(*) FROM ranges WHERE kind = 'step'" <<'END'
6
6
20
S2:9,E1:9,X1:2
0
6
0
6
END
}

for mode in profiler driver; do
	rm -rf "$out"
	SYNCSPY_CAPTURE_RANGE=cudaProfilerApi under_shim "$PROGS/capture" $mode >"$tmp/$mode.out" 2>&1 ||
		fail "capture $mode failed: $(cat "$tmp/$mode.out")"
	grep -q '^profiler 1 1$' "$tmp/$mode.out" || fail "$mode: the profiler API did not reach the driver: $(cat "$tmp/$mode.out")"
	one_db
	check_captured
	# the start's and the stop's own rows are recorded: the range's ends are visible
	golden "SELECT a.name FROM calls c JOIN apis a ON a.id = c.api_id WHERE c.class = 'X1' ORDER BY c.id;
		SELECT value FROM meta WHERE key = 'capture_range';
		SELECT count(*), started_by, stopped_by FROM capture" <<END
$([ $mode = profiler ] && echo cudaProfilerStart || echo cuProfilerStart)
$([ $mode = profiler ] && echo cudaProfilerStop || echo cuProfilerStop)
cudaProfilerApi
1|cudaProfilerApi|cudaProfilerApi
END
done

# The report: steps found in the captured part (6 marks: 5 steps), one sync per step, and a
# note that says what was captured.
"$SYNCSPY" report --format json "$db" >"$tmp/report.json" || fail "report failed"
[ "$(rq "SELECT json_extract(d, '\$.ranks[0].steps.source') || ' ' || json_extract(d, '\$.ranks[0].steps.count')
	|| ' ' || json_extract(d, '\$.ranks[0].steps.sync_points_per_step') || ' ' || json_extract(d, '\$.ranks[0].capture.range')
	|| ' ' || json_extract(d, '\$.ranks[0].capture.intervals') || ' ' || json_extract(d, '\$.ranks[0].capture.skipped_calls')
	FROM (SELECT readfile('$tmp/report.json') AS d)")" = "marked 5 1.0 cudaProfilerApi 1 20" ] ||
	fail "report of the captured part: $(cat "$tmp/report.json")"
"$SYNCSPY" report "$db" >"$tmp/report.txt" || fail "text report failed"
grep -q 'capture range (cudaProfilerApi): 1 interval, .* recorded; 20 calls outside it not recorded (S2:9,E1:9,X1:2)' "$tmp/report.txt" ||
	fail "the report does not say what was captured: $(cat "$tmp/report.txt")"

# syncspy_start/syncspy_stop, in the default mode: the program stops first, so two intervals
# (the start of the process to its syncspy_stop, then the 6 steps).
rm -rf "$out"
under_shim "$PROGS/capture" api >"$tmp/api.out" 2>&1 || fail "capture api failed: $(cat "$tmp/api.out")"
grep -q '^syncspy_start: 1$' "$tmp/api.out" && grep -q '^syncspy_stop: 0$' "$tmp/api.out" ||
	fail "syncspy_start/stop return values: $(cat "$tmp/api.out")"
one_db
check_captured
golden "SELECT started_by, stopped_by FROM capture ORDER BY start_ns;
	SELECT value FROM meta WHERE key = 'capture_range'" <<'END'
start|syncspy_stop
syncspy_start|syncspy_stop
syncspy_start/syncspy_stop
END

# The NVTX range "capture" (the program's own ranges before and after it leave no row).
rm -rf "$out"
SYNCSPY_CAPTURE_RANGE=nvtx SYNCSPY_NVTX_CAPTURE=capture NVTX_INJECTION64_PATH="$SHIM" \
	under_shim "$PROGS/capture" nvtx >"$tmp/nvtx.out" 2>&1 || fail "capture nvtx failed: $(cat "$tmp/nvtx.out")"
one_db
check_captured
golden "SELECT kind, name, count(*) FROM ranges GROUP BY 1, 2 ORDER BY 1, 2;
	SELECT value FROM meta WHERE key = 'capture_range';
	SELECT started_by, stopped_by FROM capture" <<'END'
push|capture|1
step|train|6
nvtx:capture
nvtx|nvtx
END

# A mode syncspy does not know: one warning, and the whole run is recorded (a bad value of any
# variable falls back to its default); SYNCSPY_DISABLE=1: syncspy_start answers 0.
rm -rf "$out"
SYNCSPY_CAPTURE_RANGE=bogus under_shim "$PROGS/capture" profiler >"$tmp/bogus.out" 2>"$tmp/bogus.err" ||
	fail "capture with a bad mode failed: $(cat "$tmp/bogus.err")"
grep -q 'ignoring SYNCSPY_CAPTURE_RANGE=bogus' "$tmp/bogus.err" || fail "no warning: $(cat "$tmp/bogus.err")"
one_db
golden "SELECT count(*) FROM calls WHERE class = 'E1'" <<'END'
15
END
rm -rf "$out"
SYNCSPY_DISABLE=1 under_shim "$PROGS/capture" api >"$tmp/off.out" 2>&1 || fail "capture api disabled failed"
grep -q '^syncspy_start: 0$' "$tmp/off.out" || fail "syncspy_start under SYNCSPY_DISABLE=1: $(cat "$tmp/off.out")"
[ ! -d "$out" ] || [ -z "$(ls "$out")" ] || fail "SYNCSPY_DISABLE=1 wrote $(ls "$out")"
echo PASS
