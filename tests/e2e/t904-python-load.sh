#!/bin/sh
# SPDX-License-Identifier: MIT
# t904: syncspy.load(DIR_OR_DB) (docs/python.md): the calls, GPU activity, findings, steps,
# ranks and ranges of a recording, as lists of dicts without pandas and as pandas DataFrames
# with it (Debian's python3-pandas), the same rows either way: the calls and GPU rows are the
# databases' (api_calls, gpu_activity), the findings and per-step figures the command's report
# (syncspy report --format json). An H200 trace (examples/traces) and a directory of two;
# a missing path and a file that is no database are one clear ValueError; a row of unfinished
# work (no time) is left out of the GPU rows.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/python-lib.sh"
SYNCSPY_QUIET=1 # reading recordings needs no shim: no warning that this process is not recorded
export SYNCSPY_QUIET
make_wheel
make_venv "$tmp/plain"
trace=$TOP_SRCDIR/examples/traces/08_item_per_step-bad-shared.sqlite
db=$trace
calls=$(q "SELECT count(*) FROM calls")
gpu=$(q "SELECT count(*) FROM gpu_activity")
syncs=$(q "SELECT sum(count) FROM calls WHERE class LIKE 'S%'")
"$SYNCSPY" report --format json "$trace" >"$tmp/report.json" || fail "syncspy report failed"
findings=$(rq "SELECT json_array_length(readfile('$tmp/report.json'), '\$.findings')")
rules=$(rq "SELECT group_concat(rule, ' ') FROM (SELECT DISTINCT json_extract(value, '\$.rule') AS rule
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.findings')) ORDER BY rule)")
steps=$(rq "SELECT json_extract(readfile('$tmp/report.json'), '\$.ranks[0].steps.source') || '/' ||
	json_extract(readfile('$tmp/report.json'), '\$.ranks[0].steps.count')")
ranges=$(rq "SELECT json_array_length(readfile('$tmp/report.json'), '\$.ranges')")
expected() { # expected KIND: the output of py_load.py with tables of KIND
	cat <<END
calls: $1 $calls
gpu: $1 $gpu
aggregates: $1 0
findings: $1 $findings
steps: $1 1
ranks: $1 1
ranges: $1 $ranges
rules: $rules
steps: $steps
sync points: $syncs
first call: $(q "SELECT api FROM api_calls ORDER BY start_ns, id LIMIT 1") True
<syncspy.Recording of 1 database(s): calls=$calls, gpu=$gpu, aggregates=0, findings=$findings, steps=1, ranks=1, ranges=$ranges>
END
}
"$tmp/plain/bin/python" "$TOP_SRCDIR/tests/progs/py_load.py" "$trace" lists >"$tmp/lists.out" 2>&1 ||
	fail "load without pandas: $(cat "$tmp/lists.out")"
expected builtins.list | diff -u - "$tmp/lists.out" >&2 || fail "load without pandas: unexpected"
"$tmp/plain/bin/python" -c 'import syncspy; syncspy.load("'"$trace"'", pandas=True)' >/dev/null 2>&1 &&
	fail "load(pandas=True) without pandas did not fail"

need_module "$pybase" pandas
make_venv "$tmp/frames" --system-site-packages
"$tmp/frames/bin/python" "$TOP_SRCDIR/tests/progs/py_load.py" "$trace" pandas >"$tmp/pandas.out" 2>&1 ||
	fail "load with pandas: $(cat "$tmp/pandas.out")"
expected pandas.DataFrame | diff -u - "$tmp/pandas.out" >&2 || fail "load with pandas: unexpected"

# a directory of two recordings: both read, each row naming its database
mkdir -p "$tmp/dir"
cp "$trace" "$tmp/dir/a.sqlite"
cp "$TOP_SRCDIR/examples/traces/08_item_per_step-fixed-shared.sqlite" "$tmp/dir/b.sqlite"
db=$tmp/dir/b.sqlite
both=$((calls + $(q "SELECT count(*) FROM calls")))
"$tmp/plain/bin/python" -c '
import sys, syncspy
r = syncspy.load(sys.argv[1])
print(len(r.databases), len(r.calls), len(r.ranks), sorted({c["database"].rsplit("/", 1)[1] for c in r.calls}))' \
	"$tmp/dir" >"$tmp/dir.out" 2>&1 || fail "load of a directory: $(cat "$tmp/dir.out")"
[ "$(cat "$tmp/dir.out")" = "2 $both 2 ['a.sqlite', 'b.sqlite']" ] || fail "load of a directory: $(cat "$tmp/dir.out")"

# a row of work CUPTI handed over unfinished (start and end 0, as a forced flush gives it: the
# corpus traces recorded before the shim dropped them hold such rows) is no GPU activity
cp "$trace" "$tmp/unfinished.sqlite"
"$SQLITE3" "$tmp/unfinished.sqlite" "INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id,
	correlation_id) VALUES ('kernel', 0, 0, 0, 7, 1)" || fail "the unfinished row"
"$tmp/plain/bin/python" -c '
import sys, syncspy
print(len(syncspy.load(sys.argv[1]).gpu))' "$tmp/unfinished.sqlite" >"$tmp/unfinished.out" 2>&1 ||
	fail "load of the unfinished row: $(cat "$tmp/unfinished.out")"
[ "$(cat "$tmp/unfinished.out")" = "$gpu" ] || fail "load kept the unfinished row: $(cat "$tmp/unfinished.out") of $gpu"

# bad input: one ValueError each, naming the path
echo "not a database" >"$tmp/junk.sqlite"
for path in "$tmp/missing" "$tmp/junk.sqlite" "$tmp/empty-dir"; do
	[ "$path" = "$tmp/empty-dir" ] && mkdir -p "$path"
	"$tmp/plain/bin/python" -c '
import sys, syncspy
try:
    syncspy.load(sys.argv[1])
except ValueError as e:
    print("ValueError:", e)' "$path" >"$tmp/bad.out" 2>&1
	grep -q "^ValueError: .*$path" "$tmp/bad.out" || fail "load($path): $(cat "$tmp/bad.out")"
done
exit 0
