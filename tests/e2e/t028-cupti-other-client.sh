#!/bin/sh
# SPDX-License-Identifier: MIT
# t028: syncspy gives CUPTI way to another client (cupti/cupti.c, CUPTI-1): a program that
# registers its own activity callbacks (as torch.profiler does) gets exactly what it gets
# without the shim, and syncspy, asked for CUPTI, stays off and says who holds it; likewise
# when Nsight's injection variable is set. (CUPTI-2, giving way while recording, needs a GPU:
# tests/gpu, bench/cupti_overhead.sh.)
. "$E2E_DIR/lib.sh"
cupti=${CUDA_LIBDIR:-/usr/local/cuda/lib64}/libcupti.so.13
[ -f "$cupti" ] || skip "no $cupti"
"$PROGS/cupti_client" "$cupti" register >"$tmp/plain" 2>&1 || fail "program failed without the shim"
SYNCSPY_CUPTI=1 under_shim "$PROGS/cupti_client" "$cupti" register >"$tmp/shim.all" 2>&1 ||
	fail "program failed under the shim"
grep -v '^syncspy:' "$tmp/shim.all" >"$tmp/shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "the program's own CUPTI registration changed"
one_db
status=$(q "SELECT value FROM meta WHERE key = 'cupti'")
case $status in
"off: not built"*) skip "the CUPTI module is not built" ;;
"off: another CUPTI client (cupti_client) registered first; host data only") ;;
*) fail "meta.cupti: '$status'" ;;
esac
golden "SELECT api, class FROM api_calls ORDER BY start_ns" <<'END'
cudaMalloc|S6
cudaFree|S6
END
"$SYNCSPY" report --format json "$db" >"$tmp/r.json" || fail "report failed"
grep -qF 'GPU timeline not recorded: off: another CUPTI client (cupti_client) registered first' "$tmp/r.json" ||
	fail "the report's notes do not name the other client"

rm -rf "$out" && mkdir -p "$out"
CUDA_INJECTION64_PATH=/nonexistent/libinjection.so SYNCSPY_CUPTI=1 \
	under_shim "$PROGS/cupti_client" "$cupti" none >/dev/null 2>&1 || fail "program failed with CUDA_INJECTION64_PATH"
one_db
golden "SELECT value FROM meta WHERE key = 'cupti'" <<'END'
off: CUDA_INJECTION64_PATH is set (/nonexistent/libinjection.so): another tool holds CUPTI; host data only
END
