#!/bin/sh
# SPDX-License-Identifier: MIT
# t224: the copies, memsets, stream memory operations and graph calls a static cudart reaches
# (tests/progs/static_copies.c carries such a runtime, which looks the driver up through
# cuGetProcAddress as libcudart_static does, once for the legacy default stream and once for
# the per-thread one) are all recorded, with their class, stream, bytes, direction and host
# memory kind: the unaligned 2D copy of a static cudaMemcpy2D (S4), 3D, peer and batch copies,
# 16-bit and 2D memsets, stream waits (E3) and writes (E2), a batch of both (E3), the
# instantiations (cuGraphInstantiate answered with cuGraphInstantiateWithFlags, the 11.0
# cuGraphInstantiate_v2, WithParams) and the destroys, each in its _ptsz/_ptds variant where the
# per-thread lookup gives one. And every row names the user's line that called the runtime
# (docs/attribution.md), whatever its class: the sync points by their stacks, every other call
# (enqueues, edges, context calls such as stream creation, instantiation and destroy) past the
# runtime's frames (interpose/driver.c SS_ENQUEUE_SITE). Each row is shown with the runtime
# function its site's line calls.
. "$E2E_DIR/lib.sh"
src="$TOP_SRCDIR/tests/progs/static_copies.c"
under_shim "$PROGS/static_copies" calls >"$tmp/stdout" || fail "program failed: $(cat "$tmp/stdout")"
grep -q 'static copies ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
"$SYNCSPY" symbolize "$db" >"$tmp/sym.out" 2>"$tmp/sym.err" || fail "symbolize: $(cat "$tmp/sym.err")"
grep -q ' 0 of ' "$tmp/sym.out" && skip "no file:line for native sites here: $(cat "$tmp/sym.out")"
# (the runtime's own retain of the primary context, at its start-up, is its line, not the user's:
# this runtime is in the program's file)
q "SELECT api, class, CASE WHEN stream LIKE '0x%' THEN 'S' ELSE stream END, coalesce(bytes, ''),
	coalesce(dir, ''), coalesce(host_mem, ''), coalesce(site, '') FROM api_calls
	WHERE api <> 'cuDevicePrimaryCtxRetain' ORDER BY start_ns" >"$tmp/rows"
# the site's line, as the runtime function it calls: CALL(cudaMemcpy2D(...)) /* SITE */
while IFS='|' read -r api class stream bytes dir mem site; do
	case $site in
	*/progs/static_copies.c:*" in "*) ;;
	*) echo "$api|$class|$stream|$bytes|$dir|$mem|NOT A LINE OF static_copies.c: $site" && continue ;;
	esac
	line=${site##*static_copies.c:}
	line=${line%% *}
	text=$(sed -n "${line}p" "$src")
	case $text in
	*"/* SITE"*) fn=$(printf '%s\n' "$text" | sed 's/.*CALL(\([A-Za-z0-9_]*\)(.*/\1/') ;;
	*) fn="NOT A SITE LINE: $line" ;;
	esac
	echo "$api|$class|$stream|$bytes|$dir|$mem|$fn"
done <"$tmp/rows" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
cuStreamCreate|X1|S||||cudaStreamCreate
cuMemAlloc_v2|S6||4096||device|cudaMalloc
cuMemAlloc_v2|S6||4096||device|cudaMalloc
cuMemAllocHost_v2|S6||4096||pinned|cudaMallocHost
cuMemAlloc_v2|S6||64||device|cudaMalloc
cuMemcpy2DUnaligned_v2|S4|legacy|4096|D2H|pageable|cudaMemcpy2D
cuMemcpy3D_v2|S4|legacy|4096|D2H|pageable|cudaMemcpy3D
cuMemcpy3DAsync_v2|E1|S|4096|H2D|pinned|cudaMemcpy3DAsync
cuMemcpyPeer|S4|legacy|4096|peer||cudaMemcpyPeer
cuMemcpyPeerAsync|E1|S|4096|peer||cudaMemcpyPeerAsync
cuMemcpy3DPeer|S4|legacy|4096|peer||cudaMemcpy3DPeer
cuMemcpy3DPeerAsync|E1|S|4096|peer||cudaMemcpy3DPeerAsync
cuMemcpyBatchAsync_v2|E1|S|4096|H2D|pinned|cudaMemcpyBatchAsync
cuMemcpy3DBatchAsync_v2|E1|S||||cudaMemcpy3DBatchAsync
cuMemsetD16_v2|E1|legacy|4096|memset|device|cudartMemsetD16
cuMemsetD16Async|E1|S|4096|memset|device|cudartMemsetD16Async
cuMemsetD2D8_v2|E1|legacy|4096|memset|device|cudaMemset2D
cuMemsetD2D16_v2|E1|legacy|4096|memset|device|cudartMemset2D16
cuMemsetD2D32_v2|E1|legacy|4096|memset|device|cudartMemset2D32
cuMemsetD2D8Async|E1|S|4096|memset|device|cudaMemset2DAsync
cuMemsetD2D16Async|E1|S|4096|memset|device|cudartMemset2D16Async
cuMemsetD2D32Async|E1|S|4096|memset|device|cudartMemset2D32Async
cuStreamWriteValue32_v2|E2|S||||cudartWriteValue32
cuStreamWaitValue32_v2|E3|S||||cudartWaitValue32
cuStreamWriteValue64_v2|E2|S||||cudartWriteValue64
cuStreamWaitValue64_v2|E3|S||||cudartWaitValue64
cuStreamBatchMemOp_v2|E3|S||||cudartBatchMemOp
cuStreamBeginCapture_v2|X1|S||||cudaStreamBeginCapture
cuLaunchKernel|E1|S||||cudaLaunchKernel
cuStreamEndCapture|X1|S||||cudaStreamEndCapture
cuGraphInstantiateWithFlags|X1|||||cudaGraphInstantiate
cuGraphInstantiateWithFlags|X1|||||cudaGraphInstantiateWithFlags
cuGraphInstantiateWithParams|X1|||||cudaGraphInstantiateWithParams
cuGraphInstantiate_v2|X1|||||cudartGraphInstantiate11
cuGraphLaunch|E1|S||||cudaGraphLaunch
cuStreamSynchronize|S2|S||||cudaStreamSynchronize
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
cuMemcpy2DUnaligned_v2_ptds|S4|per-thread|4096|D2H|pageable|cudaMemcpy2D
cuMemcpy3D_v2_ptds|S4|per-thread|4096|D2H|pageable|cudaMemcpy3D
cuMemcpy3DAsync_v2_ptsz|E1|per-thread|4096|H2D|pinned|cudaMemcpy3DAsync
cuMemcpyPeer_ptds|S4|per-thread|4096|peer||cudaMemcpyPeer
cuMemcpyPeerAsync_ptsz|E1|per-thread|4096|peer||cudaMemcpyPeerAsync
cuMemcpy3DPeer_ptds|S4|per-thread|4096|peer||cudaMemcpy3DPeer
cuMemcpy3DPeerAsync_ptsz|E1|per-thread|4096|peer||cudaMemcpy3DPeerAsync
cuMemcpyBatchAsync_v2_ptsz|E1|per-thread|4096|H2D|pinned|cudaMemcpyBatchAsync
cuMemcpy3DBatchAsync_v2_ptsz|E1|per-thread||||cudaMemcpy3DBatchAsync
cuMemsetD16_v2_ptds|E1|per-thread|4096|memset|device|cudartMemsetD16
cuMemsetD16Async_ptsz|E1|per-thread|4096|memset|device|cudartMemsetD16Async
cuMemsetD2D8_v2_ptds|E1|per-thread|4096|memset|device|cudaMemset2D
cuMemsetD2D16_v2_ptds|E1|per-thread|4096|memset|device|cudartMemset2D16
cuMemsetD2D32_v2_ptds|E1|per-thread|4096|memset|device|cudartMemset2D32
cuMemsetD2D8Async_ptsz|E1|per-thread|4096|memset|device|cudaMemset2DAsync
cuMemsetD2D16Async_ptsz|E1|per-thread|4096|memset|device|cudartMemset2D16Async
cuMemsetD2D32Async_ptsz|E1|per-thread|4096|memset|device|cudartMemset2D32Async
cuStreamWriteValue32_v2_ptsz|E2|per-thread||||cudartWriteValue32
cuStreamWaitValue32_v2_ptsz|E3|per-thread||||cudartWaitValue32
cuStreamWriteValue64_v2_ptsz|E2|per-thread||||cudartWriteValue64
cuStreamWaitValue64_v2_ptsz|E3|per-thread||||cudartWaitValue64
cuStreamBatchMemOp_v2_ptsz|E3|per-thread||||cudartBatchMemOp
cuStreamBeginCapture_v2_ptsz|X1|per-thread||||cudaStreamBeginCapture
cuLaunchKernel_ptsz|E1|per-thread||||cudaLaunchKernel
cuStreamEndCapture_ptsz|X1|per-thread||||cudaStreamEndCapture
cuGraphInstantiateWithFlags|X1|||||cudaGraphInstantiate
cuGraphInstantiateWithFlags|X1|||||cudaGraphInstantiateWithFlags
cuGraphInstantiateWithParams_ptsz|X1|||||cudaGraphInstantiateWithParams
cuGraphInstantiate_v2|X1|||||cudartGraphInstantiate11
cuGraphLaunch_ptsz|E1|per-thread||||cudaGraphLaunch
cuStreamSynchronize_ptsz|S2|per-thread||||cudaStreamSynchronize
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
cuGraphExecDestroy|X1|||||cudaGraphExecDestroy
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "rows (api|class|stream|bytes|dir|host memory|the runtime function at the site)"
# each stream write and the wait after it share their word (calls.event), and every
# instantiation's executable graph is one a destroy destroyed (calls.aux)
golden "SELECT count(*), count(DISTINCT event) FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name LIKE 'cuStreamW%'" <<'END'
8|4
END
golden "SELECT count(*) FROM api_calls i JOIN api_calls d ON d.api = 'cuGraphExecDestroy' AND d.aux = i.aux
	WHERE i.api LIKE 'cuGraphInstantiate%'" <<'END'
8
END
