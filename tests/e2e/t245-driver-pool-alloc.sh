#!/bin/sh
# SPDX-License-Identifier: MIT
# t245: stream-ordered allocations from a memory pool through the driver alone
# (cuMemAllocFromPoolAsync, as a driver-API program or a static cudart's cudaMallocFromPoolAsync
# reaches the driver: examples/corpus d31 uses it; it was not recorded before). A loop that takes
# a workspace from a pool every step (driver_loop pool), the pool mapping memory again after
# every sync (the stand-in's STANDIN_POOL_REMAP_US=500), has each call recorded under its name
# (E1, its 4096 bytes, timed although an enqueue: ALLOC in interpose/wrapper.h), and the report's
# async-alloc-slow names its line as a steady finding.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/driver_loop.c
mark() { grep -n "MARK:$1 " "$src" | cut -d: -f1; }
STANDIN_POOL_REMAP_US=500 under_shim "$PROGS/driver_loop" 30 pool >"$tmp/pool.out" 2>&1 || fail "driver_loop pool failed: $(cat "$tmp/pool.out")"
grep -q '^pool ok$' "$tmp/pool.out" || fail "driver_loop pool: $(cat "$tmp/pool.out")"
one_db
golden "SELECT a.name, c.class, count(*), min(c.bytes), max(c.bytes), sum(c.end_ns - c.start_ns >= 500000) >= 29
	FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name LIKE 'cuMemAllocFromPool%' GROUP BY 1, 2" <<'END'
cuMemAllocFromPoolAsync|E1|30|4096|4096|1
END
"$SYNCSPY" report --format json "$db" >"$tmp/pool.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.phase'), json_extract(value, '\$.severity') <> 'info'
	FROM json_each(json_extract(readfile('$tmp/pool.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'async-alloc-slow'" <<END
$src:$(mark pool-alloc) in pool|steady|1
END
finish
