#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t103-info-doc-queries.sh: every example query of docs/schema.md still runs against
# the fixture database (tests/fixtures/make-db.sh) and prints the output the page shows, so the
# page cannot drift from the schema.
#
# env: SYNCSPY (default ../report/syncspy, from the tests build directory), SQLITE3 (default
# sqlite3). Exit 0 pass, 1 fail, 77 skip.

SYNCSPY=${SYNCSPY:-../report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
export SYNCSPY SQLITE3
here=$(dirname "$0")
doc="$here/../../docs/schema.md"

command -v "$SQLITE3" >/dev/null 2>&1 || { echo "SKIP: no $SQLITE3 command"; exit 77; }
[ -x "$SYNCSPY" ] || { echo "FAIL: $SYNCSPY is not built"; exit 1; }
[ -f "$doc" ] || { echo "SKIP: $doc not found"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t103.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

sh "$here/../fixtures/make-db.sh" "$tmp/rank0.sqlite" || { echo "FAIL: make-db.sh"; exit 1; }

# Split the page into query N (a ```sql block) and expected output N (the ``` block after it).
awk -v dir="$tmp" '
	/^```sql$/ { n++; file = dir "/q" n ".sql"; inside = 1; next }
	/^```$/ && inside == 0 && n > 0 && !(n in seen) { file = dir "/q" n ".expected"; seen[n] = 1;
		inside = 2; next }
	/^```$/ { inside = 0; next }
	inside { print > file }
' "$doc"

queries=0
failures=0
for q in "$tmp"/q*.sql; do
	[ -f "$q" ] || break
	queries=$((queries + 1))
	expected="${q%.sql}.expected"
	"$SQLITE3" -readonly -header -column "$tmp/rank0.sqlite" <"$q" 2>&1 |
		sed 's/ *$//' >"${q%.sql}.out"
	if ! diff -u "$expected" "${q%.sql}.out" >"${q%.sql}.diff"; then
		echo "FAIL: docs/schema.md query $(basename "$q" .sql):"
		cat "$q" "${q%.sql}.diff"
		failures=$((failures + 1))
	fi
done
[ $queries -ge 5 ] || { echo "FAIL: found $queries example queries in $doc (want 5 or more)"; exit 1; }
[ $failures = 0 ] || exit 1
echo "PASS ($queries queries)"
exit 0
