#!/bin/sh
# SPDX-License-Identifier: MIT
# t219: a steady sync without a user line that is the same operation as a sync with one (the
# same instruction in its native stack: torch's autograd thread syncing in the backward pass of
# a boolean-mask index, as the forward did on the script's line) is folded into the user line's
# finding (rules/host_sync.c ss_sync_same_operation, docs/rules.md host-sync): 20 steps of a
# launch, a stream sync on the main thread at train.py:30 whose stack passes through
# nonzero+0x401 (libtorch_cuda.so), and one on thread 4250 sited at that frame. Without the
# shared frame, two findings. Then the backward's sync named by the user's backward() line
# (train.py:40, as interpose/python.c names the autograd thread's syncs: PYTHON-1), below the
# engine's evaluate_function: folded into the forward's line all the same (the forward's fix
# removes both); at another instruction, or outside a backward pass, two findings. The same for
# a copy from pageable memory (pageable-async-copy).
. "$E2E_DIR/lib.sh"
make_db() { # OUT FRAMES [SITE3 FRAMES2]: the main thread's sync's native stack text; thread
	# 4250's site and native stack text
	site3=${3:-nonzero+0x401 (libtorch_cuda.so)}
	frames2=${4:-nonzero+0x401 (libtorch_cuda.so)
backward+0x10 (libtorch_cuda.so)}
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$1" || fail "make-db.sh"
	"$SQLITE3" -batch -bail "$1" <<SQL || fail "rows"
DELETE FROM calls;
DELETE FROM sites;
DELETE FROM stacks;
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (1, 0, 'train.py', 10, 'main', 'train.py:10 in main'),
 (2, 0, 'train.py', 30, 'main', 'train.py:30 in main'),
 (3, 140000000, 'libtorch_cuda.so', 1025, 'nonzero', '$site3');
INSERT INTO stacks(id, kind, hash, depth, frames) VALUES (1, 'native', 1, 2, '$2'),
 (2, 'native', 2, 2, '$frames2');
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, bytes, dir, host_mem, ret, site_id, native_stack_id)
 SELECT v.tid, a.id, v.class, 1000010000000 + k * 1000000 + v.at, 1000010000000 + k * 1000000 + v.at + v.len,
        7, v.bytes, v.dir, v.mem, 0, v.site, v.stack
 FROM step, (SELECT 4242 AS tid, '__cudaLaunchKernel' AS api, 'E1' AS class, 0 AS at, 0 AS len, 1 AS site,
   NULL AS stack, NULL AS bytes, NULL AS dir, NULL AS mem
  UNION ALL SELECT 4242, '$OP_API', '$OP_CLASS', 100000, 200000, 2, 1, $OP_BYTES
  UNION ALL SELECT 4250, '$OP_API', '$OP_CLASS', 500000, 100000, 3, 2, $OP_BYTES) v JOIN apis a ON a.name = v.api;
SQL
}
# the operation both threads' calls make: a stream sync (host-sync), or a copy from pageable
# memory that stages and blocks (pageable-async-copy: an index tensor on the CPU)
OP_API=cudaStreamSynchronize OP_CLASS=S2 OP_BYTES='NULL, NULL, NULL' RULE=host-sync
findings() { # DB: site|severity|detail names the other site (by what it folded)|blocked_ns
	"$SYNCSPY" report --format json "$1" >"$tmp/r.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.severity'),
		(json_extract(value, '\$.detail') LIKE '%same operation reached without a user frame%at nonzero+0x401%')
		+ 2 * (json_extract(value, '\$.detail') LIKE '%of the same operation in the backward pass, at train.py:40 in main%'),
		json_extract(value, '\$.blocked_ns')
		FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = '$RULE' ORDER BY 1"
}
make_db "$tmp/same.sqlite" 'nonzero+0x401 (libtorch_cuda.so)
_ZN2at4_ops5index4callE+0x20 (libtorch_cuda.so)'
findings "$tmp/same.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
nonzero+0x401 (libtorch_cuda.so)|info|0|1800000
train.py:30 in main|high|1|5400000
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "the backward's sync folded into the forward's line"
make_db "$tmp/other.sqlite" 'unique+0x99 (libtorch_cuda.so)'
findings "$tmp/other.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
nonzero+0x401 (libtorch_cuda.so)|medium|0|1800000
train.py:30 in main|high|0|3600000
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "another operation: two findings"
engine='_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEE+0x1117 (libtorch_cpu.so)'
forward='nonzero+0x401 (libtorch_cuda.so)
_ZN2at4_ops7nonzero4callERKNS_6TensorE+0x16d (libtorch_cpu.so)
_ZN2at4_ops12index_Tensor4callE+0x30b (libtorch_cpu.so)'
backward='nonzero+0x401 (libtorch_cuda.so)
_ZN2at4_ops7nonzero4callERKNS_6TensorE+0x16d (libtorch_cpu.so)
_ZN2at4_ops16_index_put_impl_4callE+0x35f (libtorch_cpu.so)
IndexBackward0+0x40 (libtorch_cpu.so)'
make_db "$tmp/backward.sqlite" "$forward" 'train.py:40 in main' "$backward
$engine"
findings "$tmp/backward.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
train.py:30 in main|high|2|5400000
train.py:40 in main|info|0|1800000
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "the backward's sync on the backward() line folded into the forward's line"
grep -q 'the backward pass of an operation on another line' "$tmp/r.json" || fail "no reason for the folded backward"
two() { # DB MESSAGE: two findings, none folded
	findings "$1" >"$tmp/actual"
	cat >"$tmp/expected" <<'END'
train.py:30 in main|high|0|3600000
train.py:40 in main|medium|0|1800000
END
	diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "$2: two findings"
}
# at another instruction
make_db "$tmp/backward-other.sqlite" 'unique+0x99 (libtorch_cuda.so)
_ZN2at4_ops6unique4callE+0x10 (libtorch_cpu.so)' 'train.py:40 in main' "$backward
$engine"
two "$tmp/backward-other.sqlite" "a backward sync at another instruction"
# at the same instruction in another operator (cuDNN's autotuning in the forward's
# cudnn_convolution and in convolution_backward: examples/corpus t74)
make_db "$tmp/backward-op.sqlite" 'find_algo+0x816 (libtorch_cuda.so)
_ZN2at4_ops17cudnn_convolution4callE+0x20 (libtorch_cpu.so)' 'train.py:40 in main' "find_algo+0x816 (libtorch_cuda.so)
_ZN2at4_ops20convolution_backward10redispatchE+0x7a (libtorch_cpu.so)
$engine"
two "$tmp/backward-op.sqlite" "a backward sync at the same instruction of another operator"
# outside a backward pass
make_db "$tmp/not-backward.sqlite" "$forward" 'train.py:40 in main' "$backward"
two "$tmp/not-backward.sqlite" "the same operation outside a backward pass"
# A copy from pageable memory (the backward of an index by a CPU tensor copies the index to the
# device as the forward did: t171 of examples/corpus): the backward's folded into the forward's
# line the same way, outside a backward pass two findings.
OP_API=cudaMemcpyAsync OP_CLASS=S5 OP_BYTES='65536, 1, 1' RULE=pageable-async-copy
copy='copy_+0x77 (libtorch_cuda.so)
_ZN2at4_ops5copy_4callE+0x20 (libtorch_cpu.so)'
make_db "$tmp/copy-backward.sqlite" "$copy" 'train.py:40 in main' "$copy
$engine"
findings "$tmp/copy-backward.sqlite" >"$tmp/actual"
[ "$(cut -d'|' -f1-3 "$tmp/actual" | tr '\n' ' ')" = "train.py:30 in main|high|2 train.py:40 in main|info|0 " ] ||
	fail "the backward's pageable copy folded into the forward's line: $(cat "$tmp/actual")"
grep -Eq 'copies \([0-9.]+ ms\) of the same operation in the backward pass' "$tmp/r.json" || fail "no copies in the fold"
make_db "$tmp/copy-not-backward.sqlite" "$copy" 'train.py:40 in main' "$copy"
findings "$tmp/copy-not-backward.sqlite" >"$tmp/actual"
[ "$(cut -d'|' -f1,3 "$tmp/actual" | tr '\n' ' ')" = "train.py:30 in main|0 train.py:40 in main|0 " ] ||
	fail "pageable copies outside a backward pass: $(cat "$tmp/actual")"
finish
