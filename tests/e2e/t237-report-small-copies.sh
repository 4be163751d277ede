#!/bin/sh
# SPDX-License-Identifier: MIT
# t237: small-copies-in-loop (docs/rules.md): a line that copies an image to the device one row
# at a time every step (gpu_loop row-copies: 512 cudaMemcpyAsync of 2 KiB from pinned memory a
# step, each issued in ISSUE_US as a GPU's driver would) is one steady finding at that line, its
# cost the host's time issuing the copies (an estimate: each copy to its thread's next call),
# above 1% of the step. Not flagged: the same rows in one cudaMemcpy2DAsync a step (rows-2d, the
# fix); 32 rows a step (few-row-copies: under 64 a step, though 960 in the run); 128 rows of
# 72 KiB a step (wide-row-copies: not small); the row copies named by a library's frame
# (module+offset, as cuDNN's own copies are: t101, t105 of examples/corpus); a database recorded
# in aggregate mode, whose note names the rule among those that did not run (ANALYSIS-6). With a
# GPU timeline (added here by hand: the stand-in's CUPTI reports no copies) the detail gives the
# copies' time on the copy engine, each GPU copy tied to its own call only.
. "$E2E_DIR/lib.sh"
export SYNCSPY_CUPTI=0
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
line=$(grep -n 'MARK:row-copies' "$src" | cut -d: -f1)
rule=small-copies-in-loop
findings() { # REPORT.json: its findings of the rule
	echo "json_each(readfile('$1'), '\$.findings') f" \
		"WHERE json_extract(f.value, '\$.rule') = '$rule'"
}
field() { # NAME: a finding's field, in findings()' rows
	echo "json_extract(f.value, '\$.$1')"
}
report() { # MODE [ENV...]: gpu_loop 30 MODE under the shim, its JSON report in $tmp/MODE.json
	mode=$1
	shift
	rm -rf "$out"
	env "$@" LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$out" "$PROGS/gpu_loop" 30 "$mode" \
		>"$tmp/$mode.out" 2>&1 || fail "gpu_loop $mode failed: $(cat "$tmp/$mode.out")"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" ||
		fail "report ($mode) exited $?: $(cat "$tmp/err")"
}

# The row copies: one steady finding at their line, worth the fix.
report row-copies
cp "$db" "$tmp/rows.sqlite"
rq "SELECT $(field site) = '$src:$line in main', $(field phase), $(field severity) <> 'info',
	$(field count) = 512 * $(field steps), $(field steps) >= 27,
	$(field bytes) = 2048 * $(field count), $(field cost_ns) = $(field estimate_ns),
	$(field cost_per_step_ns) BETWEEN 512 * 3000 * 27 / 29 AND 512 * 20000,
	instr($(field detail), 'cudaMemcpyAsync x' || $(field count) || ': ') = 1,
	instr($(field detail), ' small async H2D copies a step from this line, 2048 bytes') > 0,
	instr($(field advice), 'cudaMemcpy2DAsync') > 0
	AND instr($(field advice), 'cudaMemcpyBatchAsync') > 0
	FROM $(findings "$tmp/row-copies.json")" >"$tmp/actual"
cat >"$tmp/expected" <<'END'
1|steady|1|1|1|1|1|1|1|1|1
END
diff -u "$tmp/expected" "$tmp/actual" >&2 ||
	fail "row copies (site|phase|not info|count|steps|bytes|cost|per step|apis|detail|advice)"

# Not small copies in a loop: one 2D copy a step, 32 rows a step, rows of 72 KiB.
for mode in rows-2d few-row-copies wide-row-copies; do
	report $mode
	n=$(rq "SELECT count(*) FROM $(findings "$tmp/$mode.json")")
	[ "$n" = 0 ] || fail "$mode: $n $rule findings"
	# few-row-copies makes more than 64 row copies in all: the floor is per step
	[ $mode != few-row-copies ] || [ "$(q "SELECT count(*) FROM calls c JOIN apis a
		ON a.id = c.api_id WHERE a.name = 'cudaMemcpyAsync'")" = 960 ] ||
		fail "few-row-copies: not 32 copies x 30 steps"
done

# A library's frame: the same copies named module+offset (no file of that module: the text stays)
db=$tmp/lib.sqlite
cp "$tmp/rows.sqlite" "$db"
q "UPDATE sites SET module = '/nonexistent/libcopies.so.1', module_offset = 6699,
	text = 'libcopies.so.1+0x1a2b' WHERE id IN (SELECT c.site_id FROM calls c
	JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaMemcpyAsync')" ||
	fail "rewriting the site"
"$SYNCSPY" report --format json "$db" >"$tmp/lib.json" || fail "report (library frame)"
[ "$(rq "SELECT count(*) FROM json_each(readfile('$tmp/lib.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.site') = 'libcopies.so.1+0x1a2b'")" -gt 0 ] ||
	fail "no finding names the library frame (copy-on-compute-stream's should)"
n=$(rq "SELECT count(*) FROM $(findings "$tmp/lib.json")")
[ "$n" = 0 ] || fail "copies at a library's frame: $n $rule findings"

# A GPU timeline: a 2.5 us copy of 2 KiB for each row copy, and one of 99 us for each kernel
# launch, which the last row copy before it must not take (its thread's next call)
db=$tmp/gpu.sqlite
cp "$tmp/rows.sqlite" "$db"
q "CREATE TABLE gpu_activity(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, start_ns INTEGER,
	end_ns INTEGER, device INTEGER, stream_id INTEGER, correlation_id INTEGER, bytes INTEGER,
	copy_kind INTEGER, src_kind TEXT, dst_kind TEXT, detail INTEGER, name TEXT, grid TEXT,
	block TEXT, symbol TEXT);
CREATE TABLE gpu_api(correlation_id INTEGER, layer TEXT, cbid INTEGER, tid INTEGER,
	start_ns INTEGER, end_ns INTEGER, name TEXT, cupti_tid INTEGER);
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns, name)
	SELECT c.id, 'runtime', 0, c.tid, c.start_ns, c.start_ns + 1, a.name
	FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name IN ('cudaMemcpyAsync', 'cudaLaunchKernel');
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, bytes,
	copy_kind)
	SELECT 'memcpy', c.start_ns + 50000,
	c.start_ns + 50000 + CASE a.name WHEN 'cudaMemcpyAsync' THEN 2500 ELSE 99000 END,
	0, 7, c.id, 2048, 1 FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name IN ('cudaMemcpyAsync', 'cudaLaunchKernel')" || fail "adding the GPU tables"
"$SYNCSPY" report --format json "$db" >"$tmp/gpu.json" || fail "report (GPU timeline)"
rq "SELECT instr($(field detail), '; the GPU timeline has ' || $(field count)
	|| ' of them: 2.50 us a copy on the copy engine (0.82 GB/s), about ') > 0
	FROM $(findings "$tmp/gpu.json")" >"$tmp/actual"
[ "$(cat "$tmp/actual")" = 1 ] ||
	fail "the copies' GPU time: $(rq "SELECT $(field detail) FROM $(findings "$tmp/gpu.json")")"

# Aggregate mode: no row per copy, so the rule does not run, and the note says so (ANALYSIS-6)
report row-copies SYNCSPY_MODE=aggregate
rq "SELECT count(*) FROM $(findings "$tmp/row-copies.json");
	SELECT count(*) FROM json_each(readfile('$tmp/row-copies.json'),
	'\$.ranks[0].aggregate.rules_not_run') WHERE value = '$rule'" >"$tmp/actual"
printf '0\n1\n' | diff -u - "$tmp/actual" >&2 || fail "aggregate mode (findings, rules not run)"
