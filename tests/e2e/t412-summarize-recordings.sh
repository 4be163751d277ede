#!/bin/sh
# SPDX-License-Identifier: MIT
# t412: summaries of real recordings give their databases' report (SUMMARY-2), where t410's
# synthetic ranks do not reach: the H200 traces of examples/ (GPU timelines, NVTX ranges and
# steps, copies, graphs, static runtimes: JSON and text byte for byte, and `check` with a
# steady warm-up and with none), each traced job with ranks on its own, and recordings made
# here under the shim: a 4-rank NCCL run of the stand-ins (collectives, communicators) beside
# a capture range (cudaProfilerApi: the capture fields and note).
. "$E2E_DIR/lib.sh"
find "$TOP_SRCDIR/examples" -name '*.sqlite' | sort >"$tmp/traces"
: >"$tmp/unranked"
: >"$tmp/ranked"
while read -r f; do
	if [ -n "$("$SQLITE3" "$f" "SELECT value FROM meta WHERE key = 'rank'")" ]; then
		echo "$f" >>"$tmp/ranked"
	else
		echo "$f" >>"$tmp/unranked"
	fi
done <"$tmp/traces"
[ "$(wc -l <"$tmp/unranked")" -ge 100 ] || fail "only $(wc -l <"$tmp/unranked") traces without a rank in examples/"
[ -s "$tmp/ranked" ] || fail "no trace with a rank in examples/"

# same DESCRIPTION SUMMARY DB...: report (JSON, text) of SUMMARY is the databases' report
same() {
	what=$1 sum=$2
	shift 2
	"$SYNCSPY" summarize -o "$sum" "$@" 2>"$tmp/err" || { bad "$what: summarize: $(cat "$tmp/err")"; return; }
	for f in json text; do
		"$SYNCSPY" report --format $f -o "$tmp/direct.$f" "$@" 2>"$tmp/err" || { bad "$what: report: $(cat "$tmp/err")"; return; }
		"$SYNCSPY" report --format $f -o "$tmp/sum.$f" "$sum" 2>"$tmp/err" || { bad "$what: report of the summary: $(cat "$tmp/err")"; return; }
		cmp -s "$tmp/direct.$f" "$tmp/sum.$f" || bad "$what: $f of the summary differs: $(diff "$tmp/direct.$f" "$tmp/sum.$f" | head -8)"
	done
}

# shellcheck disable=SC2046 # paths without spaces
same "examples' traces" "$tmp/traces.summary" $(cat "$tmp/unranked")
[ "$(rq "SELECT json_array_length(readfile('$tmp/sum.json'), '\$.findings') > 50")" = 1 ] ||
	bad "the traces' summary holds few findings"
echo '{"version": 1, "warmup": {"steady": true}, "limits": [{"class": "sync", "per_rank": true, "max_count_per_step": 2}, {"class": "S1", "max_count": 0}]}' >"$tmp/steady.json"
echo '{"version": 1, "allow": ["*train*"], "limits": [{"class": "sync", "max_count": 100}, {"api": "cudaStreamSynchronize", "max_blocked_ms": 1}]}' >"$tmp/none.json"
for b in steady none; do
	# shellcheck disable=SC2046
	"$SYNCSPY" check --budget "$tmp/$b.json" $(cat "$tmp/unranked") >"$tmp/check-db" 2>&1
	rc_db=$?
	"$SYNCSPY" check --budget "$tmp/$b.json" "$tmp/traces.summary" >"$tmp/check-sum" 2>&1
	rc_sum=$?
	[ $rc_db -le 1 ] || bad "check ($b) of the traces: exit $rc_db: $(head -3 "$tmp/check-db")"
	[ $rc_sum = $rc_db ] || bad "check ($b) of the summary: exit $rc_sum, of the traces $rc_db"
	cmp -s "$tmp/check-db" "$tmp/check-sum" || bad "check ($b) of the summary differs: $(diff "$tmp/check-db" "$tmp/check-sum" | head -8)"
done

n=0
while read -r f; do
	n=$((n + 1))
	same "$(basename "$f")" "$tmp/ranked$n.summary" "$f"
done <"$tmp/ranked"

# Recorded here: 4 NCCL ranks and a capture range, one summary.
under_shim env SYNCSPY_QUIET=1 "$PROGS/scenarios" nccl 4 >/dev/null || fail "scenario nccl 4"
"$SYNCSPY" run -o "$out/capture" --capture-range cudaProfilerApi "$PROGS/capture" profiler >/dev/null 2>"$tmp/err" ||
	fail "run --capture-range: $(cat "$tmp/err")"
[ "$(ls "$out"/*.sqlite | wc -l)" = 4 ] || fail "want 4 NCCL databases: $(ls "$out")"
same "NCCL ranks and a capture range" "$tmp/here.summary" "$out" "$out/capture"
grep -q 'capture range (cudaProfilerApi)' "$tmp/sum.text" || bad "the capture range's note is not in the summary's report: $(cat "$tmp/sum.text")"
[ "$(rq "SELECT count(*) FROM json_each(readfile('$tmp/sum.json'), '\$.ranks') WHERE json_extract(value, '\$.rank') >= 0")" = 4 ] ||
	bad "the summary's report has not 4 NCCL ranks"
finish
