#!/bin/sh
# t024: a sync point made from Python while the thread holds the GIL gets the Python stack
# (innermost first, file:line in function) and the user's line as its call site (SCHEMA-6). One
# made with the GIL released on the main thread (as torch's .item() is) gets them too, deferred
# through Py_AddPendingCall; one made with the GIL released on another thread keeps its native
# site and has no Python stack. Identical stacks are stored once.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
script=$TOP_SRCDIR/tests/progs/py_frames.py
with_line=$(grep -n 'MARK:with-gil' "$script" | cut -d: -f1)
without_line=$(grep -n 'MARK:without-gil' "$script" | cut -d: -f1)
CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$script" 3 >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "python failed: $(cat "$tmp/stderr")"
grep -q done "$tmp/stdout" || fail "wrong output"
one_db
golden "SELECT api, site, py_stack IS NOT NULL FROM api_calls ORDER BY start_ns" <<END
cudaDeviceSynchronize|$script:$with_line in inner_step|1
cudaDeviceSynchronize|$script:$with_line in inner_step|1
cudaDeviceSynchronize|$script:$with_line in inner_step|1
cudaDeviceSynchronize|$script:$without_line in train|1
cudaDeviceSynchronize|$(q "SELECT site FROM api_calls ORDER BY start_ns DESC LIMIT 1")|0
END
golden "SELECT count(*), max(depth) FROM stacks WHERE kind = 'python'" <<'END'
2|3
END
call_line=$(grep -n '^    inner_step(n)' "$script" | cut -d: -f1)
main_line=$(grep -n '^train(' "$script" | cut -d: -f1)
golden "SELECT frames FROM stacks WHERE kind = 'python' ORDER BY id LIMIT 1" <<END
$script:$with_line in inner_step
$script:$call_line in train
$script:$main_line in <module>
END
golden "SELECT site LIKE '%+0x%' AND site NOT LIKE '%.py:%' FROM api_calls ORDER BY start_ns DESC LIMIT 1" <<'END'
1
END
