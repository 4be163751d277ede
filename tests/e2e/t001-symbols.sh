#!/bin/sh
# SPDX-License-Identifier: MIT
# t001: libsyncspy.so exports the interposed entry points (runtime, driver with its
# cuGetProcAddress, NCCL, and dlsym, exec*, sigaction, signal, __cxa_atexit (SHIM-8) for the
# process around them;
# syncspy_step, syncspy_gpu_trace, syncspy_start, syncspy_stop and the sync guard's syncspy_*
# (interpose/guard.c) for the program) and nothing else: no SQLite, no unwinder, no internals
# (docs/architecture.md F6, F7); and it links none of CUDA, NCCL or SQLite. Its driver names are
# the driver's, and cover the copies and waits the static runtime can reach (below).
. "$E2E_DIR/lib.sh"
"$NM" -D --defined-only "$SHIM" | awk '{print $3}' | sort >"$tmp/exported"
[ -s "$tmp/exported" ] || fail "nm printed nothing for $SHIM"
grep -Ev '^(cuda|__cuda|cu|nccl)[A-Za-z0-9_]*$' "$tmp/exported" >"$tmp/other" || true
golden_other() {
	cat >"$tmp/expected"
	diff -u "$tmp/expected" "$tmp/other" >&2 || fail "unexpected exported symbols"
}
golden_other <<'END'
InitializeInjectionNvtx2
__cxa_atexit
dlsym
execl
execle
execlp
execv
execve
execvp
execvpe
fexecve
sigaction
signal
syncspy_gpu_trace
syncspy_guard_close
syncspy_guard_count
syncspy_guard_open
syncspy_guard_points
syncspy_python_raise
syncspy_recording
syncspy_start
syncspy_step
syncspy_stop
syncspy_sync_counts
END
grep -qi 'sqlite\|unw' "$tmp/exported" && fail "SQLite or unwinder symbols exported"
# not linked against what it must find at run time
needed=$(LC_ALL=C readelf -d "$SHIM" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in
*cudart* | *libcuda* | *nccl* | *sqlite* | *unwind*) fail "links what it must find at run time: $needed" ;;
esac
grep -q '^cudaStreamSynchronize$' "$tmp/exported" || fail "cudaStreamSynchronize not exported"
grep -q '^ncclAllReduce$' "$tmp/exported" || fail "ncclAllReduce not exported"
grep -q '^cuLaunchKernel_ptsz$' "$tmp/exported" || fail "cuLaunchKernel_ptsz not exported"
# cuGetProcAddress under every name the driver exports it (the toolkit's stub libcuda.so says
# which where it is installed, else the stand-in): a program that links libcuda calls it
# directly and must get the wrappers (issue 14). One that probes for a driver with
# dlsym(RTLD_DEFAULT) still finds none when none is loaded (DRIVER-4, t033).
driver=$STANDIN_DIR/libcuda.so.1
[ -f "${CUDA_LIBDIR:-}/stubs/libcuda.so" ] && driver=$CUDA_LIBDIR/stubs/libcuda.so
"$NM" -D --defined-only "$driver" | awk '$3 ~ /^cuGetProcAddress/ {print $3}' | sort >"$tmp/driver_gpa"
[ -s "$tmp/driver_gpa" ] || fail "no cuGetProcAddress in $driver"
grep '^cuGetProcAddress' "$tmp/exported" >"$tmp/shim_gpa" || true
diff -u "$tmp/driver_gpa" "$tmp/shim_gpa" >&2 || fail "cuGetProcAddress not exported under the driver's names"
# The driver table against the driver: every cu* name the shim exports is one libcuda exports
# (a wrong _v2/_ptsz/_ptds in driver_table.h's variant column fails here); and every copy,
# memset, stream memory operation and graph instantiation or destroy that the static runtime
# (libcudart_static.a, nvcc's default) can look up is wrapped under some version of its name
# (a static cudaMemcpy2D reached cuMemcpy2DUnaligned_v2, unrecorded, on the H200).
grep -E '^cu[A-Z]' "$tmp/exported" | grep -v '^cuGetProcAddress' >"$tmp/shim_driver"
"$NM" -D --defined-only "$driver" | awk '{print $3}' | sed 's/@.*//' | sort -u >"$tmp/driver_all"
comm -23 "$tmp/shim_driver" "$tmp/driver_all" >"$tmp/not_driver"
[ -s "$tmp/not_driver" ] && fail "the shim wraps driver names $driver does not export: $(tr '\n' ' ' <"$tmp/not_driver")"
static=${CUDA_LIBDIR:-}/libcudart_static.a
if [ -f "$static" ] && command -v strings >/dev/null 2>&1; then
	base() { sed -e 's/_ptsz$//; s/_ptds$//; s/_v2$//' | sort -u; }
	base <"$tmp/shim_driver" >"$tmp/shim_bases"
	strings "$static" | grep -E '^cu(Memcpy|Memset|StreamWaitValue|StreamWriteValue|StreamBatchMemOp|GraphInstantiate|GraphExecDestroy)[A-Za-z0-9_]*$' |
		base >"$tmp/static_bases"
	[ -s "$tmp/static_bases" ] || fail "no driver names found in $static"
	comm -23 "$tmp/static_bases" "$tmp/shim_bases" >"$tmp/static_missing"
	[ -s "$tmp/static_missing" ] && fail "the static runtime looks up copies, memsets, waits or graph calls the shim does not wrap: $(tr '\n' ' ' <"$tmp/static_missing")"
	# and the CUDA arrays' creates and destroys (S6, as cudaMallocArray and cudaFreeArray) and the
	# loads and lookups of modules and libraries (X1: examples/corpus c44 and d17 static)
	strings "$static" | grep -E '^cu(ArrayCreate|Array3DCreate|ArrayDestroy|MipmappedArrayCreate|MipmappedArrayDestroy|ModuleLoad|ModuleLoadData|ModuleLoadDataEx|ModuleLoadFatBinary|ModuleGetFunction|ModuleUnload|LibraryLoadData|LibraryLoadFromFile|LibraryGetKernel|LibraryUnload)(_v2)?$' |
		base >"$tmp/static_more"
	[ "$(wc -l <"$tmp/static_more")" -ge 5 ] || fail "no array or module names found in $static"
	comm -23 "$tmp/static_more" "$tmp/shim_bases" >"$tmp/static_missing"
	[ -s "$tmp/static_missing" ] && fail "the static runtime looks up array or module calls the shim does not wrap: $(tr '\n' ' ' <"$tmp/static_missing")"
fi
echo "exported $(wc -l <"$tmp/exported") symbols; needs: $needed"
