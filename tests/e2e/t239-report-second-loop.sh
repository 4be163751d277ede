#!/bin/sh
# SPDX-License-Identifier: MIT
# t239: a second loop after the first (training, then an evaluation or sampling loop: t143 of
# examples/corpus; STEPS-6 of report/steps.h): its steps join the steady state, so a blocking
# read made every iteration of it is a finding with a cost per step, not `info`; read once
# after it (the fix), no finding at the loop's line. A teardown's burst of frees over buffers
# after the loop (12 calls in a millisecond) is no loop: its frees stay `info`. gpu_loop
# then-eval, then-eval-once and teardown-frees on the stand-ins.
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
line() { grep -n "MARK:$1\$\|MARK:$1 " "$src" | cut -d: -f1; }
report() { # MODE: its report's findings at gpu_loop.c, "rule|line|severity", by line
	rm -rf "$out" && mkdir -p "$out"
	under_shim "$PROGS/gpu_loop" 30 "$1" >"$tmp/$1.out" 2>&1 || fail "gpu_loop $1: $(cat "$tmp/$1.out")"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/$1.json" 2>"$tmp/err" || fail "report $1: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.rule'), replace(substr(json_extract(value, '\$.site'),
		instr(json_extract(value, '\$.site'), 'gpu_loop.c:') + 11), ' in main', ''),
		json_extract(value, '\$.severity')
		FROM json_each(json_extract(readfile('$tmp/$1.json'), '\$.findings'))
		WHERE json_extract(value, '\$.site') LIKE '%gpu_loop.c:%' ORDER BY 2"
}
read_line=$(line eval-read) free_line=$(line teardown-free)
report then-eval >"$tmp/then-eval"
grep -q "|$read_line|\(high\|medium\|low\)\$" "$tmp/then-eval" ||
	fail "the evaluation loop's read is no steady finding: $(cat "$tmp/then-eval")"
# its steps counted: 29 of the first loop after its warm-up step, 30 of the second
[ "$(rq "SELECT json_extract(value, '\$.steps.steady') FROM json_each(json_extract(readfile('$tmp/then-eval.json'), '\$.ranks'))")" -ge 55 ] ||
	fail "the second loop's steps not counted: $(rq "SELECT json_extract(value, '\$.steps.steady') FROM json_each(json_extract(readfile('$tmp/then-eval.json'), '\$.ranks'))")"
report then-eval-once >"$tmp/then-eval-once"
grep -q "|$read_line|" "$tmp/then-eval-once" && fail "a finding at the loop's line without its read: $(cat "$tmp/then-eval-once")"
report teardown-frees >"$tmp/teardown-frees"
grep -q "|$free_line|info\$" "$tmp/teardown-frees" || fail "the teardown's frees: $(cat "$tmp/teardown-frees")"
finish
