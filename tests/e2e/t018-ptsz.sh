#!/bin/sh
# SPDX-License-Identifier: MIT
# t018: the per-thread default stream entry points (_ptsz, _ptds) are recorded under their own
# names, and stream 0 in them is the per-thread default stream (SCHEMA-4).
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" ptsz || fail "scenario failed"
one_db
golden "SELECT api, class, stream FROM api_calls WHERE stream IS NOT NULL ORDER BY start_ns" <<'END'
cudaLaunchKernel_ptsz|E1|per-thread
cudaMemcpyAsync_ptsz|E1|per-thread
cudaStreamSynchronize_ptsz|S2|per-thread
cudaMemcpy_ptds|S4|per-thread
cudaStreamSynchronize|S2|per-thread
END
