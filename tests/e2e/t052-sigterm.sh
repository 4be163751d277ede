#!/bin/sh
# SPDX-License-Identifier: MIT
# t052: SIGTERM with the default action. The shim finishes the database, then the signal ends
# the process as it would have: same exit status (killed by SIGTERM), nothing recorded lost.
. "$E2E_DIR/lib.sh"
"$PROGS/scenarios" sigterm >/dev/null 2>&1
plain=$?
under_shim "$PROGS/scenarios" sigterm >/dev/null 2>"$tmp/stderr"
shim=$?
[ "$plain" -eq "$shim" ] || fail "exit status $shim under the shim, $plain without"
[ "$shim" -eq 143 ] || fail "expected death by SIGTERM (143), got $shim"
one_db
golden "SELECT (SELECT count(*) FROM calls WHERE class = 'S1'), (SELECT value FROM meta WHERE key = 'exit_reason'), (SELECT value FROM meta WHERE key = 'file_final')" <<'END'
4|signal|1
END
grep -q '^syncspy: rank -: 4 sync points' "$tmp/stderr" || fail "no summary line: $(cat "$tmp/stderr")"
