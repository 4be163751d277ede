#!/bin/sh
# SPDX-License-Identifier: MIT
# t013: S4. Synchronous cudaMemcpy both ways between pageable memory and device memory: two S4
# rows with direction, bytes and host memory kind; the data arrives.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s4 >"$tmp/stdout" || fail "scenario failed"
grep -q 'roundtrip ok' "$tmp/stdout" || fail "data did not round-trip: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, class, stream, dir, bytes, host_mem, ptr IS NOT NULL FROM api_calls ORDER BY start_ns" <<'END'
cudaMalloc|S6|||4194304|device|1
cudaMemcpy|S4|legacy|H2D|4194304|pageable|0
cudaMemcpy|S4|legacy|D2H|4194304|pageable|0
cudaFree|S6|||4194304|device|1
END
