#!/bin/sh
# SPDX-License-Identifier: MIT
# t430: the commands on a database recorded in aggregate mode (ANALYSIS-6), against the same
# program recorded in trace mode (progs/aggregate, 20 marked steps, a helper thread):
#   - report (JSON): the same findings (rule, site, count, phase, steps), the same rank figures
#     (sync points, copies, NCCL operations, calls per API, steps); ranks[].aggregate with the
#     enqueues, aggregates, enqueues per step and the rules not run; the text report has ONE
#     note naming copy-on-compute-stream, managed-round-trip, small-copies-in-loop, copy-without-overlap, copy-held-by-event, upload-behind-download, host-func-blocks-stream, graph-exec-shared and nccl-straggler (trace: none);
#     on progs/steady marked, trace mode's copy-on-compute-stream finding is the one missing;
#   - check: the same verdict, limit by limit, and check --init the same count limits; a warm-up
#     by calls is refused on an aggregate database (exit 2);
#   - info: the same calls per API and class, its aggregate section; export: the sync points
#     (--syncs-only: the same events in both modes) and a note that the enqueues are
#     aggregated; dump of the aggregate tables (not in a trace recording: exit 2);
#   - summarize: the summary's report is the database's; diff trace -> aggregate: no finding
#     gone or new; the HTML page carries the note; a schema version 3 file still reads.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
export SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1
record() { # MODE DIR PROGRAM ARGS...
	mode=$1 dir=$2
	shift 2
	rm -rf "$dir"
	env LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$dir" SYNCSPY_MODE=$mode "$@" >"$tmp/run.out" 2>&1 ||
		fail "$* ($mode) failed: $(cat "$tmp/run.out")"
}
record trace "$tmp/trace" "$PROGS/aggregate" steps 20 launches 50 helper
record aggregate "$tmp/aggregate" "$PROGS/aggregate" steps 20 launches 50 helper
for m in trace aggregate; do
	"$SYNCSPY" report --format json "$tmp/$m" >"$tmp/$m.json" || fail "report --format json ($m)"
	"$SYNCSPY" report "$tmp/$m" >"$tmp/$m.txt" || fail "report ($m)"
done
"$PYTHON3" - "$tmp/trace.json" "$tmp/aggregate.json" <<'END' || fail "the reports differ"
import json, sys
t, a = (json.load(open(p)) for p in sys.argv[1:])
key = lambda f: (f["rule"], f["site"], f["count"], f["phase"], f["steps"])
ft, fa = sorted(map(key, t["findings"])), sorted(map(key, a["findings"]))
assert ft == fa, (ft, fa)
assert len(ft) >= 5, ft
rt, ra = t["ranks"][0], a["ranks"][0]
for k in ("sync_points", "copies", "copy_bytes", "nccl_ops", "calls"):
    assert rt[k] == ra[k], (k, rt[k], ra[k])
for k in ("source", "count", "steady", "sync_points_per_step"):
    assert rt["steps"][k] == ra["steps"][k], (k, rt["steps"], ra["steps"])
assert ra["calls"]["cudaLaunchKernel"] == 20 * (50 + 1 + 3), ra["calls"]
assert "aggregate" not in rt, rt
assert ra["aggregate"] == {"enqueues": 1160, "aggregates": 7, "enqueues_per_step": 58,
    "rules_not_run": ["copy-on-compute-stream", "managed-round-trip", "small-copies-in-loop", "copy-without-overlap", "copy-held-by-event", "upload-behind-download", "host-func-blocks-stream", "graph-exec-shared", "nccl-straggler"]}, ra["aggregate"]
notes = [n for n in a["notes"] if "aggregate mode" in n]
assert len(notes) == 1 and not [n for n in t["notes"] if "aggregate mode" in n], (a["notes"], t["notes"])
END
[ "$(grep -c 'aggregate mode' "$tmp/aggregate.txt")" = 1 ] || fail "text report: $(grep 'aggregate mode' "$tmp/aggregate.txt")"
grep -q '^  - .*: recorded in aggregate mode (SYNCSPY_MODE=aggregate): enqueues are counted per site, not a row each, so copy-on-compute-stream, managed-round-trip, small-copies-in-loop, copy-without-overlap, copy-held-by-event, upload-behind-download, host-func-blocks-stream, graph-exec-shared and nccl-straggler did not run on it' "$tmp/aggregate.txt" ||
	fail "the note: $(grep 'aggregate mode' "$tmp/aggregate.txt")"
grep -q 'aggregate mode' "$tmp/trace.txt" && fail "trace mode's report has an aggregate note"

# The rule that needs rows: copy-on-compute-stream finds steady.c's copy in trace mode only.
record trace "$tmp/st" "$PROGS/steady" marked
record aggregate "$tmp/sa" "$PROGS/steady" marked
"$SYNCSPY" report --format json "$tmp/st" >"$tmp/st.json" && "$SYNCSPY" report --format json "$tmp/sa" >"$tmp/sa.json" ||
	fail "report of steady"
"$PYTHON3" - "$tmp/st.json" "$tmp/sa.json" <<'END' || fail "steady: the reports differ otherwise"
import json, sys
t, a = (json.load(open(p)) for p in sys.argv[1:])
key = lambda f: (f["rule"], f["site"], f["count"], f["phase"], f["steps"])
ft, fa = set(map(key, t["findings"])), set(map(key, a["findings"]))
assert [f[0] for f in ft - fa] == ["copy-on-compute-stream"] and not fa - ft, (ft - fa, fa - ft)
END

# check: the same verdict, limit by limit (blocked times differ run to run)
echo '{"version": 1, "warmup": {"steady": true}, "limits": [{"class": "sync", "max_count_per_step": 10},
	{"class": "S2", "max_count_per_step": 1}, {"class": "S4", "max_count": 0}, {"api": "cudaMalloc", "max_count": 100},
	{"class": "S7", "per_rank": true, "max_count": 36}]}' >"$tmp/budget.json"
for m in trace aggregate; do
	"$SYNCSPY" check --budget "$tmp/budget.json" "$tmp/$m" >"$tmp/$m.check"
	echo "exit $?" >>"$tmp/$m.check"
	grep -E '^(PASS|FAIL|WARN|exit|syncspy check:|budget)' "$tmp/$m.check" | sed 's/\[[^]]*sqlite\]/[DB]/' >"$tmp/$m.verdict"
	"$SYNCSPY" check --init "$tmp/$m" 2>/dev/null | grep -o '"class": "[^"]*", "max_count_per_step": [0-9.]*' >"$tmp/$m.init"
done
grep -q '^FAIL limits\[1\] class=S2: count per step 2.00 > 1' "$tmp/aggregate.verdict" && grep -q '^exit 1' "$tmp/aggregate.verdict" ||
	fail "check: $(cat "$tmp/aggregate.check")"
diff -u "$tmp/trace.verdict" "$tmp/aggregate.verdict" >&2 || fail "check's verdicts differ"
[ -s "$tmp/aggregate.init" ] || fail "check --init wrote no count limit"
diff -u "$tmp/trace.init" "$tmp/aggregate.init" >&2 || fail "check --init's limits differ"
echo '{"version": 1, "warmup": {"calls": 10}, "limits": [{"class": "sync", "max_count": 1000}]}' >"$tmp/calls.json"
"$SYNCSPY" check --budget "$tmp/calls.json" "$tmp/trace" >/dev/null || fail "a warm-up by calls on trace mode"
"$SYNCSPY" check --budget "$tmp/calls.json" "$tmp/aggregate" >/dev/null 2>"$tmp/calls.err"
[ $? -eq 2 ] && grep -q 'recorded in aggregate mode (SYNCSPY_MODE=aggregate): a "warmup" by calls counts every call' "$tmp/calls.err" ||
	fail "a warm-up by calls on aggregate mode: $(cat "$tmp/calls.err")"

# info: the same calls per API and class; the aggregate section
for m in trace aggregate; do
	"$SYNCSPY" info --json "$tmp/$m" >"$tmp/$m.info.json" || fail "info --json ($m)"
	"$SYNCSPY" info "$tmp/$m" >"$tmp/$m.info" || fail "info ($m)"
done
"$PYTHON3" - "$tmp/trace.info.json" "$tmp/aggregate.info.json" <<'END' || fail "info differs"
import json, sys
t, a = (json.load(open(p))[0] for p in sys.argv[1:])
calls = lambda d: [(x["api"], x["class"], x["calls"]) for x in d["apis"]]
assert calls(t) == calls(a), (calls(t), calls(a))
assert [(c["class"], c["calls"]) for c in t["classes"]] == [(c["class"], c["calls"]) for c in a["classes"]]
assert t["sync_points"]["calls"] == a["sync_points"]["calls"]
assert a["aggregate"] == {"enqueues": 1160, "aggregates": 7, "step_figures": 20}, a["aggregate"]
assert "aggregate" not in t
END
grep -A3 '^aggregate mode' "$tmp/aggregate.info" | tr -s ' ' >"$tmp/actual"
printf 'aggregate mode (enqueues counted per site, not a row each):\n enqueues = 1160\n aggregates = 7\n step_figures = 20\n' >"$tmp/expected"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "info's aggregate section"

# export: the rows; the enqueues are not events, and a note says so
for m in trace aggregate; do
	"$SYNCSPY" export -o "$tmp/$m.trace.json" "$tmp/$m" 2>"$tmp/$m.export.err" || fail "export ($m)"
	"$SYNCSPY" export --syncs-only -o "$tmp/$m.syncs.json" "$tmp/$m" 2>/dev/null || fail "export --syncs-only ($m)"
done
grep -q 'note: 1 database recorded in aggregate mode: its sync points and other calls are exported, its enqueues are aggregated per site' "$tmp/aggregate.export.err" ||
	fail "export's note: $(cat "$tmp/aggregate.export.err")"
grep -q 'aggregate mode' "$tmp/trace.export.err" && fail "trace mode's export has the note"
events() { sed -n 's/.* \([0-9]*\) events.*/\1/p' "$1"; }
"$SYNCSPY" export --syncs-only -o "$tmp/t.json" "$tmp/trace" 2>"$tmp/t.err" && "$SYNCSPY" export --syncs-only -o "$tmp/a.json" "$tmp/aggregate" 2>"$tmp/a.err" ||
	fail "export --syncs-only"
[ "$(events "$tmp/t.err")" = "$(events "$tmp/a.err")" ] || fail "--syncs-only: $(cat "$tmp/t.err") / $(cat "$tmp/a.err")"
[ "$(events "$tmp/aggregate.export.err")" -lt "$(($(events "$tmp/trace.export.err") - 1000))" ] ||
	fail "export: $(cat "$tmp/aggregate.export.err") / $(cat "$tmp/trace.export.err")"

# dump: the aggregate tables
"$SYNCSPY" dump --table enqueue_aggregates --format csv "$tmp/aggregate" | sed 1,2d | wc -l >"$tmp/actual"
echo 7 >"$tmp/expected"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "dump --table enqueue_aggregates"
"$SYNCSPY" dump --table step_figures "$tmp/aggregate" >/dev/null && "$SYNCSPY" dump --table enqueue_histogram "$tmp/aggregate" >/dev/null ||
	fail "dump of step_figures, enqueue_histogram"
set -- "$tmp"/trace/*.sqlite
usage_error "syncspy: dump: $1: no table 'step_figures' (aggregate mode's: this recording was made in trace mode)" "$tmp/none" \
	"$SYNCSPY" dump --table step_figures "$1"

# summarize, diff, HTML
"$SYNCSPY" summarize -o "$tmp/a.summary" "$tmp/aggregate" 2>/dev/null || fail "summarize"
"$SYNCSPY" report --format json "$tmp/a.summary" >"$tmp/summary.json" || fail "report of the summary"
cmp "$tmp/aggregate.json" "$tmp/summary.json" >/dev/null || fail "the summary's report differs: $(diff "$tmp/aggregate.json" "$tmp/summary.json" | head -5)"
"$SYNCSPY" diff "$tmp/trace" "$tmp/aggregate" >"$tmp/diff" || fail "diff"
grep -q '^findings: 0 gone, 0 new' "$tmp/diff" || fail "diff: $(cat "$tmp/diff")"
"$SYNCSPY" report --format html -o "$tmp/a.html" "$tmp/aggregate" || fail "report --format html"
grep -q 'recorded in aggregate mode' "$tmp/a.html" || fail "the page lacks the note"

# an older schema still reads
sh "$make_db" --schema-version 3 "$tmp/v3.sqlite"
"$SYNCSPY" report "$tmp/v3.sqlite" >/dev/null && "$SYNCSPY" info "$tmp/v3.sqlite" >/dev/null || fail "a version 3 database"
finish
