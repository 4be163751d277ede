#!/bin/sh
# SPDX-License-Identifier: MIT
# t420: `syncspy run`'s capture options set the capture range's variables (docs/cli.md,
# docs/recording.md "Capture ranges"): --delay/--duration (SYNCSPY_DELAY, SYNCSPY_DURATION),
# --capture-range cudaProfilerApi, --nvtx-capture NAME (implies --capture-range nvtx; run sets
# the NVTX injection itself). A bad value is a usage error: exit 2, one message, CMD not run.
. "$E2E_DIR/lib.sh"
cd "$tmp" || exit 1

"$SYNCSPY" run -o "$out" --delay 0.2 --duration 0.2 -- "$PROGS/capture" time 500 >/dev/null 2>"$tmp/err" ||
	fail "run --delay --duration: $(cat "$tmp/err")"
one_db
golden "SELECT value FROM meta WHERE key = 'capture_range';
	SELECT started_by, stopped_by FROM capture" <<'END'
delay 0.2 s, duration 0.2 s
delay|duration
END

rm -rf "$out"
"$SYNCSPY" run -o "$out" --capture-range cudaProfilerApi "$PROGS/capture" profiler >/dev/null 2>"$tmp/err" ||
	fail "run --capture-range cudaProfilerApi: $(cat "$tmp/err")"
one_db
golden "SELECT value FROM meta WHERE key = 'capture_range'; SELECT count(*) FROM calls WHERE class = 'E1'" <<'END'
cudaProfilerApi
6
END

rm -rf "$out"
"$SYNCSPY" run -o "$out" --nvtx-capture capture "$PROGS/capture" nvtx >/dev/null 2>"$tmp/err" ||
	fail "run --nvtx-capture: $(cat "$tmp/err")"
one_db
golden "SELECT value FROM meta WHERE key = 'capture_range'; SELECT count(*) FROM calls WHERE class = 'E1'" <<'END'
nvtx:capture
6
END

# Usage errors: exit 2, the message, and CMD never ran (it would have created the file).
usage() {
	expected=$1
	shift
	usage_error "syncspy: run: $expected" "$tmp/ran" "$SYNCSPY" run -o "$out" "$@" -- touch "$tmp/ran"
}
usage "--delay soon: not a number of seconds" --delay soon
usage "--duration -1: not a number of seconds" --duration -1
usage "--capture-range everything: not cudaProfilerApi or nvtx" --capture-range everything
usage "--capture-range nvtx needs --nvtx-capture NAME" --capture-range nvtx
usage "--nvtx-capture goes with --capture-range nvtx" --capture-range cudaProfilerApi --nvtx-capture step
usage "--nvtx-capture needs a range name" --nvtx-capture ""
finish
