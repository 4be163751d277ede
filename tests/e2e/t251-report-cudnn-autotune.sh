#!/bin/sh
# SPDX-License-Identifier: MIT
# t251: cuDNN's autotuning (torch.backends.cudnn.benchmark) of a model's convolutions, run again
# every step for a new input shape, is named by the line that calls the model, with the
# autotuning's advice (rules/host_sync.c ss_autotune_model_call, docs/rules.md host-sync;
# examples/corpus t74). 20 steps of: a launch at train.py:10; device syncs in two convolutions of
# the model's forward (model.py:12 and :13, native stacks through at::native::cudnn_convolution,
# Python stacks through nn.Module's call from train.py:30); a cudaFree there and a cudaMalloc of
# the caching allocator growing back (in no convolution) at model.py:12; the backward's syncs in
# convolution_backward named by the backward() line (train.py:32, no module call above it);
# and a stream sync at model.py:14 in the forward in no convolution (a result read: its own
# line, the generic advice). Then the same without the convolution frames (every line its own,
# no autotuning advice), and with only the allocations in a convolution (no sync showed the
# autotuning: allocations keep their line). A summary's report is the database's, advice
# included (summary.c asks advice_for again).
. "$E2E_DIR/lib.sh"
conv='find_algo+0x47e (libtorch_cuda.so)
_ZN2at6native17cudnn_convolutionERKNS_6TensorE+0x47e (libtorch_cuda.so)
_ZN2at4_ops17cudnn_convolution4callE+0x288 (libtorch_cpu.so)'
backward='find_algo+0x13b3 (libtorch_cuda.so)
_ZN2at6native20convolution_backwardERKNS_6TensorE+0x13b3 (libtorch_cpu.so)
_ZN5torch8autograd6Engine17evaluate_functionE+0x1117 (libtorch_cpu.so)'
plain='empty_cuda+0x7f (libtorch_cuda.so)
_ZN2at4_ops10add_Tensor4callE+0x1ab (libtorch_cpu.so)'
module='/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1190 in _call_impl'
conv_py() { # LINE: a Python stack from model.py:LINE in forward, called as a module at train.py:30
	printf '%s\n%s\n%s\n%s\n%s\n%s' '/usr/lib/python3/dist-packages/torch/nn/modules/conv.py:313 in forward' \
		"$module" "model.py:$1 in forward" "$module" 'train.py:30 in main' 'train.py:50 in <module>'
}
make_db() { # OUT SYNC_STACK BACKWARD_STACK FREE_STACK
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$1" || fail "make-db.sh"
	"$SQLITE3" -batch -bail "$1" <<SQL || fail "rows"
DELETE FROM calls;
DELETE FROM sites;
DELETE FROM stacks;
INSERT INTO apis(id, name, layer, class) VALUES (100, 'cudaFree', 'runtime', 'S6');
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (1, 0, 'train.py', 10, 'main', 'train.py:10 in main'),
 (2, 0, 'model.py', 12, 'forward', 'model.py:12 in forward'),
 (3, 0, 'model.py', 13, 'forward', 'model.py:13 in forward'),
 (4, 0, 'train.py', 32, 'main', 'train.py:32 in main'),
 (5, 0, 'model.py', 14, 'forward', 'model.py:14 in forward');
INSERT INTO stacks(id, kind, hash, depth, frames) VALUES (1, 'native', 1, 3, '$2'),
 (2, 'native', 2, 3, '$3'), (3, 'native', 3, 3, '$4'), (4, 'native', 4, 2, '$plain'),
 (11, 'python', 11, 6, '$(conv_py 12)'), (12, 'python', 12, 6, '$(conv_py 13)'),
 (13, 'python', 13, 6, '$(conv_py 14)'), (14, 'python', 14, 2, 'train.py:32 in main
train.py:50 in <module>');
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, ptr, bytes, ret, site_id, native_stack_id, py_stack_id)
 SELECT 4242, a.id, v.class, 1000010000000 + k * 10000000 + v.at, 1000010000000 + k * 10000000 + v.at + v.len,
        v.stream, v.ptr, v.bytes, 0, v.site, v.stack, v.py
 FROM step, (SELECT '__cudaLaunchKernel' AS api, 'E1' AS class, 0 AS at, 0 AS len, 7 AS stream, NULL AS ptr, NULL AS bytes, 1 AS site, NULL AS stack, NULL AS py
  UNION ALL SELECT 'cudaDeviceSynchronize', 'S1', 100000, 300000, NULL, NULL, NULL, 2, 1, 11
  UNION ALL SELECT 'cudaFree', 'S6', 450000, 200000, NULL, 4096, NULL, 2, 3, 11
  UNION ALL SELECT 'cudaMalloc', 'S6', 700000, 200000, NULL, 8192, 1048576, 2, 4, 11
  UNION ALL SELECT 'cudaDeviceSynchronize', 'S1', 1000000, 300000, NULL, NULL, NULL, 3, 1, 12
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 1400000, 300000, 7, NULL, NULL, 5, 4, 13
  UNION ALL SELECT 'cudaDeviceSynchronize', 'S1', 2000000, 600000, NULL, NULL, NULL, 4, 2, 14) v
 JOIN apis a ON a.name = v.api;
SQL
}
findings() { # DB: rule|site|severity|the autotuning's advice|detail names the folded line
	"$SYNCSPY" report --format json "$1" >"$1.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.site'),
		json_extract(value, '\$.severity'),
		json_extract(value, '\$.advice') LIKE 'torch.backends.cudnn.benchmark = True autotunes%',
		json_extract(value, '\$.detail') LIKE '%in cuDNN''s autotuning (torch.backends.cudnn.benchmark) for a new input shape of the convolution at model.py:12 in forward;%of the autotuning of another of the model''s convolutions, at model.py:13 in forward%'
		FROM json_each(json_extract(readfile('$1.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') IN ('host-sync', 'alloc-in-loop') ORDER BY 1, 2"
}
make_db "$tmp/tuned.sqlite" "$conv" "$backward" "$conv"
findings "$tmp/tuned.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
alloc-in-loop|train.py:30 in main|medium|1|0
host-sync|model.py:13 in forward|info|1|0
host-sync|model.py:14 in forward|medium|0|0
host-sync|train.py:30 in main|medium|1|1
host-sync|train.py:32 in main|medium|1|0
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "the autotuning named by the model's call"
# the allocations: the free in the convolution and the caching allocator's regrowth, moved
rq "SELECT json_extract(value, '\$.detail') FROM json_each(json_extract(readfile('$tmp/tuned.sqlite.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'alloc-in-loop'" >"$tmp/alloc"
grep -q '^cudaFree x18, cudaMalloc x18 (each one synchronizes the device), in cuDNN.s autotuning (torch.backends.cudnn.benchmark) for a new input shape of the convolution at model.py:12 in forward;' "$tmp/alloc" ||
	fail "the allocations' detail: $(cat "$tmp/alloc")"
"$SYNCSPY" summarize -o "$tmp/tuned.summary" "$tmp/tuned.sqlite" 2>/dev/null || fail "summarize"
"$SYNCSPY" report --format json "$tmp/tuned.summary" >"$tmp/summary.json" || fail "report of the summary"
cmp "$tmp/tuned.sqlite.json" "$tmp/summary.json" >/dev/null ||
	fail "the summary's report differs: $(diff "$tmp/tuned.sqlite.json" "$tmp/summary.json" | head -5)"
# no convolution: each line its own finding, the generic advice
make_db "$tmp/plain.sqlite" "$plain" "$plain" "$plain"
findings "$tmp/plain.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
alloc-in-loop|model.py:12 in forward|medium|0|0
host-sync|model.py:12 in forward|medium|0|0
host-sync|model.py:13 in forward|medium|0|0
host-sync|model.py:14 in forward|medium|0|0
host-sync|train.py:32 in main|medium|0|0
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "without the convolutions"
# the free in a convolution, but no sync showed the autotuning: the allocations keep their line
make_db "$tmp/free-only.sqlite" "$plain" "$plain" "$conv"
findings "$tmp/free-only.sqlite" >"$tmp/actual"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "allocations in a convolution without autotuning syncs"
finish
