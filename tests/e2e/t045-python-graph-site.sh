#!/bin/sh
# SPDX-License-Identifier: MIT
# t045: a CUDA graph instantiated and destroyed every step from Python (tests/progs/py_graph.py,
# as torch.cuda.graph does it from libtorch: t90 of examples/corpus named only
# at::cuda::CUDAGraph::instantiate) gets the Python line as its site: the shim stacks those
# context calls (ss_stacked_context_call in interpose/shim.h), and graph-instantiate-in-loop
# names the line that makes the graph, its detail the destroy's line and its cost theirs too;
# a destroy at a Python line gets no finding of its own (torch's is the garbage collector's,
# wherever the last reference went: report/paired_lines.c). The launch, an enqueue, is not
# stacked.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
script=$TOP_SRCDIR/tests/progs/py_graph.py
inst=$(grep -n '# MARK:instantiate' "$script" | cut -d: -f1)
destroy=$(grep -n '# MARK:destroy' "$script" | cut -d: -f1)
CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$script" 8 >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "python failed: $(cat "$tmp/stderr")"
grep -q "graphs 8 ok" "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, count(*), CASE site WHEN '$script:$inst in <module>' THEN 'instantiate' WHEN '$script:$destroy in <module>' THEN 'destroy' ELSE 'other' END, sum(py_stack IS NOT NULL) FROM api_calls WHERE api IN ('cudaGraphInstantiate', 'cudaGraphExecDestroy', 'cudaGraphLaunch') GROUP BY 1, 3 ORDER BY 1" <<'END'
cudaGraphExecDestroy|8|destroy|8
cudaGraphInstantiate|8|instantiate|8
cudaGraphLaunch|8|other|0
END
"$SYNCSPY" report --format json "$db" >"$tmp/report.json" || fail "report failed"
n=$(rq "SELECT group_concat(CASE json_extract(f.value, '\$.site') WHEN '$script:$inst in <module>' THEN 'instantiate' WHEN '$script:$destroy in <module>' THEN 'destroy' ELSE json_extract(f.value, '\$.site') END || '|' || (json_extract(f.value, '\$.detail') LIKE '%destroys (%) of the executable graphs it made, at $script:$destroy in <module>%'), ',') FROM json_each(readfile('$tmp/report.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'graph-instantiate-in-loop'")
[ "$n" = "instantiate|1" ] || fail "graph-instantiate-in-loop at: $n"
