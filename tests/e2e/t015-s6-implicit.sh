#!/bin/sh
# SPDX-License-Identifier: MIT
# t015: S6. Allocations and frees are implicit syncs; a non-async memset of pinned or managed
# memory is one too, a memset of device memory is an enqueue; stream-ordered allocation and
# free are enqueues on their stream.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s6 || fail "scenario failed"
one_db
golden "SELECT api, class, CASE WHEN stream LIKE '0x%' THEN 'S' ELSE stream END, bytes, host_mem, ptr IS NOT NULL FROM api_calls ORDER BY start_ns" <<'END'
cudaStreamCreate|X1|S|||0
cudaMalloc|S6||1048576|device|1
cudaMallocHost|S6||1048576|pinned|1
cudaMallocManaged|S6||1048576|managed|1
cudaMemset|S6|legacy|1048576|pinned|0
cudaMemset|S6|legacy|1048576|managed|0
cudaMemset|E1|legacy|1048576|device|0
cudaMallocAsync|E1|S|1048576|device|1
cudaFreeAsync|E1|S|1048576|device|1
cudaStreamSynchronize|S2|S|||0
cudaFree|S6||1048576|managed|1
cudaFreeHost|S6||1048576|pinned|1
cudaFree|S6||1048576|device|1
cudaStreamDestroy|X1|S|||0
END
