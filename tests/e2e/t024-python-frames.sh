#!/bin/sh
# SPDX-License-Identifier: MIT
# t024: a sync point made from Python while the thread holds the GIL gets the Python stack
# (innermost first, file:line in function) and the user's line as its call site (SCHEMA-6). One
# made with the GIL released (as torch's .item() is) gets them too, on the main thread and on
# another (interpose/python.c reads them at the sync itself). Identical stacks are stored once.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
script=$TOP_SRCDIR/tests/progs/py_frames.py
with_line=$(grep -n 'MARK:with-gil' "$script" | cut -d: -f1)
without_line=$(grep -n 'MARK:without-gil' "$script" | cut -d: -f1)
thread_line=$(grep -n 'MARK:thread' "$script" | cut -d: -f1)
CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$script" 3 >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "python failed: $(cat "$tmp/stderr")"
grep -q done "$tmp/stdout" || fail "wrong output"
one_db
golden "SELECT api, site, py_stack IS NOT NULL FROM api_calls ORDER BY start_ns" <<END
cudaDeviceSynchronize|$script:$with_line in inner_step|1
cudaDeviceSynchronize|$script:$with_line in inner_step|1
cudaDeviceSynchronize|$script:$with_line in inner_step|1
cudaDeviceSynchronize|$script:$without_line in train|1
cudaDeviceSynchronize|$script:$thread_line in worker|1
END
# Three stacks: the loop's, train's and the thread's (worker, then threading's run,
# _bootstrap_inner and _bootstrap).
golden "SELECT count(*), max(depth) FROM stacks WHERE kind = 'python'" <<'END'
3|4
END
call_line=$(grep -n '^    inner_step(n)' "$script" | cut -d: -f1)
main_line=$(grep -n '^train(' "$script" | cut -d: -f1)
golden "SELECT frames FROM stacks WHERE kind = 'python' AND frames LIKE '%in inner_step%'" <<END
$script:$with_line in inner_step
$script:$call_line in train
$script:$main_line in <module>
END
# What the stacks cost is counted by the shim itself (meta, docs/schema.md): one count per sync
# point, time on both sides (native: libunwind, found in CI; Python: walked or deferred).
golden "SELECT group_concat(key || '=' || (CAST(value AS INTEGER) > 0), ' ') FROM
	(SELECT key, value FROM meta WHERE key LIKE 'stack%' ORDER BY key)" <<'END'
stack_cost_native_ns=1 stack_cost_python_ns=1 stack_cost_repeated_ns=1 stacks_repeated=1 stacks_taken=1
END
# 5 sync points; the 2nd and 3rd of the loop repeat the 1st's native stack.
golden "SELECT value FROM meta WHERE key = 'stacks_taken' UNION ALL
	SELECT value >= 2 AND value < 5 FROM meta WHERE key = 'stacks_repeated'" <<'END'
5
1
END
# SYNCSPY_STACK_DEPTH=0: no stack of either kind, nothing deferred, nothing counted.
rm -rf "$out" && mkdir -p "$out"
SYNCSPY_STACK_DEPTH=0 CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$script" 3 >"$tmp/stdout0" 2>"$tmp/stderr0" ||
	fail "python failed with SYNCSPY_STACK_DEPTH=0: $(cat "$tmp/stderr0")"
diff -u "$tmp/stdout" "$tmp/stdout0" >&2 || fail "output differs with SYNCSPY_STACK_DEPTH=0"
one_db
golden "SELECT count(*), (SELECT count(*) FROM api_calls WHERE py_stack IS NOT NULL OR native_stack IS NOT NULL),
	(SELECT group_concat(value, ' ') FROM meta WHERE key LIKE 'stack%') FROM stacks" <<'END'
0|0|0 0 0 0 0
END
