#!/bin/sh
# SPDX-License-Identifier: MIT
# t039: a process killed (SIGKILL) in aggregate mode keeps its aggregates and step figures as of
# its last commit (SHIM-7): progs/aggregate prints how many enqueues it had made (every 50 ms)
# and keeps the count of its last whole step in a file (made); killed 1.5 s after a line said N
# (three commit periods of SYNCSPY_COMMIT_MS=200 and more), its .partial holds at least N
# enqueues in its aggregates, at most what it made in all (the file's count and the step it was
# in when killed), the
# meta of the same commit, a step figure for every step up to that line, and every sync row up
# to it; syncspy info and report read it (an unfinished recording, in aggregate mode).
. "$E2E_DIR/lib.sh"
export SYNCSPY_CUPTI=0 SYNCSPY_MODE=aggregate SYNCSPY_COMMIT_MS=200
mkdir -p "$out"
env LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$out" "$PROGS/aggregate" seconds 60 launches 200 progress made "$tmp/made" >"$tmp/progress" 2>"$tmp/err" &
pid=$!
# wait for 1 s of steps, then take the last line
for i in $(seq 100); do
	[ "$(grep -c '^progress' "$tmp/progress")" -ge 20 ] && break
	sleep 0.1
done
line=$(grep '^progress' "$tmp/progress" | tail -1)
[ -n "$line" ] || { kill -9 $pid; fail "no progress: $(cat "$tmp/progress" "$tmp/err")"; }
set -- $line
steps=$2 enqueues=$3
sleep 1.5
kill -9 $pid
wait $pid 2>/dev/null
set -- $(cat "$tmp/made")
[ $# -eq 2 ] || fail "made: $(cat "$tmp/made")"
made=$2
set -- "$out"/*.sqlite.partial
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one .partial in $out: $(ls "$out")"
db=$1
got=$(q "SELECT coalesce(sum(count), 0) FROM enqueue_aggregates")
[ "$got" -ge "$enqueues" ] || fail "the aggregates count $got enqueues, the program had made $enqueues 1.5 s before it was killed"
# at most the step the program was in when it was killed (200 launches and 5 other enqueues)
# more than the whole steps it had made
[ "$got" -le $((made + 200 + 5)) ] || fail "the aggregates count $got enqueues, more than the $made made"
golden "SELECT (SELECT value FROM meta WHERE key = 'aggregate_enqueues') = (SELECT sum(count) FROM enqueue_aggregates);
	SELECT count(*) FROM meta WHERE key = 'exit_reason';
	SELECT value FROM meta WHERE key = 'mode'" <<'END'
1
0
aggregate
END
[ "$(q "SELECT count(*) FROM step_figures")" -ge "$steps" ] || fail "fewer step figures than the $steps steps printed"
[ "$(q "SELECT count(*) FROM step_figures WHERE step < $steps AND enqueues != 205")" = 0 ] ||
	fail "step figures: $(q "SELECT step, enqueues FROM step_figures WHERE step < $steps AND enqueues != 205 LIMIT 3")"
# the sync rows of those steps: 2 stream syncs each
[ "$(q "SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaStreamSynchronize'")" -ge $((2 * steps)) ] ||
	fail "fewer stream syncs than 2 x $steps"
"$SYNCSPY" info "$db" >"$tmp/info" || fail "info of the killed recording"
grep -q '^state: unfinished' "$tmp/info" || fail "info: $(head -3 "$tmp/info")"
grep -q "^  enqueues *= *$got\$" "$tmp/info" || fail "info: $(grep -A3 'aggregate mode' "$tmp/info")"
"$SYNCSPY" report "$db" >"$tmp/report" || fail "report of the killed recording"
grep -q 'unfinished recording' "$tmp/report" && grep -q 'recorded in aggregate mode' "$tmp/report" ||
	fail "report notes: $(sed -n '/^notes/,$p' "$tmp/report")"
echo PASS
