#!/bin/sh
# SPDX-License-Identifier: MIT
# t233: host-func-blocks-stream (docs/rules.md): a host function queued in the compute stream
# every step (gpu_loop hostfunc: cudaLaunchHostFunc of 1.5 ms between the step's two kernels;
# callback: the same with cudaStreamAddCallback) holds the second kernel, already launched,
# until it returns: one steady finding at the queueing line, its cost the GPU idle time of
# those holds (the device has nothing else to run), about 1.5 ms per step (at least 1.2 ms, and
# not the whole step: at most the step less the step's two kernels, 1 ms, some 0.2 ms spared; a
# loaded machine oversleeps the host function, up to 2.6 ms seen, and the step grows with it),
# ranked first. A host function that returns at once (hostfunc-fast) holds the stream no longer
# than the machinery does: no finding. Without the GPU timeline the holds cannot be seen: no finding either.
# (c71 and d33 of examples/corpus; the driver's cuStreamAddCallback is intercepted too.)
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
for mode in hostfunc callback hostfunc-fast; do
	rm -rf "$out"
	SYNCSPY_CUPTI_SAMPLE=all under_shim "$PROGS/gpu_loop" 30 $mode >"$tmp/$mode.out" 2>&1 ||
		fail "gpu_loop $mode failed: $(cat "$tmp/$mode.out")"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" ||
		fail "report exited $?: $(cat "$tmp/err")"
done
for mode in hostfunc callback; do
	line=$(grep -n "MARK:$mode\$\|MARK:$mode " "$src" | cut -d: -f1)
	rq "SELECT '$mode', json_extract(f.value, '\$.site') = '$src:$line in main', json_extract(f.value, '\$.phase'), json_extract(f.value, '\$.count'), json_extract(f.value, '\$.severity') <> 'info', json_extract(f.value, '\$.cost_ns') = json_extract(f.value, '\$.estimate_ns'), json_extract(f.value, '\$.cost_per_step_ns') BETWEEN 1200000 AND json_extract(readfile('$tmp/$mode.json'), '\$.ranks[0].steps.step_ns') - 800000, f.key = 0 FROM json_each(readfile('$tmp/$mode.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'host-func-blocks-stream'"
done >"$tmp/actual"
cat >"$tmp/expected" <<'END'
hostfunc|1|steady|29|1|1|1|1
callback|1|steady|29|1|1|1|1
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "host functions that hold the stream"
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/hostfunc-fast.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'host-func-blocks-stream'")
[ "$n" = 0 ] || fail "a host function that returns at once: $n findings"
# without the GPU timeline: nothing to see the holds by
rm -rf "$out"
SYNCSPY_CUPTI=0 under_shim "$PROGS/gpu_loop" 30 hostfunc >"$tmp/off.out" 2>&1 || fail "gpu_loop failed"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/off.json" || fail "report failed"
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/off.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'host-func-blocks-stream'")
[ "$n" = 0 ] || fail "host-func-blocks-stream without a GPU timeline: $n findings"
