#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t801-extreme-values.sh: extreme values in a database (issue 18, item 7), documented
# in docs/cli.md ("Databases and directories"):
#   - a time outside 0..2^60 ns (end_ns = INT64_MAX overflowed signed arithmetic) or a
#     meta clock out of range: bad input, exit 2, one line, from report and export alike;
#   - sums that overflow 64 bits (huge byte counts): exit 2, not 3;
#   - an empty calls table: a report with no findings (qsort of nothing);
#   - a call with end_ns < start_ns: 0 ns, never a negative blocked time, and a note.
#
# env: as tests/e2e/lib.sh says. Exit 0 pass, 1 fail.

. "$E2E_DIR/lib.sh"

sh "$make_db" "$tmp/good.sqlite" || { echo "FAIL: make-db.sh"; exit 1; }
mk() { # mk NAME SQL: a copy of the good database changed by SQL
	cp "$tmp/good.sqlite" "$tmp/$1.sqlite"
	"$SQLITE3" "$tmp/$1.sqlite" "$2" || bad "$1: $2"
}

# expect CODE MESSAGE COMMAND...: the exit code and one stderr line containing MESSAGE.
expect() {
	want_code=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	code=$?
	if [ "$code" != "$want_code" ] || [ "$(wc -l <"$tmp/err")" != 1 ] ||
		! grep -qF -- "$want" "$tmp/err"; then
		bad "$* -> exit $code (want $want_code), stderr: $(cat "$tmp/err")"
	fi
}

mk max "UPDATE calls SET end_ns = 9223372036854775807 WHERE id = 5;"
msg="max.sqlite: damaged syncspy database: calls row 5: end_ns out of range (9223372036854775807;"
expect 2 "$msg" "$SYNCSPY" report "$tmp/max.sqlite"
expect 2 "$msg" "$SYNCSPY" report --format json "$tmp/max.sqlite"
expect 2 "$msg" "$SYNCSPY" export -o "$tmp/t.json" "$tmp/max.sqlite"

mk negative "UPDATE calls SET start_ns = -1 WHERE id = 3;"
expect 2 "negative.sqlite: damaged syncspy database: calls row 3: start_ns out of range (-1;" \
	"$SYNCSPY" report "$tmp/negative.sqlite"

mk clock "UPDATE meta SET value = 9223372036854775807 WHERE key = 'start_mono_ns';"
expect 2 "clock.sqlite: damaged syncspy database: meta.start_mono_ns out of range" \
	"$SYNCSPY" report "$tmp/clock.sqlite"
expect 2 "clock.sqlite: damaged syncspy database: meta.start_mono_ns out of range" \
	"$SYNCSPY" export -o "$tmp/t.json" "$tmp/clock.sqlite"

# Each value in range, their sums beyond 64 bits: bad input in every command that sums them.
mk sums "UPDATE calls SET bytes = 9223372036854775807 WHERE bytes IS NOT NULL;
UPDATE calls SET count = 9223372036854775807 WHERE class = 'S7';"
expect 2 "sums.sqlite: damaged syncspy database: its times or byte counts add up beyond 64 bits" \
	"$SYNCSPY" report "$tmp/sums.sqlite"
mk durations "UPDATE calls SET start_ns = 0, end_ns = 1152921504606846976;"
expect 2 "durations.sqlite: damaged syncspy database: its times or byte counts add up" \
	"$SYNCSPY" info "$tmp/durations.sqlite"
echo '{"version": 1, "limits": [{"max_count": 1000}]}' >"$tmp/budget.json"
expect 2 "add up beyond 64 bits" "$SYNCSPY" check --budget "$tmp/budget.json" "$tmp/sums.sqlite"

# No calls at all: a report, no findings, exit 0.
mk empty "DELETE FROM calls;"
for format in text json html; do
	"$SYNCSPY" report --format $format -o "$tmp/empty.$format" "$tmp/empty.sqlite" \
		2>"$tmp/err" || bad "report --format $format of no calls: $(cat "$tmp/err")"
done
"$SYNCSPY" export -o "$tmp/empty.trace" "$tmp/empty.sqlite" 2>/dev/null ||
	bad "export of no calls"

# A call that ends 71 s before it starts: 0 ns and a note, in the report, info and export.
mk backwards "UPDATE calls SET end_ns = start_ns - 71000000000 WHERE id = 23;"
"$SYNCSPY" report "$tmp/backwards.sqlite" >"$tmp/report.txt" 2>"$tmp/err" ||
	bad "report of a call that ends before it starts: $(cat "$tmp/err")"
grep -q -- '-[0-9.]* ms' "$tmp/report.txt" && bad "a negative time in the report: $(grep -- '-[0-9.]* ms' "$tmp/report.txt")"
grep -qF "backwards.sqlite: 1 call with end_ns < start_ns (a clock that went back, or a damaged file): counted as 0 ns" \
	"$tmp/report.txt" || bad "no note of the call that ends before it starts"
"$SYNCSPY" info "$tmp/backwards.sqlite" >"$tmp/info.txt" || bad "info of backwards.sqlite"
grep -q -- ' -[0-9]' "$tmp/info.txt" && bad "a negative total in info: $(grep -- ' -[0-9]' "$tmp/info.txt")"
"$SYNCSPY" export -o "$tmp/back.trace" "$tmp/backwards.sqlite" 2>/dev/null || bad "export of backwards.sqlite"
grep -q '"dur":-' "$tmp/back.trace" && bad "a negative duration in the trace"

# The good database reads as before (no note, exit 0).
"$SYNCSPY" report "$tmp/good.sqlite" >"$tmp/good.txt" || bad "report of the good database"
grep -q "end_ns < start_ns" "$tmp/good.txt" && bad "a note on the good database"

finish
