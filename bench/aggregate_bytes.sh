#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/aggregate_bytes.sh: database bytes per hour of a launch-bound loop, in trace mode and in
# aggregate mode (SYNCSPY_MODE, docs/recording.md "Aggregate mode"; issue 17 item 2).
#
#   bench/aggregate_bytes.sh [RESULT_FILE] [-- CMD ARGS...]
#
# CMD is the workload, a loop. An argument {} is replaced by the seconds the run should last,
# and CMD stops by itself; without one, CMD must loop for at least LONG seconds and is stopped
# by SIGINT (the shim then finishes its database as at exit; a writer that is more than 3 s
# behind leaves it unfinished, measured with its -wal and marked so). Without CMD: the CPU
# stand-ins' loop, tests/progs/aggregate seconds {} launches 1000 host_us 4: 1000 kernel
# launches of 4 us of host time each (a real launch's, docs/architecture.md F10), 5 other
# enqueues and about 5 sync points per step, one syncspy_step per step. On the GPU machine, for
# instance: bench/aggregate_bytes.sh RESULT -- python3 bench/torch_step.py 100000000
# (SIZES=mlp8: issue 17's launch-bound loop).
#
# Each mode runs CMD twice under `syncspy run` (with --aggregate for aggregate mode), for SHORT
# and LONG seconds (default 2 and 6). The bytes per hour are extrapolated, not measured for an
# hour: (bytes(LONG) - bytes(SHORT)) / (LONG - SHORT) x 3600, so that the fixed part of a file
# (schema, lookup tables, setup) does not count as a rate; the output says so. Per run it also
# prints the calls rows, the sync rows, the enqueues (rows, or counted by the aggregates) and
# the wall time (the exit waits for a writer that is behind). The result is printed and
# appended to RESULT_FILE (e.g. bench/results/2026-12-04-aggregate-bytes.txt).
#
# env: SYNCSPY (default <repo>/report/syncspy), SQLITE3 (default sqlite3), SHORT, LONG; the
# caller's SYNCSPY_* reach CMD (SYNCSPY_CUPTI: on a GPU the GPU timeline's rows are part of the
# bytes: aggregate mode's windows, CUPTI-6, keep them bounded).
# Exit: 0 measured, 2 the benchmark could not run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
SYNCSPY=${SYNCSPY:-$root/report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
SHORT=${SHORT:-2}
LONG=${LONG:-6}
result=
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	result=$1
	shift
fi
[ "${1:-}" = -- ] && shift
if [ $# -eq 0 ]; then
	prog=$root/tests/progs/aggregate
	[ -x "$prog" ] || { echo "aggregate_bytes: $prog is not built (make -C tests check TESTS=)" >&2; exit 2; }
	set -- "$prog" seconds {} launches 1000 host_us 4
	LD_LIBRARY_PATH=$root/tests/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	workload="tests/progs/aggregate seconds {} launches 1000 host_us 4, on the CPU stand-ins"
else
	workload="$*"
fi
[ -x "$SYNCSPY" ] || { echo "aggregate_bytes: $SYNCSPY is not built" >&2; exit 2; }
command -v "$SQLITE3" >/dev/null 2>&1 || { echo "aggregate_bytes: no $SQLITE3" >&2; exit 2; }
command -v timeout >/dev/null 2>&1 || { echo "aggregate_bytes: no timeout command" >&2; exit 2; }
timed=0
for a in "$@"; do
	[ "$a" = {} ] && timed=1
done
work=$(mktemp -d "${TMPDIR:-/tmp}/aggregate-bytes.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

# run MODE SECONDS CMD...: appends "MODE SECONDS WALL BYTES ROWS SYNC_ROWS ENQUEUES STATE" to
# $work/runs; 1 when the run left no database
run() {
	mode=$1 seconds=$2 dir=$work/$1-$2
	shift 2
	flag=
	[ "$mode" = aggregate ] && flag=--aggregate
	# {} becomes the seconds (the loop stops itself), else SIGINT after them
	n=$#
	while [ $n -gt 0 ]; do
		a=$1
		shift
		[ "$a" = {} ] && a=$seconds
		set -- "$@" "$a"
		n=$((n - 1))
	done
	limit=$seconds
	[ $timed = 1 ] && limit=$((seconds * 10 + 60)) # a safety net only
	start=$(date +%s.%N)
	SYNCSPY_QUIET=1 timeout -s INT "$limit" "$SYNCSPY" run -o "$dir" $flag "$@" >"$work/out" 2>"$work/err"
	end=$(date +%s.%N)
	state=finished
	set -- "$dir"/*.sqlite
	if [ ! -f "$1" ]; then
		set -- "$dir"/*.sqlite.partial
		state=unfinished
	fi
	if [ $# -ne 1 ] || [ ! -f "$1" ]; then
		echo "aggregate_bytes: $mode: expected one database in $dir: $(ls "$dir" 2>&1); $(tail -3 "$work/err")" >&2
		return 1
	fi
	bytes=$(($(wc -c <"$1") + $(cat "$1-wal" 2>/dev/null | wc -c)))
	enqueues="(SELECT count(*) FROM calls WHERE class IN ('E1', 'E2', 'E3', 'N2'))"
	[ "$mode" = aggregate ] && enqueues="(SELECT coalesce(sum(count), 0) FROM enqueue_aggregates)"
	counts=$("$SQLITE3" -batch -readonly -separator ' ' "$1" "SELECT (SELECT count(*) FROM calls),
		(SELECT count(*) FROM calls c JOIN classes k ON k.class = c.class WHERE k.sync_point), $enqueues") || return 1
	echo "$mode $seconds $end $start $bytes $counts $state" |
		awk '{ printf "%s %s %.3f %d %d %d %d %s\n", $1, $2, $3 - $4, $5, $6, $7, $8, $9 }' >>"$work/runs"
}

for mode in trace aggregate; do
	run "$mode" "$SHORT" "$@" && run "$mode" "$LONG" "$@" || exit 2
done
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
	echo "aggregate_bytes: $(date +%Y-%m-%d), commit $commit, $(nproc) cores: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	if [ $timed = 1 ]; then
		echo "workload: $workload; {} = $SHORT and $LONG s (the loop stops itself)"
	else
		echo "workload: $workload; stopped by SIGINT after $SHORT and $LONG s"
	fi
	echo
	printf '%-10s %6s %8s %12s %10s %10s %12s  %s\n' mode run_s wall_s bytes call_rows sync_rows enqueues file
	awk '{ printf "%-10s %6s %8s %12s %10s %10s %12s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$work/runs"
	echo
	echo "per hour, extrapolated from the two runs (not measured for an hour): (bytes($LONG s) - bytes($SHORT s)) / ($LONG s - $SHORT s) x 3600"
	awk '{ seconds[$1, ++n[$1]] = $2; bytes[$1, n[$1]] = $4; enq[$1, n[$1]] = $7; sync[$1, n[$1]] = $6
		if (n[$1] == 2) order[++modes] = $1 }
		END { for (i = 1; i <= modes; i++) { m = order[i]; dt = seconds[m, 2] - seconds[m, 1]
			rate = (bytes[m, 2] - bytes[m, 1]) / dt
			de = enq[m, 2] - enq[m, 1]; ds = sync[m, 2] - sync[m, 1]
			printf "%-10s %16.0f bytes/hour (%10.3f MB/hour): %.0f enqueues/s and %.0f sync rows/s recorded; %.1f bytes per enqueue, %.1f per sync row\n",
				m, rate * 3600, rate * 3600 / 1e6, de / dt, ds / dt,
				(de > 0 ? (bytes[m, 2] - bytes[m, 1]) / de : 0), (ds > 0 ? (bytes[m, 2] - bytes[m, 1]) / ds : 0) } }' "$work/runs"
} >"$work/report"
cat "$work/report"
if [ -n "$result" ]; then
	{ cat "$work/report"; echo; } >>"$result"
fi
