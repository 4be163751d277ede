#!/bin/sh
# SPDX-License-Identifier: MIT
# t044: an async copy from host to host is a blocking copy (S4), not an enqueue: the runtime
# runs it "fully synchronous with respect to the host", after the stream's earlier work
# (docs/sync-model.md; c76 and d34 of examples/corpus queued one per batch on the compute
# stream and were missed as E1). Between two pinned buffers (cudaMemcpyHostToHost) and into
# pageable memory (cudaMemcpyDefault, S4 rather than S5): both timed, both waiting for the
# kernel queued before them; the report's sync-copy names each line, with the host-to-host fix
# (not the pinned-memory advice of a device copy), and pageable-async-copy does not.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/scenarios.c
h2h=$(grep -n '/\* SITE:h2h \*/' "$src" | cut -d: -f1)
default=$(grep -n '/\* SITE:default \*/' "$src" | cut -d: -f1)
under_shim "$PROGS/scenarios" h2h 12 >"$tmp/stdout" || fail "scenario failed"
grep -q 'h2h 12 steps ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
# each waited for the 2 ms kernel (the first) or the 1 ms one (the second) queued before it
golden "SELECT api, class, dir, host_mem, count(*), min(end_ns - start_ns) >= 900000 FROM api_calls WHERE api = 'cudaMemcpyAsync' GROUP BY 1, 2, 3, 4 ORDER BY 4" <<'END'
cudaMemcpyAsync|S4|H2H|pageable|12|1
cudaMemcpyAsync|S4|H2H|pinned|12|1
END
"$SYNCSPY" report --format json "$out" >"$tmp/report.json" || fail "report failed"
"$SQLITE3" :memory: "SELECT json_extract(f.value, '\$.rule'), CASE json_extract(f.value, '\$.site') WHEN '$src:$h2h in h2h_async_copies' THEN 'h2h' WHEN '$src:$default in h2h_async_copies' THEN 'default' ELSE json_extract(f.value, '\$.site') END, json_extract(f.value, '\$.advice') LIKE 'A host-to-host copy%', json_extract(f.value, '\$.detail') LIKE '%(host to host:%' FROM json_each(readfile('$tmp/report.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') IN ('sync-copy', 'pageable-async-copy') ORDER BY 2" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
sync-copy|default|1|1
sync-copy|h2h|1|1
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "host-to-host copies: sync-copy with their own fix"
# A device copy's sync-copy keeps the rule's own advice.
rm -rf "$out"
under_shim "$PROGS/scenarios" s4 >/dev/null || fail "scenario s4 failed"
"$SYNCSPY" report --format json "$out" >"$tmp/s4.json" || fail "report failed"
n=$(rq "SELECT count(*) || '|' || sum(json_extract(f.value, '\$.advice') LIKE 'Use cudaMemcpyAsync from pinned%') FROM json_each(readfile('$tmp/s4.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'sync-copy'")
[ "$n" = "2|2" ] || fail "s4's blocking copies: sync-copy findings|with the rule's advice: $n, not 2|2"
