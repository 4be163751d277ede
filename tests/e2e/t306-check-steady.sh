#!/bin/sh
# SPDX-License-Identifier: MIT
# t306: budgets on the steady state (docs/budget.md, "warmup": {"steady": true}). With it only the
# calls of the steady steps count (the report's, docs/rules.md "Steady state"), and per-step
# maxima compare the calls and blocked time per steady step. tests/progs/steady makes 3 sync
# points per step (a stream sync, a cudaMalloc, a cudaFree), a blocking copy at setup and one
# at the end: the steady state has none. A limit over what recurs names the loop's line; a
# recording with no loop cannot be judged per step (WARN); per-step maxima without the steady
# warm-up, or "steady": false, are bad budgets (exit 2).
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/steady.c
sync_line=$(grep -n '@loop-sync ' "$src" | cut -d: -f1)
under_shim "$PROGS/steady" >/dev/null 2>&1 || fail "steady failed"
one_db
cat >"$tmp/b.json" <<'END'
{"version": 1, "warmup": {"steady": true},
 "limits": [{"name": "syncs per step", "max_count_per_step": 3, "max_blocked_ms_per_step": 1000},
            {"name": "no blocking copy in the loop", "api": "cudaMemcpy", "max_count": 0},
            {"name": "half a stream sync per step", "class": "S2", "max_count_per_step": 0.5}]}
END
"$SYNCSPY" check --budget "$tmp/b.json" "$db" >"$tmp/check.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "exit $rc, not 1: $(cat "$tmp/check.txt")"
grep -q '^PASS limits\[0\] "syncs per step" class=sync: count per step 3.00 <= 3, blocked per step .* ms <= 1000 ms$' "$tmp/check.txt" ||
	fail "per-step pass: $(cat "$tmp/check.txt")"
grep -q '^PASS limits\[1\] "no blocking copy in the loop" class=sync api=cudaMemcpy: count 0 <= 0$' "$tmp/check.txt" ||
	fail "the setup copy and the final read counted: $(cat "$tmp/check.txt")"
grep -q '^FAIL limits\[2\] "half a stream sync per step" class=S2: count per step 1.00 > 0.5$' "$tmp/check.txt" ||
	fail "per-step breach: $(cat "$tmp/check.txt")"
grep -q "steady.c:$sync_line in main \[cudaStreamSynchronize\]" "$tmp/check.txt" ||
	fail "the breach does not name the loop's sync: $(cat "$tmp/check.txt")"

# Without the steady warm-up, the two blocking copies count.
sed 's/"warmup": {"steady": true},//; s/"max_count_per_step": [0-9.]*, "max_blocked_ms_per_step": [0-9]*/"max_count": 1000/; s/"max_count_per_step": 0.5/"max_count": 1000/' \
	"$tmp/b.json" >"$tmp/plain.json"
"$SYNCSPY" check --budget "$tmp/plain.json" "$db" >"$tmp/plain.out" 2>&1
grep -q '^FAIL limits\[1\] "no blocking copy in the loop" class=sync api=cudaMemcpy: count 2 > 0$' "$tmp/plain.out" ||
	fail "without steady warm-up: $(cat "$tmp/plain.out")"

# A recording without a loop: per-step limits are not checked, and say why.
rm -rf "$out"
under_shim "$PROGS/scenarios" s1 >/dev/null 2>&1 || fail "scenarios s1"
one_db
cat >"$tmp/one.json" <<'END'
{"version": 1, "warmup": {"steady": true}, "limits": [{"max_count_per_step": 1}]}
END
"$SYNCSPY" check --budget "$tmp/one.json" "$db" >"$tmp/one.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "no loop: exit $rc: $(cat "$tmp/one.out")"
grep -q '^WARN limits\[0\] class=sync: no repeating step found .*limit not checked$' "$tmp/one.out" ||
	fail "no loop: $(cat "$tmp/one.out")"

# Bad budgets: exit 2, one message naming the place.
bad() { # JSON EXPECTED-MESSAGE-PART
	printf '%s\n' "$1" >"$tmp/bad.json"
	"$SYNCSPY" check --budget "$tmp/bad.json" "$db" >"$tmp/bad.out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "bad budget $1: exit $rc"
	grep -qF "$2" "$tmp/bad.out" || fail "bad budget $1: $(cat "$tmp/bad.out")"
}
bad '{"version": 1, "limits": [{"max_count_per_step": 1}]}' \
	'$.limits[0]: max_count_per_step and max_blocked_ms_per_step need "warmup": {"steady": true}'
bad '{"version": 1, "warmup": {"steady": false}, "limits": [{"max_count": 1}]}' \
	'$.warmup.steady: expected true'
bad '{"version": 1, "warmup": {"steady": true, "seconds": 1}, "limits": [{"max_count": 1}]}' \
	'$.warmup: expected exactly one of "seconds", "calls" or "steady"'
bad '{"version": 1, "warmup": {"steady": true}, "limits": [{"max_count_per_step": -1}]}' \
	'$.limits[0].max_count_per_step: expected a non-negative number'
exit 0
