#!/bin/sh
# SPDX-License-Identifier: MIT
# t307: `syncspy check --init` (docs/budget.md, "A budget from a good run") and the example
# budgets of examples/budgets:
#   - a budget written from a recording of tests/progs/steady.c (made here under the shim) is
#     valid, per steady step with the documented margin (x1.25 counts, x1.5 or +0.5 ms blocked),
#     forbids the classes the run never synced with, and that recording passes it;
#   - a recording of the fix undone the other way (steady pipeline: an event sync, S3, the good
#     run never made) fails it, naming the pipeline's wait;
#   - each committed examples/budgets/NN.json is what --init writes today from
#     examples/traces/NN-fixed-shared.sqlite; the fixed trace passes it, the bad trace fails it
#     (except 03 and 06, whose problem is not a sync point: examples/budgets/README.md);
#   - usage: --init with --budget, -o without --init, --init without recordings exit 2.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/steady.c
for mode in plain pipeline; do
	arg=$mode
	[ $mode = plain ] && arg=
	SYNCSPY_OUTPUT=$tmp/$mode LD_PRELOAD="$SHIM_PRELOAD" "$PROGS/steady" $arg >/dev/null 2>&1 ||
		fail "steady $mode exited $?"
done
cd "$tmp" || fail "cd"
"$SYNCSPY" check --init -o budget.json plain 2>err || fail "--init: exit $?: $(cat err)"
grep -q '^syncspy: check --init: 1 recording, limits per steady step$' err || fail "stderr: $(cat err)"
grep -q '"warmup": {"steady": true}' budget.json || fail "no steady warm-up: $(cat budget.json)"
# three sync points per step (the stream sync, cudaMalloc, cudaFree): 3 x 1.25
grep -q '"class": "sync", "max_count_per_step": 3.75, "max_blocked_ms_per_step": ' budget.json ||
	fail "sync limit: $(cat budget.json)"
grep -q '"class": "S2", "max_count_per_step": 1.25,' budget.json || fail "S2 limit: $(cat budget.json)"
grep -q '{"name": "no S3 in the steady state", "class": "S3", "max_count_per_step": 0}' budget.json ||
	fail "no S3 limit: $(cat budget.json)"
[ "$(grep -c '"class": "S[1-7]"' budget.json)" -eq 7 ] || fail "one limit per class: $(cat budget.json)"
"$SYNCSPY" check --init plain >stdout.json 2>/dev/null || fail "--init to stdout"
cmp -s stdout.json budget.json || fail "--init on stdout differs from -o"
"$SYNCSPY" check --budget budget.json plain >out 2>err || fail "the good run fails its own budget: $(cat out err)"
grep -q '^syncspy check: 8 limits, 8 checks: 8 passed, 0 breached, 0 not checked$' out || fail "$(cat out)"
"$SYNCSPY" check --budget budget.json pipeline >out 2>err
[ $? -eq 1 ] || fail "pipeline passes the plain run's budget: $(cat out err)"
grep -q '^FAIL limits\[3\] "no S3 in the steady state" class=S3: count per step 1.00 > 0$' out ||
	fail "S3 breach: $(cat out)"
grep -q "steady.c:$(grep -n '@pipeline-wait ' "$src" | cut -d: -f1) in pipeline \[cudaEventSynchronize\]" out ||
	fail "breach sites: $(cat out)"

# without a repeating step (the fixture database): the same limits on the totals, counts rounded
# up; two ranks: every limit per rank, from the larger rank
mkdir ranks && sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/ranks/r0.sqlite" || fail "make-db.sh"
"$SYNCSPY" check --init ranks/r0.sqlite >totals.json 2>err || fail "--init totals: exit $?"
grep -q '^syncspy: check --init: 1 recording, no repeating step: limits on the totals$' err || fail "$(cat err)"
grep -q '{"name": "sync: 46 sync points, 13.032 ms blocked in the recorded run", "class": "sync", "max_count": 58, "max_blocked_ms": 19.548}' totals.json ||
	fail "totals: $(cat totals.json)"
grep -q '{"name": "S1: 1 sync point, 5 ms blocked in the recorded run", "class": "S1", "max_count": 2, "max_blocked_ms": 7.5}' totals.json ||
	fail "totals S1: $(cat totals.json)"
"$SYNCSPY" check --budget totals.json ranks/r0.sqlite >/dev/null 2>&1 || fail "the fixture fails its own budget"
cp ranks/r0.sqlite ranks/r1.sqlite && "$SQLITE3" ranks/r1.sqlite "UPDATE meta SET value = '1' WHERE key = 'rank'" ||
	fail "rank 1"
"$SYNCSPY" check --init ranks >per_rank.json 2>err || fail "--init ranks: exit $?"
grep -q '^syncspy: check --init: 2 recordings, no repeating step: limits on the totals, per rank$' err || fail "$(cat err)"
[ "$(grep -c '"per_rank": true' per_rank.json)" -eq 8 ] || fail "per rank: $(cat per_rank.json)"
"$SYNCSPY" check --budget per_rank.json ranks >out 2>&1 || fail "the ranks fail their own budget: $(cat out)"
grep -q '^syncspy check: 8 limits, 16 checks: 16 passed' out || fail "$(cat out)"

n=0
for budget in "$TOP_SRCDIR"/examples/budgets/*.json; do
	name=$(basename "$budget" .json)
	fixed=$TOP_SRCDIR/examples/traces/$name-fixed-shared.sqlite
	bad=$TOP_SRCDIR/examples/traces/$name-bad-shared.sqlite
	[ -f "$fixed" ] && [ -f "$bad" ] || fail "$name: no traces for it"
	"$SYNCSPY" check --init "$fixed" >"$name.json" 2>/dev/null || fail "$name: --init failed"
	diff -u "$budget" "$name.json" >&2 || fail "$name: examples/budgets/$name.json is not what --init writes"
	"$SYNCSPY" check --budget "$budget" "$fixed" >out 2>&1 || fail "$name: the fixed trace fails: $(cat out)"
	"$SYNCSPY" check --budget "$budget" "$bad" >out 2>&1
	code=$?
	case $name in
	03_* | 06_*) [ $code -eq 0 ] || fail "$name: bad trace: exit $code (its problem is no sync point)" ;;
	*) [ $code -eq 1 ] || fail "$name: the bad trace passes its budget: exit $code: $(cat out)" ;;
	esac
	n=$((n + 1))
done
[ $n -ge 13 ] || fail "only $n example budgets"

for args in "--init --budget budget.json plain" "-o x.json --budget budget.json plain" "--init" \
	"--init --junit j.xml plain" "--init nothing-here"; do
	"$SYNCSPY" check $args >/dev/null 2>err
	code=$?
	[ $code -eq 2 ] || fail "check $args: exit $code, want 2"
	grep -q '^syncspy: ' err || fail "check $args: message: $(cat err)"
done
echo "$n example budgets"
