#!/bin/sh
# SPDX-License-Identifier: MIT
# t603: tests/gpu/sample_replay.py, the within-run measure of what sampling the GPU timeline
# costs the report's figures (issue 17 item 1). On the hand-made loop of tests/fixtures/
# gpu-loop.sql (40 steps of 1 ms, traced whole) the replay leaves what the sampler would have
# left (CUPTI-4): the timeline switches only at the end of a sync point, from the first one of
# the steady steps on; a window stays on until two sync points have ended in it; nothing that
# started, or was launched, while off is kept; the meta says auto sampled. On a loop whose
# steps are all alike the scaled figures equal the whole ones (GPU-IDLE-4), and no finding is
# lost, also where the sync is a blocking copy; a ring's wait on an earlier step's event costs
# nothing with the timeline off too. A recording already sampled is skipped; bad arguments
# exit 2.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
replay=$TOP_SRCDIR/tests/gpu/sample_replay.py

whole=$tmp/whole.sqlite
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" --gpu-tables "$whole" || fail "make-db.sh"
"$SQLITE3" -batch -bail "$whole" <"$TOP_SRCDIR/tests/fixtures/gpu-loop.sql" || fail "rows"
mkdir "$tmp/keep"
"$PYTHON3" "$replay" --syncspy "$SYNCSPY" --duty 0.25 --windows 4 --keep "$tmp/keep" "$whole" \
	>"$tmp/out" 2>"$tmp/err" || fail "sample_replay.py exited $?: $(cat "$tmp/err")"
db=$tmp/keep/whole-replay-0.25.sqlite
[ -f "$db" ] || fail "no replayed recording kept: $(ls "$tmp/keep")"

golden "SELECT key || '=' || value FROM meta WHERE key IN ('cupti_sample', 'cupti_auto_permille') ORDER BY key" <<'END'
cupti_auto_permille=40
cupti_sample=auto
END
pauses=$(q "SELECT count(*) FROM gpu_paused")
[ "$pauses" -ge 3 ] || fail "$pauses off intervals"
[ "$(q "SELECT value FROM meta WHERE key = 'cupti_pauses'")" = "$pauses" ] || fail "meta.cupti_pauses is not the gpu_paused rows"
kernels=$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")
[ "$kernels" -gt 0 ] && [ "$kernels" -lt 40 ] || fail "$kernels kernels of 40 kept"
# CUPTI-4: every switch just after the end of a sync point, 1 ns as the replay has it (the last
# interval may end with the run)
[ "$(q "SELECT count(*) FROM gpu_paused p WHERE NOT EXISTS (SELECT 1 FROM calls c WHERE c.class = 'S2' AND c.end_ns + 1 = p.start_ns)")" = 0 ] ||
	fail "an off interval starts where no sync point ended"
[ "$(q "SELECT count(*) FROM gpu_paused p WHERE p.end_ns < (SELECT max(end_ns) FROM gpu_paused)
	AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.class = 'S2' AND c.end_ns + 1 = p.end_ns)")" = 0 ] ||
	fail "a window opens where no sync point ended"
# the first switch ends the continuous start at the steady steps' first sync point (step 1's:
# step 0 is the warm-up)
[ "$(q "SELECT min(start_ns) FROM gpu_paused")" = 1000002510001 ] || fail "first off at $(q "SELECT min(start_ns) FROM gpu_paused")"
# a window holds until two sync points have ended after the one that opened it
[ "$(q "SELECT count(*) FROM gpu_paused a JOIN gpu_paused b ON b.start_ns = (SELECT min(start_ns) FROM gpu_paused WHERE start_ns > a.end_ns)
	WHERE (SELECT count(*) FROM calls c WHERE c.class = 'S2' AND c.end_ns >= a.end_ns AND c.end_ns < b.start_ns) < 2")" = 0 ] ||
	fail "a window closed before two sync points ended in it"
# nothing that started or was launched while off
[ "$(q "SELECT count(*) FROM gpu_activity g JOIN gpu_paused p ON g.start_ns >= p.start_ns AND g.start_ns < p.end_ns")" = 0 ] ||
	fail "GPU activity kept from an off interval"
[ "$(q "SELECT count(*) FROM gpu_api a JOIN gpu_paused p ON a.start_ns >= p.start_ns AND a.start_ns < p.end_ns")" = 0 ] ||
	fail "an API record kept from an off interval"
[ "$(q "SELECT count(*) FROM gpu_activity WHERE correlation_id NOT IN (SELECT correlation_id FROM gpu_api)")" = 0 ] ||
	fail "GPU activity kept without its launch record"

# the figures: all alike, so scaled = whole; the summary counts them
grep -q '^  idle/step host-sync loop.cu:12  *487179  *487179  *+0.0%  *0.0%$' "$tmp/out" || fail "sync's GPU idle: $(cat "$tmp/out")"
grep -q '^  overlap-gain/step loop.cu:10  *30000  *30000  *+0.0%  *0.0%$' "$tmp/out" || fail "copy's overlap: $(cat "$tmp/out")"
grep -q '^idle/step  *1  *1/1  *0.0%  *1/1  *1/1 ' "$tmp/out" || fail "summary: $(cat "$tmp/out")"
grep -q '^findings above info lost by sampling: 0, added: 0$' "$tmp/out" || fail "findings: $(cat "$tmp/out")"
# A loop whose sync is a blocking copy (S4, GPU-IDLE-3): its cost is its own copy inside the
# call and the gap after it. The replay keeps it (the call that opens a window has the timeline
# off behind it, and is not measured).
# Each step b: kernel [b + 5 us, b + 300 us) launched at b; cudaMemcpy D2H 1 MiB over
# [b + 310 us, b + 400 us], its copy [b + 320 us, b + 390 us) issued at b + 311 us; next step's
# kernel 1 ms on: 70 us inside the call and 605 us after it, 675 us of GPU idle per sync
# (38 of the 39 steady syncs: 657692 ns per step).
# new_loop DB: the fixture's database without its rows, its 40 steps of 1 ms in the temporary
# table step(k, b), and the rows stdin's SQL makes of them
new_loop() {
	cp "$whole" "$1" && {
		echo "DELETE FROM calls; DELETE FROM gpu_activity; DELETE FROM gpu_api;"
		echo "CREATE TEMP TABLE step(k INTEGER PRIMARY KEY, b INTEGER);"
		echo "WITH RECURSIVE s(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM s WHERE k < 39)"
		echo " INSERT INTO step SELECT k, 1000001000000000 / 1000 + k * 1000000 FROM s;"
		cat
	} | "$SQLITE3" -batch -bail "$1"
}
copies=$tmp/copies.sqlite
new_loop "$copies" <<'SQL' || fail "copy-loop rows"
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, bytes, dir, host_mem, ret, site_id)
 SELECT 4242, 9, 'E1', b, b + 3000, 7, NULL, NULL, NULL, 0, 2 FROM step
 UNION ALL SELECT 4242, 5, 'S4', b + 310000, b + 400000, 0, 1048576, 2, 1, 0, 3 FROM step
 ORDER BY 4;
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, bytes, copy_kind, name)
 SELECT 'kernel', b + 5000, b + 300000, 0, 7, 2 * k + 1, NULL, NULL, 'step_kernel' FROM step
 UNION ALL SELECT 'memcpy', b + 320000, b + 390000, 0, 7, 2 * k + 2, 1048576, 2, NULL FROM step;
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns)
 SELECT 2 * k + 1, 'runtime', 211, 4242, b + 1000, b + 2000 FROM step
 UNION ALL SELECT 2 * k + 2, 'runtime', 31, 4242, b + 311000, b + 312000 FROM step;
SQL
"$PYTHON3" "$replay" --syncspy "$SYNCSPY" --duty 0.25 --windows 4 --phases 3 "$copies" >"$tmp/copies.out" 2>"$tmp/err" ||
	fail "sample_replay.py on the copy loop exited $?: $(cat "$tmp/err")"
# (within 3%: where the timeline was off after the loop's last sync, that sync counts as missed,
# where the whole timeline shows nothing after it: one sync of 39)
awk '/^  idle\/step sync-copy loop.cu:12 / { found = 1; d = $(NF - 1); sub("%", "", d)
	ok = $(NF - 3) == 657692 && d + 0 >= -3 && d + 0 <= 3 } END { exit !(found && ok) }' "$tmp/copies.out" ||
	fail "the blocking copy's GPU idle, sampled: $(cat "$tmp/copies.out")"

# A window that opens in the middle of such a call (another thread's sync ended there): the
# call's copy started while off, so the call is not measured, and the other 37 steady syncs
# stand for it (38 x 675 us over 39 steps again); counted from its gap alone it gave 655897.
cp "$copies" "$tmp/copies-mid.sqlite"
"$SQLITE3" -batch -bail "$tmp/copies-mid.sqlite" <<'SQL' || fail "copies-mid rows"
CREATE TABLE IF NOT EXISTS gpu_paused(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
INSERT INTO gpu_paused VALUES (1000006100000, 1000006350000);
DELETE FROM gpu_activity WHERE start_ns >= 1000006100000 AND start_ns < 1000006350000;
DELETE FROM gpu_api WHERE start_ns >= 1000006100000 AND start_ns < 1000006350000;
INSERT INTO meta VALUES ('cupti_pauses', 1), ('cupti_sample', 'auto'), ('cupti_windows', 2);
SQL
"$SYNCSPY" report --format json "$tmp/copies-mid.sqlite" >"$tmp/copies-mid.json" 2>"$tmp/err" ||
	fail "report copies-mid exited $?: $(cat "$tmp/err")"
got=$(rq "SELECT json_extract(value, '\$.steps.gpu_idle_ns_per_step') FROM json_each(json_extract(readfile('$tmp/copies-mid.json'), '\$.ranks'))")
[ "$got" = 657692 ] || fail "a blocking copy whose own copy ran while off: GPU idle per step $got, not 657692"

# A ring's wait (GPU-IDLE-2): each step waits on the event the step before recorded, while the
# GPU still runs that step's kernel. The host's rows say it waits on old work, so it counts 0
# with the timeline off behind every one of these syncs too: before, a run sampled so gave the
# site its host time for cost, a finding on a clean line (examples/corpus d19, d20, d24, c44,
# c67 under 50 ms windows). Each step b: kernel [b + 5 us, b + 900 us) launched at b; event
# 100 + k % 2 recorded at b + 10 us; cudaEventSynchronize [b + 20 us, b + 25 us] on the other
# one; the timeline off from the warm-up step's sync to the end.
ring=$tmp/ring.sqlite
new_loop "$ring" <<'SQL' || fail "ring rows"
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, event, ret, site_id)
 SELECT 4242, 9, 'E1', b, b + 3000, 7, NULL, 0, 2 FROM step
 UNION ALL SELECT 4242, 11, 'E2', b + 10000, b + 12000, 7, 100 + k % 2, 0, 1 FROM step
 UNION ALL SELECT 4242, 4, 'S3', b + 20000, b + 25000, NULL, 100 + (k + 1) % 2, 0, 3 FROM step
 ORDER BY 4;
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, name)
 SELECT 'kernel', b + 5000, b + 900000, 0, 7, k + 1, 'step_kernel' FROM step;
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns)
 SELECT k + 1, 'runtime', 211, 4242, b + 1000, b + 2000 FROM step;
SQL
cp "$ring" "$tmp/ring-off.sqlite"
"$SQLITE3" -batch -bail "$tmp/ring-off.sqlite" <<'SQL' || fail "ring-off rows"
CREATE TABLE IF NOT EXISTS gpu_paused(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
INSERT INTO gpu_paused VALUES (1000001025000, 1000041000000);
DELETE FROM gpu_activity WHERE start_ns >= 1000001025000;
DELETE FROM gpu_api WHERE start_ns >= 1000001025000;
INSERT INTO meta VALUES ('cupti_pauses', 1), ('cupti_sample', 'auto'), ('cupti_windows', 1);
SQL
for name in ring ring-off; do
	"$SYNCSPY" report --format json "$tmp/$name.sqlite" >"$tmp/$name.json" 2>"$tmp/err" ||
		fail "report $name exited $?: $(cat "$tmp/err")"
	got=$(rq "SELECT json_extract(value, '\$.severity') || ' ' || coalesce(json_extract(value, '\$.gpu_idle_ns'), 'null')
		FROM json_each(json_extract(readfile('$tmp/$name.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'host-sync' AND json_extract(value, '\$.site') LIKE 'loop.cu:12%'")
	[ "$got" = "info 0" ] || fail "$name: the ring's wait: ${got:-no finding} (not info with 0 GPU idle)"
done

# the phases: the sampling started at 3 points of a period, each replay alike here
"$PYTHON3" "$replay" --syncspy "$SYNCSPY" --duty 0.25 --windows 4 --phases 3 "$whole" >"$tmp/phases" 2>"$tmp/err" ||
	fail "sample_replay.py --phases 3 exited $?: $(cat "$tmp/err")"
grep -q '^# 3 replays (duty 0.25, about 4 windows over the steady steps, 3 phases each at most)' "$tmp/phases" || fail "phases: $(cat "$tmp/phases")"
grep -q '^idle/step  *1  *1/1  *0.0%  *3/3  *3/3 ' "$tmp/phases" || fail "phases summary: $(cat "$tmp/phases")"
# the report of the replayed recording says it was sampled
"$SYNCSPY" report "$db" | grep -q 'GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=auto' || fail "the replay's report has no sampling note"

# a recording already sampled is not sampled again
"$PYTHON3" "$replay" --syncspy "$SYNCSPY" "$db" >"$tmp/again" 2>&1 || fail "sample_replay.py on a sampled recording exited $?"
grep -q '^skipped (already sampled or paused): 1$' "$tmp/again" || fail "a sampled recording: $(cat "$tmp/again")"
# bad arguments and input: exit 2, one message
printf 'not a database' >"$tmp/junk.sqlite"
for args in "--duty 1 $whole" "--duty x $whole" "--phases 0 $whole" "$tmp/none.sqlite" "$tmp/junk.sqlite" \
	"--keep $tmp/none/dir $whole"; do
	# shellcheck disable=SC2086 # args is a word list
	"$PYTHON3" "$replay" --syncspy "$SYNCSPY" $args >/dev/null 2>"$tmp/err"
	rc=$?
	[ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$args: exit $rc: $(cat "$tmp/err")"
done
finish
