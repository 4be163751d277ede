#!/bin/sh
# SPDX-License-Identifier: MIT
# t234: host-func-blocks-stream on a graph's host node (docs/rules.md): a kernel and a host
# function of 1.5 ms captured once into a graph (gpu_loop graph-hostfunc), instantiated once and
# launched every step with no sync between the launches: each launch's work waits on the stream
# for the previous launch's host node. The capture is recorded (BeginCapture, EndCapture with
# the graph it made in calls.ptr; the instantiation with the graph it read in calls.ptr and the
# executable in aux), and the report names the host function's capture line, steady, ranked
# first, with the graph's own advice. A host node that returns at once (graph-hostfunc-fast):
# no finding. The same through the driver alone (driver_loop graph-host: cuStreamBeginCapture_v2,
# cuLaunchHostFunc, cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphLaunch), as d40 of
# examples/corpus makes it.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
line=$(grep -n "MARK:graph-hostfunc " "$src" | cut -d: -f1)
for mode in graph-hostfunc graph-hostfunc-fast; do
	rm -rf "$out"
	SYNCSPY_CUPTI_SAMPLE=all under_shim "$PROGS/gpu_loop" 30 $mode >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
		fail "gpu_loop $mode failed: $(cat "$tmp/$mode.out" "$tmp/$mode.err")"
	grep -q '^done 30 steps$' "$tmp/$mode.out" || fail "gpu_loop $mode: $(cat "$tmp/$mode.out")"
	one_db
	cp "$db" "$tmp/$mode.sqlite"
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" ||
		fail "report exited $?: $(cat "$tmp/err")"
done
db=$tmp/graph-hostfunc.sqlite
# the graph the capture made is the one instantiated; the launches name the executable made
golden "SELECT a.name, c.ptr IS NOT NULL, c.ptr = (SELECT ptr FROM calls WHERE api_id =
	(SELECT id FROM apis WHERE name = 'cudaStreamEndCapture')), c.aux IS NOT NULL
	FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name IN ('cudaStreamBeginCapture', 'cudaStreamEndCapture', 'cudaGraphInstantiate')
	ORDER BY c.id" <<'END'
cudaStreamBeginCapture|0||1
cudaStreamEndCapture|1|1|0
cudaGraphInstantiate|1|1|1
END
golden "SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaGraphLaunch'
	AND c.aux = (SELECT aux FROM calls WHERE api_id = (SELECT id FROM apis WHERE name = 'cudaGraphInstantiate'))" <<'END'
30
END
rq "SELECT json_extract(f.value, '\$.site') = '$src:$line in main', json_extract(f.value, '\$.phase'),
	json_extract(f.value, '\$.count') >= 27, json_extract(f.value, '\$.severity') <> 'info',
	json_extract(f.value, '\$.cost_per_step_ns') >= 1000000, f.key = 0,
	json_extract(f.value, '\$.advice') LIKE 'Take the host node out of the graph%',
	json_extract(f.value, '\$.detail') LIKE '%host node captured into a graph%'
	FROM json_each(readfile('$tmp/graph-hostfunc.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'host-func-blocks-stream'" >"$tmp/actual"
echo "1|steady|1|1|1|1|1|1" | diff -u - "$tmp/actual" >&2 || fail "the graph's host node: $(cat "$tmp/graph-hostfunc.json")"
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/graph-hostfunc-fast.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'host-func-blocks-stream'")
[ "$n" = 0 ] || fail "a host node that returns at once: $n findings"

dsrc=$TOP_SRCDIR/tests/progs/driver_loop.c
dline=$(grep -n "MARK:host-node " "$dsrc" | cut -d: -f1)
rm -rf "$out"
(cd "$PROGS" && SYNCSPY_CUPTI_SAMPLE=all under_shim ./driver_loop 30 graph-host) >"$tmp/drv.out" 2>"$tmp/drv.err" ||
	fail "driver_loop graph-host failed: $(cat "$tmp/drv.out" "$tmp/drv.err")"
grep -q '^graph-host ok$' "$tmp/drv.out" || fail "driver_loop graph-host: $(cat "$tmp/drv.out")"
one_db
golden "SELECT a.name, c.ptr = (SELECT ptr FROM calls WHERE api_id = (SELECT id FROM apis WHERE name = 'cuStreamEndCapture'))
	FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name IN ('cuStreamBeginCapture_v2', 'cuStreamEndCapture', 'cuGraphInstantiateWithFlags') ORDER BY c.id" <<'END'
cuStreamBeginCapture_v2|
cuStreamEndCapture|1
cuGraphInstantiateWithFlags|1
END
"$SYNCSPY" report --format json "$db" >"$tmp/drv.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
rq "SELECT json_extract(f.value, '\$.rule'), json_extract(f.value, '\$.site') = '$dsrc:$dline in graph_host',
	json_extract(f.value, '\$.phase'), json_extract(f.value, '\$.severity') <> 'info'
	FROM json_each(readfile('$tmp/drv.json'), '\$.findings') f WHERE f.key = 0" >"$tmp/actual"
echo "host-func-blocks-stream|1|steady|1" | diff -u - "$tmp/actual" >&2 || fail "the driver's graph host node: $(cat "$tmp/drv.json")"
finish
