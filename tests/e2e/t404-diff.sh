#!/bin/sh
# SPDX-License-Identifier: MIT
# t404: `syncspy diff BEFORE AFTER` (report/cmd_diff.c, docs/diff.md) on recordings of
# tests/progs/steady.c made here under the shim, with the stand-in GPU timeline (as t212):
#   - plain -> pipeline (the fix: the per-step stream sync replaced by a triple-buffered wait the
#     GPU never idles behind): the loop's host-sync is gone, the pipeline's wait is new but info,
#     syncs per step drop 3 -> 1; no regression, so --fail-on-regression exits 0;
#   - pipeline -> plain (the fix undone): the host-sync is new and high, syncs per step rise:
#     --fail-on-regression exits 1, without it 0;
#   - plain -> marked (the same loop, 18 steady steps instead of 19): the loop's findings match
#     by site and are `changed` (count 19 -> 18), none gone or new;
#   - --format json carries the same, and usage errors exit 2;
#   - the committed H200 traces of examples/torch/08_item_per_step (bad -> fixed): the golden
#     text below (the .item() sync of every step gone, syncs per step 1 -> 0.08).
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
src=$TOP_SRCDIR/tests/progs/steady.c
line() { grep -n "@$1 " "$src" | cut -d: -f1; }
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH SYNCSPY_CUPTI=1
export LD_LIBRARY_PATH SYNCSPY_CUPTI
for mode in plain pipeline marked; do
	arg=$mode
	[ $mode = plain ] && arg=
	SYNCSPY_OUTPUT=$tmp/$mode LD_PRELOAD="$SHIM_PRELOAD" "$PROGS/steady" $arg >/dev/null 2>&1 ||
		fail "steady $mode exited $?"
done
cd "$tmp" || fail "cd"

"$SYNCSPY" diff --fail-on-regression plain pipeline >fixed.txt 2>err
code=$?
[ $code -eq 0 ] || fail "plain -> pipeline: exit $code, want 0: $(cat fixed.txt err)"
[ -s err ] && fail "stderr: $(cat err)"
grep -q "^gone    host-sync high .*steady.c:$(line loop-sync) in main$" fixed.txt ||
	fail "the loop's sync is not gone: $(cat fixed.txt)"
grep -q "^new     host-sync info .*steady.c:$(line pipeline-wait) in pipeline$" fixed.txt ||
	fail "the pipeline's wait is not new and info: $(cat fixed.txt)"
grep -Eq '^  #1 +19 -> 17 +3\.00 -> 1\.00 ' fixed.txt || fail "step figures: $(cat fixed.txt)"
grep -q '^regressions: 0 (threshold 20%)$' fixed.txt || fail "regressions: $(cat fixed.txt)"

"$SYNCSPY" diff pipeline plain >undone.txt 2>err || fail "pipeline -> plain without the flag: exit $?"
"$SYNCSPY" diff --fail-on-regression pipeline plain >undone.txt 2>err
code=$?
[ $code -eq 1 ] || fail "pipeline -> plain: exit $code, want 1: $(cat undone.txt err)"
grep -q "^new     host-sync high .*steady.c:$(line loop-sync) in main  REGRESSION$" undone.txt ||
	fail "the loop's sync is not a new regression: $(cat undone.txt)"
grep -Eq '^  #1 +17 -> 19 +1\.00 -> 3\.00 .*  REGRESSION$' undone.txt ||
	fail "syncs per step up is not a regression: $(cat undone.txt)"
# a threshold above the rise of syncs per step (200%) leaves the new finding a regression
"$SYNCSPY" diff --fail-on-regression --threshold 500 pipeline plain >/dev/null 2>&1
[ $? -eq 1 ] || fail "--threshold 500: a new high finding is still a regression"

"$SYNCSPY" diff --format json -o changed.json plain marked 2>err || fail "json: exit $?: $(cat err)"
"$SYNCSPY" diff --format json -o fixed.json plain pipeline 2>err || fail "json: exit $?: $(cat err)"
LOOP_SYNC=$(line loop-sync) "$PYTHON3" - <<'PY' || fail "JSON checks failed"
import json, os
c = json.load(open("changed.json"))
assert c["version"] == 1 and c["threshold_percent"] == 20, c  # regressions: timing, not asserted
assert c["summary"]["gone"] == 0 and c["summary"]["new"] == 0, c["summary"]
assert c["summary"]["changed"] >= 3, c["summary"]
sync = [f for f in c["findings"] if f["rule"] == "host-sync"
        and f["site"].endswith("steady.c:%s in main" % os.environ["LOOP_SYNC"])]
assert len(sync) == 1 and sync[0]["status"] == "changed", sync
assert sync[0]["before"]["count"] == 19 and sync[0]["after"]["count"] == 18, sync
assert sync[0]["before"]["severity"] == "high", sync
r = c["ranks"][0]
assert r["before"]["steady_steps"] == 19 and r["after"]["steady_steps"] == 18, r
assert r["before"]["gpu_idle_ns_per_step"] is not None, r
f = json.load(open("fixed.json"))
gone = [x for x in f["findings"] if x["status"] == "gone"]
assert any(x["rule"] == "host-sync" and x["after"] is None for x in gone), gone
assert f["ranks"][0]["after"]["sync_points_per_step"] == 1.0, f["ranks"]
PY

traces=$TOP_SRCDIR/examples/traces
"$SYNCSPY" diff --fail-on-regression "$traces/08_item_per_step-bad-shared.sqlite" \
	"$traces/08_item_per_step-fixed-shared.sqlite" >item.txt 2>err || fail "08: exit $?: $(cat err)"
cat >expected <<'END'
syncspy diff: 1 rank before, 1 after

steps per rank (before -> after):
  rank      steady steps    syncs/step        blocked ms/step       gpu idle ms/step
  #1        59 -> 60        1.00 -> 0.08      0.069 -> 0.009        0.482 -> 0.000

findings: 1 gone, 2 new, 0 changed, 3 same
gone    host-sync high /work/main/examples/torch/08_item_per_step.py:43 in main
          count 59, blocked 4.057 ms, cost/step 0.482 ms
new     pageable-async-copy info /work/main/examples/torch/08_item_per_step.py:47 in main
          count 1, blocked 0.071 ms, cost/step - ms
new     host-sync info /work/main/examples/torch/08_item_per_step.py:47 in main
          count 1, blocked 0.009 ms, cost/step - ms

regressions: 0 (threshold 20%)
END
diff -u expected item.txt >&2 || fail "08 bad -> fixed differs from the golden text"

for args in "plain" "plain pipeline marked" "--format chrome plain pipeline" "--threshold -1 plain pipeline" \
	"plain nothing-here"; do
	"$SYNCSPY" diff $args >/dev/null 2>err
	code=$?
	[ $code -eq 2 ] || fail "diff $args: exit $code, want 2"
	grep -q '^syncspy: ' err || fail "diff $args: message: $(cat err)"
done
exit 0
