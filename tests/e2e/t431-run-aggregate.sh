#!/bin/sh
# SPDX-License-Identifier: MIT
# t431: `syncspy run --aggregate` records in aggregate mode (it sets SYNCSPY_MODE=aggregate for
# CMD and its children); its summary counts the aggregated enqueues among the calls and says
# they were aggregated; without it, trace mode. `syncspy help run` and the completion offer the
# option, `syncspy help env` lists SYNCSPY_MODE, and `syncspy schema --extensions` has aggregate
# mode's tables (valid SQL: the columns the readers select).
. "$E2E_DIR/lib.sh"
export SYNCSPY_CUPTI=0
"$SYNCSPY" run -o "$out" --aggregate "$PROGS/aggregate" steps 4 launches 10 >/dev/null 2>"$tmp/err" ||
	fail "run --aggregate: $(cat "$tmp/err")"
one_db
golden "SELECT value FROM meta WHERE key = 'mode'; SELECT sum(count) FROM enqueue_aggregates; SELECT count(*) FROM calls WHERE class = 'E1'" <<'END'
aggregate
60
0
END
rows=$(q "SELECT count(*) FROM calls")
sync=$(q "SELECT count(*) FROM calls c JOIN classes k ON k.class = c.class WHERE k.sync_point")
grep -q "^  rank -: $sync sync points, $((rows + 60)) calls (enqueues aggregated): $(basename "$db")\$" "$tmp/err" ||
	fail "run's summary: $(cat "$tmp/err")"
rm -rf "$out"
SYNCSPY_MODE= "$SYNCSPY" run -o "$out" "$PROGS/aggregate" steps 4 launches 10 >/dev/null 2>"$tmp/err" || fail "run: $(cat "$tmp/err")"
one_db
golden "SELECT value FROM meta WHERE key = 'mode'; SELECT count(*) FROM calls WHERE class = 'E1'" <<'END'
trace
48
END
grep -q 'enqueues aggregated' "$tmp/err" && fail "trace mode's summary: $(cat "$tmp/err")"

"$SYNCSPY" help run | grep -q '^  --aggregate  set SYNCSPY_MODE=aggregate' || fail "help run: $("$SYNCSPY" help run)"
"$SYNCSPY" help run | head -1 | grep -qF '[--aggregate] [--] CMD' || fail "help run's synopsis"
"$SYNCSPY" help env | grep -q 'SYNCSPY_MODE' || fail "help env lacks SYNCSPY_MODE"
grep -q -- '--aggregate' "$TOP_SRCDIR/share/bash-completion/completions/syncspy" || fail "the completion lacks --aggregate"
"$SYNCSPY" schema --extensions | "$SQLITE3" -batch "$tmp/schema.sqlite" || fail "schema --extensions is not valid SQL"
db=$tmp/schema.sqlite
golden "SELECT name FROM sqlite_master WHERE name IN ('enqueue_aggregates', 'enqueue_histogram', 'step_figures') ORDER BY name" <<'END'
enqueue_aggregates
enqueue_histogram
step_figures
END
echo PASS
