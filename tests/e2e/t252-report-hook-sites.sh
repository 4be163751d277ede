#!/bin/sh
# SPDX-License-Identifier: MIT
# t252: a sync made inside a framework's hook is named by the line that calls the model, not by
# the layer whose op fired the hook (SITE-1, report/hook_sites.c, docs/attribution.md;
# examples/corpus t124, t125). 20 steps of a launch at train.py:10 and four stream syncs, each
# recorded with the site the shim picks (the first user frame) and its Python stack:
#   save_on_cpu's pack hook (torch/autograd/graph.py pack_to_cpu) under a layer norm at
#     model.py:12 in forward, the model called at train.py:30 in train_step
#   an eager QAT fake-quantize module (torch/ao/quantization) at model.py:13, the same call
#   a read of the user's own at model.py:14 (no hook: its line)
#   a forward hook the user wrote (hooks.py:5 in log_hook, a user frame: its line)
# So three host-sync findings in the steady state (18 steps): train.py:30 (both hooks' syncs,
# one finding), model.py:14 and hooks.py:5; the database keeps its sites (TEMP tables only).
# Without the hooks' frames, every line its own.
. "$E2E_DIR/lib.sh"
module='/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1790 in _call_impl'
call() { # LINE INNER...: a Python stack from INNER frames, model.py:LINE, train.py:30
	line=$1
	shift
	for f in "$@"; do printf '%s\n' "$f"; done
	printf '%s\n%s\n%s\n%s\n%s' "$module" "model.py:$line in forward" "$module" \
		'train.py:30 in train_step' 'train.py:50 in <module>'
}
make_db() { # OUT PACK_FRAME QAT_FRAME
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$1" || fail "make-db.sh"
	"$SQLITE3" -batch -bail "$1" <<SQL || fail "rows"
DELETE FROM calls;
DELETE FROM sites;
DELETE FROM stacks;
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (1, 0, 'train.py', 10, 'train_step', 'train.py:10 in train_step'),
 (2, 0, 'model.py', 12, 'forward', 'model.py:12 in forward'),
 (3, 0, 'model.py', 13, 'forward', 'model.py:13 in forward'),
 (4, 0, 'model.py', 14, 'forward', 'model.py:14 in forward'),
 (5, 0, 'hooks.py', 5, 'log_hook', 'hooks.py:5 in log_hook');
INSERT INTO stacks(id, kind, hash, depth, frames) VALUES
 (11, 'python', 11, 7, '$(call 12 "$2" '/usr/lib/python3/dist-packages/torch/nn/functional.py:2935 in layer_norm')'),
 (12, 'python', 12, 7, '$(call 13 "$3" "$module")'),
 (13, 'python', 13, 5, '$(call 14)'),
 (14, 'python', 14, 8, '$(call 15 'hooks.py:5 in log_hook' '/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1846 in inner')');
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, ret, site_id, py_stack_id)
 SELECT 4242, a.id, v.class, 1000010000000 + k * 10000000 + v.at, 1000010000000 + k * 10000000 + v.at + v.len,
        7, 0, v.site, v.py
 FROM step, (SELECT '__cudaLaunchKernel' AS api, 'E1' AS class, 0 AS at, 0 AS len, 1 AS site, NULL AS py
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 100000, 300000, 2, 11
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 500000, 300000, 3, 12
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 900000, 200000, 4, 13
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 1200000, 100000, 5, 14) v
 JOIN apis a ON a.name = v.api;
SQL
}
findings() { # DB: site|count|blocked_ns of each host-sync finding
	"$SYNCSPY" report --format json "$1" >"$1.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.count'), json_extract(value, '\$.blocked_ns')
		FROM json_each(json_extract(readfile('$1.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'host-sync' ORDER BY 1"
}
make_db "$tmp/hooks.sqlite" '/usr/lib/python3/dist-packages/torch/autograd/graph.py:400 in pack_to_cpu' \
	'/usr/lib/python3/dist-packages/torch/ao/quantization/fake_quantize.py:231 in forward'
findings "$tmp/hooks.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
hooks.py:5 in log_hook|18|1800000
model.py:14 in forward|18|3600000
train.py:30 in train_step|36|10800000
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "the hooks' syncs not named by the model's call"
# the text report names it too, and the database is as it was (read-only: TEMP tables)
"$SYNCSPY" report "$tmp/hooks.sqlite" >"$tmp/text" 2>&1 || fail "text report exited $?"
grep -q 'host-sync .*train.py:30 in train_step' "$tmp/text" || fail "text report: $(cat "$tmp/text")"
# the HTML report's timeline names the calls as the findings do: no layer line of the hooks
"$SYNCSPY" report --format html -o "$tmp/hooks.html" "$tmp/hooks.sqlite" 2>"$tmp/err" ||
	fail "html report exited $?: $(cat "$tmp/err")"
! grep -q 'model.py:1[23] in forward' "$tmp/hooks.html" || fail "html: the hooks' syncs on the layers' lines"
grep -q 'train.py:30 in train_step' "$tmp/hooks.html" || fail "html: no model call"
db=$tmp/hooks.sqlite
golden "SELECT count(*) FROM sites WHERE text = 'train.py:30 in train_step'" <<'END'
0
END
# `syncspy check` counts them at the same site: a budget of none at the model's call breaches
# with all 40 hooks' syncs (the warm-up is none here), one of none at the layers holds
cat >"$tmp/budget.json" <<'END'
{"version": 1, "limits": [{"name": "model call", "site": "*train.py:30*", "max_count": 0},
 {"name": "layers", "site": "model.py:1[23] *", "max_count": 0}]}
END
"$SYNCSPY" check --budget "$tmp/budget.json" "$tmp/hooks.sqlite" >"$tmp/check" 2>&1
[ $? = 1 ] || fail "check: not a breach: $(cat "$tmp/check")"
grep -q 'FAIL limits\[0\] "model call".*count 40 > 0' "$tmp/check" || fail "check: $(cat "$tmp/check")"
grep -q 'PASS limits\[1\] "layers"' "$tmp/check" || fail "check, layers: $(cat "$tmp/check")"
# the same layers without the hooks' frames (a plain layer norm, a plain module): each line its own
make_db "$tmp/plain.sqlite" '/usr/lib/python3/dist-packages/torch/nn/functional.py:2900 in linear' \
	'/usr/lib/python3/dist-packages/torch/nn/modules/linear.py:125 in forward'
findings "$tmp/plain.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
hooks.py:5 in log_hook|18|1800000
model.py:12 in forward|18|5400000
model.py:13 in forward|18|5400000
model.py:14 in forward|18|3600000
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "syncs outside hooks moved"
finish
