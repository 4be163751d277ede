#!/bin/sh
# SPDX-License-Identifier: MIT
# t027: SYNCSPY_CUPTI=1 where CUPTI cannot start (this machine has no GPU driver): the program
# runs unchanged, host data is recorded as without CUPTI, and meta.cupti says why there is no
# GPU data (docs/architecture.md F8: degrade to host-side data and say so in the database).
. "$E2E_DIR/lib.sh"
"$PROGS/scenarios" s4 >"$tmp/plain" 2>&1 || fail "scenario failed without the shim"
SYNCSPY_CUPTI=1 under_shim "$PROGS/scenarios" s4 >"$tmp/shim.all" 2>&1 || fail "scenario failed with CUPTI on"
grep -v '^syncspy:' "$tmp/shim.all" >"$tmp/shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "output differs with CUPTI on"
one_db
status=$(q "SELECT value FROM meta WHERE key = 'cupti'")
case $status in
"off: not built"*) skip "the CUPTI module is not built" ;;
"off: "*"host data only") ;;
*) fail "meta.cupti: '$status'" ;;
esac
golden "SELECT api, class FROM api_calls ORDER BY start_ns" <<'END'
cudaMalloc|S6
cudaMemcpy|S4
cudaMemcpy|S4
cudaFree|S6
END
golden "SELECT count(*) FROM sqlite_master WHERE name LIKE 'gpu_%'" <<'END'
0
END
# The report says why there is no GPU timeline, in the recording's own words.
"$SYNCSPY" report "$db" >"$tmp/report.txt" || fail "report failed"
grep -qF -- "GPU timeline not recorded: $status" "$tmp/report.txt" ||
	fail "the report does not say why: $(grep -A8 '^notes' "$tmp/report.txt")"

# SYNCSPY_CUPTI_KINDS: a name it does not know is ignored with one warning naming the valid
# ones; a list that names no kind leaves CUPTI off, and meta.cupti says so. Either way the
# program runs unchanged.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_KINDS="kernels, bogus" under_shim "$PROGS/scenarios" s4 >"$tmp/kinds.all" 2>&1 ||
	fail "scenario failed with SYNCSPY_CUPTI_KINDS=kernels,bogus"
grep -v '^syncspy:' "$tmp/kinds.all" | diff -u "$tmp/plain" - >&2 || fail "output differs with bad kinds"
[ "$(grep -c "^syncspy: ignoring '[a-z]*' in SYNCSPY_CUPTI_KINDS (kinds: kernel, memcpy, memset, sync, event, correlate, api, runtime-api, driver-api)" "$tmp/kinds.all")" = 2 ] ||
	fail "expected one warning per unknown kind: $(cat "$tmp/kinds.all")"
# The API records' names, both layers' and each one's, are known: no warning.
SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_KINDS="api,runtime-api,driver-api" SYNCSPY_OUTPUT="$tmp/api-kinds" \
	LD_PRELOAD="$SHIM_PRELOAD" "$PROGS/scenarios" s4 >"$tmp/kinds.api" 2>&1 || fail "scenario failed with the api kinds"
grep "ignoring" "$tmp/kinds.api" && fail "an API kind was not known"

# SYNCSPY_CUPTI_SAMPLE (CUPTI-4, CUPTI-5): anything but auto, all or ON/PERIOD ms with
# 0 < ON < PERIOD is ignored with one warning (sampling as the default, auto, does), and the
# program runs unchanged; a good value draws none.
for bad in abc 100/100 0/10 5/10x 2000/1000; do
	SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=$bad SYNCSPY_OUTPUT="$tmp/sample" LD_PRELOAD="$SHIM_PRELOAD" \
		"$PROGS/scenarios" s4 >"$tmp/sample.all" 2>&1 || fail "scenario failed with SYNCSPY_CUPTI_SAMPLE=$bad"
	grep -v '^syncspy:' "$tmp/sample.all" | diff -u "$tmp/plain" - >&2 || fail "output differs with SYNCSPY_CUPTI_SAMPLE=$bad"
	[ "$(grep -c "^syncspy: ignoring SYNCSPY_CUPTI_SAMPLE='$bad' (auto, all, or ON/PERIOD in ms with 0 < ON < PERIOD): sampling as 'auto' does" "$tmp/sample.all")" = 1 ] ||
		fail "SYNCSPY_CUPTI_SAMPLE=$bad: $(cat "$tmp/sample.all")"
done
# SYNCSPY_CUPTI_PAUSE (CUPTI-8): anything but disable or detach is ignored with one warning
# (pausing as the default, detach, does), and the program runs unchanged; a good value draws none.
for bad in pause DETACH; do
	SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_PAUSE=$bad SYNCSPY_OUTPUT="$tmp/pause" LD_PRELOAD="$SHIM_PRELOAD" \
		"$PROGS/scenarios" s4 >"$tmp/pause.all" 2>&1 || fail "scenario failed with SYNCSPY_CUPTI_PAUSE=$bad"
	grep -v '^syncspy:' "$tmp/pause.all" | diff -u "$tmp/plain" - >&2 || fail "output differs with SYNCSPY_CUPTI_PAUSE=$bad"
	[ "$(grep -c "^syncspy: ignoring SYNCSPY_CUPTI_PAUSE='$bad' (disable or detach): pausing as 'detach', the default, does" "$tmp/pause.all")" = 1 ] ||
		fail "SYNCSPY_CUPTI_PAUSE=$bad: $(cat "$tmp/pause.all")"
done
for good in disable detach; do
	SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_PAUSE=$good SYNCSPY_OUTPUT="$tmp/pause" LD_PRELOAD="$SHIM_PRELOAD" \
		"$PROGS/scenarios" s4 >"$tmp/pause.all" 2>&1 || fail "scenario failed with SYNCSPY_CUPTI_PAUSE=$good"
	grep "SYNCSPY_CUPTI_PAUSE" "$tmp/pause.all" && fail "SYNCSPY_CUPTI_PAUSE=$good warned"
done
for good in auto all 100/1000; do # the last one's database is checked below
	rm -rf "$tmp/sample"
	SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=$good SYNCSPY_OUTPUT="$tmp/sample" LD_PRELOAD="$SHIM_PRELOAD" \
		"$PROGS/scenarios" s4 >"$tmp/sample.all" 2>&1 || fail "scenario failed with SYNCSPY_CUPTI_SAMPLE=$good"
	grep "SYNCSPY_CUPTI_SAMPLE" "$tmp/sample.all" && fail "SYNCSPY_CUPTI_SAMPLE=$good warned"
done
one_db
golden "SELECT value FROM meta WHERE key = 'cupti'" <<'END'
off: SYNCSPY_CUPTI_KINDS names no kind; host data only
END
golden "SELECT count(*) FROM api_calls" <<'END'
4
END

# syncspy_gpu_trace (docs/cupti.md, CUPTI-3): exported for programs to pause and resume the GPU
# timeline; with CUPTI not running it says so (0: not recording) and changes nothing, and no
# pause is reported for a timeline that never ran.
if [ -n "${PYTHON3:-}" ]; then
	rm -rf "$out" && mkdir -p "$out"
	CUDART="$STANDIN_DIR/libcudart.so.13" SYNCSPY_CUPTI=1 under_shim "$PYTHON3" -c '
import ctypes, os
ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
lib = ctypes.CDLL(None)
print(lib.syncspy_gpu_trace(0), lib.cudaDeviceSynchronize(), lib.syncspy_gpu_trace(1))' >"$tmp/trace.out" 2>&1 ||
		fail "python with syncspy_gpu_trace: $(cat "$tmp/trace.out")"
	[ "$(grep -v '^syncspy:' "$tmp/trace.out")" = "0 0 0" ] || fail "syncspy_gpu_trace: $(cat "$tmp/trace.out")"
	one_db
	golden "SELECT count(*) FROM meta WHERE key LIKE 'cupti_pause%'" <<'END'
0
END
	golden "SELECT api FROM api_calls" <<'END'
cudaDeviceSynchronize
END
fi
