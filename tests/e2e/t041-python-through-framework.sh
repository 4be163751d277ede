#!/bin/sh
# SPDX-License-Identifier: MIT
# t041: a sync point inside a user's forward() that a framework's __call__ runs (as torch's
# nn.Module does) is attributed to the line inside forward(): the user frame that is innermost,
# even though framework frames (site-packages) lie between it and the loop (docs/attribution.md,
# SCHEMA-6). A stack's frames are judged one line at a time: the session-10 corpus found every
# torch model's sync named at the loop that called the model, because the frames after a user
# line were read as part of it.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
script=$TOP_SRCDIR/tests/progs/py_through_framework.py
inner=$(grep -n 'MARK:inner' "$script" | cut -d: -f1)
CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$script" "$tmp" 4 >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "python failed: $(cat "$tmp/stderr")"
grep -q "done 4" "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, site, count(*) FROM api_calls GROUP BY api, site" <<END
cudaDeviceSynchronize|$script:$inner in forward|4
END
# The stack keeps every frame, the framework's included, innermost first.
golden "SELECT frames LIKE '$script:$inner in forward
$tmp/site-packages/framework/__init__.py:% in _call_impl
$tmp/site-packages/framework/__init__.py:% in __call__
$script:% in forward
%' FROM stacks WHERE kind = 'python'" <<'END'
1
END
# The report names the same line.
"$SYNCSPY" report --format json "$out"/*.sqlite >"$tmp/report.json" || fail "report failed"
grep -q "\"$script:$inner in forward\"" "$tmp/report.json" || fail "the report does not name line $inner: $(head -c 2000 "$tmp/report.json")"
