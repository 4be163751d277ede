#!/bin/sh
# SPDX-License-Identifier: MIT
# t902: the sync guard from Python (syncspy.no_sync, expect_syncs, counts, step; docs/python.md)
# on the stand-ins, the package installed from its wheel in a venv (tests/progs/py_guard.py):
# SyncError names each sync point, API, class, count and the user's line (with the GIL held or
# released); guards nest, an inner one counts its classes only; expect_syncs(max=N) passes at N
# and fails past it; at_first=True raises right after the first sync, before the next line;
# another thread is not affected and has guards of its own; the decorator; live counters;
# steps reach the database; closing out of order is refused. Under SYNCSPY_DISABLE=1 a guard
# says that nothing is recorded.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/python-lib.sh"
stand_in_env
make_wheel
make_venv "$tmp/venv"
py=$tmp/venv/bin/python
script=$TOP_SRCDIR/tests/progs/py_guard.py
(cd "$tmp" && "$py" -m syncspy run -o "$out" -- "$py" "$script" >"$tmp/stdout" 2>"$tmp/stderr") ||
	fail "py_guard.py failed: $(cat "$tmp/stderr")"
cat >"$tmp/expected" <<'END'
two syncs: SyncError
syncspy.no_sync: 3 sync points inside the block (allowed: 0):
  LINE(loop) in two_syncs: cudaDeviceSynchronize S1 (device synchronize) x2
  LINE(malloc) in two_syncs: cudaMalloc S6 (implicit sync (allocation, free, registration)) x1
nested: ok outer 2 1, inner 0
  inner raised: LINE(inner_s2) in inner_raises: cudaStreamSynchronize S2 (stream synchronize) x1
inner raises: ok outer counted 2: LINE(inner_s2) in inner_raises: cudaStreamSynchronize S2 (stream synchronize) x1, LINE(after_inner) in inner_raises: cudaDeviceSynchronize S1 (device synchronize) x1
budget of 2, 2 queries: ok
budget of 2, 3 queries: SyncError
syncspy.expect_syncs(max=2): 3 sync points inside the block (allowed: 2):
  LINE(poll) in run: cudaStreamQuery S7 (polling (stream/event query)) x3
at first: ok raised at line first, 0 after; syncspy.no_sync: a sync point inside the block (at_first=True):
  LINE(first) in at_first: cudaDeviceSynchronize S1 (device synchronize) x1
other threads: ok main guard passed; worker: LINE(worker_guarded) in worker: cudaDeviceSynchronize S1 (device synchronize) x1
decorated: SyncError
syncspy.no_sync: 1 sync point inside the block (allowed: 0):
  LINE(decorated) in decorated: cudaEventSynchronize S3 (event synchronize) x1
counts: ok S1+1 S2+2 S3+0 S4+0 S5+0 S6+0 S7+0
steps: ok
  syncspy: guards closed out of order (a guard must close before the guard it was opened in)
out of order: ok
bad class: syncspy: unknown sync class 'S9' (expected one of S1, S2, S3, S4, S5, S6, S7)
recording: True
END
diff -u "$tmp/expected" "$tmp/stdout" >&2 || fail "unexpected output of py_guard.py"
one_db
# the guards changed nothing recorded (GUARD-2): every sync point has its row, with the line
golden "SELECT class, sum(count) FROM calls WHERE class LIKE 'S%' GROUP BY class" <<'END'
S1|11
S2|4
S3|1
S6|1
S7|5
END
line=$(grep -n 'MARK:first' "$script" | cut -d: -f1)
golden "SELECT count(*) FROM api_calls WHERE site = '$script:$line in at_first'" <<'END'
1
END
golden "SELECT kind, name, count(*) FROM ranges GROUP BY kind, name" <<'END'
step|epoch|3
END
# recording off: the guard cannot count, and says so
SYNCSPY_DISABLE=1 "$py" -m syncspy run -o "$tmp/off" -- "$py" -c '
import ctypes, os
ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
import syncspy
print("recording:", syncspy.recording())
try:
    with syncspy.no_sync():
        pass
except syncspy.NotRecording as error:
    print(error)' >"$tmp/off.out" 2>&1 || fail "SYNCSPY_DISABLE=1: $(cat "$tmp/off.out")"
cat >"$tmp/expected" <<'END'
recording: False
syncspy: the shim records nothing in this process (SYNCSPY_DISABLE=1, or its output could not be written): syncspy.no_sync cannot count
END
grep -v '^syncspy: run' "$tmp/off.out" | diff -u "$tmp/expected" - >&2 || fail "SYNCSPY_DISABLE=1: unexpected output"
exit 0
