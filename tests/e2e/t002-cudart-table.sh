#!/bin/sh
# SPDX-License-Identifier: MIT
# t002: the shim's runtime table against the toolkit's real libcudart.so.13: every entry point
# of the sync-model families that libcudart exports (with its _ptsz/_ptds twins) is wrapped,
# and every wrapped cuda* name exists in libcudart (a typo or a missing variant fails here).
. "$E2E_DIR/lib.sh"
[ -n "$CUDA_LIBDIR" ] || skip "no real libcudart.so.13 found by configure"
real=$CUDA_LIBDIR/libcudart.so.13
"$NM" -D --defined-only "$real" | awk '{print $3}' | sed 's/@.*//' | sort -u >"$tmp/real"
"$NM" -D --defined-only "$SHIM" | awk '{print $3}' | grep -E '^(cuda|__cuda)' | sort -u >"$tmp/shim"
# The families of the sync model (docs/sync-model.md, issue: memcpy and memset families,
# synchronize and query, event record, stream wait, launches, graph launch/upload, allocation
# and registration, stream create/destroy/capture, external semaphores, prefetch/discard).
families='^(cudaMemcpy|cudaMemset|cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaStreamQuery|cudaEventQuery|cudaEventRecord|cudaStreamWaitEvent|__cudaLaunchKernel|cudaLaunch(Kernel|CooperativeKernel|HostFunc)|cudaStreamAddCallback|cudaGraph(Launch|Upload)(_pt..)?$|cudaMalloc|cudaFree|cudaHost(Alloc|Register|Unregister)|cudaStream(Create|Destroy|BeginCapture|EndCapture|AttachMemAsync)|cudaEvent(Create|Destroy)($|WithFlags)|cudaSignalExternalSemaphoresAsync|cudaWaitExternalSemaphoresAsync|cudaMem(Prefetch|Discard))'
grep -E "$families" "$tmp/real" >"$tmp/wanted"
comm -23 "$tmp/wanted" "$tmp/shim" >"$tmp/missing"
[ -s "$tmp/missing" ] && fail "libcudart exports these sync-model entry points the shim does not wrap: $(tr '\n' ' ' <"$tmp/missing")"
comm -13 "$tmp/real" "$tmp/shim" >"$tmp/unknown"
[ -s "$tmp/unknown" ] && fail "the shim wraps names libcudart.so.13 does not export: $(tr '\n' ' ' <"$tmp/unknown")"
n_ptsz=$(grep -c '_pt[sd][zs]$' "$tmp/shim")
[ "$n_ptsz" -ge 50 ] || fail "only $n_ptsz _ptsz/_ptds variants wrapped"
echo "wrapped $(wc -l <"$tmp/shim") runtime entry points ($n_ptsz variants), $(wc -l <"$tmp/wanted") in the families"
