#!/bin/sh
# SPDX-License-Identifier: MIT
# t042: a sync on PyTorch's autograd device thread ("pt_autograd_<device>", no Python state: the
# engine runs a CUDA backward there) is named by the user's line that called backward(), read
# from the frames of the thread waiting in torch's _engine_run_backward (interpose/python.c,
# PYTHON-1): anomaly mode's checks and cuDNN's autotuning in backward had only torch's native
# code as their site (t76 and t74 of examples/corpus). A thread of another name (a watchdog's)
# gets no Python frames: it syncs for nobody's line. Torch's device threads have a Python thread
# state of their own with no frame (session 14's t76 on the H200 kept the native site): the
# stand-in engine makes one for MARK:backward and none for MARK:stateless.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
script=$TOP_SRCDIR/tests/progs/py_autograd_thread.py
backward=$(grep -n '# MARK:backward' "$script" | cut -d: -f1)
stateless=$(grep -n '# MARK:stateless' "$script" | cut -d: -f1)
ENGINE="$PROGS/autograd_engine.so" CUDART="$STANDIN_DIR/libcudart.so.13" \
	under_shim "$PYTHON3" "$script" "$tmp" 3 >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "python failed: $(cat "$tmp/stderr")"
grep -q "done 3 ok" "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
# (the watchdog's 3 keep the engine's own native site)
golden "SELECT CASE site WHEN '$script:$backward in <module>' THEN 'backward'
	WHEN '$script:$stateless in <module>' THEN 'stateless' ELSE site LIKE '%$script%' END,
	count(*) FROM api_calls WHERE api = 'cudaDeviceSynchronize' GROUP BY 1 ORDER BY 1" <<'END'
0|3
backward|6
stateless|3
END
# The stack is the waiting thread's: torch's frame, then the user's.
golden "SELECT count(*) FROM stacks WHERE kind = 'python' AND frames LIKE '$tmp/site-packages/torch/autograd/graph.py:% in _engine_run_backward
$script:$backward in <module>'" <<'END'
1
END
