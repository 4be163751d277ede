#!/bin/sh
# SPDX-License-Identifier: MIT
# t203: bad input to `syncspy report` gets one line on stderr and exit 2: a file that is not a
# database, a truncated one, an unknown schema version, an empty directory, two files that
# claim one rank of one job from different processes, an unknown format (export's too: the
# formats each command offers, formats.h), no argument. Nothing is written to -o FILE when the
# input is bad.
. "$E2E_DIR/lib.sh"
make_db() {
	SYNCSPY=$SYNCSPY sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$@" || fail "make-db.sh $*"
}
expect() { # expect CODE MESSAGE ARGS...: exit code and the one stderr line (after TMP/ for $tmp)
	code=$1 message=$2
	shift 2
	"$SYNCSPY" report "$@" >"$tmp/stdout" 2>"$tmp/stderr"
	rc=$?
	[ $rc -eq "$code" ] || fail "report $*: exit $rc, expected $code: $(cat "$tmp/stderr")"
	sed "s|$tmp/|TMP/|g" "$tmp/stderr" >"$tmp/actual"
	echo "$message" | diff -u - "$tmp/actual" >&2 || fail "report $*: message"
}
echo "hello" >"$tmp/text.sqlite"
make_db "$tmp/good.sqlite"
head -c 3000 "$tmp/good.sqlite" >"$tmp/cut.sqlite"
make_db --schema-version 9 "$tmp/v9.sqlite"
mkdir "$tmp/empty"
make_db "$tmp/twin.sqlite"
"$SQLITE3" -batch "$tmp/twin.sqlite" "UPDATE meta SET value = 999 WHERE key = 'pid'" || fail "twin"

expect 2 "syncspy: TMP/text.sqlite: not a syncspy database (not SQLite)" "$tmp/text.sqlite"
expect 2 "syncspy: TMP/v9.sqlite: unknown schema version 9 (this syncspy reads 2 to 4)" "$tmp/v9.sqlite"
expect 2 "syncspy: no syncspy databases in TMP/empty" "$tmp/empty"
expect 2 "syncspy: TMP/twin.sqlite: rank 0 of 2 is also recorded by TMP/good.sqlite (pid 4242): name the databases of one run only" "$tmp/good.sqlite" "$tmp/twin.sqlite"
expect 2 "syncspy: report: unknown format 'xml' (text, json or html)" --format xml "$tmp/good.sqlite"
expect 2 "syncspy: report: name at least one database or directory"
expect 2 "syncspy: report: unknown format 'chrome' (text, json or html)" --format chrome "$tmp/good.sqlite"
# A truncated file: its message depends on where it was cut, the exit code does not.
"$SYNCSPY" report "$tmp/cut.sqlite" >/dev/null 2>"$tmp/stderr"
[ $? -eq 2 ] || fail "truncated database: exit $?"
[ "$(wc -l <"$tmp/stderr")" -eq 1 ] || fail "truncated database: $(cat "$tmp/stderr")"
# A bad database among good ones stops the report, and -o FILE is not created.
expect 2 "syncspy: TMP/text.sqlite: not a syncspy database (not SQLite)" -o "$tmp/report.txt" "$tmp/good.sqlite" "$tmp/text.sqlite"
[ -e "$tmp/report.txt" ] && fail "-o FILE written despite bad input"
exit 0
