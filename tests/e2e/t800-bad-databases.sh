#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t800-bad-databases.sh: damaged databases through every reading command (issue 18,
# items 6 and 8). Each one is bad input: exit 2 and one line on stderr, the same line from
# report, check, export, info, dump and diff (never exit 3, "internal"):
#   - a table the api_calls view reads is dropped (the view no longer compiles);
#   - api_calls replaced by a view with other columns;
#   - a BLOB in calls.bytes (report and export must agree);
#   - a page of garbage in the middle of the calls table;
#   - a copy cut inside its last page (SQLite reads the missing end as zeros: rows went
#     missing without a word), and one cut at a page boundary;
#   - a page of garbage where no command looks (READ-1: every command reads every page with
#     PRAGMA quick_check first): in `stacks`, in a table of its own no command reads, in an
#     index (the schema's own and one added), on the freelist's trunk page; a page of garbage
#     on a freelist leaf (no data there) changes nothing;
#   - generated, at least 100 more: every table and view dropped, every column renamed away
#     (a meta column gave exit 3 "SQLite error: no such column" before report/db.c named it),
#     copies cut inside and at the end of every page, and every page overwritten with garbage.
#
# env: SYNCSPY, SQLITE3 (set by tests/Makefile.am). Exit 0 pass, 1 fail, 77 skip.

SYNCSPY=${SYNCSPY:-../report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
export SYNCSPY SQLITE3
make_db="$(dirname "$0")/../fixtures/make-db.sh"

command -v "$SQLITE3" >/dev/null 2>&1 || { echo "SKIP: no $SQLITE3 command"; exit 77; }
[ -x "$SYNCSPY" ] || { echo "FAIL: $SYNCSPY is not built"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t800.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failures=0

sh "$make_db" "$tmp/good.sqlite" || { echo "FAIL: make-db.sh"; exit 1; }
echo '{"version": 1, "limits": [{"max_count": 1000}]}' >"$tmp/budget.json"

# every COMMAND of the matrix, run on one database
run() {
	case $1 in
	report) "$SYNCSPY" report "$2" ;;
	report-json) "$SYNCSPY" report --format json "$2" ;;
	report-html) "$SYNCSPY" report --format html -o "$tmp/r.html" "$2" ;;
	check) "$SYNCSPY" check --budget "$tmp/budget.json" "$2" ;;
	export) "$SYNCSPY" export -o "$tmp/trace.json" "$2" ;;
	info) "$SYNCSPY" info "$2" ;;
	info-json) "$SYNCSPY" info --json "$2" ;;
	dump) "$SYNCSPY" dump "$2" ;;
	dump-json) "$SYNCSPY" dump --format json "$2" ;;
	diff) "$SYNCSPY" diff "$tmp/good.sqlite" "$2" ;;
	esac
}

# expect DB MESSAGE COMMAND...: exit 2, one stderr line "syncspy: DB: MESSAGE..." for each.
expect() {
	db=$1 want=$2
	shift 2
	for command in "$@"; do
		run "$command" "$tmp/$db" >/dev/null 2>"$tmp/err"
		code=$?
		if [ "$code" != 2 ] || [ "$(wc -l <"$tmp/err")" != 1 ] ||
			! grep -qF -- "syncspy: $tmp/$db: $want" "$tmp/err"; then
			echo "FAIL: $command $db -> exit $code (want 2), stderr:"
			sed 's/^/    /' "$tmp/err"
			echo "    (want one line: syncspy: $tmp/$db: $want)"
			failures=$((failures + 1))
		fi
	done
}

# reads DB WHAT: every command reads DB (exit 0)
reads() {
	for command in $all; do
		run "$command" "$tmp/$1" >/dev/null 2>"$tmp/err" || {
			echo "FAIL: $command on $2:"
			sed 's/^/    /' "$tmp/err"
			failures=$((failures + 1))
		}
	done
}

all="report report-json report-html check export info info-json dump dump-json diff"

cp "$tmp/good.sqlite" "$tmp/dropped.sqlite"
"$SQLITE3" "$tmp/dropped.sqlite" "DROP TABLE memkinds;"
expect dropped.sqlite "damaged syncspy database: no table 'memkinds'" $all

cp "$tmp/good.sqlite" "$tmp/view.sqlite"
"$SQLITE3" "$tmp/view.sqlite" "DROP VIEW api_calls; CREATE VIEW api_calls AS SELECT id FROM calls;"
expect view.sqlite "damaged syncspy database: view 'api_calls' has columns (id), schema version" $all

# A view that no longer compiles, its table there: a column it reads renamed away.
cp "$tmp/good.sqlite" "$tmp/viewcol.sqlite"
"$SQLITE3" "$tmp/viewcol.sqlite" "PRAGMA legacy_alter_table = 1; ALTER TABLE dirs RENAME COLUMN name TO title;"
expect viewcol.sqlite "damaged syncspy database: " $all

# A BLOB: the commands that read calls.bytes say so, in db.c's words.
cp "$tmp/good.sqlite" "$tmp/blob.sqlite"
"$SQLITE3" "$tmp/blob.sqlite" "UPDATE calls SET bytes = x'deadbeef' WHERE id = 5;"
expect blob.sqlite "damaged syncspy database: calls row 5: bytes holds a blob value" \
	report report-json report-html export dump dump-json diff

# scribble FILE PAGE: page PAGE (from 1) of FILE overwritten with 4096 bytes of 0x55
scribble() {
	head -c 4096 /dev/zero | tr '\0' '\125' |
		dd of="$1" bs=4096 seek=$(($2 - 1)) conv=notrunc 2>/dev/null
}
# rootpage FILE NAME: the root page of table or index NAME
rootpage() {
	"$SQLITE3" "$1" "SELECT rootpage FROM sqlite_master WHERE name = '$2'"
}

# A page of garbage in the calls table (its root page, from sqlite_master).
cp "$tmp/good.sqlite" "$tmp/garbage.sqlite"
scribble "$tmp/garbage.sqlite" "$(rootpage "$tmp/good.sqlite" calls)"
expect garbage.sqlite "corrupt or truncated database" $all

# A page of garbage where no command's query goes (each of these was read without a word
# before READ-1). quick_check names the page.
# garbage NAME OBJECT [SQL]: a copy of the good database (SQL run on it first, where given) with
# the root page of table or index OBJECT overwritten, through every command
garbage() {
	cp "$tmp/good.sqlite" "$tmp/$1.sqlite"
	if [ -n "${3:-}" ] && ! "$SQLITE3" "$tmp/$1.sqlite" "$3"; then
		echo "FAIL: could not make $1: $3"
		failures=$((failures + 1))
	fi
	scribble "$tmp/$1.sqlite" "$(rootpage "$tmp/$1.sqlite" "$2")"
	expect "$1.sqlite" "corrupt or truncated database (quick_check: " $all
}
garbage stacks stacks
# a table of the user's own, which the schema allows and no command reads
garbage extragarbage notes "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT);
	INSERT INTO notes(text) VALUES ('checked by hand'), ('rerun on Monday');"
# the schema's one index (apis.name UNIQUE), and an index of the user's own
garbage index sqlite_autoindex_apis_1
garbage myindex calls_by_tid "CREATE INDEX calls_by_tid ON calls(tid);"
# The freelist: a dropped table's pages. Its trunk page (the header's 4 bytes at offset 32)
# lists the free pages: garbage there is damage. A leaf page's bytes are not data: garbage in
# one changes nothing, and every command still reads the file.
cp "$tmp/good.sqlite" "$tmp/freelist.sqlite"
"$SQLITE3" "$tmp/freelist.sqlite" "CREATE TABLE scratch(x);
	WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 200)
	INSERT INTO scratch SELECT randomblob(100) FROM k; DROP TABLE scratch;"
trunk=$(od -An -tu1 -j32 -N4 "$tmp/freelist.sqlite" | awk '{ print (($1 * 256 + $2) * 256 + $3) * 256 + $4 }')
free=$("$SQLITE3" "$tmp/freelist.sqlite" "PRAGMA freelist_count")
if [ "$trunk" -gt 0 ] && [ "$free" -ge 2 ]; then
	leaf=$(od -An -tu1 -j$(((trunk - 1) * 4096 + 8)) -N4 "$tmp/freelist.sqlite" |
		awk '{ print (($1 * 256 + $2) * 256 + $3) * 256 + $4 }')
	cp "$tmp/freelist.sqlite" "$tmp/freeleaf.sqlite"
	scribble "$tmp/freelist.sqlite" "$trunk"
	expect freelist.sqlite "corrupt or truncated database (quick_check: " $all
	scribble "$tmp/freeleaf.sqlite" "$leaf"
	reads freeleaf.sqlite "a database with garbage in a free page"
else
	echo "FAIL: no freelist in freelist.sqlite (trunk page $trunk, $free free pages)"
	failures=$((failures + 1))
fi

# Cut inside the last page, and at a page boundary: the header's page count says so.
size=$(wc -c <"$tmp/good.sqlite")
head -c $((size - 1000)) "$tmp/good.sqlite" >"$tmp/cut.sqlite"
expect cut.sqlite "corrupt or truncated database ($((size - 1000)) bytes; its header says" $all
head -c $((size - 4096)) "$tmp/good.sqlite" >"$tmp/cutpage.sqlite"
expect cutpage.sqlite "corrupt or truncated database" $all

# Generated (issue 18's suite: at least 100 bad databases through every command): every table
# and view of the schema dropped, every column of every table renamed away (the views keep
# their SQL: legacy_alter_table), and copies cut inside and at the end of every page. Each is
# exit 2 and one line naming the file, from every command.
generated=0
bad() { # bad NAME SQL: a copy of the good database damaged by SQL, through every command
	cp "$tmp/good.sqlite" "$tmp/$1.sqlite"
	"$SQLITE3" "$tmp/$1.sqlite" "$2" || { echo "FAIL: could not make $1: $2"; failures=$((failures + 1)); }
	expect "$1.sqlite" "" $all
	rm -f "$tmp/$1.sqlite"
	generated=$((generated + 1))
}
for object in $("$SQLITE3" "$tmp/good.sqlite" "SELECT type || ':' || name FROM sqlite_master
		WHERE type IN ('table', 'view') AND name NOT GLOB 'sqlite_*' ORDER BY name"); do
	bad "drop-${object#*:}" "DROP ${object%%:*} ${object#*:};"
done
for column in $("$SQLITE3" "$tmp/good.sqlite" "SELECT m.name || '.' || p.name FROM sqlite_master m,
		pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid"); do
	bad "rename-$column" "PRAGMA legacy_alter_table = 1;
		ALTER TABLE ${column%.*} RENAME COLUMN ${column#*.} TO gone_${column#*.};"
done
pages=$(($(wc -c <"$tmp/good.sqlite") / 4096))
for page in $(seq 1 $((pages - 1))); do
	for cut in $((page * 4096 - 3000)) $((page * 4096)); do
		head -c "$cut" "$tmp/good.sqlite" >"$tmp/cut-$cut.sqlite"
		expect "cut-$cut.sqlite" "" $all
		rm -f "$tmp/cut-$cut.sqlite"
		generated=$((generated + 1))
	done
done
# every page of the file overwritten with garbage (page 1 too: its header goes)
for page in $(seq 1 "$pages"); do
	cp "$tmp/good.sqlite" "$tmp/page-$page.sqlite"
	scribble "$tmp/page-$page.sqlite" "$page"
	expect "page-$page.sqlite" "" $all
	rm -f "$tmp/page-$page.sqlite"
	generated=$((generated + 1))
done
[ "$generated" -ge 100 ] || { echo "FAIL: only $generated generated databases"; failures=$((failures + 1)); }
echo "generated: $generated bad databases x $(echo $all | wc -w) commands"

# And the good one reads with every command (the checks above were not vacuous).
reads good.sqlite "the good database"

[ $failures = 0 ] || exit 1
echo "PASS"
exit 0
