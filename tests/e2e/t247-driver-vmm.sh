#!/bin/sh
# SPDX-License-Identifier: MIT
# t247: the driver's virtual memory management (cuMemCreate, cuMemMap, cuMemSetAccess,
# cuMemUnmap, cuMemRelease: docs/sync-model.md), as an arena that maps a chunk every step and
# unmaps it again (driver_loop vmm; d39 of examples/corpus). Each call is recorded under its name
# and class (cuMemUnmap and cuMemSetAccess synchronize the device: S6; the others take host time
# only: X1, cuMemCreate and cuMemMap with the chunk's bytes; cuMemMap and cuMemUnmap with the
# mapped address in calls.ptr), the output is the same as without
# the shim, and the report's alloc-in-loop names the lines as steady findings with the advice to
# keep the memory mapped, the chunk's mapping and access folded into its creation's finding
# (ss_vmm_mappings: one fix removes all three); the fix (vmm-once: mapped before the loop, unmapped after)
# has none of them above `info`.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/driver_loop.c
mark() { grep -n "MARK:$1 " "$src" | cut -d: -f1; }
cd "$PROGS" || fail "no $PROGS"
"$PROGS/driver_loop" 30 vmm >"$tmp/plain.out" 2>&1 || fail "driver_loop vmm without the shim: $(cat "$tmp/plain.out")"
under_shim "$PROGS/driver_loop" 30 vmm >"$tmp/vmm.out" 2>"$tmp/vmm.err" || fail "driver_loop vmm failed: $(cat "$tmp/vmm.out" "$tmp/vmm.err")"
grep -q '^vmm ok [0-9]' "$tmp/vmm.out" || fail "driver_loop vmm: $(cat "$tmp/vmm.out")"
cmp -s "$tmp/plain.out" "$tmp/vmm.out" || fail "output differs under the shim: $(cat "$tmp/plain.out" "$tmp/vmm.out")"
one_db
golden "SELECT a.name, c.class, count(*), min(coalesce(c.bytes, -1)), max(coalesce(c.bytes, -1))
	FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name IN ('cuMemCreate', 'cuMemMap', 'cuMemSetAccess', 'cuMemUnmap', 'cuMemRelease')
	GROUP BY 1, 2 ORDER BY 1" <<'END'
cuMemCreate|X1|30|2097152|2097152
cuMemMap|X1|30|2097152|2097152
cuMemRelease|X1|30|-1|-1
cuMemSetAccess|S6|30|2097152|2097152
cuMemUnmap|S6|30|2097152|2097152
END
# the mapping's address, where the unmap names it too (calls.ptr), each mapping a device range
golden "SELECT count(*), count(DISTINCT c.ptr), sum(c.ptr = (SELECT u.ptr FROM calls u JOIN apis b ON b.id = u.api_id
	WHERE b.name = 'cuMemUnmap' AND u.id > c.id ORDER BY u.id LIMIT 1))
	FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cuMemMap' AND c.ptr IS NOT NULL" <<'END'
30|1|30
END
"$SYNCSPY" report --format json "$db" >"$tmp/vmm.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.phase'),
	json_extract(value, '\$.severity') <> 'info', json_extract(value, '\$.count'),
	json_extract(value, '\$.advice') LIKE 'Keep the physical memory mapped%',
	json_extract(value, '\$.detail') LIKE '%and 29 mappings%of the chunks it created, at $src:$(mark vmm-map) in vmm_map; and 29 mappings%at $src:$(mark vmm-access) in vmm_map;%',
	json_extract(value, '\$.detail') LIKE '%the creation''s finding carries this cost%'
	FROM json_each(json_extract(readfile('$tmp/vmm.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'alloc-in-loop'
	ORDER BY length(json_extract(value, '\$.site')), 1" <<END
$src:$(mark vmm-create) in vmm_map|steady|1|29|1|1|0
$src:$(mark vmm-map) in vmm_map|steady|0|29|1|0|1
$src:$(mark vmm-access) in vmm_map|steady|0|29|1|0|1
$src:$(mark vmm-unmap) in vmm_unmap|steady|1|29|1|0|0
$src:$(mark vmm-release) in vmm_unmap|steady|1|29|1|0|0
END
# the fix: mapped once before the loop (setup), unmapped after it (teardown)
rm -rf "$out"
under_shim "$PROGS/driver_loop" 30 vmm-once >"$tmp/once.out" 2>"$tmp/once.err" || fail "driver_loop vmm-once failed: $(cat "$tmp/once.out" "$tmp/once.err")"
cmp -s "$tmp/plain.out" "$tmp/once.out" || fail "vmm-once computes another result: $(cat "$tmp/once.out")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/once.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/once.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'alloc-in-loop' AND json_extract(value, '\$.severity') <> 'info'" <<'END'
0
END
finish
