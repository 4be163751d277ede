#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/writer_throughput.sh: how fast the writer thread turns records into rows, and whether
# bursts that outrun it lose anything (issue 18 item 1). CPU only: the program is
# tests/progs/burst against the CPU stand-ins (tests/standin), so it runs on the build machine.
#
#   bench/writer_throughput.sh [RESULT_FILE]    e.g. bench/results/2026-12-03-writer-throughput.txt
#
# Cases, each run ROUNDS times (default 3), the median kept:
#   rate      1 thread x 3,000,000 cudaEventRecord, no sync: rows per second of the writer
#             thread's own CPU time (meta.writer_cpu_ns): its throughput on one core.
#             Target: >= 2,000,000.
#   mixed     1 thread x 1,000,000 with a stream sync every 100 (the issue's case): the same rate,
#             and what was lost. Target: nothing lost.
#   1x10M     1 thread x 10,000,000, no sync, default cap. Target: nothing lost.
#   16x1M     16 threads x 1,000,000 each, all at once, default cap. Target: nothing lost.
# For each: calls made, rows, dropped calls, the buffers' peak, the program's wall time, and
# the whole run's (its exit waits for the writer's last rows).
#
# With SHIM_BEFORE=path/to/an/older/libsyncspy.so, the mixed case also runs under it (rows
# written, dropped, rows per wall second of the burst: older builds have no writer_cpu_ns).
# env: SHIM (default <repo>/interpose/libsyncspy.so), ROUNDS, SQLITE3 (default sqlite3).
# Exit: 0 every target met, 1 some target missed, 2 the benchmark could not run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
SHIM=${SHIM:-$root/interpose/libsyncspy.so}
SQLITE3=${SQLITE3:-sqlite3}
ROUNDS=${ROUNDS:-3}
burst=$root/tests/progs/burst
result=${1:-}
[ -x "$burst" ] || { echo "writer_throughput: build the tests first (make check)" >&2; exit 2; }
[ -f "$SHIM" ] || { echo "writer_throughput: no $SHIM" >&2; exit 2; }
command -v "$SQLITE3" >/dev/null 2>&1 || { echo "writer_throughput: no $SQLITE3" >&2; exit 2; }
LD_LIBRARY_PATH=$root/tests/standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/writer-throughput.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
out=$work/report.txt
now() { date +%s.%N; }

meta() { "$SQLITE3" -batch "$1" "SELECT value FROM meta WHERE key = '$2'"; }

# run SHIM THREADS CALLS SYNC_EVERY: one line of numbers
run() {
	rm -rf "$work/out"
	t0=$(now)
	env LD_PRELOAD="$1" SYNCSPY_OUTPUT="$work/out" SYNCSPY_QUIET=1 SYNCSPY_CUPTI=0 \
		"$burst" "$2" "$3" "$4" live >"$work/stdout" 2>"$work/stderr" || return 1
	t1=$(now)
	db=$(ls "$work"/out/*.sqlite 2>/dev/null | head -1)
	[ -n "$db" ] || return 1
	made=$(sed -n 's/^burst: \([0-9]*\) calls in \([0-9.]*\) s$/\1/p' "$work/stdout")
	prog_s=$(sed -n 's/^burst: \([0-9]*\) calls in \([0-9.]*\) s$/\2/p' "$work/stdout")
	rows=$("$SQLITE3" -batch "$db" "SELECT count(*) FROM calls")
	dropped=$(meta "$db" dropped_calls)
	[ -n "$dropped" ] || dropped=$(($(meta "$db" dropped_events)))
	cpu=$(meta "$db" writer_cpu_ns)
	peak=$(meta "$db" buffer_peak_bytes)
	awk -v made="$made" -v rows="$rows" -v dropped="$dropped" -v cpu="${cpu:-0}" \
		-v peak="${peak:-0}" -v prog="$prog_s" -v t0="$t0" -v t1="$t1" 'BEGIN {
		rate = cpu > 0 ? rows / (cpu / 1e9) : 0
		printf "%d %d %d %.0f %.1f %.3f %.3f %.0f\n", made, rows, dropped, rate,
			peak / 1048576, prog, t1 - t0, rows / prog
	}'
}

# case NAME THREADS CALLS SYNC_EVERY [SHIM]: the median round (by writer rate)
case_() {
	name=$1
	shim=${5:-$SHIM}
	: >"$work/rounds"
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		run "$shim" "$2" "$3" "$4" >>"$work/rounds" || { echo "writer_throughput: $name failed: $(cat "$work/stderr")" >&2; exit 2; }
		r=$((r + 1))
	done
	sort -n -k4 "$work/rounds" | awk -v n="$ROUNDS" -v name="$name" 'NR == int((n + 1) / 2) {
		printf "%-8s %10d %10d %10d %12d %8.1f %8.3f %8.3f %12d\n", name, $1, $2, $3, $4, $5,
			$6, $7, $8
	}'
	awk '{ if ($3 > worst) worst = $3 } END { print worst + 0 }' "$work/rounds" >"$work/worst.$name"
}

{
	echo "writer_throughput: $(date -u +%Y-%m-%d), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo ?), $(nproc) cores: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "shim: $SHIM; CPU stand-ins; median of $ROUNDS rounds (by writer rate); dropped: the worst round"
	echo "$(id -u | sed 's/^0$/root: the writer runs at nice -10/;s/^[1-9][0-9]*$/not root: the writer runs at the program'"'"'s priority/')"
	echo
	printf "%-8s %10s %10s %10s %12s %8s %8s %8s %12s\n" case calls rows dropped "rows/cpu-s" peak_MiB prog_s run_s "rows/prog-s"
	case_ rate 1 3000000 0
	case_ mixed 1 1000000 100
	case_ 1x10M 1 10000000 0
	case_ 16x1M 16 1000000 0
	if [ -n "${SHIM_BEFORE:-}" ]; then
		echo
		echo "before: $SHIM_BEFORE (rows/cpu-s not recorded by it: rows/prog-s is rows per second of the burst)"
		case_ before 1 1000000 100 "$SHIM_BEFORE"
	fi
} >"$out"
code=0
rate=$(awk '$1 == "rate" { print $5 }' "$out")
[ "${rate:-0}" -ge 2000000 ] || code=1
for c in mixed 1x10M 16x1M; do
	[ "$(cat "$work/worst.$c")" -eq 0 ] || code=1
done
{
	echo
	echo "targets: rate >= 2000000 rows/cpu-s: $rate; mixed, 1x10M and 16x1M lose nothing (worst rounds: $(cat "$work/worst.mixed"), $(cat "$work/worst.1x10M"), $(cat "$work/worst.16x1M")): $([ $code -eq 0 ] && echo PASS || echo FAIL)"
} >>"$out"
cat "$out"
[ -n "$result" ] && cp "$out" "$result"
exit $code
