#!/bin/sh
# bench/report-scale.sh: how fast `syncspy report --format json` merges a large run.
#
# Builds RANKS fixture databases (default 8) of CALLS calls each (default 1,000,000) with SQL
# recursive CTEs (no shim, no GPU: a few seconds per database), then times the report over all of
# them. The calls repeat a 10-call training step: two kernel launches, an async H2D copy from
# pinned memory right before a kernel, an event record, a stream sync, a pageable async copy, a
# polling loop, an allreduce, a blocking D2H copy, a cudaMalloc; every rule of docs/rules.md has
# rows to look at. Target (the report issue): <= 5 s for 8 x 1M calls on a 2-core machine.
#
#   bench/report-scale.sh [RESULT_FILE]     e.g. bench/results/2026-12-02-report-scale.txt
#
# env: SYNCSPY (default <repo>/report/syncspy), SQLITE3 (default sqlite3), RANKS, CALLS,
# WORK (where the databases go; default a fresh temporary directory, removed at exit).
# Exit: 0 within target, 1 over it, 2 the benchmark could not run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
SYNCSPY=${SYNCSPY:-$root/report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
RANKS=${RANKS:-8}
CALLS=${CALLS:-1000000}
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

schema=$("$SYNCSPY" schema --lookups) || exit 2
now() { date +%s.%N; }

build_start=$(now)
for r in $(seq 0 $((RANKS - 1))); do
	db=$work/syncspy-bench-$((1000 + r))-r$r.sqlite
	rm -f "$db"
	# Rank r's step is r * 1 us slower, and its allreduce starts r * 0.5 ms later: one straggler.
	"$SQLITE3" -batch -bail "$db" >/dev/null <<SQL || exit 2
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
BEGIN;
$schema
INSERT INTO meta VALUES('schema_version', 2), ('syncspy_version', '0.1.0'),
 ('host', 'bench-host'), ('pid', $((1000 + r))), ('ppid', 1), ('rank', $r),
 ('world_size', $RANKS), ('rank_source', 'env'), ('cmdline', 'bench'),
 ('start_mono_ns', 1000000000000), ('start_realtime_ns', 1764672000000000000),
 ('clock', 'mono'), ('dropped_events', 0), ('threads', 1), ('exit_reason', 'exit'),
 ('file_final', 1), ('end_mono_ns', 1000000000000 + ($CALLS / 10 + 1) * 100000);
INSERT INTO apis(id, name, layer, class) VALUES (1, '__cudaLaunchKernel', 'runtime', 'E1'),
 (2, 'cudaMemcpyAsync', 'runtime', 'E1'), (3, 'cudaEventRecord', 'runtime', 'E2'),
 (4, 'cudaStreamSynchronize', 'runtime', 'S2'), (5, 'cudaStreamQuery', 'runtime', 'S7'),
 (6, 'ncclAllReduce', 'nccl', 'N2'), (7, 'cudaMemcpy', 'runtime', 'S4'),
 (8, 'cudaMalloc', 'runtime', 'S6'), (9, 'ncclCommInitRank', 'nccl', 'N1');
INSERT INTO threads VALUES (1000, 'python', 1000000000000);
INSERT INTO sites(id, address, module, module_offset, symbol, text)
 SELECT value, 94000000000000 + value, 'python', NULL, NULL, 'train.py:' || (100 + value)
 FROM generate_series(1, 10);
INSERT INTO comms VALUES (93825010000000, '00000000bencha11', $r, $RANKS, NULL, 9, 1000000000000, NULL);
WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < $CALLS)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, event, comm, ptr, bytes, dir,
                  host_mem, ret, site_id, count, aux)
SELECT 1000, api, cls, t, t + d, stream, NULL, comm, NULL, bytes, dir, mem, 0, n % 10 + 1, cnt, NULL
FROM (SELECT n, 1000000000000 + (n / 10) * 100000 + (n % 10) * 9000
       + CASE WHEN n % 10 = 7 THEN $r * 500000 ELSE 0 END AS t,
      CASE n % 10 WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 2 THEN 1 WHEN 3 THEN 3 WHEN 4 THEN 4
       WHEN 5 THEN 2 WHEN 6 THEN 5 WHEN 7 THEN 6 WHEN 8 THEN 7 ELSE 8 END AS api,
      CASE n % 10 WHEN 3 THEN 'E2' WHEN 4 THEN 'S2' WHEN 5 THEN 'S5' WHEN 6 THEN 'S7'
       WHEN 7 THEN 'N2' WHEN 8 THEN 'S4' WHEN 9 THEN 'S6' ELSE 'E1' END AS cls,
      CASE n % 10 WHEN 4 THEN 4000 + $r * 1000 WHEN 5 THEN 1500 WHEN 8 THEN 2000 ELSE 500 END AS d,
      CASE WHEN n % 10 IN (8, 9) THEN NULL ELSE 139637976731648 END AS stream,
      CASE WHEN n % 10 = 7 THEN 93825010000000 END AS comm,
      CASE n % 10 WHEN 1 THEN 65536 WHEN 5 THEN 65536 WHEN 7 THEN 4096 WHEN 8 THEN 4
       WHEN 9 THEN 1048576 END AS bytes,
      CASE n % 10 WHEN 1 THEN 1 WHEN 5 THEN 1 WHEN 8 THEN 2 END AS dir,
      CASE n % 10 WHEN 1 THEN 2 WHEN 5 THEN 1 WHEN 8 THEN 1 END AS mem,
      CASE WHEN n % 10 = 6 THEN 12 ELSE 1 END AS cnt
      FROM i);
COMMIT;
SQL
done
build_end=$(now)

start=$(now)
"$SYNCSPY" report --format json "$work" >"$work/report.json" || { echo "report-scale: report failed" >&2; exit 2; }
end=$(now)
elapsed=$(echo "$end - $start" | bc)
status=PASS
[ "$(echo "$elapsed <= $TARGET_S" | bc)" = 1 ] || status=FAIL
findings=$("$SQLITE3" -batch :memory: "SELECT json_array_length(readfile('$work/report.json'), '\$.findings')")
rules=$("$SQLITE3" -batch :memory: "SELECT group_concat(r, ',') FROM (SELECT DISTINCT json_extract(value, '\$.rule') AS r FROM json_each(json_extract(readfile('$work/report.json'), '\$.findings')) ORDER BY r)")
{
	echo "# bench/report-scale.sh: syncspy report --format json over $RANKS databases of $CALLS calls"
	echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "machine:     $(uname -m), $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
	echo "sqlite:      $("$SQLITE3" -version | cut -d' ' -f1)"
	echo "databases:   $RANKS x $CALLS calls, $(du -sh "$work" | cut -f1) on disk, built in $(echo "$build_end - $build_start" | bc) s"
	echo "report:      $elapsed s (target <= $TARGET_S s): $status"
	echo "findings:    $findings ($rules)"
} | tee ${result:+"$result"}
[ $status = PASS ]
