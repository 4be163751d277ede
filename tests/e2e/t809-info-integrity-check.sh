#!/bin/sh
# SPDX-License-Identifier: MIT
# t809: `info --check` runs PRAGMA integrity_check, more than the quick_check every command runs
# (READ-1): an index whose entries are not its table's rows is sound page by page, so every
# command reads the file, and only `info --check` finds it (exit 2, one line naming the file).
. "$E2E_DIR/lib.sh"
sh "$make_db" "$tmp/good.sqlite" >/dev/null || fail "make-db.sh failed"

# An index of the user's own whose definition is changed under it (writable_schema): its
# entries hold column a, its definition says b.
cp "$tmp/good.sqlite" "$tmp/index.sqlite"
"$SQLITE3" "$tmp/index.sqlite" "CREATE TABLE notes(a, b);
	WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 50)
	INSERT INTO notes SELECT i, -i FROM k;
	CREATE INDEX notes_a ON notes(a);
	PRAGMA writable_schema = ON;
	UPDATE sqlite_master SET sql = 'CREATE INDEX notes_a ON notes(b)' WHERE name = 'notes_a';" ||
	fail "could not build index.sqlite"
[ "$("$SQLITE3" "$tmp/index.sqlite" "PRAGMA quick_check")" = ok ] ||
	fail "quick_check finds the damage: the case does not test integrity_check"

"$SYNCSPY" info "$tmp/index.sqlite" >/dev/null 2>"$tmp/err" ||
	bad "info without --check refused index.sqlite: $(cat "$tmp/err")"
"$SYNCSPY" info --check "$tmp/index.sqlite" >/dev/null 2>"$tmp/err"
code=$?
[ "$code" = 2 ] || bad "info --check on index.sqlite exited $code, want 2"
[ "$(wc -l <"$tmp/err")" = 1 ] || bad "info --check: $(wc -l <"$tmp/err") lines on stderr, want 1"
grep -qF "syncspy: $tmp/index.sqlite: corrupt or truncated database (integrity_check: row 1 missing from index notes_a)" "$tmp/err" ||
	bad "info --check said: $(cat "$tmp/err")"

# The good one passes the full check.
"$SYNCSPY" info --check "$tmp/good.sqlite" >/dev/null 2>"$tmp/err" ||
	bad "info --check on the good database: $(cat "$tmp/err")"
finish
