#!/bin/sh
# SPDX-License-Identifier: MIT
# t218: alloc-in-loop folds a caching allocator's regrowth into the free that caused it
# (rules/alloc_in_loop.c ss_alloc_regrowth, docs/rules.md): 20 steps of a launch, a cudaFree
# through torch's allocator (empty_cache: a native frame in libc10_cuda.so) and a cudaMalloc
# through it on another line (the next forward pass growing back). The malloc's finding is
# `info`, its time added to the free's, whose detail names it. The same calls without the
# allocator's frames (a C program's malloc and free every step) stay two findings. The
# allocator growing its small pool a 2 MiB segment a step with nothing freed (small tensors kept
# every step: t143 of examples/corpus), at 0.5% of the step: `info` (also after a few larger
# blocks, and without steps against the run's time); growing by 4 MiB blocks (a cache
# concatenated longer every step: t51), or a C program's 2 MiB cudaMalloc: `low`.
. "$E2E_DIR/lib.sh"
make_db() { # OUT FRAMES: the two allocation calls' native stack text
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$1" || fail "make-db.sh"
	"$SQLITE3" -batch -bail "$1" <<SQL || fail "rows"
DELETE FROM calls;
DELETE FROM sites;
DELETE FROM stacks;
INSERT OR IGNORE INTO apis(name, layer, class) VALUES ('cudaFree', 'runtime', 'S6');
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (1, 0, 'train.py', 10, 'main', 'train.py:10 in main'),
 (2, 0, 'train.py', 20, 'main', 'train.py:20 in main'),
 (3, 0, 'train.py', 30, 'main', 'train.py:30 in main');
INSERT INTO stacks(id, kind, hash, depth, frames) VALUES (1, 'native', 1, 2, '$2');
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, ret, site_id, native_stack_id)
 SELECT 4242, a.id, v.class, 1000010000000 + k * 1000000 + v.at, 1000010000000 + k * 1000000 + v.at + v.len,
        v.stream, 0, v.site, v.stack
 FROM step, (SELECT '__cudaLaunchKernel' AS api, 'E1' AS class, 0 AS at, 0 AS len, 7 AS stream, 1 AS site, NULL AS stack
  UNION ALL SELECT 'cudaFree', 'S6', 100000, 200000, NULL, 2, 1
  UNION ALL SELECT 'cudaMalloc', 'S6', 400000, 100000, NULL, 3, 1) v JOIN apis a ON a.name = v.api;
SQL
}
findings() { # DB: rule|site|severity|detail mentions the regrowth
	"$SYNCSPY" report --format json "$1" >"$tmp/r.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.severity'),
		json_extract(value, '\$.detail') LIKE '%grow back, at train.py:30 in main%',
		json_extract(value, '\$.blocked_ns')
		FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'alloc-in-loop' ORDER BY 1"
}
make_db "$tmp/torch.sqlite" 'libc10_cuda.so+0x2f4cb
_ZN2at6native2mmE+0x44 (libtorch_cuda.so)'
findings "$tmp/torch.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
train.py:20 in main|high|1|5400000
train.py:30 in main|info|0|1800000
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "torch's allocator: regrowth folded into the free"
make_db "$tmp/c.sqlite" 'prog+0x1234
prog+0x5678'
findings "$tmp/c.sqlite" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
train.py:20 in main|high|0|3600000
train.py:30 in main|medium|0|1800000
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "no allocator: two findings"
growth_db() { # OUT BYTES FRAMES: 20 steps of 10 ms, each a launch and a 50 us cudaMalloc of BYTES
	# (an SQL expression of the step k)
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$1" || fail "make-db.sh"
	"$SQLITE3" -batch -bail "$1" <<SQL || fail "rows"
DELETE FROM calls;
DELETE FROM sites;
DELETE FROM stacks;
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (1, 0, 'train.py', 10, 'main', 'train.py:10 in main'), (3, 0, 'train.py', 30, 'main', 'train.py:30 in main');
INSERT INTO stacks(id, kind, hash, depth, frames) VALUES (1, 'native', 1, 2, '$3');
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, bytes, ret, site_id, native_stack_id)
 SELECT 4242, a.id, v.class, 1000010000000 + k * 10000000 + v.at, 1000010000000 + k * 10000000 + v.at + v.len,
        v.stream, CASE WHEN v.site = 3 THEN $2 END, 0, v.site, v.stack
 FROM step, (SELECT '__cudaLaunchKernel' AS api, 'E1' AS class, 0 AS at, 0 AS len, 7 AS stream, 1 AS site, NULL AS stack
  UNION ALL SELECT 'cudaMalloc', 'S6', 400000, 50000, NULL, 3, 1) v JOIN apis a ON a.name = v.api;
SQL
}
growth() { # DB: the malloc line's severity
	"$SYNCSPY" report --format json "$1" >"$tmp/g.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.severity') FROM json_each(json_extract(readfile('$tmp/g.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'alloc-in-loop' AND json_extract(value, '\$.site') = 'train.py:30 in main'"
}
torch_frames='libc10_cuda.so+0x2f4cb
_ZN2at6native3catE+0x44 (libtorch_cuda.so)'
growth_db "$tmp/small-pool.sqlite" 2097152 "$torch_frames"
[ "$(growth "$tmp/small-pool.sqlite")" = info ] || fail "small-pool growth under 1%: $(growth "$tmp/small-pool.sqlite")"
grep -q 'under 1% of the step' "$tmp/g.json" || fail "small-pool growth: no reason given"
growth_db "$tmp/large-blocks.sqlite" 4194304 "$torch_frames"
[ "$(growth "$tmp/large-blocks.sqlite")" = low ] || fail "growth by larger blocks: $(growth "$tmp/large-blocks.sqlite")"
growth_db "$tmp/c-growth.sqlite" 2097152 'prog+0x1234'
[ "$(growth "$tmp/c-growth.sqlite")" = low ] || fail "a program's own 2 MiB cudaMalloc: $(growth "$tmp/c-growth.sqlite")"
# Larger blocks in the first steps (the large pool's 20 MiB segments while the model's
# activations find their size), then 2 MiB segments: small-pool growth all the same; larger
# blocks in 8 of the 20 steps: not.
growth_db "$tmp/small-after-large.sqlite" "CASE WHEN k < 3 THEN 20971520 ELSE 2097152 END" "$torch_frames"
[ "$(growth "$tmp/small-after-large.sqlite")" = info ] ||
	fail "small-pool growth after 3 large blocks: $(growth "$tmp/small-after-large.sqlite")"
growth_db "$tmp/mostly-large.sqlite" "CASE WHEN k < 8 THEN 20971520 ELSE 2097152 END" "$torch_frames"
[ "$(growth "$tmp/mostly-large.sqlite")" = low ] ||
	fail "growth by large blocks in 8 of 20 steps: $(growth "$tmp/mostly-large.sqlite")"
# No step (passes of 1 to 5 launches, too irregular to detect: t167 of examples/corpus, an
# L-BFGS step): the floor holds against the run's time (0.5% of it here), as the share does.
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/stepless.sqlite" || fail "make-db.sh"
"$SQLITE3" -batch -bail "$tmp/stepless.sqlite" <<SQL || fail "rows"
DELETE FROM calls;
DELETE FROM sites;
DELETE FROM stacks;
UPDATE meta SET value = 1000000000000 WHERE key = 'start_mono_ns';
UPDATE meta SET value = 1000200000000 WHERE key = 'end_mono_ns';
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (3, 0, 'train.py', 30, 'main', 'train.py:30 in main'), (10, 0, 'train.py', 40, 'fwd', 'train.py:40 in fwd'),
 (11, 0, 'train.py', 41, 'fwd', 'train.py:41 in fwd'), (12, 0, 'train.py', 42, 'fwd', 'train.py:42 in fwd'),
 (13, 0, 'train.py', 43, 'fwd', 'train.py:43 in fwd'), (14, 0, 'train.py', 44, 'fwd', 'train.py:44 in fwd');
INSERT INTO stacks(id, kind, hash, depth, frames) VALUES (1, 'native', 1, 2, '$torch_frames');
WITH RECURSIVE pass(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM pass WHERE k < 19),
 launch(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM launch WHERE j < 4)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, bytes, ret, site_id, native_stack_id)
 SELECT 4242, a.id, 'E1', 1000000000000 + k * 10000000 + j * 1000, 1000000000000 + k * 10000000 + j * 1000,
        7, NULL, 0, 10 + (j + k) % 5, NULL
 FROM pass, launch JOIN apis a ON a.name = '__cudaLaunchKernel' WHERE j <= (k * k * 7 + 3) % 5
 UNION ALL
 SELECT 4242, a.id, 'S6', 1000000000000 + k * 10000000 + 400000, 1000000000000 + k * 10000000 + 450000,
        NULL, 2097152, 0, 3, 1
 FROM pass JOIN apis a ON a.name = 'cudaMalloc'
 ORDER BY 4;
SQL
[ "$(growth "$tmp/stepless.sqlite")" = info ] || fail "small-pool growth without steps: $(growth "$tmp/stepless.sqlite")"
[ "$(rq "SELECT json_extract(readfile('$tmp/g.json'), '\$.ranks[0].steps.count')")" = 0 ] ||
	fail "stepless: steps found"
grep -q 'under 1% of the run' "$tmp/g.json" || fail "small-pool growth without steps: no reason given"
finish
