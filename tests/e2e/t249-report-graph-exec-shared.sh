#!/bin/sh
# SPDX-License-Identifier: MIT
# t249: graph-exec-shared (docs/rules.md): two lanes, each a stream, launch one executable graph
# of one 2 ms kernel every step (driver_loop graph-shared; d43 of examples/corpus). The stand-in
# orders launches of one executable graph as cuGraphLaunch documents (E-GRAPH in
# tests/standin/engine.h): no two of its kernels overlap on the GPU timeline; the report names
# the launch's line, steady, ranked first, each second lane's launch held about the first's
# kernel time. The fix (graph-lanes: one executable graph per lane) has no such finding.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH
src=$TOP_SRCDIR/tests/progs/driver_loop.c
line=$(grep -n "MARK:lane-launch " "$src" | cut -d: -f1)
cd "$PROGS" || fail "no $PROGS"
for mode in graph-shared graph-lanes; do
	rm -rf "$out"
	SYNCSPY_CUPTI_SAMPLE=all under_shim ./driver_loop 30 $mode >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
		fail "driver_loop $mode failed: $(cat "$tmp/$mode.out" "$tmp/$mode.err")"
	grep -q '^graph-lanes ok$' "$tmp/$mode.out" || fail "driver_loop $mode: $(cat "$tmp/$mode.out")"
	one_db
	cp "$db" "$tmp/$mode.sqlite"
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" ||
		fail "report $mode exited $?: $(cat "$tmp/err")"
done
db=$tmp/graph-shared.sqlite
# one executable graph on two streams; its 60 kernels one after the other on the GPU
golden "SELECT count(DISTINCT aux), count(DISTINCT stream), count(*) FROM calls
	WHERE api_id = (SELECT id FROM apis WHERE name = 'cuGraphLaunch')" <<'END'
1|2|60
END
golden "SELECT count(*), count(DISTINCT stream_id), (SELECT count(*) FROM gpu_activity a JOIN gpu_activity b
	ON a.kind = 'kernel' AND b.kind = 'kernel' AND a.id < b.id AND a.start_ns < b.end_ns AND b.start_ns < a.end_ns)
	FROM gpu_activity WHERE kind = 'kernel'" <<'END'
60|2|0
END
rq "SELECT json_extract(f.value, '\$.site') = '$src:$line in graph_lanes', json_extract(f.value, '\$.phase'),
	json_extract(f.value, '\$.count') >= 25, json_extract(f.value, '\$.severity') <> 'info',
	json_extract(f.value, '\$.cost_per_step_ns') >= 1000000, f.key = 0,
	json_extract(f.value, '\$.advice') LIKE 'Instantiate the graph once per stream%'
	FROM json_each(readfile('$tmp/graph-shared.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'graph-exec-shared'" >"$tmp/actual"
echo "1|steady|1|1|1|1|1" | diff -u - "$tmp/actual" >&2 || fail "the shared graph: $(cat "$tmp/graph-shared.json")"
db=$tmp/graph-lanes.sqlite
golden "SELECT count(DISTINCT aux), count(DISTINCT stream) FROM calls
	WHERE api_id = (SELECT id FROM apis WHERE name = 'cuGraphLaunch')" <<'END'
2|2
END
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/graph-lanes.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'graph-exec-shared'")
[ "$n" = 0 ] || fail "one executable graph per lane: $n findings"
finish
