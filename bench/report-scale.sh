#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/report-scale.sh: how fast `syncspy report --format json` merges a large run.
#
# Builds RANKS fixture databases (default 8) of CALLS calls each (default 1,000,000) with SQL
# recursive CTEs (no shim, no GPU: a few seconds per database), then times the report over all of
# them. Target (the report issue): <= 5 s for 8 x 1M calls on a 2-core machine. MIX picks the calls:
#   worst      (default) a 10-call training step: two kernel launches, an async H2D copy from
#              pinned memory right before a kernel, an event record, a stream sync, a pageable
#              async copy, a polling loop, an allreduce, a blocking D2H copy, a cudaMalloc: 60%
#              sync points, 10% collectives; every rule of docs/rules.md has rows to look at.
#   realistic  a 100-call step, as training recordings mostly are: 70% kernel launches (E1), 20%
#              event edges (10 cudaEventRecord E2, 10 cudaStreamWaitEvent E3), 4% async H2D copies
#              from pinned memory (E1, each right before a kernel), 4% sync points (a pageable
#              async copy, a stream sync, a blocking D2H copy, a cudaMalloc), 2% allreduces (N2).
#
#   bench/report-scale.sh [RESULT_FILE]     e.g. bench/results/2026-12-02-report-scale.txt
#
# env: SYNCSPY (default <repo>/report/syncspy), SQLITE3 (default sqlite3), RANKS, CALLS,
# MIX (worst or realistic), WORK (where the databases go; default a fresh temporary directory,
# removed at exit), CURVE=1: also time `report` as text, JSON and HTML and `check`, each with its
# peak RSS (GNU time), for the curve over job sizes (bench/report-scale-curve.sh runs it at 64,
# 256, 1,024 and 10,000 ranks). The result is appended to RESULT_FILE. GENERATE_ONLY=1: build the
# databases in WORK and stop (exit 0): the documented generator of synthetic ranks for tests.
# Exit: 0 within target, 1 over it, 2 the benchmark could not run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
SYNCSPY=${SYNCSPY:-$root/report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
RANKS=${RANKS:-8}
CALLS=${CALLS:-1000000}
MIX=${MIX:-worst}
TARGET_S=5
result=${1:-}

command -v "$SQLITE3" >/dev/null 2>&1 || { echo "report-scale: no $SQLITE3" >&2; exit 2; }
[ -x "$SYNCSPY" ] || { echo "report-scale: $SYNCSPY is not built" >&2; exit 2; }
if [ -n "${WORK:-}" ]; then
	work=$WORK
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/report-scale.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi

# Per mix: calls per step, ns per step, and each column as a function of p, the call's position in
# its step ($r is the rank; its allreduce starts r * 0.5 ms later, its stream sync is slower).
case $MIX in
worst)
	step=10 step_ns=100000 pos_ns=9000 n2_pos='p = 7'
	api='CASE p WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 2 THEN 1 WHEN 3 THEN 3 WHEN 4 THEN 4
	 WHEN 5 THEN 2 WHEN 6 THEN 5 WHEN 7 THEN 6 WHEN 8 THEN 7 ELSE 8 END'
	cls="CASE p WHEN 3 THEN 'E2' WHEN 4 THEN 'S2' WHEN 5 THEN 'S5' WHEN 6 THEN 'S7'
	 WHEN 7 THEN 'N2' WHEN 8 THEN 'S4' WHEN 9 THEN 'S6' ELSE 'E1' END"
	dur='CASE p WHEN 4 THEN 4000 + $r * 1000 WHEN 5 THEN 1500 WHEN 8 THEN 2000 ELSE 500 END'
	nostream='p IN (8, 9)'
	bytes='CASE p WHEN 1 THEN 65536 WHEN 5 THEN 65536 WHEN 7 THEN 4096 WHEN 8 THEN 4
	 WHEN 9 THEN 1048576 END'
	dir='CASE p WHEN 1 THEN 1 WHEN 5 THEN 1 WHEN 8 THEN 2 END'
	mem='CASE p WHEN 1 THEN 2 WHEN 5 THEN 1 WHEN 8 THEN 1 END'
	cnt='CASE WHEN p = 6 THEN 12 ELSE 1 END'
	;;
realistic)
	# 0-69 launches (the H2D copies at 62, 64, 66, 68 come right before one), 70-79 event
	# records, 80-89 stream waits, 90 pageable copy, 91 stream sync, 92 D2H copy, 93 cudaMalloc,
	# 94-99 launches and allreduces (98, 99).
	step=100 step_ns=1000000 pos_ns=9000 n2_pos='p IN (98, 99)'
	api='CASE WHEN p IN (62, 64, 66, 68, 90) THEN 2 WHEN p < 70 THEN 1 WHEN p < 80 THEN 3
	 WHEN p < 90 THEN 10 WHEN p = 91 THEN 4 WHEN p = 92 THEN 7 WHEN p = 93 THEN 8
	 WHEN p IN (98, 99) THEN 6 ELSE 1 END'
	cls="CASE WHEN p < 70 THEN 'E1' WHEN p < 80 THEN 'E2' WHEN p < 90 THEN 'E3'
	 WHEN p = 90 THEN 'S5' WHEN p = 91 THEN 'S2' WHEN p = 92 THEN 'S4' WHEN p = 93 THEN 'S6'
	 WHEN p IN (98, 99) THEN 'N2' ELSE 'E1' END"
	dur='CASE p WHEN 91 THEN 4000 + $r * 1000 WHEN 90 THEN 1500 WHEN 92 THEN 2000 ELSE 500 END'
	nostream='p IN (92, 93)'
	bytes='CASE WHEN p IN (62, 64, 66, 68, 90) THEN 65536 WHEN p IN (98, 99) THEN 4096
	 WHEN p = 92 THEN 4 WHEN p = 93 THEN 1048576 END'
	dir='CASE WHEN p IN (62, 64, 66, 68, 90) THEN 1 WHEN p = 92 THEN 2 END'
	mem='CASE WHEN p IN (62, 64, 66, 68) THEN 2 WHEN p IN (90, 92) THEN 1 END'
	cnt='1'
	;;
*)
	echo "report-scale: MIX is worst or realistic, not $MIX" >&2
	exit 2
	;;
esac

schema=$("$SYNCSPY" schema --lookups) || exit 2
now() { date +%s.%N; }

build_start=$(now)
# Rank 0 is built with SQL; every other rank is a copy of it (VACUUM INTO, one sqlite3 process for
# all of them) with its rank and pid, its stream syncs r * 1 us slower and its allreduces
# r * 0.5 ms later: one straggler. 10,000 ranks build in minutes, not hours.
r=0
template=$work/template.sqlite
rm -f "$template"
"$SQLITE3" -batch -bail "$template" >/dev/null <<SQL || exit 2
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
BEGIN;
$schema
INSERT INTO meta VALUES('schema_version', 2), ('syncspy_version', '0.1.0'),
 ('host', 'bench-host'), ('pid', $((1000 + r))), ('ppid', 1), ('rank', $r),
 ('world_size', $RANKS), ('rank_source', 'env'), ('cmdline', 'bench'),
 ('start_mono_ns', 1000000000000), ('start_realtime_ns', 1764672000000000000),
 ('clock', 'mono'), ('dropped_events', 0), ('threads', 1), ('exit_reason', 'exit'),
 ('file_final', 1), ('end_mono_ns', 1000000000000 + ($CALLS / $step + 1) * $step_ns);
INSERT INTO apis(id, name, layer, class) VALUES (1, '__cudaLaunchKernel', 'runtime', 'E1'),
 (2, 'cudaMemcpyAsync', 'runtime', 'E1'), (3, 'cudaEventRecord', 'runtime', 'E2'),
 (4, 'cudaStreamSynchronize', 'runtime', 'S2'), (5, 'cudaStreamQuery', 'runtime', 'S7'),
 (6, 'ncclAllReduce', 'nccl', 'N2'), (7, 'cudaMemcpy', 'runtime', 'S4'),
 (8, 'cudaMalloc', 'runtime', 'S6'), (9, 'ncclCommInitRank', 'nccl', 'N1'),
 (10, 'cudaStreamWaitEvent', 'runtime', 'E3');
INSERT INTO threads VALUES (1000, 'python', 1000000000000);
INSERT INTO sites(id, address, module, module_offset, symbol, text)
 SELECT value, 94000000000000 + value, 'python', NULL, NULL, 'train.py:' || (100 + value)
 FROM generate_series(1, 10);
INSERT INTO comms VALUES (93825010000000, '00000000bencha11', $r, $RANKS, NULL, 9, 1000000000000, NULL);
WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < $CALLS)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, event, comm, ptr, bytes, dir,
                  host_mem, ret, site_id, count, aux)
SELECT 1000, api, cls, t, t + d, stream, NULL, comm, NULL, bytes, dir, mem, 0, n % 10 + 1, cnt, NULL
FROM (SELECT n, 1000000000000 + (n / $step) * $step_ns + p * $pos_ns
       + CASE WHEN $n2_pos THEN $r * 500000 ELSE 0 END AS t,
      $api AS api,
      $cls AS cls,
      $(eval "echo \"$dur\"") AS d,
      CASE WHEN $nostream THEN NULL ELSE 139637976731648 END AS stream,
      CASE WHEN $n2_pos THEN 93825010000000 END AS comm,
      $bytes AS bytes,
      $dir AS dir,
      $mem AS mem,
      $cnt AS cnt
      FROM (SELECT n, n % $step AS p FROM i));
COMMIT;
SQL
{
	echo "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
	for r in $(seq 0 $((RANKS - 1))); do
		db=$work/syncspy-bench-$((1000 + r))-r$r.sqlite
		[ $r = 0 ] || echo "BEGIN; UPDATE meta SET value = $r WHERE key = 'rank';
UPDATE meta SET value = $((1000 + r)) WHERE key = 'pid'; UPDATE comms SET rank = $r;
UPDATE calls SET end_ns = end_ns + 1000 WHERE class = 'S2';
UPDATE calls SET start_ns = start_ns + 500000, end_ns = end_ns + 500000 WHERE class = 'N2';
COMMIT;"
		echo "VACUUM INTO '$db';"
	done
} >"$work/ranks.sql"
rm -f "$work"/syncspy-bench-*.sqlite
"$SQLITE3" -batch -bail "$template" <"$work/ranks.sql" >/dev/null || exit 2
rm -f "$template" "$work/ranks.sql"
build_end=$(now)
# GENERATE_ONLY=1: the databases are the result (tests/e2e/t230, t231 generate ranks this way)
if [ "${GENERATE_ONLY:-0}" = 1 ]; then
	trap - EXIT
	echo "report-scale: $RANKS databases in $work"
	exit 0
fi

# One command, timed with its peak memory (GNU time's "Maximum resident set size", KiB): prints
# "SECONDS KIB"; the command's output goes to $work/out.NAME.
measure() {
	name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$work/time.$name" "$@" >"$work/out.$name" 2>"$work/err.$name"
	rc=$?
	# check exits 1 over budget: that is a result, not a failure
	if [ $rc -gt 1 ] || { [ $rc = 1 ] && [ "$name" != check ]; }; then
		echo "report-scale: $name failed ($rc): $(tail -3 "$work/err.$name")" >&2
		exit 2
	fi
	tail -1 "$work/time.$name"
}

start=$(now)
"$SYNCSPY" report --format json -o "$work/report.json" "$work" || { echo "report-scale: report failed" >&2; exit 2; }
end=$(now)
elapsed=$(echo "$end - $start" | bc)
status=PASS
[ "$(echo "$elapsed <= $TARGET_S" | bc)" = 1 ] || status=FAIL
findings=$("$SQLITE3" -batch :memory: "SELECT json_array_length(readfile('$work/report.json'), '\$.findings')")
rules=$("$SQLITE3" -batch :memory: "SELECT group_concat(r, ',') FROM (SELECT DISTINCT json_extract(value, '\$.rule') AS r FROM json_each(json_extract(readfile('$work/report.json'), '\$.findings')) ORDER BY r)")
# CURVE=1: every output and `check`, each timed with its peak RSS (the issue 18 curve).
curve=
if [ "${CURVE:-0}" = 1 ]; then
	[ -x /usr/bin/time ] || { echo "report-scale: CURVE=1 needs GNU time (/usr/bin/time)" >&2; exit 2; }
	echo '{"version": 1, "warmup": {"steady": true}, "limits": [{"class": "sync", "per_rank": true, "max_count_per_step": 100}]}' >"$work/budget.json"
	for f in text json html; do
		curve="$curve
report $f: $(measure "$f" "$SYNCSPY" report --format $f "$work" | awk '{printf "%s s, %.0f MiB peak RSS", $1, $2 / 1024}'), $(wc -c <"$work/out.$f") bytes"
	done
	curve="$curve
check:       $(measure check "$SYNCSPY" check --budget "$work/budget.json" "$work" | awk '{printf "%s s, %.0f MiB peak RSS", $1, $2 / 1024}')"
fi
{
	echo "# bench/report-scale.sh: syncspy report --format json over $RANKS databases of $CALLS calls, MIX=$MIX"
	echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit:      $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "machine:     $(uname -m), $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
	echo "sqlite:      $("$SQLITE3" -version | cut -d' ' -f1)"
	echo "databases:   $RANKS x $CALLS calls, $(du -sh "$work" | cut -f1) on disk, built in $(echo "$build_end - $build_start" | bc) s"
	echo "report:      $elapsed s (target <= $TARGET_S s): $status"
	echo "findings:    $findings ($rules)"
	[ -z "$curve" ] || echo "${curve#?}"
} | tee ${result:+-a "$result"}
[ $status = PASS ]
