#!/bin/sh
# SPDX-License-Identifier: MIT
# t200: `syncspy report` on the hand-built database of tests/fixtures/make-db.sh prints exactly
# the text below (the fixture's times are fixed; only the path in the notes varies), the same
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

findings (most blocked time first):
  [medium] host-sync  rank 0  train.py:50 torch.cuda.synchronize()
      count 1, 5.000 ms blocked: cudaDeviceSynchronize x1; worst 5.000 ms; GPU idle time behind it: not measurable without GPU timeline
      fix: Move the result read (.item(), a stream or device sync) out of the step loop or later in it, or wait on an event with cudaStreamWaitEvent so the host keeps queuing work.
  [medium] sync-copy  rank 0  train.py:42 loss.item()
      count 2, 4.000 ms blocked: cudaMemcpy x2; 8 bytes; worst 2.100 ms
      fix: Use cudaMemcpyAsync from pinned memory on a non-default stream and synchronize only where the result is needed (for one scalar, read it a step later).
  [medium] pageable-async-copy  rank 0  train.py:37 x.to(device, non_blocking=True)
      count 2, 3.350 ms blocked: cudaMemcpyAsync x2; 134217728 bytes; estimate: 0.367 ms lost against pinned copies at 45.0 GB/s H2D, 45.0 GB/s D2H (default)
      fix: Allocate the host buffer pinned (cudaHostAlloc, tensor.pin_memory(), DataLoader(pin_memory=True)) so the async copy returns at once and overlaps.
  [low] polling  rank 0  (no call site)
      count 37, 0.180 ms blocked: 1 polling loops: cudaStreamQuery x37
      fix: Replace the query loop by cudaEventSynchronize with a blocking-sync event, or a host function callback, so the CPU is free while the GPU works.
  [low] host-sync  rank 0  (no call site)
      count 2, 0.151 ms blocked: cudaEventSynchronize x1, cudaStreamSynchronize x1; worst 0.150 ms; GPU idle time behind it: not measurable without GPU timeline
      fix: Move the result read (.item(), a stream or device sync) out of the step loop or later in it, or wait on an event with cudaStreamWaitEvent so the host keeps queuing work.
  [low] host-sync  rank 0  libtorch_cuda.so+0x1234
      count 1, 0.100 ms blocked: cuStreamSynchronize x1; worst 0.100 ms; GPU idle time behind it: not measurable without GPU timeline
      fix: Move the result read (.item(), a stream or device sync) out of the step loop or later in it, or wait on an event with cudaStreamWaitEvent so the host keeps queuing work.

notes:
  - GPU idle time behind host syncs: not measurable without GPU timeline (the recording holds host-side calls only)
  - communication/compute overlap: not measurable without GPU timeline
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
