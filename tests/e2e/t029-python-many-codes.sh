#!/bin/sh
# SPDX-License-Identifier: MIT
# t029: Python stacks past the shim's code cache (interpose/python.c): 1800 functions, each its
# own code object, each syncing from two lines, called twice (7200 sync points). Every call
# names its own file, line and function, whether its stack was sent by key (code objects in
# the cache, a stack seen before on the thread) or by text (the cache full); equal stacks are
# stored once.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
n=1800
CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$TOP_SRCDIR/tests/progs/py_many_codes.py" $n \
	>"$tmp/stdout" 2>"$tmp/stderr" || fail "python failed: $(cat "$tmp/stderr")"
grep -q done "$tmp/stdout" || fail "wrong output"
one_db
# The innermost frame of each call, in call order, against what the program did.
q "SELECT substr(py_stack, 1, instr(py_stack || char(10), char(10)) - 1) FROM api_calls ORDER BY start_ns" >"$tmp/actual"
for round in 1 2; do
	i=0
	while [ $i -lt $n ]; do
		printf 'gen_%d.py:2 in f_%d\ngen_%d.py:3 in f_%d\n' $i $i $i $i
		i=$((i + 1))
	done
done >"$tmp/expected"
diff "$tmp/expected" "$tmp/actual" >"$tmp/diff" || fail "frames named wrong ($(grep -c '^>' "$tmp/diff") calls): $(head -n 6 "$tmp/diff")"
# One stack per distinct line: 2 per function.
golden "SELECT count(DISTINCT frames), count(*) = count(DISTINCT frames) FROM stacks WHERE kind = 'python'" <<END
$((2 * n))|1
END
golden "SELECT value FROM meta WHERE key = 'stacks_taken'" <<END
$((4 * n))
END
