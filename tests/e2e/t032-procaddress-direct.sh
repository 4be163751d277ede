#!/bin/sh
# SPDX-License-Identifier: MIT
# t032: a program that links libcuda and calls cuGetProcAddress itself (cuda.h's name for
# cuGetProcAddress_v2, and the 11.3 cuGetProcAddress by its symbol) gets the shim's wrappers
# (issue 14, item 4): every call through the pointers is one row under the right name, the
# per-thread flag gives the _ptsz wrapper, and the program's output (return codes, lookup
# status of a missing name and of a version older than the function) is the same as without
# the shim. A program calling cuGetProcAddress is no CUDA runtime: meta.driver_clients stays
# absent.
. "$E2E_DIR/lib.sh"
n=30
"$PROGS/driver_calls" direct $n >"$tmp/plain" || fail "program failed without the shim"
under_shim "$PROGS/driver_calls" direct $n >"$tmp/stdout" || fail "program failed under the shim"
diff -u "$tmp/plain" "$tmp/stdout" >&2 || fail "the shim changed what the program saw"
grep -q 'direct ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, layer, class, CASE WHEN stream LIKE '0x%' THEN 'S' ELSE stream END, ret, count(*) FROM api_calls WHERE api LIKE '%Synchronize%' GROUP BY 1, 2, 3, 4, 5 ORDER BY min(start_ns)" <<END
cuStreamSynchronize|driver|S2|S|0|$n
cuStreamSynchronize_ptsz|driver|S2|per-thread|0|2
cuCtxSynchronize|driver|S1||0|3
cuStreamSynchronize|driver|S2|S|400|1
END
golden "SELECT count(*) FROM api_calls WHERE api = 'cuLaunchKernel'" <<END
$n
END
golden "SELECT count(*) FROM meta WHERE key IN ('driver_clients', 'static_cudart')" <<'END'
0
END
