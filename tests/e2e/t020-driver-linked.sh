#!/bin/sh
# SPDX-License-Identifier: MIT
# t020: a program that links the CUDA driver (-lcuda) and calls it directly: every driver call
# of the sync model is recorded under its exported name, layer 'driver', with the same
# meaning as its runtime counterpart (classes, stream, bytes, memory kind); the 2D copies too
# (cuMemcpy2D_v2, cuMemcpy2DAsync_v2: a static cudart's cudaMemcpy2D reaches the driver so, and
# went unrecorded before they were in driver_table.h: examples/corpus c35 static).
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/driver_calls" linked >"$tmp/stdout" || fail "program failed"
grep -q 'linked ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, layer, class, CASE WHEN stream LIKE '0x%' THEN 'S' ELSE stream END, bytes, dir, host_mem FROM api_calls ORDER BY start_ns" <<'END'
cuStreamCreate|driver|X1|S|||
cuMemAlloc_v2|driver|S6||4096||device
cuMemcpyHtoD_v2|driver|S4|legacy|4096|H2D|pageable
cuLaunchKernel|driver|E1|S|||
cuStreamSynchronize|driver|S2|S|||
cuMemcpyDtoH_v2|driver|S4|legacy|4096|D2H|pageable
cuMemcpy2D_v2|driver|S4|legacy|4096|D2H|pageable
cuMemcpy2DAsync_v2|driver|S5|S|4096|H2D|pageable
cuStreamSynchronize|driver|S2|S|||
cuMemFree_v2|driver|S6||4096||device
cuStreamDestroy_v2|driver|X1|S|||
cuCtxSynchronize|driver|S1||||
END
golden "SELECT value FROM meta WHERE key = 'hooks_fired'" <<'END'
driver
END
golden "SELECT (end_ns - start_ns) > 10e6 FROM api_calls WHERE api = 'cuStreamSynchronize' ORDER BY start_ns LIMIT 1" <<'END'
1
END
