#!/bin/sh
# SPDX-License-Identifier: MIT
# t600: the GPU-free half of the acceptance suite. examples/traces holds databases recorded on
# an H200 (tests/gpu/run.sh, 2026-12-02) from the reference workloads of examples/, bad and
# fixed, built with -cudart shared: `syncspy report` on each must produce exactly the findings
# its expectation file lists (tests/gpu/check_expect.py), and copies_syncs/item_loop must hold
# the calls theirs list.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
traces=$TOP_SRCDIR/examples/traces
checker=$TOP_SRCDIR/tests/gpu/check_expect.py
n=0
for trace in "$traces"/[0-9]*-shared.sqlite; do
	task=$(basename "$trace" .sqlite)  # NN_name-variant-shared
	name=${task%-*-*}
	variant=${task#"$name"-}
	variant=${variant%-shared}
	set -- "$TOP_SRCDIR"/examples/*/"$name.expect"
	[ -f "$1" ] || fail "no expectation file for $task"
	"$SYNCSPY" report --format json "$trace" >"$tmp/$task.json" || fail "report failed on $task"
	"$PYTHON3" "$checker" "$trace" "$1" --variant "$variant" --build shared \
		--report "$tmp/$task.json" --row >"$tmp/$task.out" 2>&1 ||
		fail "$task: $(grep '^row' "$tmp/$task.out" || tail -5 "$tmp/$task.out")"
	n=$((n + 1))
done
[ "$n" -ge 24 ] || fail "only $n traces checked"
"$PYTHON3" "$checker" "$traces/copies_syncs.sqlite" "$TOP_SRCDIR/examples/cuda/copies_syncs.expect" >"$tmp/cs.out" 2>&1 ||
	fail "copies_syncs: $(tail -3 "$tmp/cs.out")"
"$PYTHON3" "$checker" "$traces/item_loop.sqlite" "$TOP_SRCDIR/examples/torch/item_loop.expect" >"$tmp/il.out" 2>&1 ||
	fail "item_loop: $(tail -3 "$tmp/il.out")"
# The .item() sync is attributed to the script's line (Python frames, deferred: the GIL is
# released in torch's .item()).
db=$traces/08_item_per_step-bad-shared.sqlite
golden "SELECT site LIKE '%/examples/torch/08_item_per_step.py:% in main', count(*) FROM api_calls WHERE api = 'cudaStreamSynchronize' GROUP BY 1" <<'END'
1|60
END
echo "$n traces match their expectations"
