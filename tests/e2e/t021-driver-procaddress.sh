#!/bin/sh
# SPDX-License-Identifier: MIT
# t021: a program that reaches the driver only through dlopen/dlsym and cuGetProcAddress, as
# nvcc's static cudart, cuBLAS and NCCL do: the functions of the sync model it gets are the
# shim's wrappers (the per-thread-default-stream flag gives the _ptsz ones), cuInit is handed
# out untouched, and meta.driver_clients names the module that asked.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/driver_calls" procaddr >"$tmp/stdout" || fail "program failed"
grep -q 'procaddr ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, class, stream FROM api_calls WHERE stream IS NULL OR stream NOT LIKE '0x%' ORDER BY start_ns" <<'END'
cuLaunchKernel_ptsz|E1|per-thread
cuStreamSynchronize_ptsz|S2|per-thread
cuCtxSynchronize|S1|
END
golden "SELECT api, class FROM api_calls WHERE stream LIKE '0x%' ORDER BY start_ns" <<'END'
cuStreamCreate|X1
cuLaunchKernel|E1
cuStreamDestroy_v2|X1
END
golden "SELECT key, value FROM meta WHERE key IN ('driver_clients', 'static_cudart') ORDER BY key" <<'END'
driver_clients|driver_calls
static_cudart|driver_calls
END
