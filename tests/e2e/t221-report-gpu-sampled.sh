#!/bin/sh
# SPDX-License-Identifier: MIT
# t221: a sampled GPU timeline gives the findings of a whole one (GPU-IDLE-4, docs/rules.md,
# host-sync). A hand-made loop of 40 steps of 1 ms (times in ms from the first step at
# 1000001000 ms; thread 4242, stream 7), each step:
#   +0.000  cudaMemcpyAsync H2D 1 MiB [0, 0.005], its copy on the GPU [0.010, 0.040)
#   +0.006  __cudaLaunchKernel [0.006, 0.009], its kernel [0.045, 0.500), waiting behind the copy
#   +0.100  cudaStreamSynchronize [0.100, 0.510] on a second thread (4243, a watchdog: had
#           the uploading thread synced, the copy would have had nothing to overlap, and
#           copy-without-overlap would leave it to the sync), the GPU idle from 0.510 until
#           the next step's copy at 1.010, issued after the sync: 0.5 ms behind every sync
# so every steady step costs 0.5 ms of GPU idle at the sync's line and a 30 us copy the kernel
# waited for (copy-without-overlap). The same loop recorded with the timeline off in two spans
# (its GPU rows there dropped, as CUPTI records none, and the spans in gpu_paused): the syncs the
# report could measure stand for the others, so the sampled database's gpu_idle_ns, its GPU
# idle per step and the copies' count and time equal the whole one's; before GPU-IDLE-4 they
# were summed over what was seen (about half).
#
# A guess of the host side at the copy's line (copy-on-compute-stream) is cleared in favour of
# the GPU rule; with the sync moved to the uploading thread, the copy follows a sync that
# drained the GPU, and copy-without-overlap leaves it to the sync's finding.
# Then end to end on the stand-ins (CUPTI-5): a loop that launches fast enough that tracing
# every call would cost more than 1% (by AUTO_NS_PER_CALL) is sampled by default
# (meta.cupti_sample 'auto', windows, fewer kernels recorded than launched, the report's note),
# SYNCSPY_CUPTI_SAMPLE=all traces it whole, and a slow loop is traced whole by default; where
# tracing costs more than estimated, the windows measure it (CUPTI-6). A site measured behind
# too few of its syncs is judged by the host's time.
. "$E2E_DIR/lib.sh"

whole=$tmp/whole.sqlite
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" --gpu-tables "$whole" || fail "make-db.sh"
"$SQLITE3" -batch -bail "$whole" <"$TOP_SRCDIR/tests/fixtures/gpu-loop.sql" || fail "rows"
sampled=$tmp/sampled.sqlite
cp "$whole" "$sampled"
# off from just after the syncs of steps 8 and 23 to the starts of steps 17 and 30: as the
# sampler leaves it (CUPTI-4: it switches at the end of a sync point)
"$SQLITE3" -batch -bail "$sampled" <<'SQL' || fail "sampled rows"
CREATE TABLE IF NOT EXISTS gpu_paused(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
INSERT INTO gpu_paused VALUES (1000009520000, 1000018000500), (1000024520000, 1000031000500);
DELETE FROM gpu_activity WHERE EXISTS (SELECT 1 FROM gpu_paused p WHERE gpu_activity.start_ns >= p.start_ns AND gpu_activity.start_ns < p.end_ns);
DELETE FROM gpu_api WHERE EXISTS (SELECT 1 FROM gpu_paused p WHERE gpu_api.start_ns >= p.start_ns AND gpu_api.start_ns < p.end_ns);
INSERT INTO meta VALUES ('cupti_pauses', 2), ('cupti_paused_ns', 15481000), ('cupti_traced_ns', 84519000),
 ('cupti_sample', 'auto'), ('cupti_windows', 3), ('cupti_auto_permille', 120);
SQL
# 26 steps of 40 kept, two kernels each (the batch's bookkeeping, the step's)
[ "$("$SQLITE3" "$sampled" "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")" -eq 52 ] || fail "the sampled fixture kept other than 52 kernels"

for name in whole sampled; do
	"$SYNCSPY" report --format json "$tmp/$name.sqlite" >"$tmp/$name.json" 2>"$tmp/err" ||
		fail "report $name exited $?: $(cat "$tmp/err")"
done
# per finding: rule, site, phase, count, gpu_idle_ns, blocked_ns, cost_per_step_ns
findings() {
	rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.site'), json_extract(value, '\$.phase'),
		json_extract(value, '\$.count'), json_extract(value, '\$.gpu_idle_ns'), json_extract(value, '\$.blocked_ns'),
		json_extract(value, '\$.cost_per_step_ns')
		FROM json_each(json_extract(readfile('$tmp/$1.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') IN ('host-sync', 'copy-without-overlap') ORDER BY 1, 2"
}
findings whole >"$tmp/whole.findings"
findings sampled >"$tmp/sampled.findings"
grep -q '^host-sync|loop.cu:12 in main|steady|' "$tmp/whole.findings" || fail "no steady host-sync finding: $(cat "$tmp/whole.findings")"
grep -q '^copy-without-overlap|loop.cu:10 in main|steady|' "$tmp/whole.findings" ||
	fail "no steady copy-without-overlap finding: $(cat "$tmp/whole.findings")"
diff -u "$tmp/whole.findings" "$tmp/sampled.findings" >&2 || fail "the sampled timeline's findings differ from the whole one's"
step_idle() {
	rq "SELECT json_extract(value, '\$.steps.gpu_idle_ns_per_step') FROM json_each(json_extract(readfile('$tmp/$1.json'), '\$.ranks'))"
}
# 38 of the 39 steady syncs idle 0.5 ms (the last one has nothing after it): 487179 ns per step
[ "$(step_idle whole)" = 487179 ] || fail "whole: GPU idle per step $(step_idle whole), not 487179"
[ "$(step_idle sampled)" = 487179 ] || fail "sampled: GPU idle per step $(step_idle sampled), not 487179"
# A window that opens while work queued before it runs (here at 0.050 ms into step 17, the
# step's copy and kernel started unrecorded, as a window opened at another thread's event sync
# would find them): step 17's sync saw no work since step 8's and would have been taken for a
# sync that found the device idle, its GPU idle cut to its own time; the timeline was off since
# that work, so it is not measured (GPU-IDLE-4) and the figures stay the whole one's.
late=$tmp/late.sqlite
cp "$whole" "$late"
"$SQLITE3" -batch -bail "$late" <<'SQL' || fail "late rows"
CREATE TABLE IF NOT EXISTS gpu_paused(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
INSERT INTO gpu_paused VALUES (1000009520000, 1000017050000), (1000024520000, 1000031000500);
DELETE FROM gpu_activity WHERE EXISTS (SELECT 1 FROM gpu_paused p WHERE gpu_activity.start_ns >= p.start_ns AND gpu_activity.start_ns < p.end_ns);
DELETE FROM gpu_api WHERE EXISTS (SELECT 1 FROM gpu_paused p WHERE gpu_api.start_ns >= p.start_ns AND gpu_api.start_ns < p.end_ns);
INSERT INTO meta VALUES ('cupti_pauses', 2), ('cupti_sample', 'auto'), ('cupti_windows', 3), ('cupti_auto_permille', 120);
SQL
"$SYNCSPY" report --format json "$late" >"$tmp/late.json" 2>"$tmp/err" || fail "report late exited $?: $(cat "$tmp/err")"
[ "$(step_idle late)" = 487179 ] || fail "late window: GPU idle per step $(step_idle late), not 487179"
[ "$(rq "SELECT json_extract(value, '\$.gpu_idle_ns') FROM json_each(json_extract(readfile('$tmp/late.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync' AND json_extract(value, '\$.phase') = 'steady'")" = \
	"$(rq "SELECT json_extract(value, '\$.gpu_idle_ns') FROM json_each(json_extract(readfile('$tmp/whole.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync' AND json_extract(value, '\$.phase') = 'steady'")" ] ||
	fail "late window: the sync's GPU idle differs from the whole timeline's"

# A timeline off from just after step 2's sync to the end: one steady sync measured of 38 says
# too little to stand for the others (SS_GPU_MIN_MEASURED, report/gpu.c): the
# sync is judged by its host time, as with no timeline, and the detail says why.
sparse=$tmp/sparse.sqlite
cp "$whole" "$sparse"
"$SQLITE3" -batch -bail "$sparse" <<'SQL' || fail "sparse rows"
CREATE TABLE IF NOT EXISTS gpu_paused(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
INSERT INTO gpu_paused VALUES (1000003520000, 1000045000000);
DELETE FROM gpu_activity WHERE EXISTS (SELECT 1 FROM gpu_paused p WHERE gpu_activity.start_ns >= p.start_ns AND gpu_activity.start_ns < p.end_ns);
DELETE FROM gpu_api WHERE EXISTS (SELECT 1 FROM gpu_paused p WHERE gpu_api.start_ns >= p.start_ns AND gpu_api.start_ns < p.end_ns);
INSERT INTO meta VALUES ('cupti_pauses', 1), ('cupti_sample', 'auto'), ('cupti_windows', 1), ('cupti_auto_permille', 120);
SQL
"$SYNCSPY" report --format json "$sparse" >"$tmp/sparse.json" 2>"$tmp/err" || fail "report sparse exited $?: $(cat "$tmp/err")"
[ "$(rq "SELECT json_extract(value, '\$.severity') <> 'info', json_extract(value, '\$.gpu_idle_ns') IS NULL,
	json_extract(value, '\$.cost_ns') = json_extract(value, '\$.blocked_ns'),
	json_extract(value, '\$.detail') LIKE '%measured behind only 1 of these 38 syncs (the GPU timeline sampled), too few%'
	FROM json_each(json_extract(readfile('$tmp/sparse.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync' AND json_extract(value, '\$.phase') = 'steady'")" = "1|1|1|1" ] ||
	fail "sparse: $(grep -o '"rule": "host-sync"[^}]*' "$tmp/sparse.json")"
# and the rank's GPU idle per step is unknown rather than scaled from that one
[ -z "$(step_idle sparse)" ] || fail "sparse: GPU idle per step $(step_idle sparse) from one sync"

# the details say what was scaled, and the note that the timeline was sampled
rq "SELECT json_extract(value, '\$.detail') FROM json_each(json_extract(readfile('$tmp/sampled.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') IN ('host-sync', 'copy-without-overlap') ORDER BY json_extract(value, '\$.rule')" >"$tmp/details"
grep -q 'scaled from the [0-9]* of 39 steady steps the GPU timeline saw whole' "$tmp/details" || fail "copy detail: $(cat "$tmp/details")"
grep -q 'measured behind [0-9]* of these [0-9]* syncs while the GPU timeline was on, scaled to all' "$tmp/details" ||
	fail "sync detail: $(cat "$tmp/details")"
"$SYNCSPY" report "$sampled" >"$tmp/sampled.txt" 2>&1 || fail "text report of the sampled database"
grep -q 'GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=auto: tracing every call would have cost about 12.0% of the run): 3 windows' "$tmp/sampled.txt" ||
	fail "no auto note: $(cat "$tmp/sampled.txt")"

# copy-on-compute-stream, the host-side guess at the same line, is the same problem: cleared,
# pointing at the GPU rule's figure
rq "SELECT json_extract(value, '\$.severity'), json_extract(value, '\$.site') FROM json_each(json_extract(readfile('$tmp/whole.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'copy-on-compute-stream'" >"$tmp/guess"
[ "$(cat "$tmp/guess")" = "info|loop.cu:10 in main" ] || fail "copy-on-compute-stream beside copy-without-overlap: $(cat "$tmp/guess")"
grep -q 'copy-without-overlap at the same line gives their cost' "$tmp/whole.json" || fail "no reason for the cleared guess"

# The same loop with a copy of 5 us: it holds the kernel up by 0.5% of the 1 ms step, under
# copy-without-overlap's floor (1%): that finding is `info`, and the guess too, saying why (an
# under-floor GPU finding confirms nothing; examples/corpus d46)
small=$tmp/small.sqlite
cp "$whole" "$small"
"$SQLITE3" -batch -bail "$small" "UPDATE gpu_activity SET end_ns = start_ns + 5000 WHERE kind = 'memcpy'" || fail "small rows"
"$SYNCSPY" report --format json "$small" >"$tmp/small.json" 2>"$tmp/err" || fail "report small exited $?: $(cat "$tmp/err")"
rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.severity'), json_extract(value, '\$.phase')
	FROM json_each(json_extract(readfile('$tmp/small.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') LIKE 'copy-%' ORDER BY 1" >"$tmp/small.findings"
[ "$(cat "$tmp/small.findings")" = "copy-on-compute-stream|info|steady
copy-without-overlap|info|steady" ] || fail "copies under the floor: $(cat "$tmp/small.findings")"
grep -q 'holding compute up by under 1% of the step' "$tmp/small.json" || fail "no reason for the guess under the floor"

# The same loop with the sync on the uploading thread and no kernel queued before the copy: the
# sync drains the GPU before every upload, so the copy has no earlier work to overlap; the
# sync's finding carries the cost and copy-without-overlap says nothing (examples/corpus d12,
# d14)
drained=$tmp/drained.sqlite
cp "$whole" "$drained"
"$SQLITE3" -batch -bail "$drained" "UPDATE calls SET tid = 4242 WHERE tid = 4243;
	DELETE FROM calls WHERE site_id = 4; DELETE FROM gpu_activity WHERE correlation_id >= 1000;
	DELETE FROM gpu_api WHERE correlation_id >= 1000" || fail "drained rows"
"$SYNCSPY" report --format json "$drained" >"$tmp/drained.json" 2>"$tmp/err" || fail "report drained exited $?: $(cat "$tmp/err")"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/drained.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'copy-without-overlap'")" = 0 ] || fail "copy-without-overlap behind a draining sync"
[ "$(rq "SELECT json_extract(value, '\$.severity') <> 'info' FROM json_each(json_extract(readfile('$tmp/drained.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync'")" = 1 ] || fail "the draining sync is no finding"

# The same loop without the kernel queued before the copy, the watchdog's sync left on its own
# thread: the GPU has sat idle 0.49 ms when the host issues each 30 us copy, which would have
# fitted whole in that time: the host was late, not the copy (d59, d52 of examples/corpus), and
# copy-without-overlap says nothing; the sync's finding stays
late_copy=$tmp/late-copy.sqlite
cp "$whole" "$late_copy"
"$SQLITE3" -batch -bail "$late_copy" "DELETE FROM calls WHERE site_id = 4;
	DELETE FROM gpu_activity WHERE correlation_id >= 1000; DELETE FROM gpu_api WHERE correlation_id >= 1000" ||
	fail "late-copy rows"
"$SYNCSPY" report --format json "$late_copy" >"$tmp/late-copy.json" 2>"$tmp/err" || fail "report late-copy exited $?: $(cat "$tmp/err")"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/late-copy.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'copy-without-overlap'")" = 0 ] || fail "copy-without-overlap on copies issued late to an idle GPU"
[ "$(rq "SELECT json_extract(value, '\$.severity') <> 'info' FROM json_each(json_extract(readfile('$tmp/late-copy.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync'")" = 1 ] || fail "late-copy: the sync is no finding"

# CUPTI-5 on the stand-ins: gpu_loop's burst mode launches BURST tiny kernels a step.
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH # the stand-in CUPTI first, as t211
export LD_LIBRARY_PATH
launched=$((300 * 40))
SYNCSPY_CUPTI=1 under_shim "$PROGS/gpu_loop" 300 burst >"$tmp/auto.out" 2>&1 || fail "gpu_loop burst failed: $(cat "$tmp/auto.out")"
one_db
auto=$db
golden "SELECT value FROM meta WHERE key = 'cupti_sample'" <<'END'
auto
END
kernels=$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")
windows=$(q "SELECT value FROM meta WHERE key = 'cupti_windows'")
permille=$(q "SELECT value FROM meta WHERE key = 'cupti_auto_permille'")
[ "$kernels" -gt 0 ] && [ "$kernels" -lt "$launched" ] || fail "auto: $kernels kernels recorded of $launched launched"
[ "$windows" -ge 1 ] && [ "$permille" -gt 15 ] || fail "auto: $windows windows, estimate $permille permille"
[ "$(q "SELECT count(*) FROM gpu_paused")" -ge 1 ] || fail "auto: no gpu_paused row"
"$SYNCSPY" report "$auto" | grep -q "GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=auto: " || fail "auto: no note in the report"
rm -rf "$out"
# CUPTI-6: where tracing slows the loop more than the estimate says (the stand-in CUPTI spins
# 100 us at each launch it traces: some 4 ms on a step of about 5), the windows measure it
# from the steps' sync points, on against off (some 55% alone, 20% on a busy machine), and the
# sampler traces less: the measure exceeds the estimate (3 us a record: 2-5% here) and is what
# meta.cupti_auto_permille and the note give. The windows see some 30 of 600 steps' syncs, a
# busy machine's fewer: short of the 8 on and 20 off the measure needs, the loop runs again
# twice as long (a measure of the program's own pace has no fixed count)
for steps in 600 1200 2400; do
	rm -rf "$out"
	STANDIN_CUPTI_LAUNCH_COST_US=100 SYNCSPY_CUPTI=1 under_shim "$PROGS/gpu_loop" $steps burst >"$tmp/costly.out" 2>&1 ||
		fail "gpu_loop burst (costly) failed: $(cat "$tmp/costly.out")"
	one_db
	syncs=$(q "SELECT value FROM meta WHERE key = 'cupti_auto_measured_syncs'")
	[ -n "$syncs" ] && [ "${syncs%/*}" -ge 8 ] && [ "${syncs#*/}" -ge 20 ] && break
done
measured=$(q "SELECT value FROM meta WHERE key = 'cupti_auto_measured_permille'")
peak=$(q "SELECT value FROM meta WHERE key = 'cupti_auto_permille'")
[ -n "$measured" ] && [ "$measured" -ge 100 ] || fail "costly: measured ${measured:-nothing} permille (syncs on/off: $syncs)"
[ "${syncs%/*}" -ge 8 ] && [ "${syncs#*/}" -ge 20 ] || fail "costly: measured on $syncs sync points"
[ "$peak" = "$measured" ] || fail "costly: cupti_auto_permille $peak is not the measured $measured"
"$SYNCSPY" report "$db" | grep -q "tracing every call would have cost about $(awk "BEGIN { printf \"%.1f\", $measured / 10 }")% of the run" ||
	fail "costly: the note does not give the measured cost"
rm -rf "$out"
# A quiet spell makes the sampler trace whole again only after AUTO_QUIET_NS (a second): the
# burst loop with its recording stopped in every other block of 25 steps (as
# bench/reference_ab.sh's A/B stops it), and the burst loop idle for 300 ms without a CUDA call
# after every 25 steps, stay sampled: one window (the continuous start) or two, the stand-in
# CUPTI's attach taking 15 ms as the real one's does (the gaps pay for it: some 1.6 s here).
# Before, each stopped block or idle spell read as a quiet program and the next steps were
# traced whole again: a window each (four in 200 steps of blocks, four in 100 with 3 idle spells).
for run in "200 burst-blocks" "100 burst-pauses"; do
	mode=${run#* }
	STANDIN_CUPTI_ATTACH_COST_US=15000 SYNCSPY_CUPTI=1 under_shim "$PROGS/gpu_loop" $run >"$tmp/blocks.out" 2>&1 ||
		fail "gpu_loop $mode failed: $(cat "$tmp/blocks.out")"
	one_db
	windows=$(q "SELECT value FROM meta WHERE key = 'cupti_windows'")
	[ -n "$windows" ] && [ "$windows" -le 2 ] || fail "$mode: ${windows:-no} windows: traced whole again after a short quiet"
	rm -rf "$out"
done
SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=all under_shim "$PROGS/gpu_loop" 300 burst >"$tmp/all.out" 2>&1 || fail "gpu_loop burst (all) failed"
one_db
[ "$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")" = "$launched" ] || fail "all: not every kernel recorded"
golden "SELECT count(*) FROM meta WHERE key IN ('cupti_sample', 'cupti_pauses')" <<'END'
0
END
rm -rf "$out"
# the slow loop: two 2 ms kernels a step, under one call a ms: traced whole by default
SYNCSPY_CUPTI=1 under_shim "$PROGS/gpu_loop" 60 slow >"$tmp/slow.out" 2>&1 || fail "gpu_loop slow failed"
one_db
[ "$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")" = 120 ] || fail "slow: not every kernel recorded"
golden "SELECT count(*) FROM meta WHERE key IN ('cupti_sample', 'cupti_pauses')" <<'END'
0
END
rm -rf "$out"
# windows shorter than the time between two syncs (1 ms of every 3, a sync every 1-1.5 ms):
# each window stays open past its length until a sync inside it (CUPTI-4), so some syncs
# have their gap on the timeline and are measured; the gaps grow alike and the share traced
# stays near a third. Before, each window closed at the first sync after it opened, and no
# sync of the loop was ever measured.
SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=1/3 under_shim "$PROGS/gpu_loop" 200 >"$tmp/short.out" 2>&1 ||
	fail "gpu_loop (1/3 windows) failed: $(cat "$tmp/short.out")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/short.json" 2>"$tmp/err" || fail "report (1/3) exited $?: $(cat "$tmp/err")"
rq "SELECT json_extract(value, '\$.gpu_idle_ns') IS NOT NULL, json_extract(value, '\$.detail')
	FROM json_each(json_extract(readfile('$tmp/short.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync' AND json_extract(value, '\$.phase') = 'steady'
	AND json_extract(value, '\$.site') LIKE '%gpu_loop.c:%' AND json_extract(value, '\$.count') >= 100" >"$tmp/short"
grep -q '^1|.*measured behind [0-9]* of these [0-9]* syncs while the GPU timeline was on' "$tmp/short" ||
	fail "1/3 windows: the loop's stream sync not measured: $(cat "$tmp/short")"
[ "$(q "SELECT (SELECT value FROM meta WHERE key = 'cupti_traced_ns') * 100 /
	((SELECT value FROM meta WHERE key = 'cupti_traced_ns') + (SELECT value FROM meta WHERE key = 'cupti_paused_ns'))
	BETWEEN 15 AND 60")" = 1 ] || fail "1/3 windows: traced share off: $(q "SELECT key || '=' || value FROM meta WHERE key LIKE 'cupti_%ed_ns'")"
finish
