#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t101-info-bad-input.sh: every kind of bad input to `syncspy info` (and bad usage of
# the command) exits 2 with one line on stderr that starts "syncspy: " and says what is wrong.
#
# env: SYNCSPY (default ../report/syncspy, from the tests build directory), SQLITE3 (default
# sqlite3). Exit 0 pass, 1 fail, 77 skip.

SYNCSPY=${SYNCSPY:-../report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
export SYNCSPY SQLITE3
make_db="$(dirname "$0")/../fixtures/make-db.sh"

command -v "$SQLITE3" >/dev/null 2>&1 || { echo "SKIP: no $SQLITE3 command"; exit 77; }
[ -x "$SYNCSPY" ] || { echo "FAIL: $SYNCSPY is not built"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t101.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect CODE MESSAGE-SUBSTRING COMMAND...: the exit code, and exactly one stderr line, which
# starts with "syncspy: " and contains the substring.
expect() {
	want_code=$1 want_msg=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	code=$?
	lines=$(wc -l <"$tmp/err")
	if [ "$code" != "$want_code" ] || [ "$lines" != 1 ] ||
		! grep -q '^syncspy: ' "$tmp/err" || ! grep -qF -- "$want_msg" "$tmp/err"; then
		echo "FAIL: $* -> exit $code (want $want_code), stderr:"
		sed 's/^/    /' "$tmp/err"
		echo "    (want one line with: $want_msg)"
		failures=$((failures + 1))
	fi
}

sh "$make_db" "$tmp/good.sqlite" || { echo "FAIL: make-db.sh"; exit 1; }

# Files that are not syncspy databases.
echo "rank 0 finished" >"$tmp/notes.txt"
expect 2 "notes.txt: not a syncspy database (not SQLite)" "$SYNCSPY" info "$tmp/notes.txt"
head -c 4096 /dev/zero | tr '\0' '\252' >"$tmp/binary.sqlite"
expect 2 "binary.sqlite: not a syncspy database (not SQLite)" "$SYNCSPY" info "$tmp/binary.sqlite"
: >"$tmp/empty.sqlite"
expect 2 "empty.sqlite: not a syncspy database (empty file)" "$SYNCSPY" info "$tmp/empty.sqlite"
"$SQLITE3" "$tmp/other.sqlite" "CREATE TABLE t(a); INSERT INTO t VALUES(1);"
expect 2 "other.sqlite: not a syncspy database (no meta table)" "$SYNCSPY" info "$tmp/other.sqlite"
sh "$make_db" --no-version "$tmp/noversion.sqlite"
expect 2 "noversion.sqlite: not a syncspy database (no schema_version" \
	"$SYNCSPY" info "$tmp/noversion.sqlite"

# A syncspy database of another version, and damaged ones.
sh "$make_db" --schema-version 5 "$tmp/v2.sqlite"
expect 2 "v2.sqlite: unknown schema version 5 (this syncspy reads 2 to 4)" "$SYNCSPY" info "$tmp/v2.sqlite"
head -c 3000 "$tmp/good.sqlite" >"$tmp/truncated.sqlite"
expect 2 "truncated.sqlite: corrupt or truncated database" "$SYNCSPY" info "$tmp/truncated.sqlite"
cp "$tmp/good.sqlite" "$tmp/noview.sqlite"
"$SQLITE3" "$tmp/noview.sqlite" "DROP VIEW api_calls;"
expect 2 "noview.sqlite: damaged syncspy database: no view 'api_calls'" \
	"$SYNCSPY" info "$tmp/noview.sqlite"
cp "$tmp/good.sqlite" "$tmp/extracol.sqlite"
"$SQLITE3" "$tmp/extracol.sqlite" "ALTER TABLE calls ADD COLUMN extra;"
expect 2 "extracol.sqlite: damaged syncspy database: table 'calls' has columns" \
	"$SYNCSPY" info "$tmp/extracol.sqlite"
# Pages past the first few overwritten: only a full read (--check) is sure to see it.
cp "$tmp/good.sqlite" "$tmp/scribbled.sqlite"
head -c 16384 /dev/zero | tr '\0' '\377' |
	dd of="$tmp/scribbled.sqlite" bs=4096 seek=4 conv=notrunc 2>/dev/null
expect 2 "scribbled.sqlite: corrupt or truncated database" \
	"$SYNCSPY" info --check "$tmp/scribbled.sqlite"

# Paths that hold no database.
mkdir "$tmp/emptydir"
expect 2 "no syncspy databases in $tmp/emptydir" "$SYNCSPY" info "$tmp/emptydir"
expect 2 "missing.sqlite: No such file or directory" "$SYNCSPY" info "$tmp/missing.sqlite"

# One bad database among good ones: the good ones are still printed, the exit code is 2.
expect 2 "v2.sqlite: unknown schema version 5" "$SYNCSPY" info "$tmp/good.sqlite" "$tmp/v2.sqlite"
grep -q "^== $tmp/good.sqlite\$" "$tmp/out" || {
	echo "FAIL: the good database was not printed next to a bad one"
	failures=$((failures + 1))
}

# Usage errors.
expect 2 "unknown command 'frobnicate'" "$SYNCSPY" frobnicate
expect 2 "info: name at least one database or directory" "$SYNCSPY" info
expect 2 "info: unknown option --frob" "$SYNCSPY" info --frob "$tmp/good.sqlite"
expect 2 "help: unknown topic 'frobnicate'" "$SYNCSPY" help frobnicate
"$SYNCSPY" >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: syncspy without a command must exit 2"; failures=$((failures + 1)); }

# And the good one reads (the checks above were not vacuous).
"$SYNCSPY" info --check "$tmp/good.sqlite" >/dev/null || {
	echo "FAIL: info --check on the good database"
	failures=$((failures + 1))
}

[ $failures = 0 ] || exit 1
echo "PASS"
exit 0
