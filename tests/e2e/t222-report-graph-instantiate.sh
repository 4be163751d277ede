#!/bin/sh
# SPDX-License-Identifier: MIT
# t222: graph-instantiate-in-loop (docs/rules.md): a loop that captures its kernels into a CUDA
# graph and instantiates it again every step (gpu_loop graph) gets one steady finding at the
# instantiation's line, whose count is the steady steps' instantiations and whose cost is their
# host time with that of the destroys of the executable graphs they made; the destroy every
# step gets a steady finding at its own line, right after the instantiation's, costing the same
# (its estimate) and naming the instantiation's line. The fix, instantiated once before the
# loop, launched every step and destroyed after it (gpu_loop graph-once), gets none: a teardown
# destroy is never flagged. cudaGraphInstantiate and cudaGraphExecDestroy are recorded as X1
# with their times (cudart_table.h), the executable graph in aux.
. "$E2E_DIR/lib.sh"
line=$(grep -n 'MARK:instantiate' "$TOP_SRCDIR/tests/progs/gpu_loop.c" | cut -d: -f1)
destroy=$(grep -n 'MARK:destroy' "$TOP_SRCDIR/tests/progs/gpu_loop.c" | cut -d: -f1)
under_shim "$PROGS/gpu_loop" 30 graph >"$tmp/graph.out" 2>&1 || fail "gpu_loop graph failed: $(cat "$tmp/graph.out")"
one_db
golden "SELECT api, class, count(*), min(end_ns >= start_ns) FROM api_calls WHERE api LIKE '%Graph%' GROUP BY 1, 2 ORDER BY 1" <<'END'
cudaGraphExecDestroy|X1|30|1
cudaGraphInstantiate|X1|30|1
cudaGraphLaunch|E1|30|1
END
golden "SELECT count(*) FROM calls i JOIN calls d ON d.aux = i.aux AND d.start_ns > i.start_ns
	WHERE i.api_id = (SELECT id FROM apis WHERE name = 'cudaGraphInstantiate')
	AND d.api_id = (SELECT id FROM apis WHERE name = 'cudaGraphExecDestroy')
	AND d.start_ns < coalesce((SELECT min(n.start_ns) FROM calls n WHERE n.api_id = i.api_id AND n.start_ns > i.start_ns), d.start_ns + 1)" <<'END'
30
END
"$SYNCSPY" report --format json "$db" >"$tmp/graph.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.phase'), json_extract(value, '\$.count'),
	json_extract(value, '\$.cost_ns') = json_extract(value, '\$.blocked_ns'), json_extract(value, '\$.severity') <> 'info'
	FROM json_each(json_extract(readfile('$tmp/graph.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'graph-instantiate-in-loop' ORDER BY key" <<END
$TOP_SRCDIR/tests/progs/gpu_loop.c:$line in main|steady|29|1|1
$TOP_SRCDIR/tests/progs/gpu_loop.c:$destroy in main|steady|29|0|1
END
# the pair: adjacent in the report, one share; the instantiation's time is its own and the
# destroys' (its detail names them); the destroy's cost is that (estimate_ns), its blocked
# time its own, its detail names the instantiation's line
golden "SELECT d.key = i.key + 1, json_extract(d.value, '\$.share') = json_extract(i.value, '\$.share'),
	json_extract(d.value, '\$.estimate_ns') = json_extract(i.value, '\$.blocked_ns'),
	json_extract(i.value, '\$.blocked_ns') > json_extract(d.value, '\$.blocked_ns')
	AND instr(json_extract(i.value, '\$.detail'), '29 destroys') > 0
	AND instr(json_extract(i.value, '\$.detail'), 'gpu_loop.c:$destroy in main') > 0,
	instr(json_extract(d.value, '\$.detail'), 'gpu_loop.c:$line in main') > 0
	FROM json_each(json_extract(readfile('$tmp/graph.json'), '\$.findings')) i,
	json_each(json_extract(readfile('$tmp/graph.json'), '\$.findings')) d
	WHERE json_extract(i.value, '\$.site') LIKE '%gpu_loop.c:$line in main'
	AND json_extract(d.value, '\$.site') LIKE '%gpu_loop.c:$destroy in main'" <<'END'
1|1|1|1|1
END
rm -rf "$out"
under_shim "$PROGS/gpu_loop" 30 graph-once >"$tmp/once.out" 2>&1 || fail "gpu_loop graph-once failed: $(cat "$tmp/once.out")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/once.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/once.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'graph-instantiate-in-loop'" <<'END'
0
END
golden "SELECT api, count(*) FROM api_calls WHERE api IN ('cudaGraphInstantiate', 'cudaGraphExecDestroy') GROUP BY 1 ORDER BY 1" <<'END'
cudaGraphExecDestroy|1
cudaGraphInstantiate|1
END
finish
