#!/bin/sh
# SPDX-License-Identifier: MIT
# t036: a capture window of time (SYNCSPY_DELAY, SYNCSPY_DURATION; SHIM-6): progs/capture runs
# steps for 700 ms; nothing is recorded before 0.2 s from the process's start, nor after 0.2 s
# more. The capture table's interval starts no earlier than the delay and ends no earlier than
# the delay and the duration together (the window is of the process's time); every row and every kernel of the GPU timeline starts inside it; recorded and
# counted-outside launches add up to what the program launched. (No bound on how late the
# window moves: the writer's passes decide that, SYNCSPY_DRAIN_MS.)
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1
SYNCSPY_DELAY=0.2 SYNCSPY_DURATION=0.2 under_shim "$PROGS/capture" time 700 >"$tmp/run.out" 2>&1 ||
	fail "capture time failed: $(cat "$tmp/run.out")"
launched=$(sed -n 's/^launched //p' "$tmp/run.out")
[ -n "$launched" ] || fail "no launch count: $(cat "$tmp/run.out")"
one_db
golden "SELECT count(*), started_by, stopped_by,
	start_ns >= (SELECT value FROM meta WHERE key = 'start_mono_ns') + 200000000,
	end_ns >= (SELECT value FROM meta WHERE key = 'start_mono_ns') + 400000000 FROM capture;
	SELECT value FROM meta WHERE key = 'capture_range'" <<'END'
1|delay|duration|1|1
delay 0.2 s, duration 0.2 s
END
golden "SELECT count(*) > 0, sum(c.start_ns < k.start_ns OR c.start_ns > k.end_ns) FROM calls c, capture k;
	SELECT count(*) > 0, sum(g.start_ns < k.start_ns) FROM gpu_activity g, capture k WHERE g.kind = 'kernel';
	SELECT value > 0 FROM meta WHERE key = 'capture_skipped_calls'" <<'END'
1|0
1|0
1
END
# every launch is a row or counted outside (E1 in capture_skipped_by_class)
[ "$(q "SELECT (SELECT count(*) FROM calls WHERE class = 'E1') + CAST(substr(value, instr(value, 'E1:') + 3) AS INTEGER)
	FROM meta WHERE key = 'capture_skipped_by_class'")" = "$launched" ] ||
	fail "recorded + skipped launches != $launched: $(q "SELECT count(*) FROM calls WHERE class = 'E1'") + $(q "SELECT value FROM meta WHERE key = 'capture_skipped_by_class'")"

# A delay alone: recording from 0.2 s to the end; a value that is not seconds: one warning,
# recorded from the start.
rm -rf "$out"
SYNCSPY_DELAY=0.2 under_shim "$PROGS/capture" time 400 >/dev/null 2>&1 || fail "delay only failed"
one_db
golden "SELECT started_by, stopped_by FROM capture" <<'END'
delay|end
END
rm -rf "$out"
SYNCSPY_DELAY=soon under_shim "$PROGS/capture" time 50 >/dev/null 2>"$tmp/bad.err" || fail "bad delay failed"
grep -q 'ignoring SYNCSPY_DELAY=soon' "$tmp/bad.err" || fail "no warning: $(cat "$tmp/bad.err")"
one_db
golden "SELECT count(*) FROM sqlite_master WHERE name = 'capture'; SELECT count(*) > 0 FROM calls" <<'END'
0
1
END
echo PASS
