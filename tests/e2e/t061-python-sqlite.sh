#!/bin/sh
# SPDX-License-Identifier: MIT
# t061: a program with its own SQLite (Python's sqlite3 module) works under the shim, before
# and after the shim has started its own (private) SQLite.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
"$PYTHON3" -c 'import sqlite3' 2>/dev/null || skip "python3 has no sqlite3 module"
CUDART="$STANDIN_DIR/libcudart.so.13" under_shim "$PYTHON3" "$TOP_SRCDIR/tests/progs/own_sqlite.py" "$tmp/own.db" >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "python failed: $(cat "$tmp/stderr")"
grep -q 'rows 2000 sum 999000 cuda rc 0' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api FROM api_calls" <<'END'
cudaDeviceSynchronize
END
