#!/bin/sh
# SPDX-License-Identifier: MIT
# t255: a loop whose steps vary in length (STEPS-7 of report/steps.h; t151 of examples/corpus): each
# step of gpu_loop converge runs a solver of 4 to 40 iterations, a different number each step, and
# reads its residual back every few iterations. No call comes at regular gaps, but the step's own
# calls (the upload, the kernels before and after the solver, the sync) come once a step in the
# same order: the report finds the 30 steps from them (the first, the upload's, starts each),
# says that they vary, and names the residual read as a steady finding with a cost per step,
# not `info`. The fix (converge-device: no read inside the solver) has no finding at that line,
# its steps found alike. A second loop of that kind after a regular one (then-decode: requests of
# a decoder, 2 to 20 tokens each, every token read back) joins the steady state (STEPS-6), and
# its read is a steady finding.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
read_line=$(grep -n "MARK:solver-read " "$src" | cut -d: -f1)
upload_line=$(grep -n "cudaMemcpyAsync(d_in, host_in" "$src" | cut -d: -f1)
[ -n "$read_line" ] && [ -n "$upload_line" ] || fail "gpu_loop.c: no solver read or upload line"
cd "$PROGS" || fail "no $PROGS"
for mode in converge converge-device; do
	rm -rf "$out"
	under_shim ./gpu_loop 30 $mode >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
		fail "gpu_loop $mode failed: $(cat "$tmp/$mode.out" "$tmp/$mode.err")"
	grep -q '^done 30 steps$' "$tmp/$mode.out" || fail "gpu_loop $mode: $(cat "$tmp/$mode.out")"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" ||
		fail "report $mode exited $?: $(cat "$tmp/err")"
	# the steps: 30, detected from the step's own calls, the upload first, said to vary
	rq "SELECT json_extract(value, '\$.steps.source'), json_extract(value, '\$.steps.count'),
		json_extract(value, '\$.steps.steady'),
		json_extract(value, '\$.steps.name') LIKE 'cudaMemcpyAsync at %gpu_loop.c:$upload_line in converge_loop, once a step, steps of varying length%'
		FROM json_each(json_extract(readfile('$tmp/$mode.json'), '\$.ranks'))" >"$tmp/$mode.steps"
	echo "detected|30|29|1" | diff -u - "$tmp/$mode.steps" >&2 || fail "$mode: the steps"
done
# the read inside the solver: a steady host finding at its line, with a cost per step
rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.phase'),
	json_extract(value, '\$.severity') != 'info', json_extract(value, '\$.cost_per_step_ns') > 0
	FROM json_each(json_extract(readfile('$tmp/converge.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') = '$src:$read_line in converge_loop'" >"$tmp/read"
echo "sync-copy|steady|1|1" | diff -u - "$tmp/read" >&2 || fail "the solver's read"
rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/converge-device.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') LIKE '$src:$read_line %'" >"$tmp/fixed"
echo 0 | diff -u - "$tmp/fixed" >&2 || fail "a finding at the read's line without the read"
# then-decode: the training loop's 30 steps, then 30 requests of varying length (STEPS-6, -7)
decode_line=$(grep -n "MARK:decode-read " "$src" | cut -d: -f1)
rm -rf "$out"
under_shim ./gpu_loop 30 then-decode >"$tmp/decode.out" 2>&1 || fail "gpu_loop then-decode: $(cat "$tmp/decode.out")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/decode.json" 2>"$tmp/err" || fail "report then-decode: $(cat "$tmp/err")"
rq "SELECT json_extract(value, '\$.steps.count') >= 59 FROM json_each(json_extract(readfile('$tmp/decode.json'), '\$.ranks'))" >"$tmp/decode.steps"
echo 1 | diff -u - "$tmp/decode.steps" >&2 || fail "then-decode: the decoder's requests are no steps: $(cat "$tmp/decode.json")"
rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.phase'), json_extract(value, '\$.severity') != 'info'
	FROM json_each(json_extract(readfile('$tmp/decode.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') = '$src:$decode_line in main'" >"$tmp/decode.read"
echo "sync-copy|steady|1" | diff -u - "$tmp/decode.read" >&2 || fail "the decoder's read"
finish
