#!/bin/sh
# SPDX-License-Identifier: MIT
# t240: an allocation that keeps coming all through the steady state, every few steps (a cache
# grown a little at a time, as torch's caching allocator grows a KV cache concatenated one token
# longer per decode step), is alloc-in-loop in the steady state even in fewer than
# SS_RECURRING_PERCENT of the steps (steps.h, ss_steps_spread); the warm-up's growth in the first
# steps stays `info`. tests/progs/steady.c growing: 60 steps, @grow-alloc in 9 of them (every
# 7th, the first at step 3, the last at 59; 8 in the 58 steady steps: steps are marked, the first
# is warm-up and the last mark ends the steps), @early-alloc in steps 1-3.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
src=$TOP_SRCDIR/tests/progs/steady.c
line() { grep -n "@$1 " "$src" | cut -d: -f1; }
under_shim "$PROGS/steady" growing >"$tmp/stdout" 2>"$tmp/stderr" || fail "steady growing exited $?"
grep -q '^steady: 60 steps, growing 9' "$tmp/stdout" || fail "output: $(cat "$tmp/stdout")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/report.json" || fail "report exited $?"
GROW=$(line grow-alloc) EARLY=$(line early-alloc) "$PYTHON3" - "$tmp/report.json" <<'PY' || fail "report checks failed"
import json, os, sys
r = json.load(open(sys.argv[1]))
def at(line):
    return [f for f in r["findings"] if f["rule"] == "alloc-in-loop" and
            f["site"].endswith("steady.c:%s in growing" % line)]
grow, early = at(os.environ["GROW"]), at(os.environ["EARLY"])
assert len(grow) == 1, grow
assert grow[0]["phase"] == "steady" and grow[0]["severity"] != "info", grow
assert grow[0]["count"] == 8, grow  # step 59 is the last mark's: it ends the steps
assert len(early) == 1 and early[0]["phase"] == "once" and early[0]["severity"] == "info", early
PY
