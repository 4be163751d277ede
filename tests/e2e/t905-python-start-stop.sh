#!/bin/sh
# SPDX-License-Identifier: MIT
# t905: syncspy.start() and syncspy.stop() from Python (docs/python.md, "Start and stop") over the
# shim's syncspy_start/syncspy_stop (capture ranges, SHIM-6): the syncs made while stopped have
# no row but are counted per class in meta, the ones before and after are recorded; stop()
# returns False and start() True; a sync guard still counts what is not recorded. Without the
# shim both raise NotRecording.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/python-lib.sh"
stand_in_env
make_wheel
make_venv "$tmp/venv"
py=$tmp/venv/bin/python
cat >"$tmp/start_stop.py" <<'PY'
import ctypes, os
ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)
import syncspy
cuda.cudaDeviceSynchronize()
cuda.cudaDeviceSynchronize()
print("stop", syncspy.stop())
with syncspy.expect_syncs(max=5) as guard:
    for _ in range(3):
        cuda.cudaDeviceSynchronize()
print("guard counted", syncspy.counts()["S1"] >= 5)
print("start", syncspy.start())
cuda.cudaDeviceSynchronize()
PY
(cd "$tmp" && "$py" -m syncspy run -o "$out" -- "$py" "$tmp/start_stop.py" >"$tmp/stdout" 2>"$tmp/stderr") ||
	fail "start_stop.py failed: $(cat "$tmp/stderr")"
cat >"$tmp/expected" <<'END'
stop False
guard counted True
start True
END
diff -u "$tmp/expected" "$tmp/stdout" >&2 || fail "output differs"
one_db
golden "SELECT count(*) FROM api_calls WHERE api = 'cudaDeviceSynchronize'" <<'END'
3
END
golden "SELECT value FROM meta WHERE key = 'capture_skipped_by_class'" <<'END'
S1:3
END
cat >"$tmp/plain.py" <<'PY'
import syncspy
for f in (syncspy.start, syncspy.stop):
    try:
        f()
        print(f.__name__, "returned")
    except syncspy.NotRecording:
        print(f.__name__, "NotRecording")
PY
SYNCSPY_QUIET=1 "$py" "$tmp/plain.py" >"$tmp/plain.out" 2>&1 || fail "plain.py failed: $(cat "$tmp/plain.out")"
printf 'start NotRecording\nstop NotRecording\n' | diff -u - "$tmp/plain.out" >&2 || fail "without the shim"
finish
