#!/bin/sh
# SPDX-License-Identifier: MIT
# t235: a loop that never waits for the GPU (gpu_loop nosync: 40 tiny kernels a step, no sync
# until after the loop, as 12_stream_prefetcher's bad variant) is sampled all the same: the
# writer closes a window that no sync point closed (CUPTI-9), so the loop is not traced whole at
# the cost sampling is there to avoid. With SYNCSPY_CUPTI_SAMPLE=20/60 and with the default
# (auto), on the stand-ins' CUPTI: fewer kernels recorded than launched, the close counted in
# meta.cupti_unsynced_closes, the time off in gpu_paused (no kernel launched inside it
# recorded, and none of the kernels still queued at the close, which the forced flush hands over
# with no time), the program's output unchanged. The same loop with its syncs (burst) needs no
# such close; while a stream capture stays open (nosync-capture) none is made (CUPTI-9 waits for
# it: a capture in global mode forbids unsafe calls on every thread); and
# SYNCSPY_CUPTI_SAMPLE=all still traces the sync-free loop whole.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH # the stand-in CUPTI first, as t211
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1
steps=600
launched=$((steps * 40))

# checks one database of the nosync loop under sampling ($1 names the case)
sampled_without_syncs() {
	one_db
	kernels=$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")
	[ "$kernels" -gt 0 ] && [ "$kernels" -lt $((launched * 3 / 4)) ] ||
		fail "$1: $kernels kernels recorded of $launched launched"
	closes=$(q "SELECT value FROM meta WHERE key = 'cupti_unsynced_closes'")
	[ -n "$closes" ] && [ "$closes" -ge 1 ] || fail "$1: meta.cupti_unsynced_closes '${closes}'"
	[ "$(q "SELECT count(*) FROM gpu_paused")" -ge 1 ] || fail "$1: no gpu_paused row"
	# the kernels still queued at the close came from the forced flush with no time (the
	# stand-in hands them over as the real CUPTI does): none stored
	golden "SELECT count(*) FROM gpu_activity WHERE kind <> 'event' AND (start_ns = 0 OR end_ns = 0)" <<'END'
0
END
	# no kernel whose launch fell inside a time off was recorded
	golden "SELECT count(*) FROM gpu_activity k JOIN gpu_api a ON a.correlation_id = k.correlation_id
		JOIN gpu_paused p ON a.start_ns > p.start_ns AND a.end_ns < p.end_ns WHERE k.kind = 'kernel'" <<'END'
0
END
}

STANDIN_CUPTI_REPORT=$tmp/standin.txt SYNCSPY_CUPTI_SAMPLE=20/60 under_shim "$PROGS/gpu_loop" $steps nosync \
	>"$tmp/windows.out" 2>&1 || fail "gpu_loop nosync (20/60) failed: $(cat "$tmp/windows.out")"
grep -qx "done $steps steps" "$tmp/windows.out" || fail "nosync output: $(cat "$tmp/windows.out")"
sampled_without_syncs "20/60"
incomplete=$(sed -n 's/^incomplete_records //p' "$tmp/standin.txt")
[ "${incomplete:-0}" -ge 1 ] || fail "20/60: no kernel was queued at a forced flush: $(cat "$tmp/standin.txt")"
rm -rf "$out"

under_shim "$PROGS/gpu_loop" $steps nosync >"$tmp/auto.out" 2>&1 ||
	fail "gpu_loop nosync (auto) failed: $(cat "$tmp/auto.out")"
sampled_without_syncs auto
golden "SELECT value FROM meta WHERE key = 'cupti_sample'" <<'END'
auto
END
"$SYNCSPY" report "$db" >"$tmp/auto.txt" 2>&1 || fail "report of the auto run: $(cat "$tmp/auto.txt")"
grep -q "GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=auto: " "$tmp/auto.txt" || fail "auto: no note: $(cat "$tmp/auto.txt")"
rm -rf "$out"

# with a sync every step the windows close at sync points: none closed by the writer
SYNCSPY_CUPTI_SAMPLE=20/60 under_shim "$PROGS/gpu_loop" 300 burst >"$tmp/burst.out" 2>&1 ||
	fail "gpu_loop burst failed: $(cat "$tmp/burst.out")"
one_db
golden "SELECT count(*) FROM meta WHERE key = 'cupti_unsynced_closes'" <<'END'
0
END
[ "$(q "SELECT value >= 2 FROM meta WHERE key = 'cupti_windows'")" = 1 ] || fail "burst: fewer than 2 windows"
rm -rf "$out"

SYNCSPY_CUPTI_SAMPLE=20/60 under_shim "$PROGS/gpu_loop" 300 nosync-capture >"$tmp/capture.out" 2>&1 ||
	fail "gpu_loop nosync-capture failed: $(cat "$tmp/capture.out")"
one_db
golden "SELECT count(*) FROM meta WHERE key = 'cupti_unsynced_closes'" <<'END'
0
END
[ "$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")" -ge $((300 * 40)) ] ||
	fail "capture open: not every kernel of the loop recorded"
rm -rf "$out"

SYNCSPY_CUPTI_SAMPLE=all under_shim "$PROGS/gpu_loop" 200 nosync >"$tmp/all.out" 2>&1 || fail "gpu_loop nosync (all) failed"
one_db
[ "$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")" = $((200 * 40)) ] || fail "all: not every kernel recorded"
finish
