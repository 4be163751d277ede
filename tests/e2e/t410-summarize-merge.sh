#!/bin/sh
# SPDX-License-Identifier: MIT
# t410: `syncspy summarize` (issue 17 item 3; docs/cli.md "Large jobs"; SUMMARY-2). 1,024 ranks
# made by bench/report-scale.sh (2,000 calls each: about 160 MB, a few seconds to build),
# summarized in 8 parts as 8 nodes would: the JSON report of the 8 summaries is byte for byte
# the report of the 1,024 databases (the summaries keep the databases' paths), with the
# cross-rank findings (nccl-straggler, rank-imbalance) among them, and so is the report of 7
# summaries beside the databases of the 8th part; `check` gives the same output and exit status
# on summaries as on the databases, with a steady warm-up and with none; the 8 summaries
# together are at most 1% of the databases' size. No timing asserted:
# bench/summarize-scale.sh measures the merge.
. "$E2E_DIR/lib.sh"
job=$tmp/job
GENERATE_ONLY=1 RANKS=1024 CALLS=2000 WORK=$job SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/bench/report-scale.sh" \
	>"$tmp/bench.out" 2>&1 || fail "bench/report-scale.sh: $(cat "$tmp/bench.out")"
ls "$job"/*.sqlite >"$tmp/all"
[ "$(wc -l <"$tmp/all")" = 1024 ] || fail "want 1024 databases, got $(wc -l <"$tmp/all")"
split -n l/8 -d "$tmp/all" "$tmp/part" || fail "split"
for p in "$tmp"/part0[0-7]; do
	# shellcheck disable=SC2046 # one name per line, no spaces
	"$SYNCSPY" summarize -o "$p.summary" $(cat "$p") 2>"$tmp/err" || fail "summarize $p: $(cat "$tmp/err")"
	[ -s "$tmp/err" ] && bad "summarize $p wrote on stderr: $(cat "$tmp/err")"
done

"$SYNCSPY" report --format json -o "$tmp/direct.json" "$job" 2>"$tmp/err" || fail "report: $(cat "$tmp/err")"
"$SYNCSPY" report --format json -o "$tmp/merged.json" "$tmp"/part0?.summary 2>"$tmp/err" ||
	fail "report of the summaries: $(cat "$tmp/err")"
[ "$(rq "SELECT json_array_length(readfile('$tmp/merged.json'), '\$.ranks')")" = 1024 ] ||
	bad "the merged report has not 1024 ranks"
[ "$(rq "SELECT json_array_length(readfile('$tmp/merged.json'), '\$.findings') >= 5")" = 1 ] ||
	bad "the merged report has almost no findings: $(rq "SELECT json_extract(readfile('$tmp/merged.json'), '\$.findings')")"
# the cross-rank rules ran on the summaries' collectives and totals
for rule in nccl-straggler rank-imbalance host-sync; do
	[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/merged.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = '$rule'")" -ge 1 ] || bad "no $rule finding from the summaries"
done
cmp -s "$tmp/direct.json" "$tmp/merged.json" || bad "JSON of the summaries differs from the databases': $(diff "$tmp/direct.json" "$tmp/merged.json" | head -20)"

# Mixed: the summaries of parts 0-6, the databases of part 7.
# shellcheck disable=SC2046
"$SYNCSPY" report --format json -o "$tmp/mixed.json" "$tmp"/part0[0-6].summary $(cat "$tmp"/part07) 2>"$tmp/err" ||
	fail "report of summaries and databases: $(cat "$tmp/err")"
cmp -s "$tmp/direct.json" "$tmp/mixed.json" || bad "JSON of summaries and databases differs: $(diff "$tmp/direct.json" "$tmp/mixed.json" | head -20)"

# check: the same lines and exit status, warm-up steady and none.
echo '{"version": 1, "warmup": {"steady": true}, "limits": [{"class": "sync", "per_rank": true, "max_count_per_step": 15},
 {"class": "S2", "max_blocked_ms": 10}, {"api": "cudaMalloc", "site": "train.py:*", "max_count": 100}]}' >"$tmp/steady.json"
echo '{"version": 1, "allow": ["train.py:107"], "limits": [{"class": "sync", "max_count": 1000},
 {"api": "cudaStreamSynchronize", "per_rank": true, "max_blocked_ms": 0.5}]}' >"$tmp/none.json"
for b in steady none; do
	"$SYNCSPY" check --budget "$tmp/$b.json" "$job" >"$tmp/check-db.$b" 2>&1
	rc_db=$?
	"$SYNCSPY" check --budget "$tmp/$b.json" "$tmp"/part0?.summary >"$tmp/check-sum.$b" 2>&1
	rc_sum=$?
	[ $rc_db = 1 ] || bad "check ($b) of the databases: exit $rc_db, want 1 (over budget): $(head -3 "$tmp/check-db.$b")"
	[ $rc_sum = $rc_db ] || bad "check ($b) of the summaries: exit $rc_sum, of the databases $rc_db"
	cmp -s "$tmp/check-db.$b" "$tmp/check-sum.$b" || bad "check ($b) of the summaries differs: $(diff "$tmp/check-db.$b" "$tmp/check-sum.$b" | head -10)"
done
# Size: the 8 summaries together at most 1% of the databases.
dbs=$(cat "$tmp/all" | xargs cat | wc -c)
sums=$(cat "$tmp"/part0?.summary | wc -c)
[ $((sums * 100)) -le "$dbs" ] || bad "summaries $sums bytes, databases $dbs bytes: over 1%"
finish
