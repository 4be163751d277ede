#!/bin/sh
# SPDX-License-Identifier: MIT
# t053: a program's own SIGINT handler, installed after the shim started, stays the program's:
# sigaction() reports it back, it runs on every SIGINT, the program goes on and exits normally.
. "$E2E_DIR/lib.sh"
"$PROGS/scenarios" sigint >"$tmp/plain" || fail "scenario failed without the shim"
under_shim "$PROGS/scenarios" sigint >"$tmp/shim" || fail "scenario failed under the shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "output differs under the shim"
grep -q 'handled 2' "$tmp/shim" || fail "handler not called twice"
one_db
golden "SELECT count(*), (SELECT value FROM meta WHERE key = 'exit_reason') FROM calls" <<'END'
2|exit
END
