#!/bin/sh
# SPDX-License-Identifier: MIT
# t222: graph-instantiate-in-loop (docs/rules.md): a loop that captures its kernels into a CUDA
# graph and instantiates it again every step (gpu_loop graph) gets one steady finding at the
# instantiation's line, whose count is the steady steps' instantiations and whose cost is their
# host time; the fix, instantiated once before the loop and launched every step (gpu_loop
# graph-once), gets none. cudaGraphInstantiate is recorded as X1 with its time (cudart_table.h).
. "$E2E_DIR/lib.sh"
line=$(grep -n 'MARK:instantiate' "$TOP_SRCDIR/tests/progs/gpu_loop.c" | cut -d: -f1)
under_shim "$PROGS/gpu_loop" 30 graph >"$tmp/graph.out" 2>&1 || fail "gpu_loop graph failed: $(cat "$tmp/graph.out")"
one_db
golden "SELECT api, class, count(*), min(end_ns >= start_ns) FROM api_calls WHERE api LIKE '%Graph%' GROUP BY 1, 2 ORDER BY 1" <<'END'
cudaGraphInstantiate|X1|30|1
cudaGraphLaunch|E1|30|1
END
"$SYNCSPY" report --format json "$db" >"$tmp/graph.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.phase'), json_extract(value, '\$.count'),
	json_extract(value, '\$.cost_ns') = json_extract(value, '\$.blocked_ns'), json_extract(value, '\$.severity') <> 'info'
	FROM json_each(json_extract(readfile('$tmp/graph.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'graph-instantiate-in-loop'" <<END
$TOP_SRCDIR/tests/progs/gpu_loop.c:$line in main|steady|29|1|1
END
rm -rf "$out"
under_shim "$PROGS/gpu_loop" 30 graph-once >"$tmp/once.out" 2>&1 || fail "gpu_loop graph-once failed: $(cat "$tmp/once.out")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/once.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/once.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'graph-instantiate-in-loop'" <<'END'
0
END
golden "SELECT count(*) FROM api_calls WHERE api = 'cudaGraphInstantiate'" <<'END'
1
END
finish
