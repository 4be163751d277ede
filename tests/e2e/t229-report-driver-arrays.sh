#!/bin/sh
# SPDX-License-Identifier: MIT
# t229: CUDA arrays through the driver alone, as a program built with nvcc's default static
# cudart makes them (its cudaMallocArray, cudaMalloc3DArray, cudaMallocMipmappedArray and their
# frees reach only cuArrayCreate_v2, cuArray3DCreate_v2, cuMipmappedArrayCreate, cuArrayDestroy
# and cuMipmappedArrayDestroy: examples/corpus c44's static build recorded none of them). A loop
# that creates and destroys arrays every step (driver_loop arrays), calling the driver through
# its link-time symbols and then (arrays-procaddr) through pointers from cuGetProcAddress, has
# each call recorded as S6 under its exported name, and the report's alloc-in-loop names every
# one of the six lines as a steady finding.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/driver_loop.c
mark() { grep -n "MARK:$1 " "$src" | cut -d: -f1; }
for mode in arrays arrays-procaddr; do
	rm -rf "$out"
	under_shim "$PROGS/driver_loop" 30 "$mode" >"$tmp/$mode.out" 2>&1 || fail "driver_loop $mode failed: $(cat "$tmp/$mode.out")"
	one_db
	golden "SELECT api, layer, class, count(*) FROM api_calls WHERE api LIKE '%Array%' GROUP BY 1, 2, 3 ORDER BY 1" <<'END'
cuArray3DCreate_v2|driver|S6|30
cuArrayCreate_v2|driver|S6|30
cuArrayDestroy|driver|S6|60
cuMipmappedArrayCreate|driver|S6|30
cuMipmappedArrayDestroy|driver|S6|30
END
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
	golden "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.phase'), json_extract(value, '\$.count')
		FROM json_each(json_extract(readfile('$tmp/$mode.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'alloc-in-loop' ORDER BY length(json_extract(value, '\$.site')), 1" <<END
$src:$(mark array-create) in array_step|steady|29
$src:$(mark array3d-create) in array_step|steady|29
$src:$(mark mipmapped-create) in array_step|steady|29
$src:$(mark array-destroy) in array_step|steady|29
$src:$(mark array3d-destroy) in array_step|steady|29
$src:$(mark mipmapped-destroy) in array_step|steady|29
END
done
finish
