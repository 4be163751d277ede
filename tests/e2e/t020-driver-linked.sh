#!/bin/sh
# SPDX-License-Identifier: MIT
# t020: a program that links the CUDA driver (-lcuda) and calls it directly: every driver call
# of the sync model is recorded under its exported name, layer 'driver', with the same
# meaning as its runtime counterpart (classes, stream, bytes, memory kind); the 2D copies too
# (cuMemcpy2D_v2, cuMemcpy2DAsync_v2: a static cudart's cudaMemcpy2D reaches the driver so, and
# went unrecorded before they were in driver_table.h: examples/corpus c35 static), and what a
# static cudart reaches besides (driver_calls.c more_copies): the unaligned 2D copy (S4: the
# H200's static cudaMemcpy2D), 3D, peer and batch copies, the 16-bit and 2D memsets (S6 on
# pinned memory), stream memory operations (a write is E2, a wait E3, the word their event;
# a batch with a wait E3, one without E2, its count in aux), the three instantiations (X1,
# cuGraphInstantiate being cuGraphInstantiateWithFlags) and the destroys of the executable
# graphs each made (aux pairs them), the primary context's retain (X1, docs/sync-model.md), and
# the driver's copies to and from CUDA arrays (cuMemcpyHtoA_v2 and the six others: S4 as their
# linear forms, the two Async E1).
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
cuDevicePrimaryCtxRetain|driver|X1||||
cuMemAlloc_v2|driver|S6||4096||device
cuMemAllocHost_v2|driver|S6||4096||pinned
cuMemAlloc_v2|driver|S6||64||device
cuMemcpy2DUnaligned_v2|driver|S4|legacy|4096|D2H|pageable
cuMemcpy3D_v2|driver|S4|legacy|4096|D2H|pageable
cuMemcpy3DAsync_v2|driver|E1|S|4096|H2D|pinned
cuMemcpyPeer|driver|S4|legacy|4096|peer|
cuMemcpyPeerAsync|driver|E1|S|4096|peer|
cuMemcpy3DPeer|driver|S4|legacy|4096|peer|
cuMemcpy3DPeerAsync|driver|E1|S|4096|peer|
cuArrayCreate_v2|driver|S6||||
cuArrayCreate_v2|driver|S6||||
cuMemcpyHtoA_v2|driver|S4|legacy|4096|H2D|pageable
cuMemcpyAtoH_v2|driver|S4|legacy|4096|D2H|pageable
cuMemcpyDtoA_v2|driver|S4|legacy|4096|D2D|
cuMemcpyAtoD_v2|driver|S4|legacy|4096|D2D|
cuMemcpyAtoA_v2|driver|S4|legacy|4096|D2D|
cuMemcpyHtoAAsync_v2|driver|E1|S|4096|H2D|pinned
cuMemcpyAtoHAsync_v2|driver|E1|S|4096|D2H|pinned
cuStreamSynchronize|driver|S2|S|||
cuArrayDestroy|driver|S6||||
cuArrayDestroy|driver|S6||||
cuMemcpyBatchAsync_v2|driver|E1|S|4096|H2D|pinned
cuMemcpy3DBatchAsync_v2|driver|E1|S|||
cuMemsetD16_v2|driver|E1|legacy|4096|memset|device
cuMemsetD16Async|driver|E1|S|4096|memset|device
cuMemsetD2D8_v2|driver|E1|legacy|4096|memset|device
cuMemsetD2D16_v2|driver|E1|legacy|4096|memset|device
cuMemsetD2D32_v2|driver|E1|legacy|4096|memset|device
cuMemsetD2D8Async|driver|E1|S|4096|memset|device
cuMemsetD2D16Async|driver|E1|S|4096|memset|device
cuMemsetD2D32Async|driver|E1|S|4096|memset|device
cuMemsetD2D32_v2|driver|S6|legacy|4096|memset|pinned
cuStreamWriteValue32_v2|driver|E2|S|||
cuStreamWaitValue32_v2|driver|E3|S|||
cuStreamWriteValue64_v2|driver|E2|S|||
cuStreamWaitValue64_v2|driver|E3|S|||
cuStreamBatchMemOp_v2|driver|E3|S|||
cuStreamBatchMemOp_v2|driver|E2|S|||
cuStreamSynchronize|driver|S2|S|||
cuStreamBeginCapture_v2|driver|X1|S|||
cuLaunchKernel|driver|E1|S|||
cuStreamEndCapture|driver|X1|S|||
cuGraphInstantiateWithFlags|driver|X1||||
cuGraphInstantiateWithParams|driver|X1||||
cuGraphInstantiate_v2|driver|X1||||
cuGraphLaunch|driver|E1|S|||
cuStreamSynchronize|driver|S2|S|||
cuGraphExecDestroy|driver|X1||||
cuGraphExecDestroy|driver|X1||||
cuGraphExecDestroy|driver|X1||||
cuMemFree_v2|driver|S6||64||device
cuMemFreeHost|driver|S6||4096||pinned
cuMemFree_v2|driver|S6||4096||device
cuMemFree_v2|driver|S6||4096||device
cuStreamDestroy_v2|driver|X1|S|||
cuCtxSynchronize|driver|S1||||
END
# the words of the stream memory operations are their events: each write and its wait share one
golden "SELECT a.name, c.aux, c.event - (SELECT min(event) FROM calls WHERE class IN ('E2', 'E3'))
	FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name LIKE 'cuStreamW%' OR a.name LIKE 'cuStreamBatch%'
	OR a.name LIKE 'cuMemcpy%Batch%' ORDER BY c.start_ns" <<'END'
cuMemcpyBatchAsync_v2|2|
cuMemcpy3DBatchAsync_v2|1|
cuStreamWriteValue32_v2|0|0
cuStreamWaitValue32_v2|0|0
cuStreamWriteValue64_v2|0|8
cuStreamWaitValue64_v2|1|8
cuStreamBatchMemOp_v2|2|
cuStreamBatchMemOp_v2|1|
END
# each instantiation's executable graph is what one destroy destroyed
golden "SELECT i.api, count(d.id) FROM api_calls i LEFT JOIN api_calls d ON d.api = 'cuGraphExecDestroy' AND d.aux = i.aux
	WHERE i.api LIKE 'cuGraphInstantiate%' GROUP BY i.id ORDER BY i.start_ns" <<'END'
cuGraphInstantiateWithFlags|1
cuGraphInstantiateWithParams|1
cuGraphInstantiate_v2|1
END
golden "SELECT value FROM meta WHERE key = 'hooks_fired'" <<'END'
driver
END
golden "SELECT (end_ns - start_ns) > 10e6 FROM api_calls WHERE api = 'cuStreamSynchronize' ORDER BY start_ns LIMIT 1" <<'END'
1
END
