#!/bin/sh
# SPDX-License-Identifier: MIT
# t253: copy-held-by-event (docs/rules.md): a copy stream uploads into one of two slots each step
# and the compute stream runs two kernels on it (gpu_loop one-event; c99 of examples/corpus); the
# upload waits on one event recorded at the end of every step's compute, so it waits for all of
# the previous step, and copy and compute take turns on the stand-in's GPU timeline. The report
# names the wait's line (not the copy's), steady, ranked first, with the record's line in its
# detail and about the copy's time per step. The fix (slot-events: each slot's own event,
# recorded after its readers) has no such finding, and neither has a download's wait.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
# the stand-in CUPTI's MEMCPY records (tests/standin/cupti.c)
STANDIN_CUPTI_COPIES=1
export LD_LIBRARY_PATH STANDIN_CUPTI_COPIES
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
wait_line=$(grep -n "MARK:one-event-wait " "$src" | cut -d: -f1)
record_line=$(grep -n "MARK:one-event-record " "$src" | cut -d: -f1)
cd "$PROGS" || fail "no $PROGS"
for mode in one-event slot-events; do
	rm -rf "$out"
	SYNCSPY_CUPTI_SAMPLE=all under_shim ./gpu_loop 30 $mode >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
		fail "gpu_loop $mode failed: $(cat "$tmp/$mode.out" "$tmp/$mode.err")"
	grep -q '^done 30 steps$' "$tmp/$mode.out" || fail "gpu_loop $mode: $(cat "$tmp/$mode.out")"
	one_db
	cp "$db" "$tmp/$mode.sqlite"
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" ||
		fail "report $mode exited $?: $(cat "$tmp/err")"
done
db=$tmp/one-event.sqlite
# the timeline: no kernel ran during any steady upload (copy and compute took turns)
golden "SELECT count(*) > 20, sum((SELECT count(*) FROM gpu_activity k WHERE k.kind = 'kernel'
	AND k.start_ns < c.end_ns AND c.start_ns < k.end_ns) > 0) <= 2
	FROM gpu_activity c WHERE c.kind = 'memcpy' AND c.bytes = 4194304" <<'END'
1|1
END
# the finding: the wait's line, steady and first, one per steady step or nearly, the record's
# line in the detail, each copy 2 ms or so of the cost (4 MiB at the stand-in's 2 GB/s)
rq "SELECT json_extract(f.value, '\$.site') = '$src:$wait_line in upload_ring', json_extract(f.value, '\$.phase'),
	json_extract(f.value, '\$.count') >= 20, json_extract(f.value, '\$.severity') <> 'info', f.key = 0,
	json_extract(f.value, '\$.detail') LIKE '%recorded on another stream at $src:$record_line in upload_ring%',
	json_extract(f.value, '\$.cost_per_step_ns') BETWEEN 1500000 AND 3000000,
	json_extract(f.value, '\$.advice') LIKE 'Make the copy wait only for the kernel that last read its buffer%'
	FROM json_each(readfile('$tmp/one-event.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'copy-held-by-event'" >"$tmp/actual"
echo "1|steady|1|1|1|1|1|1" | diff -u - "$tmp/actual" >&2 ||
	fail "one event: $(cat "$tmp/one-event.json")"
# the fix: the uploads run beside the previous step's kernels, and no finding
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/slot-events.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'copy-held-by-event'")
[ "$n" = 0 ] || fail "one event per slot: $n findings: $(cat "$tmp/slot-events.json")"
db=$tmp/slot-events.sqlite
golden "SELECT sum((SELECT count(*) FROM gpu_activity k WHERE k.kind = 'kernel'
	AND k.start_ns < c.end_ns AND c.start_ns < k.end_ns) > 0) > 20
	FROM gpu_activity c WHERE c.kind = 'memcpy' AND c.bytes = 4194304" <<'END'
1
END
finish
