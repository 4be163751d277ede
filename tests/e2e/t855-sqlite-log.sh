#!/bin/sh
# SPDX-License-Identifier: MIT
# t855: a program that loaded SQLite itself and installed a SQLITE_CONFIG_LOG callback sees only
# its own messages: the shim's SQLite is a private copy (interpose/store.h; issue 18 item 5).
# The shim's writer re-prepares its statements after creating the modules table, a "schema has
# changed" that a shared copy logs to the program's callback.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/sqlite_log" "$tmp/log" >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "program failed: $(cat "$tmp/stderr")"
grep -q 'sqlite_log: done' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
grep -q 'no_such_table_of_the_program' "$tmp/log" || fail "the program's own message is missing: $(cat "$tmp/log")"
grep -v 'no_such_table_of_the_program' "$tmp/log" >"$tmp/foreign" || true
[ ! -s "$tmp/foreign" ] || fail "the program's log received the shim's messages: $(head -c 2000 "$tmp/foreign")"
golden "SELECT value FROM meta WHERE key = 'sqlite_private'" <<'END'
1
END
golden "SELECT count(*) FROM calls" <<'END'
10
END
