#!/bin/sh
# SPDX-License-Identifier: MIT
# t200: `syncspy report` on the hand-built database of tests/fixtures/make-db.sh prints exactly
# the text below (the fixture has no loop: every finding is `info`; t212 has a loop) (the fixture's times are fixed; only the path in the notes varies), the same
# with -o FILE, and nothing on stderr when stderr is not a terminal.
. "$E2E_DIR/lib.sh"
SYNCSPY=$SYNCSPY sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/rank0.sqlite" || fail "make-db.sh"
"$SYNCSPY" report "$tmp/rank0.sqlite" >"$tmp/out.raw" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "report wrote to stderr: $(cat "$tmp/err")"
sed "s|$tmp/|TMP/|" "$tmp/out.raw" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
syncspy report: 1 rank, 6 findings

ranks:
   rank  host               pid      wall_ms   sync_points    blocked_ms    copies   nccl_ops     nccl_ms
      0  fixture-host      4242      100.000           46        13.031         5           2       0.028

steps (steady state, after the warm-up step):
   rank       pid   steps  steady     step_ms  syncs/step  blocked_ms/step  gpu_idle_ms/step  found
      0      4242       0       0           -           -               -                -  none

findings: none in the steady state

once, not in the steady state (info: no cost per step):
  [info] host-sync  rank 0  (1 call, 5.000 ms)  train.py:50 torch.cuda.synchronize()
  [info] sync-copy  rank 0  (2 calls, 4.000 ms)  train.py:42 loss.item()
  [info] pageable-async-copy  rank 0  (2 calls, 3.350 ms)  train.py:37 x.to(device, non_blocking=True)
  [info] polling  rank 0  (37 calls, 0.180 ms)  (no call site)
  [info] host-sync  rank 0  (2 calls, 0.151 ms)  (no call site)
  [info] host-sync  rank 0  (1 call, 0.100 ms)  libtorch_cuda.so+0x1234

notes:
  - GPU idle time behind host syncs: not measurable without GPU timeline (the recording holds host-side calls only)
  - communication/compute overlap: not measurable without GPU timeline
  - TMP/rank0.sqlite: no repeating step found (no syncspy_step or NVTX step ranges, and no call that recurs at a regular period): every call between the first and the last GPU work is judged (before: setup, after: teardown), a site with 3 calls or more all through it as repeating, its cost against the wall time
  - TMP/rank0.sqlite: 3 calls were dropped while recording: its counts are lower bounds
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "unexpected report text"

"$SYNCSPY" report -o "$tmp/report.txt" "$tmp/rank0.sqlite" >"$tmp/stdout" || fail "report -o exited $?"
[ -s "$tmp/stdout" ] && fail "report -o wrote to stdout"
cmp -s "$tmp/out.raw" "$tmp/report.txt" || fail "report -o FILE differs from standard output"

# --progress: one line per database on stderr, the report unchanged.
"$SYNCSPY" report --progress "$tmp/rank0.sqlite" >"$tmp/out2" 2>"$tmp/err" || fail "--progress exited $?"
[ "$(grep -c '^syncspy: loaded 1/1 ' "$tmp/err")" -eq 1 ] || fail "progress lines: $(cat "$tmp/err")"
cmp -s "$tmp/out.raw" "$tmp/out2" || fail "--progress changed the report"
exit 0
