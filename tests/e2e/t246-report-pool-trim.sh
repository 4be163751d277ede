#!/bin/sh
# SPDX-License-Identifier: MIT
# t246: pool-trim-in-loop (docs/rules.md): a request loop that trims the memory pool after every
# reply (tests/progs/steady.c requests-trim, cudaMemPoolTrimTo at @request-trim: c72 of
# examples/corpus) on a pool that otherwise keeps its memory across syncs (STANDIN_POOL_KEEP=1),
# so that each trim makes the next cudaMallocAsync map memory again (STANDIN_POOL_REMAP_US=1000):
# the trim is recorded (X1, timed, the pool in aux), its line is the steady finding, ranked first,
# and the slow allocations are its cost: their async-alloc-slow finding is `info`, folded into
# the trim's, which names their line and costs their host time. Without the trim (requests) the
# allocations stay fast: no trim finding, and the allocations cost a fraction of it.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH STANDIN_POOL_KEEP=1 STANDIN_POOL_REMAP_US=1000
src=$TOP_SRCDIR/tests/progs/steady.c
trim=$(grep -n '@request-trim ' "$src" | cut -d: -f1)
alloc=$(grep -n '@request-alloc ' "$src" | cut -d: -f1)
for mode in requests-trim requests; do
	rm -rf "$out"
	under_shim "$PROGS/steady" $mode >"$tmp/$mode.out" 2>&1 || fail "steady $mode exited $?: $(cat "$tmp/$mode.out")"
	"$PROGS/steady" $mode >"$tmp/$mode.plain" 2>&1 || fail "steady $mode without the shim exited $?"
	grep -v '^syncspy:' "$tmp/$mode.out" | diff -u "$tmp/$mode.plain" - >&2 || fail "$mode: output changed under the shim"
	one_db
	cp "$db" "$tmp/$mode.sqlite"
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" || fail "report ($mode) exited $?"
done
db=$tmp/requests-trim.sqlite
golden "SELECT api, class, count(*), sum(end_ns >= start_ns), count(DISTINCT aux), coalesce(sum(bytes), 0) FROM api_calls WHERE api = 'cudaMemPoolTrimTo' GROUP BY 1, 2" <<'END'
cudaMemPoolTrimTo|X1|30|30|1|0
END
rq "SELECT f.key, json_extract(f.value, '\$.rule'), json_extract(f.value, '\$.site') = '$src:' || CASE json_extract(f.value, '\$.rule') WHEN 'pool-trim-in-loop' THEN $trim ELSE $alloc END || ' in requests', json_extract(f.value, '\$.severity') = 'info', json_extract(f.value, '\$.detail') LIKE '%mapped the trimmed memory again, at $src:$alloc in requests%', json_extract(f.value, '\$.cost_per_step_ns') >= 900000 FROM json_each(readfile('$tmp/requests-trim.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') IN ('pool-trim-in-loop', 'async-alloc-slow')" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
0|pool-trim-in-loop|1|0|1|1
END
first=$(head -n1 "$tmp/actual")
[ "$first" = "0|pool-trim-in-loop|1|0|1|1" ] || { diff -u "$tmp/expected" "$tmp/actual" >&2; fail "the trim's finding, first, with the allocations' cost"; }
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/requests-trim.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'async-alloc-slow' AND json_extract(f.value, '\$.severity') <> 'info'")
[ "$n" = 0 ] || fail "the allocations after the trims: $n findings not folded into the trim's"
# no trim: no trim finding, and the allocations, served from the pool, cost a small part of what
# they cost after the trims (on a loaded machine their mean may pass async-alloc-slow's 20 us)
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/requests.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'pool-trim-in-loop'")
[ "$n" = 0 ] || fail "no trim: $n pool-trim-in-loop findings"
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/requests.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'async-alloc-slow' AND json_extract(f.value, '\$.severity') <> 'info' AND 4 * json_extract(f.value, '\$.blocked_ns') >= (SELECT json_extract(t.value, '\$.blocked_ns') FROM json_each(readfile('$tmp/requests-trim.json'), '\$.findings') t WHERE json_extract(t.value, '\$.rule') = 'pool-trim-in-loop')")
[ "$n" = 0 ] || fail "a pool that keeps its memory, no trim: allocations as slow as after the trims"
