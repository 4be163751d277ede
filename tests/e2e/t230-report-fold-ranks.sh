#!/bin/sh
# SPDX-License-Identifier: MIT
# t230: one finding per (rule, site) across the ranks of a job (ANALYSIS-5, docs/rules.md "One
# finding per site across ranks"). Four ranks made by bench/report-scale.sh (the documented
# generator; rank r's stream syncs take r us longer): the job's report has one host-sync finding
# at the stream sync's line, listing ranks 0-3, with exactly the worst rank's (rank 3's) figures
# as a report of rank 3 alone gives them, and the spread of the four single-rank costs per step
# (min rank 0's, median the lower middle rank 1's, max rank 3's); in text, `ranks 0-3 (4, worst
# 3)` and the spread line. Databases without a rank are not folded, and `check` still judges
# per rank.
. "$E2E_DIR/lib.sh"
job=$tmp/job
GENERATE_ONLY=1 RANKS=4 CALLS=2000 WORK=$job SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/bench/report-scale.sh" \
	>"$tmp/bench.out" 2>&1 || fail "bench/report-scale.sh: $(cat "$tmp/bench.out")"
"$SYNCSPY" report --format json -o "$tmp/job.json" "$job" 2>"$tmp/err" || fail "report: $(cat "$tmp/err")"
"$SYNCSPY" report -o "$tmp/job.txt" "$job" 2>"$tmp/err" || fail "report (text): $(cat "$tmp/err")"
for r in 0 1 2 3; do
	"$SYNCSPY" report --format json -o "$tmp/r$r.json" "$job"/syncspy-bench-*-r$r.sqlite ||
		fail "report of rank $r"
done

# The host-sync finding at the stream sync (train.py:105) of one rank's report: FIELD.
finding() { # FILE FIELD
	rq "SELECT json_extract(value, '\$.$2') FROM json_each(json_extract(readfile('$1'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'host-sync' AND json_extract(value, '\$.site') = 'train.py:105'"
}

[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/job.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'host-sync' AND json_extract(value, '\$.site') = 'train.py:105'")" = 1 ] ||
	bad "host-sync at train.py:105: not one finding for the four ranks"
[ "$(rq "SELECT count(*) - count(DISTINCT json_extract(value, '\$.rule') || json_extract(value, '\$.site'))
	FROM json_each(json_extract(readfile('$tmp/job.json'), '\$.findings'))")" = 0 ] ||
	bad "a (rule, site) is reported twice"
[ "$(finding "$tmp/job.json" ranks)" = "[0,1,2,3]" ] || bad "ranks: $(finding "$tmp/job.json" ranks)"
[ "$(finding "$tmp/job.json" spread.worst_rank)" = 3 ] || bad "worst rank: $(finding "$tmp/job.json" spread)"
for field in rank severity count blocked_ns worst_ns cost_ns cost_per_step_ns share detail steps phase; do
	[ "$(finding "$tmp/job.json" $field)" = "$(finding "$tmp/r3.json" $field)" ] ||
		bad "$field: $(finding "$tmp/job.json" $field), rank 3 alone: $(finding "$tmp/r3.json" $field)"
done
for pair in min:0 median:1 max:3; do
	[ "$(finding "$tmp/job.json" spread.cost_per_step_ns_${pair%:*})" = "$(finding "$tmp/r${pair#*:}.json" cost_per_step_ns)" ] ||
		bad "spread ${pair%:*}: $(finding "$tmp/job.json" spread), want rank ${pair#*:}'s $(finding "$tmp/r${pair#*:}.json" cost_per_step_ns)"
done
[ "$(finding "$tmp/r0.json" cost_per_step_ns)" != "$(finding "$tmp/r3.json" cost_per_step_ns)" ] ||
	bad "the generator's ranks do not differ: the spread says nothing"
grep -qx '  \[[a-z]*\] host-sync  ranks 0-3 (4, worst 3)  train.py:105' "$tmp/job.txt" ||
	bad "text: no folded host-sync line: $(grep host-sync "$tmp/job.txt")"
grep -q '^      across the ranks: cost per step min [0-9.]* ms, median [0-9.]* ms, max [0-9.]* ms$' "$tmp/job.txt" ||
	bad "text: no spread line"
# A single-rank report has neither field.
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/r0.json'), '\$.findings'))
	WHERE json_type(value, '\$.ranks') IS NOT NULL OR json_type(value, '\$.spread') IS NOT NULL")" = 0 ] ||
	bad "a single-rank report has ranks or spread"

# Without meta.rank the databases are separate programs: each keeps its finding.
mkdir "$tmp/norank"
cp "$job"/syncspy-bench-*-r0.sqlite "$job"/syncspy-bench-*-r1.sqlite "$tmp/norank/"
for f in "$tmp"/norank/*.sqlite; do
	"$SQLITE3" "$f" "DELETE FROM meta WHERE key IN ('rank', 'world_size')" || fail "cannot edit $f"
done
"$SYNCSPY" report --format json -o "$tmp/norank.json" "$tmp/norank" 2>"$tmp/err" || fail "report: $(cat "$tmp/err")"
[ "$(finding "$tmp/norank.json" site | wc -l)" = 2 ] || bad "databases without a rank were folded"

# check judges each rank: per_rank gives one result per rank, in rank order.
echo '{"version": 1, "limits": [{"class": "S2", "per_rank": true, "max_count": 0}]}' >"$tmp/budget.json"
"$SYNCSPY" check --budget "$tmp/budget.json" "$job" >"$tmp/check.out" 2>&1
[ $? = 1 ] || bad "check: want exit 1 (over budget): $(cat "$tmp/check.out")"
[ "$(grep -c '^FAIL limits\[0\] class=S2 per_rank \[rank [0-3]\]' "$tmp/check.out")" = 4 ] ||
	bad "check per rank: $(cat "$tmp/check.out")"
finish
