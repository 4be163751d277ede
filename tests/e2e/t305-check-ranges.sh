#!/bin/sh
# SPDX-License-Identifier: MIT
# t305: `syncspy check` limits with "range" are checked per range instance: the sync points of
# the range's thread inside each NVTX range (or syncspy_step step) against max_count_per_range /
# max_blocked_ms_per_range; the worst instance is named, breaching instances counted, and the
# sites within them listed. A name no recording has only warns (exit unaffected); the allow-list
# and the warm-up apply inside ranges as everywhere.
. "$E2E_DIR/lib.sh"
NVTX_INJECTION64_PATH="$SHIM" under_shim "$PROGS/nvtx_steps" >/dev/null || fail "program failed"
one_db
cd "$tmp" || fail "cd"

# Run-specific parts (database name, thread id, times, the source tree's place) made constant;
# the sites are file:line (the test programs have debug info: report/lines.c) with the line
# masked: the two syncs of a step come in either order (they tie on counts, blocked time
# decides); the lines are checked below. So is the index of the worst step or train instance,
# for the same reason.
check() {
	"$SYNCSPY" check --budget "$1" out >"$1.out" 2>"$1.err"
	echo "exit $?" >>"$1.out"
	[ -s "$1.err" ] && fail "$1: stderr: $(cat "$1.err")"
	sed -E -e 's#out/syncspy-[^ ,)]*#DB#g' -e 's/tid [0-9]+/tid T/' \
		-e 's/[0-9]+(\.[0-9]+)? ms/N ms/g' -e 's#/[^ ]*/tests/progs/#progs/#' \
		-e 's#nvtx_steps.c:[0-9]+ in main#nvtx_steps.c:N in main#' \
		-e 's/(step|train) #[0-9]+/\1 #K/' \
		"$1.out"
}

# 3 "step" push ranges of 2 syncs each: 2 per range holds, 1 does not.
cat >pass.json <<'END'
{"version": 1, "limits": [{"range": "step", "max_count_per_range": 2}]}
END
check pass.json >actual
cat >expected <<'END'
budget pass.json: 1 recording, 8 sync points (0 in warm-up, 0 on allowed sites)
PASS limits[0] class=sync range=step: 3 instances; worst step #K (DB, tid T, at N ms): count 2 <= 2
syncspy check: 1 limit, 1 check: 1 passed, 0 breached, 0 not checked
exit 0
END
diff -u expected actual >&2 || fail "step <= 2 should pass"

cat >fail.json <<'END'
{"version": 1, "limits": [
  {"range": "step", "max_count_per_range": 1},
  {"name": "no syncs in train steps", "range": "train", "max_count_per_range": 0},
  {"range": "nosuch", "max_count_per_range": 0},
  {"range": "ep*", "class": "S1", "max_count_per_range": 6, "max_blocked_ms_per_range": 10000}
]}
END
check fail.json >actual
cat >expected <<'END'
budget fail.json: 1 recording, 8 sync points (0 in warm-up, 0 on allowed sites)
FAIL limits[0] class=sync range=step: 3 of 3 instances over; worst step #K (DB, tid T, at N ms): count 2 > 1
  3 calls, N ms: progs/nvtx_steps.c:N in main [cudaDeviceSynchronize]
  3 calls, N ms: progs/nvtx_steps.c:N in main [cudaDeviceSynchronize]
FAIL limits[1] "no syncs in train steps" class=sync range=train: 2 of 2 instances over; worst train #K (DB, tid T, at N ms): count 1 > 0
  2 calls, N ms: progs/nvtx_steps.c:N in main [cudaDeviceSynchronize]
WARN limits[2] class=sync range=nosuch: no range matching "nosuch" recorded; limit not checked
PASS limits[3] class=S1 range=ep*: 1 instance; worst epoch #1 (DB, tid T, at N ms): count 6 <= 6, blocked N ms <= N ms
syncspy check: 4 limits, 4 checks: 1 passed, 2 breached, 1 not checked
exit 1
END
diff -u expected actual >&2 || fail "breaches of step and train"
# The sites' lines are the lines of main's cudaDeviceSynchronize calls in progs/nvtx_steps.c.
for line in $(sed -n 's/.*nvtx_steps\.c:\([0-9]*\) in main.*/\1/p' fail.json.out); do
	sed -n "${line}p" "$TOP_SRCDIR/tests/progs/nvtx_steps.c" | grep -q 'cudaDeviceSynchronize();' ||
		fail "line $line of nvtx_steps.c is not a sync"
done
[ "$(sed -n 's/.*nvtx_steps\.c:\([0-9]*\) in main.*/\1/p' fail.json.out | sort -u | wc -l)" -eq 3 ] ||
	fail "three sync lines expected: $(grep nvtx_steps.c fail.json.out)"

# A name that matches nothing only warns: exit 0.
cat >warn.json <<'END'
{"version": 1, "limits": [{"range": "nosuch", "max_count_per_range": 0}]}
END
check warn.json | grep -E '^(WARN|exit)' >actual
cat >expected <<'END'
WARN limits[0] class=sync range=nosuch: no range matching "nosuch" recorded; limit not checked
exit 0
END
diff -u expected actual >&2 || fail "unknown range name"

# Allowed sites and the warm-up are not counted inside ranges either.
cat >allow.json <<'END'
{"version": 1, "allow": ["*/nvtx_steps.c:*"], "limits": [{"range": "train", "max_count_per_range": 0}]}
END
check allow.json | grep -E '^(PASS|FAIL|exit)' >actual
cat >expected <<'END'
PASS limits[0] class=sync range=train: 2 instances; worst train #K (DB, tid T, at N ms): count 0 <= 0
exit 0
END
diff -u expected actual >&2 || fail "allow-list inside ranges"
cat >warmup.json <<'END'
{"version": 1, "warmup": {"seconds": 1000}, "limits": [{"range": "st*", "max_count_per_range": 0}]}
END
check warmup.json | grep -E '^(PASS|FAIL|exit)' >actual
cat >expected <<'END'
PASS limits[0] class=sync range=st*: 3 instances; worst step #K (DB, tid T, at N ms): count 0 <= 0
exit 0
END
diff -u expected actual >&2 || fail "warm-up inside ranges"
exit 0
