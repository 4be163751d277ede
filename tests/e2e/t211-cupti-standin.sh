#!/bin/sh
# SPDX-License-Identifier: MIT
# t211: the GPU timeline end to end on the CPU stand-ins, CUPTI included (tests/standin/cupti.c,
# put first in the library path): records converted and stored (gpu_activity, gpu_api), each
# kernel tied to its launch and after it, each stream sync's record after the kernels it waited
# for; syncspy_gpu_trace's pause (CUPTI-3) and SYNCSPY_CUPTI_SAMPLE's windows (CUPTI-4) leave
# no record where the timeline was off, and the analyses measure no GPU idle time across it
# (gpu_paused); SYNCSPY_CUPTI_KINDS limits what is recorded. With `correlate` no API record is
# made: the correlation ids come from a callback on the wrapped functions (CUPTI-11); with `api`
# in the kinds, from CUPTI's API records (by default neither: t242).
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1
# The callbacks' ties (CUPTI-11: `correlate`; the default ties by stream order is t242's).
export SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event,correlate
# gpu_loop: 30 steps of two kernels (0.5 ms each) and a stream sync; a device sync every tenth.
STANDIN_CUPTI_REPORT=$tmp/plain.standin under_shim "$PROGS/gpu_loop" 30 >"$tmp/plain.out" 2>&1 ||
	fail "gpu_loop failed: $(cat "$tmp/plain.out")"
one_db
golden "SELECT key || '=' || value FROM meta WHERE key IN ('cupti', 'cupti_correlation') ORDER BY key" <<'END'
cupti=on
cupti_correlation=callbacks
END
# 30 steps of 2 launches and a stream sync, 3 device syncs: two callbacks each (entry, exit)
[ "$(sed -n 's/^api_records //p' "$tmp/plain.standin")" = 0 ] || fail "API records made by default: $(cat "$tmp/plain.standin")"
[ "$(sed -n 's/^correlation_callbacks //p' "$tmp/plain.standin")" = $((2 * (60 + 30 + 3))) ] ||
	fail "callbacks: $(cat "$tmp/plain.standin")"
golden "SELECT kind, detail, count(*) FROM gpu_activity GROUP BY 1, 2 ORDER BY 1, 2" <<'END'
kernel||60
sync|3|30
sync|4|3
END
# Every kernel has its launch's API record, on the launching thread, and ran after it started.
golden "SELECT count(*), sum(a.tid IS NOT NULL), sum(k.start_ns >= a.start_ns) FROM gpu_activity k
	JOIN gpu_api a ON a.correlation_id = k.correlation_id AND a.name = 'cuLaunchKernel'
	WHERE k.kind = 'kernel'" <<'END'
60|60|60
END
# No stream sync ended before a kernel launched before it had ended.
golden "SELECT count(*) FROM gpu_activity s JOIN gpu_api sa ON sa.correlation_id = s.correlation_id
	WHERE s.kind = 'sync' AND s.detail = 3 AND EXISTS (SELECT 1 FROM gpu_activity k
	JOIN gpu_api ka ON ka.correlation_id = k.correlation_id
	WHERE k.kind = 'kernel' AND ka.start_ns < sa.start_ns AND k.end_ns > s.end_ns)" <<'END'
0
END
"$SYNCSPY" report --format json "$db" >"$tmp/plain.json" || fail "report of the plain run"
# The device syncs of steps 10 and 20 have GPU work after them: measured.
[ "$(rq "SELECT json_extract(value, '\$.gpu_idle_ns') IS NOT NULL FROM json_each(json_extract(readfile('$tmp/plain.json'), '\$.findings')) WHERE json_extract(value, '\$.count') = 3")" = 1 ] ||
	fail "the device syncs' GPU idle time was not measured: $(cat "$tmp/plain.json")"

# Paused for the middle third (steps 10-19): no kernel recorded in the pause, one pause in meta,
# its interval in gpu_paused, and no GPU idle time measured across it: none of the device
# syncs (step 10's has only the pause after it, step 20's lies in it, step 30's is the last).
rm -rf "$out" && mkdir -p "$out"
under_shim "$PROGS/gpu_loop" 30 pause >"$tmp/pause.out" 2>&1 || fail "gpu_loop pause failed: $(cat "$tmp/pause.out")"
one_db
set -- $(sed -n 's/^paused //p' "$tmp/pause.out")
[ $# -eq 2 ] || fail "no paused line: $(cat "$tmp/pause.out")"
golden "SELECT count(*), sum(start_ns BETWEEN $1 AND $2) FROM gpu_activity WHERE kind = 'kernel'" <<'END'
40|0
END
golden "SELECT value FROM meta WHERE key = 'cupti_pauses'" <<'END'
1
END
golden "SELECT count(*), sum(start_ns <= $1 AND end_ns >= $2) FROM gpu_paused" <<'END'
1|1
END
"$SYNCSPY" report --format json "$db" >"$tmp/pause.json" || fail "report of the paused run"
[ "$(rq "SELECT json_extract(value, '\$.gpu_idle_ns') IS NULL FROM json_each(json_extract(readfile('$tmp/pause.json'), '\$.findings')) WHERE json_extract(value, '\$.count') = 3")" = 1 ] ||
	fail "GPU idle time measured across the pause: $(cat "$tmp/pause.json")"

# Sampled, 20 ms of every 60: fewer kernels than launched, in windows of GPU activity no longer
# than ON (plus a step's slack: a window closes at the first sync point after its time), the
# windows and the time traced in meta, and the report's note.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_SAMPLE=20/60 under_shim "$PROGS/gpu_loop" 200 >"$tmp/sample.out" 2>&1 || fail "gpu_loop sampled failed"
one_db
kernels=$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")
[ "$kernels" -gt 0 ] && [ "$kernels" -lt 400 ] || fail "sampled: $kernels kernels of 400"
longest=$(q "WITH k AS (SELECT start_ns, end_ns, start_ns - lag(end_ns) OVER (ORDER BY start_ns) AS gap
	FROM gpu_activity WHERE kind = 'kernel'), w AS (SELECT start_ns, end_ns, sum(gap IS NULL OR gap > 15000000)
	OVER (ORDER BY start_ns) AS window FROM k) SELECT count(DISTINCT window) || ' ' || max(span) FROM
	(SELECT window, (max(end_ns) - min(start_ns)) / 1000000 AS span FROM w GROUP BY window)")
set -- $longest
[ "$1" -ge 2 ] && [ "$2" -le 50 ] || fail "sampled windows: $longest (count, longest ms)"
golden "SELECT value FROM meta WHERE key = 'cupti_sample'" <<'END'
20/60
END
[ "$(q "SELECT value >= 2 FROM meta WHERE key = 'cupti_windows'")" = 1 ] || fail "meta.cupti_windows"
[ "$(q "SELECT (SELECT value FROM meta WHERE key = 'cupti_traced_ns') < 0.75 * ((SELECT value FROM meta WHERE key = 'end_mono_ns') - (SELECT value FROM meta WHERE key = 'start_mono_ns'))")" = 1 ] ||
	fail "meta.cupti_traced_ns: most of the run traced"
"$SYNCSPY" report "$db" | grep -q "GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=20/60 ms): [0-9]* windows" ||
	fail "no sampled note"

# Kernel records only: no API records (the report ties them by stream order: t242); meta says
# what was asked.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_KINDS=kernel under_shim "$PROGS/gpu_loop" 10 >/dev/null 2>&1 || fail "gpu_loop kernels only failed"
one_db
golden "SELECT (SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'), (SELECT count(*) FROM gpu_activity WHERE kind <> 'kernel'), (SELECT count(*) FROM gpu_api), (SELECT value FROM meta WHERE key = 'cupti')" <<'END'
20|0|0|on: only kernel (SYNCSPY_CUPTI_KINDS)
END

# With `api` in the kinds (the correlation by CUPTI's API records, as before CUPTI-11): the same
# ties, from API records, and no callback.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event,api STANDIN_CUPTI_REPORT=$tmp/api.standin \
	under_shim "$PROGS/gpu_loop" 30 >"$tmp/api.out" 2>&1 || fail "gpu_loop (api) failed: $(cat "$tmp/api.out")"
one_db
golden "SELECT key || '=' || value FROM meta WHERE key IN ('cupti', 'cupti_correlation') ORDER BY key" <<'END'
cupti=on
cupti_correlation=api records
END
golden "SELECT count(*), sum(a.tid IS NOT NULL), sum(k.start_ns >= a.start_ns) FROM gpu_activity k
	JOIN gpu_api a ON a.correlation_id = k.correlation_id AND a.name = 'cuLaunchKernel'
	WHERE k.kind = 'kernel'" <<'END'
60|60|60
END
[ "$(sed -n 's/^api_records //p' "$tmp/api.standin")" -ge 90 ] && [ "$(sed -n 's/^correlation_callbacks //p' "$tmp/api.standin")" = 0 ] ||
	fail "api: $(cat "$tmp/api.standin")"
