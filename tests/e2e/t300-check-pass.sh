#!/bin/sh
# SPDX-License-Identifier: MIT
# t300: `syncspy check` on the fixture database (tests/fixtures/make-db.sh) with a budget it
# keeps: exit 0, one PASS line per limit, the summary line, nothing on stderr; the same run
# with every line compared to the golden text below. A directory argument works the same.
. "$E2E_DIR/lib.sh"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/rank0.sqlite" || fail "make-db.sh"

cat >"$tmp/budget.json" <<'END'
{
  "version": 1,
  "limits": [
    {"class": "sync", "max_count": 46, "max_blocked_ms": 20},
    {"class": "S4", "max_count": 2, "max_blocked_ms": 4},
    {"api": "cudaStreamSynchronize", "max_count": 1},
    {"name": "polling stays short", "class": "S7", "max_count": 40, "max_blocked_ms": 0.5},
    {"site": "*train.py:50*", "max_count": 1},
    {"rank": 0, "class": "S1", "max_blocked_ms": 5}
  ]
}
END
cd "$tmp" || fail "cd"
"$SYNCSPY" check --budget budget.json rank0.sqlite >out 2>err
code=$?
[ $code -eq 0 ] || fail "exit $code, want 0: $(cat out err)"
[ -s err ] && fail "stderr: $(cat err)"
cat >expected <<'END'
budget budget.json: 1 recording, 46 sync points (0 in warm-up, 0 on allowed sites)
WARN rank0.sqlite: 3 events dropped while recording; its counts are lower bounds
PASS limits[0] class=sync: count 46 <= 46, blocked 13.031 ms <= 20 ms
PASS limits[1] class=S4: count 2 <= 2, blocked 4 ms <= 4 ms
PASS limits[2] class=sync api=cudaStreamSynchronize: count 1 <= 1
PASS limits[3] "polling stays short" class=S7: count 37 <= 40, blocked 0.18 ms <= 0.5 ms
PASS limits[4] class=sync site=*train.py:50*: count 1 <= 1
PASS limits[5] class=S1 rank=0: blocked 5 ms <= 5 ms
syncspy check: 6 limits, 6 checks: 6 passed, 0 breached, 0 not checked
END
diff -u expected out >&2 || fail "output differs from the golden text"

mkdir run && cp rank0.sqlite run/ || fail "cp"
"$SYNCSPY" check --budget budget.json run >out 2>err || fail "DIR: exit $?: $(cat err)"
grep -q '^syncspy check: 6 limits, 6 checks: 6 passed' out || fail "DIR: $(cat out)"
exit 0
