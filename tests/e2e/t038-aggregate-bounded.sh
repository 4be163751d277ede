#!/bin/sh
# SPDX-License-Identifier: MIT
# t038: aggregate mode's database is bounded by syncs and steps, not enqueues (SHIM-7, CUPTI-7).
#   - progs/aggregate, a launch-bound loop (2000 launches and about 5 sync points per step), for
#     10 and 40 steps: the trace-mode file grows by megabytes with the 60,000 launches more; the
#     aggregate-mode file by what the 30 steps' sync points, ranges and step figures need
#     (under 64 KiB, under 2% of trace mode's growth), with the same aggregates;
#   - its GPU timeline (stand-in CUPTI) in aggregate mode is windows of 50 ms with gaps that
#     double from 1 s (SYNCSPY_CUPTI_SAMPLE=auto there): 2 windows in 2.3 s, 3 in 4.5 s; no
#     kernel launched in a gap is recorded, the gaps are gpu_paused rows;
#     SYNCSPY_CUPTI_SAMPLE=all still traces the whole run.
. "$E2E_DIR/lib.sh"
size() { # MODE STEPS: the database's bytes
	rm -rf "$out"
	SYNCSPY_CUPTI=0 SYNCSPY_MODE=$1 under_shim "$PROGS/aggregate" steps "$2" launches 2000 >"$tmp/run.out" 2>&1 ||
		fail "aggregate $1 $2 failed: $(cat "$tmp/run.out")"
	one_db
	wc -c <"$db"
}
t10=$(size trace 10)
t40=$(size trace 40)
a10=$(size aggregate 10)
a40=$(size aggregate 40)
one_db
golden "SELECT count(*), sum(count) FROM enqueue_aggregates; SELECT count(*) FROM step_figures" <<'END'
6|80200
40
END
echo "trace: $t10 -> $t40 bytes; aggregate: $a10 -> $a40 bytes"
[ $((t40 - t10)) -gt 2000000 ] || fail "trace mode grew by $((t40 - t10)) bytes only ($t10 -> $t40)"
[ $((a40 - a10)) -lt 65536 ] || fail "aggregate mode grew by $((a40 - a10)) bytes ($a10 -> $a40)"
[ $((50 * (a40 - a10))) -lt $((t40 - t10)) ] || fail "aggregate mode grew by $((a40 - a10)) bytes, trace mode by $((t40 - t10))"
[ $((10 * a40)) -lt "$t40" ] || fail "aggregate file $a40 bytes, trace file $t40"

# The GPU timeline: windows further and further apart. With the callbacks' ties (`correlate`),
# which say when each kernel was launched (aggregate mode keeps no row per launch to tie it to).
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event,correlate
export LD_LIBRARY_PATH SYNCSPY_CUPTI_KINDS
windows() { # SECONDS EXPECTED_WINDOWS
	rm -rf "$out"
	SYNCSPY_CUPTI=1 SYNCSPY_MODE=aggregate under_shim "$PROGS/aggregate" seconds "$1" launches 50 >"$tmp/run.out" 2>&1 ||
		fail "aggregate seconds $1 failed: $(cat "$tmp/run.out")"
	one_db
	golden "SELECT key, value FROM meta WHERE key IN ('cupti', 'cupti_sample', 'cupti_windows') ORDER BY key" <<END
cupti|on
cupti_sample|aggregate
cupti_windows|$2
END
	# the gaps: as many as the windows, the last one cut by the end of the run; the others each
	# twice the one before, from about 1 s; no kernel launched in one recorded (one launched
	# before it may run in it: the side stream's, behind the sync that ended the window, later
	# than the gap's first millisecond on a loaded machine); the windows about 50 ms each
	golden "SELECT count(*) FROM gpu_paused;
		SELECT count(*) FROM (SELECT end_ns - start_ns AS gap, row_number() OVER (ORDER BY start_ns) AS k,
		end_ns = (SELECT max(end_ns) FROM gpu_paused) AS last FROM gpu_paused)
		WHERE NOT last AND gap < (1 << (k - 1)) * 950000000;
		SELECT count(*) FROM gpu_activity g JOIN gpu_api a ON a.correlation_id = g.correlation_id,
		gpu_paused p WHERE g.kind = 'kernel' AND a.start_ns > p.start_ns AND a.start_ns < p.end_ns;
		SELECT count(*) FROM gpu_activity g WHERE g.kind = 'kernel'
		AND NOT EXISTS (SELECT 1 FROM gpu_api a WHERE a.correlation_id = g.correlation_id);
		SELECT value < $2 * 150000000 FROM meta WHERE key = 'cupti_traced_ns';
		SELECT count(*) > 0 FROM gpu_activity WHERE kind = 'kernel'" <<END
$2
0
0
0
1
1
END
}
windows 2.3 2
windows 4.5 3
rm -rf "$out"
SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=all SYNCSPY_MODE=aggregate under_shim "$PROGS/aggregate" seconds 0.3 launches 50 >/dev/null 2>&1 ||
	fail "aggregate with SYNCSPY_CUPTI_SAMPLE=all failed"
one_db
golden "SELECT count(*) FROM meta WHERE key IN ('cupti_sample', 'cupti_windows');
	SELECT count(*) FROM sqlite_master WHERE name = 'gpu_paused';
	SELECT count(*) = (SELECT sum(count) FROM enqueue_aggregates a JOIN apis p ON p.id = a.api_id WHERE p.name = 'cudaLaunchKernel')
	FROM gpu_activity WHERE kind = 'kernel'" <<'END'
0
0
1
END
echo PASS
