#!/bin/sh
# SPDX-License-Identifier: MIT
# t225: findings of a step loop whose runtime is linked into the program (nvcc's default static
# cudart; tests/progs/static_copies.c loop) name the user's lines: the blocking cudaMemcpy2D,
# which reaches the driver as cuMemcpy2DUnaligned_v2 (unrecorded before on the H200), is a
# steady sync-copy at its COPY2D line; each instantiation per step (cudaGraphInstantiate, which
# the driver answers with cuGraphInstantiateWithFlags) is a graph-instantiate-in-loop at its
# INSTANTIATE and KEEP lines, not inside the runtime (X1 calls take no stack: SS_ENQUEUE_SITE);
# the executable graph destroyed every step is flagged at its DESTROY line too, right after its
# instantiation's finding, which names it and carries its host time, while the destroy's names
# the instantiation's line and the fix; the destroys after the loop (TEARDOWN) are never flagged.
. "$E2E_DIR/lib.sh"
src="$TOP_SRCDIR/tests/progs/static_copies.c"
line_of() { # the line marked MARK in static_copies.c's loop
	grep -n "/\* SITE $1 \*/" "$src" | cut -d: -f1
}
under_shim "$PROGS/static_copies" loop 20 >"$tmp/stdout" 2>&1 || fail "program failed: $(cat "$tmp/stdout")"
grep -q 'static copies loop ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/r.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
file=$(cd "$TOP_SRCDIR/tests/progs" && pwd -P)/static_copies.c
findings="json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))"
rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.site'), json_extract(value, '\$.phase'),
	json_extract(value, '\$.severity') <> 'info', json_extract(value, '\$.count')
	FROM $findings WHERE json_extract(value, '\$.rule') IN ('sync-copy', 'graph-instantiate-in-loop')
	ORDER BY 1 DESC, 2" >"$tmp/actual"
LC_ALL=C sort -t'|' -k1,1r -k2,2 >"$tmp/expected" <<END
sync-copy|$file:$(line_of COPY2D) in loop|steady|1|18
graph-instantiate-in-loop|$file:$(line_of INSTANTIATE) in loop|steady|1|18
graph-instantiate-in-loop|$file:$(line_of DESTROY) in loop|steady|1|18
graph-instantiate-in-loop|$file:$(line_of KEEP) in loop|steady|1|18
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "findings (rule|site|phase|not info|count)"
# right after: the destroy's finding is the instantiation's neighbour in the report, with the
# same share, its own host time and count, and the pair's time as its cost
rq "SELECT json_extract(i.value, '\$.share') = json_extract(d.value, '\$.share'),
	json_extract(d.value, '\$.cost_ns') = json_extract(i.value, '\$.blocked_ns'),
	json_extract(d.value, '\$.blocked_ns') < json_extract(i.value, '\$.blocked_ns'),
	json_extract(d.value, '\$.estimate_ns') = json_extract(d.value, '\$.cost_ns'),
	instr(json_extract(i.value, '\$.detail'), '18 destroys') > 0
	AND instr(json_extract(i.value, '\$.detail'), 'static_copies.c:$(line_of DESTROY) in loop') > 0,
	instr(json_extract(d.value, '\$.detail'), 'instantiated at $file:$(line_of INSTANTIATE) in loop') > 0
	AND instr(json_extract(d.value, '\$.detail'), 'cudaGraphExecUpdate') > 0
	FROM $findings i, $findings d WHERE d.key = i.key + 1
	AND json_extract(i.value, '\$.site') = '$file:$(line_of INSTANTIATE) in loop'
	AND json_extract(d.value, '\$.site') = '$file:$(line_of DESTROY) in loop'" >"$tmp/pair"
[ "$(cat "$tmp/pair")" = "1|1|1|1|1|1" ] || fail "the destroy's finding is not the instantiation's neighbour as described: $(cat "$tmp/pair")"
# the teardown's destroys: recorded, one site, no finding of any rule
golden "SELECT count(*), count(DISTINCT site_id) FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name = 'cuGraphExecDestroy'" <<'END'
40|2
END
[ "$(rq "SELECT count(*) FROM $findings WHERE json_extract(value, '\$.site') LIKE '%static_copies.c:$(line_of TEARDOWN) %'")" = 0 ] ||
	fail "a finding at the teardown's destroy line"
# the text report lists the destroy's finding right after the instantiation's too
"$SYNCSPY" report "$db" >"$tmp/r.txt" || fail "text report"
grep -o '^  \[.*' "$tmp/r.txt" | sed 's/.*static_copies.c:\([0-9]*\).*/\1/' >"$tmp/lines"
grep -A1 -x "$(line_of INSTANTIATE)" "$tmp/lines" | tail -n 1 | grep -qx "$(line_of DESTROY)" ||
	fail "text report order: $(tr '\n' ' ' <"$tmp/lines")"
