#!/bin/sh
# SPDX-License-Identifier: MIT
# t401: `syncspy dump` on a recorded scenario (e123: event records and waits), times and ids
# normalized: TSV by default (a "# PATH" line, a header, rows in time order), --table,
# --where (SQL, read-only), CSV and JSON with the same rows.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" e123 >/dev/null 2>&1 || fail "scenario e123 failed"
one_db
"$SYNCSPY" dump --where "class IN ('E2', 'E3') AND id < 12" "$db" >"$tmp/raw" 2>"$tmp/err" || fail "dump exited $?: $(cat "$tmp/err")"
# Times, tids, handles and call sites vary from run to run.
awk -F'\t' 'BEGIN { OFS = "\t" }
	/^#/ { print "# DB"; next }
	NR == 2 { print; next }
	{ $4 = "T"; $5 = "T"; $6 = "TID"; if ($7 ~ /^0x/) $7 = "S"; if ($11 != "") $11 = "SITE"; if ($12 != "") $12 = "EV"; print }' "$tmp/raw" >"$tmp/actual"
printf '# DB
id\tapi\tclass\tstart_ns\tend_ns\ttid\tstream\tbytes\thost_mem\tret\tsite\tevent\tcomm\tdir\tcount\taux\tlayer\tptr\tpy_stack\tnative_stack
5\tcudaEventRecord\tE2\tT\tT\tTID\tS\t\t\t0\tSITE\tEV\t\t\t1\t\truntime\t\t\t
6\tcudaStreamWaitEvent\tE3\tT\tT\tTID\tS\t\t\t0\tSITE\tEV\t\t\t1\t0\truntime\t\t\t
9\tcudaEventRecord\tE2\tT\tT\tTID\tS\t\t\t0\tSITE\tEV\t\t\t1\t\truntime\t\t\t
10\tcudaStreamWaitEvent\tE3\tT\tT\tTID\tS\t\t\t0\tSITE\tEV\t\t\t1\t0\truntime\t\t\t
' >"$tmp/expected"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "dump TSV differs"

# Every table and view dumps; meta as CSV.
for t in calls api_calls meta sites threads comms streams stacks; do
	"$SYNCSPY" dump --table $t --format csv "$db" >/dev/null || fail "dump --table $t"
done
"$SYNCSPY" dump --table meta --format csv --where "key IN ('schema_version', 'exit_reason')" "$db" | sed 1d >"$tmp/actual"
printf 'key,value\nexit_reason,exit\nschema_version,4\n' >"$tmp/expected"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "dump CSV differs"

# JSON: one array, an object per database, the rows' values typed.
"$SYNCSPY" dump --format json --where "class = 'E3'" "$db" "$db" >"$tmp/out.json" || fail "dump json exited $?"
"$PYTHON3" - "$tmp/out.json" <<'END' || fail "dump JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d) == 2 and d[0]["table"] == "api_calls", d
rows = d[0]["rows"]
assert len(rows) == 10 and all(r["class"] == "E3" and r["api"] == "cudaStreamWaitEvent" for r in rows), rows
assert list(rows[0])[:4] == ["id", "api", "class", "start_ns"] and isinstance(rows[0]["start_ns"], int)
assert [r["start_ns"] for r in rows] == sorted(r["start_ns"] for r in rows)
END

# --where cannot write; bad input is exit 2 with one message.
"$SYNCSPY" dump --where "1; DELETE FROM calls" "$db" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "a statement in --where should be an input error"
"$SYNCSPY" dump --table nope "$db" 2>/dev/null
[ $? -eq 2 ] || fail "unknown table should exit 2"
# The GPU timeline's tables in a recording without one (no CUPTI): exit 2, one line saying so.
"$SYNCSPY" dump --table gpu_api "$db" >/dev/null 2>"$tmp/nogpu.err"
[ $? -eq 2 ] || fail "gpu_api without a GPU timeline should exit 2"
[ "$(cat "$tmp/nogpu.err")" = "syncspy: dump: $db: no table 'gpu_api' (the GPU timeline's: this recording has none)" ] ||
	fail "gpu_api without a GPU timeline: $(cat "$tmp/nogpu.err")"
[ "$(q "SELECT count(*) FROM calls WHERE class = 'E3'")" = 10 ] || fail "the database changed"
exit 0
