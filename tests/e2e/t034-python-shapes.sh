#!/bin/sh
# SPDX-License-Identifier: MIT
# t034: a sync made with the GIL released is named by its own line whatever the bytecode that
# reached it (interpose/python.c reads the thread's frames at the sync itself): a plain call, a
# subscript, a comparison, a bool conversion, a format, a step of iteration, a boolean-mask
# subscript (`x[x > 1]`: two syncs on one line), and a call on a threading.Thread. Through a
# pending call (the interpreter's next eval-breaker check), all but the call were named by a
# later line, and the thread's sync had no Python frames.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
script=$TOP_SRCDIR/tests/progs/py_shapes.py
CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$script" >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "python failed: $(cat "$tmp/stderr")"
grep -q "^done 0 0 0$" "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
line() { grep -n "SYNC:$1\$" "$script" | cut -d: -f1; }
{
	for shape in call subscript compare bool format iteration; do
		echo "$script:$(line $shape) in <module>"
	done
	echo "$script:$(line mask) in <module>"
	echo "$script:$(line mask) in <module>"
	echo "$script:$(line thread) in worker"
} >"$tmp/expected"
q "SELECT coalesce(substr(py_stack, 1, instr(py_stack || char(10), char(10)) - 1), 'none')
	FROM api_calls WHERE api = 'cudaDeviceSynchronize' ORDER BY start_ns" >"$tmp/actual"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "syncs named by the wrong line"
# The site is the same line; the thread's whole stack is its two frames.
golden "SELECT count(*) FROM api_calls WHERE site = substr(py_stack, 1, instr(py_stack || char(10), char(10)) - 1)" <<'END'
9
END
# The thread's stack goes on past worker into threading's run.
golden "SELECT substr(py_stack, instr(py_stack, char(10)) + 1) LIKE '%threading.py:% in run' || char(10) || '%'
	FROM api_calls ORDER BY start_ns DESC LIMIT 1" <<'END'
1
END
# The H200 check's checker (tests/gpu/check_python_lines.py) on the same database: it passes here
# and says why when a sync lands on an unmarked line.
"$PYTHON3" "$TOP_SRCDIR/tests/gpu/check_python_lines.py" "$db" "$script" >"$tmp/check.out" ||
	fail "check_python_lines.py: $(grep FAIL "$tmp/check.out")"
[ "$(grep -c '^PASS' "$tmp/check.out")" -eq 10 ] || fail "check_python_lines.py: $(cat "$tmp/check.out")"
cp "$script" "$tmp/py_shapes.py" && sed -i 's/  # SYNC:compare$//' "$tmp/py_shapes.py"
"$PYTHON3" "$TOP_SRCDIR/tests/gpu/check_python_lines.py" "$db" "$tmp/py_shapes.py" >"$tmp/check2.out" &&
	fail "check_python_lines.py passed a sync on an unmarked line"
grep -q "^FAIL  python lines: every sync of the script (9) names a marked line  (cudaDeviceSynchronize at line $(line compare))$" "$tmp/check2.out" ||
	fail "check_python_lines.py: $(cat "$tmp/check2.out")"
