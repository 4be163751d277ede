#!/bin/sh
# SPDX-License-Identifier: MIT
# t302: what a budget leaves out. "allow" globs remove call sites from every limit (an
# unknown site is matched as "(unknown site)"); "warmup" skips each recording's first seconds
# (from meta.start_mono_ns) or first calls (every class, in start order). The fixture's
# timeline: cudaMalloc (S6) at +0.001 ms, the first S5 copy at +51 ms, the second at +56 ms.
. "$E2E_DIR/lib.sh"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/rank0.sqlite" || fail "make-db.sh"
cd "$tmp" || fail "cd"

# run BUDGET-JSON: runs check, leaves its stdout in out and its exit code in code
run() {
	printf '%s\n' "$1" >budget.json
	"$SYNCSPY" check --budget budget.json rank0.sqlite >out 2>err
	code=$?
	[ -s err ] && fail "stderr: $(cat err)"
	grep -v '^WARN rank0.sqlite: 3 events dropped' out >lines
}

limits='"limits": [{"class": "S4", "max_count": 0}, {"class": "sync", "max_count": 44}]'
run "{\"version\": 1, $limits}"
[ $code -eq 1 ] || fail "no allow-list: exit $code"
run "{\"version\": 1, \"allow\": [\"*loss.item()*\"], $limits}"
[ $code -eq 0 ] || fail "allow-list: exit $code: $(cat out)"
cat >expected <<'END'
budget budget.json: 1 recording, 46 sync points (0 in warm-up, 2 on allowed sites)
PASS limits[0] class=S4: count 0 <= 0
PASS limits[1] class=sync: count 44 <= 44
syncspy check: 2 limits, 2 checks: 2 passed, 0 breached, 0 not checked
END
diff -u expected lines >&2 || fail "allow-list output"
# Two patterns, one of them for the sites nobody knows: 37 + 1 + 1 calls there.
run '{"version": 1, "allow": ["(unknown site)", "lib*"], "limits": [{"max_count": 7}]}'
[ $code -eq 0 ] || fail "allow unknown: exit $code: $(cat out)"
grep -q '^PASS limits\[0\] class=sync: count 5 <= 7$' lines || fail "allow unknown: $(cat out)"

# Warm-up in seconds: 0.01 s skips the cudaMalloc; 0.052 s also the first S5 copy.
run '{"version": 1, "limits": [{"class": "S6", "max_count": 0}, {"class": "S5", "max_count": 1}]}'
[ $code -eq 1 ] || fail "no warm-up: exit $code"
run '{"version": 1, "warmup": {"seconds": 0.01}, "limits": [{"class": "S6", "max_count": 0}, {"class": "S5", "max_count": 1}]}'
[ $code -eq 1 ] || fail "warm-up 0.01 s: exit $code"
grep -q '^PASS limits\[0\] class=S6: count 0 <= 0$' lines || fail "warm-up 0.01 s: $(cat out)"
grep -q '^FAIL limits\[1\] class=S5: count 2 > 1$' lines || fail "warm-up 0.01 s: $(cat out)"
run '{"version": 1, "warmup": {"seconds": 0.052}, "limits": [{"class": "S6", "max_count": 0}, {"class": "S5", "max_count": 1}]}'
[ $code -eq 0 ] || fail "warm-up 0.052 s: exit $code: $(cat out)"
grep -q '^budget budget.json: 1 recording, 46 sync points (2 in warm-up, 0 on allowed sites)$' lines ||
	fail "warm-up 0.052 s header: $(cat out)"

# Warm-up in calls: the first 5 rows are S6, X1, X1, N1 and the first S5 copy.
run '{"version": 1, "warmup": {"calls": 4}, "limits": [{"class": "S6", "max_count": 0}, {"class": "S5", "max_count": 1}]}'
[ $code -eq 1 ] || fail "warm-up 4 calls: exit $code"
run '{"version": 1, "warmup": {"calls": 5}, "limits": [{"class": "S6", "max_count": 0}, {"class": "S5", "max_count": 1}]}'
[ $code -eq 0 ] || fail "warm-up 5 calls: exit $code: $(cat out)"
exit 0
