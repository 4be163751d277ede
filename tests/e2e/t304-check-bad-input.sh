#!/bin/sh
# SPDX-License-Identifier: MIT
# t304: bad input to `syncspy check` exits 2 with one line on stderr that starts "syncspy: ":
# malformed budgets (the JSON path of the problem in the message), a missing budget file, bad
# databases (db.c's messages), bad usage. Nothing is checked and no JUnit file is written.
. "$E2E_DIR/lib.sh"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/good.sqlite" || fail "make-db.sh"
cd "$tmp" || fail "cd"
failures=0

# expect MESSAGE-SUBSTRING COMMAND...: exit 2, one stderr line "syncspy: ..." with the substring
expect() {
	want_msg=$1
	shift
	"$@" >out 2>err
	code=$?
	if [ "$code" != 2 ] || [ "$(wc -l <err)" != 1 ] || ! grep -q '^syncspy: ' err ||
		! grep -qF -- "$want_msg" err || [ -e junit.xml ]; then
		echo "FAIL: $* -> exit $code (want 2), stderr:" >&2
		sed 's/^/    /' err >&2
		echo "    (want one line with: $want_msg)" >&2
		failures=$((failures + 1))
	fi
	rm -f junit.xml
}

# budget JSON MESSAGE: the budget text, and the message it must give
budget() {
	printf '%s\n' "$1" >b.json
	expect "syncspy: b.json: $2" "$SYNCSPY" check --budget b.json --junit junit.xml good.sqlite
}

ok='{"max_count": 1}'
budget 'limits: []' 'not valid JSON'
budget '' 'not valid JSON (the file is empty)'
budget '{"version": 1, "limits": [{"max_count": 1},]}' 'not valid JSON'
budget '[]' '$: expected an object'
budget "{\"limits\": [$ok]}" '$.version: missing (this syncspy reads budget version 1)'
budget "{\"version\": 2, \"limits\": [$ok]}" '$.version: unknown budget version 2 (this syncspy reads 1)'
budget '{"version": "1", "limits": []}' '$.version: expected a non-negative integer'
budget "{\"version\": 1, \"limit\": [$ok]}" '$.limit: unknown key (expected one of: version, warmup, allow, limits)'
budget '{"version": 1}' '$.limits: missing (a budget needs at least one limit)'
budget '{"version": 1, "limits": []}' '$.limits: empty (a budget needs at least one limit)'
budget '{"version": 1, "limits": {}}' '$.limits: expected an array'
budget "{\"version\": 1, \"limits\": [$ok, 3]}" '$.limits[1]: expected an object (a limit)'
budget '{"version": 1, "limits": [{"max_count": 1}, {"max_count": 2}, {"max_count": -1}]}' \
	'$.limits[2].max_count: expected a non-negative integer'
budget '{"version": 1, "limits": [{"max_count": 1.5}]}' '$.limits[0].max_count: expected a non-negative integer'
budget '{"version": 1, "limits": [{"max_blocked_ms": -0.5}]}' '$.limits[0].max_blocked_ms: expected a non-negative number'
budget '{"version": 1, "limits": [{"max_blocked_ms": "5"}]}' '$.limits[0].max_blocked_ms: expected a non-negative number'
budget '{"version": 1, "limits": [{"max_blocked_ms": 1e999}]}' '$.limits[0].max_blocked_ms: expected a non-negative number'
budget '{"version": 1, "limits": [{"max_count": 1, "max_cuont": 2}]}' '$.limits[0].max_cuont: unknown key'
budget '{"version": 1, "limits": [{"max_count": 1, "max_count": 2}]}' '$.limits[0].max_count: duplicate key'
budget '{"version": 1, "limits": [{"class": "E1", "max_count": 1}]}' '$.limits[0].class: expected "sync" or one of S1, S2, S3, S4, S5, S6, S7'
budget '{"version": 1, "limits": [{"class": "S1"}]}' '$.limits[0]: no maximum: give max_count, max_blocked_ms, max_count_per_step or max_blocked_ms_per_step'
budget '{"version": 1, "limits": [{"site": "", "max_count": 1}]}' '$.limits[0].site: expected a non-empty string'
budget '{"version": 1, "limits": [{"per_rank": 1, "max_count": 1}]}' '$.limits[0].per_rank: expected true or false'
budget '{"version": 1, "limits": [{"rank": 0, "per_rank": true, "max_count": 1}]}' '$.limits[0].per_rank: cannot be combined with "rank"'
budget '{"version": 1, "limits": [{"range": "step", "max_count": 1}]}' '$.limits[0].max_count: a limit with "range" takes'
budget '{"version": 1, "limits": [{"max_count_per_range": 1}]}' '$.limits[0].max_count_per_range: needs "range"'
budget '{"version": 1, "limits": [{"api": "cudaStreamSync", "max_count": 1}]}' '$.limits[0].api: no API named "cudaStreamSync" in the recordings'
budget "{\"version\": 1, \"warmup\": {}, \"limits\": [$ok]}" '$.warmup: expected exactly one of "seconds", "calls" or "steady"'
budget "{\"version\": 1, \"warmup\": {\"seconds\": 1, \"calls\": 3}, \"limits\": [$ok]}" '$.warmup: expected exactly one of'
budget "{\"version\": 1, \"warmup\": {\"steps\": 3}, \"limits\": [$ok]}" '$.warmup.steps: unknown key (expected one of: seconds, calls, steady)'
budget "{\"version\": 1, \"warmup\": 2, \"limits\": [$ok]}" '$.warmup: expected an object'
budget "{\"version\": 1, \"allow\": \"*\", \"limits\": [$ok]}" '$.allow: expected an array'
budget "{\"version\": 1, \"allow\": [\"a\", 3], \"limits\": [$ok]}" '$.allow[1]: expected a non-empty string'
budget "{\"version\": 1, \"odd key\": 1, \"limits\": [$ok]}" '$."odd key": unknown key'

# The budget file itself.
expect "syncspy: missing.json: No such file or directory" "$SYNCSPY" check --budget missing.json good.sqlite
expect "syncspy: $tmp: " "$SYNCSPY" check --budget "$tmp" good.sqlite

# Bad databases: db.c's messages, even when another database is good.
printf '{"version": 1, "limits": [{"max_count": 100}]}\n' >b.json
echo "not a database" >notes.sqlite
expect "notes.sqlite: not a syncspy database (not SQLite)" "$SYNCSPY" check --budget b.json good.sqlite notes.sqlite
: >empty.sqlite
expect "empty.sqlite: not a syncspy database (empty file)" "$SYNCSPY" check --budget b.json empty.sqlite
head -c 3000 good.sqlite >truncated.sqlite
expect "truncated.sqlite: corrupt or truncated database" "$SYNCSPY" check --budget b.json truncated.sqlite
expect "nothere.sqlite: No such file or directory" "$SYNCSPY" check --budget b.json nothere.sqlite
mkdir emptydir
expect "no syncspy databases in emptydir" "$SYNCSPY" check --budget b.json emptydir

# Usage.
expect "check: --budget FILE is required" "$SYNCSPY" check good.sqlite
expect "check: name at least one database or directory" "$SYNCSPY" check --budget b.json
expect "check: unknown option --budjet" "$SYNCSPY" check --budjet b.json good.sqlite
expect "check: option --budget needs an argument" "$SYNCSPY" check --budget
expect "check: --top x: expected a number from 0 to 1000" "$SYNCSPY" check --top x --budget b.json good.sqlite

# A JUnit file that cannot be written: the checks ran, the file is the problem.
"$SYNCSPY" check --budget b.json --junit nodir/j.xml good.sqlite >out 2>err
code=$?
[ $code -eq 2 ] && grep -q '^syncspy: --junit nodir/j.xml: No such file or directory$' err ||
	{ echo "FAIL: --junit nodir/j.xml -> exit $code: $(cat err)" >&2; failures=$((failures + 1)); }

[ $failures -eq 0 ] || fail "$failures cases"
exit 0
