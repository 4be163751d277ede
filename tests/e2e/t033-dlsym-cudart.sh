#!/bin/sh
# SPDX-License-Identifier: MIT
# t033: lookups by name at run time (issue 14, item 4). A ctypes-style program that dlopens
# libcudart.so.13 RTLD_LOCAL and dlsyms its functions gets the shim's runtime wrappers: each
# call one row at the runtime layer, the runtime's own driver calls not recorded again
# (DRIVER-3), and a driver pointer from cudaGetDriverEntryPoint is wrapped. dlsym(RTLD_DEFAULT)
# of a name the shim exports answers as without the shim (DRIVER-4): NULL before any CUDA
# library is loaded, found once libcuda is. Python's ctypes gets the wrappers too. Every program
# prints the same with and without the shim.
. "$E2E_DIR/lib.sh"
n=12
"$PROGS/lookups" cudart $n >"$tmp/plain" || fail "program failed without the shim"
under_shim "$PROGS/lookups" cudart $n >"$tmp/stdout" || fail "program failed under the shim"
diff -u "$tmp/plain" "$tmp/stdout" >&2 || fail "the shim changed what the program saw"
one_db
golden "SELECT api, layer, class, CASE WHEN stream LIKE '0x%' THEN 'S' ELSE stream END, count(*) FROM api_calls GROUP BY 1, 2, 3, 4 ORDER BY min(start_ns)" <<END
cudaStreamCreate|runtime|X1|S|1
cudaMalloc|runtime|S6||1
cudaMemcpy|runtime|S4|legacy|1
cudaStreamSynchronize|runtime|S2|S|$n
cudaStreamSynchronize_ptsz|runtime|S2|per-thread|2
cudaDeviceSynchronize|runtime|S1||1
cuCtxSynchronize|driver|S1||2
cudaFree|runtime|S6||1
cudaStreamDestroy|runtime|X1|S|1
END
rm -rf "$out"
"$PROGS/lookups" probe >"$tmp/plain" || fail "probe failed without the shim"
under_shim "$PROGS/lookups" probe >"$tmp/stdout" || fail "probe failed under the shim"
diff -u "$tmp/plain" "$tmp/stdout" >&2 || fail "the shim changed what dlsym(RTLD_DEFAULT) answers"
grep -q 'before cuGetProcAddress_v2: null' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
grep -q 'after cuGetProcAddress_v2: found' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, count(*) FROM api_calls GROUP BY api" <<'END'
cuCtxSynchronize|1
END
# ctypes itself (its attribute lookup is a dlsym on the library's handle)
[ -n "${PYTHON3:-}" ] || exit 0
rm -rf "$out"
cat >"$tmp/ct.py" <<'PY'
import ctypes
rt = ctypes.CDLL("libcudart.so.13")
print("syncs:", [rt.cudaDeviceSynchronize() for _ in range(3)])
PY
# (a sanitizer build's stand-ins need the sanitizer runtime in python3 too: tests/sanitize.sh)
env ${SANITIZER_PRELOAD:+LD_PRELOAD=$SANITIZER_PRELOAD} "$PYTHON3" "$tmp/ct.py" >"$tmp/plain" ||
	fail "ctypes program failed without the shim"
under_shim "$PYTHON3" "$tmp/ct.py" >"$tmp/stdout" || fail "ctypes program failed under the shim"
diff -u "$tmp/plain" "$tmp/stdout" >&2 || fail "the shim changed what the ctypes program saw"
one_db
golden "SELECT api, layer, count(*) FROM api_calls GROUP BY api, layer" <<'END'
cudaDeviceSynchronize|runtime|3
END
