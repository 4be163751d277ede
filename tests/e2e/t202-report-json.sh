#!/bin/sh
# SPDX-License-Identifier: MIT
# t202: `syncspy report --format json` is one valid JSON document (parsed by SQLite's json
# functions, and by python3 when there is one) with every field docs/report-json.md documents,
# of the documented types; the merge of the 4-rank NCCL run has ranks 0-3 in order, each with
# its calls per API, sync points and NCCL operations, and one finding per (rule, site) with the
# ranks it was seen on and their spread (ANALYSIS-5).
. "$E2E_DIR/lib.sh"
under_shim env SYNCSPY_QUIET=1 "$PROGS/scenarios" nccl 4 >/dev/null || fail "scenario nccl 4"
"$SYNCSPY" report --format json "$out" >"$tmp/r.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
j() {
	"$SQLITE3" -batch :memory: "SELECT $1 FROM (SELECT readfile('$tmp/r.json') AS d)"
}
[ "$(j 'json_valid(d)')" = 1 ] || fail "not valid JSON: $(head -c 300 "$tmp/r.json")"
if [ -n "${PYTHON3:-}" ] && command -v "$PYTHON3" >/dev/null 2>&1; then
	"$PYTHON3" -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/r.json" || fail "python3 cannot parse it"
fi

# Top-level fields and their types.
j "json_type(d, '\$.schema_version') || ' ' || json_type(d, '\$.report_version') || ' ' ||
   json_type(d, '\$.syncspy_version') || ' ' || json_type(d, '\$.ranks') || ' ' ||
   json_type(d, '\$.findings') || ' ' || json_type(d, '\$.notes') || ' ' || json_extract(d, '\$.schema_version')" >"$tmp/actual"
echo "integer text text array array array 4" | diff -u - "$tmp/actual" >&2 || fail "top-level fields"

# Every rank: the documented keys, in order (the clock_* fields: reports of 2+ ranks), and the
# numbers the scenario makes.
"$SQLITE3" -batch :memory: "SELECT (SELECT group_concat(k.key, ',') FROM json_each(r.value) AS k),
	json_extract(value, '\$.rank'), json_extract(value, '\$.world_size'),
	json_extract(value, '\$.calls.ncclAllReduce'), json_extract(value, '\$.calls.cudaMemcpy'),
	json_extract(value, '\$.sync_points'), json_extract(value, '\$.nccl_ops'),
	json_extract(value, '\$.copies'), json_type(value, '\$.blocked_ns'), json_type(value, '\$.deviates')
	FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.ranks')) AS r" >"$tmp/actual"
keys=rank,world_size,host,pid,path,finished,wall_ns,calls,sync_points,blocked_ns,copies,copy_bytes,nccl_ops,nccl_ns,dropped_events,deviates,steps,clock_offset_ns,clock_offset_method,clock_offset_spread_ns
cat >"$tmp/expected" <<END
$keys|0|4|2|2|4|4|2|integer|array
$keys|1|4|2|2|4|4|2|integer|array
$keys|2|4|2|2|4|4|2|integer|array
$keys|3|4|2|2|4|4|2|integer|array
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "ranks"

# Every rank's steps: the documented keys and types.
"$SQLITE3" -batch :memory: "SELECT DISTINCT (SELECT group_concat(k.key, ',') FROM json_each(r.value, '\$.steps') AS k),
	json_extract(value, '\$.steps.source') IN ('none', 'marked', 'detected'),
	json_type(value, '\$.steps.count'), json_type(value, '\$.steps.steady')
	FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.ranks')) AS r" >"$tmp/actual"
echo "source,name,count,steady,step_ns,sync_points_per_step,blocked_ns_per_step,steady_start_ns,steady_end_ns|1|integer|integer" |
	diff -u - "$tmp/actual" >&2 || fail "steps keys"

# Every finding: the documented keys, in order; severities, phases and rules from the documented
# sets; the steady findings first, by share, then the info ones by blocked_ns (ANALYSIS-1).
"$SQLITE3" -batch :memory: "SELECT DISTINCT (SELECT group_concat(k.key, ',') FROM json_each(r.value) AS k)
	FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings')) AS r" >"$tmp/actual"
keys=rule,severity,rank,count,blocked_ns,worst_ns,bytes,estimate_ns,site,detail,advice,phase,steps,cost_ns,cost_per_step_ns,share
# a finding of one rank has those; one folded over ranks (ANALYSIS-5) ranks and spread after
# them; the scenario's syncs recur on every rank, so some finding is folded
grep -qxF "$keys,ranks,spread" "$tmp/actual" || fail "no folded finding: $(cat "$tmp/actual")"
grep -vxF -e "$keys" -e "$keys,ranks,spread" "$tmp/actual" >&2 && fail "finding keys"
# ANALYSIS-5: one finding per (rule, site) across the 4 ranks; a folded one lists its ranks
# (ascending, its own among them) and their spread, with its worst rank's figures.
"$SQLITE3" -batch :memory: "SELECT count(*) - count(DISTINCT json_extract(value, '\$.rule') || '|' ||
	json_extract(value, '\$.site')) FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))" >"$tmp/actual"
echo 0 | diff -u - "$tmp/actual" >&2 || fail "a (rule, site) twice: not folded"
"$SQLITE3" -batch :memory: "SELECT DISTINCT (SELECT group_concat(k.key, ',') FROM json_each(f.value, '\$.spread') AS k),
	json_extract(value, '\$.spread.ranks') = json_array_length(value, '\$.ranks'),
	json_extract(value, '\$.spread.worst_rank') = json_extract(value, '\$.rank'),
	(SELECT count(*) FROM json_each(f.value, '\$.ranks') AS x WHERE x.value = json_extract(f.value, '\$.rank')),
	(SELECT count(*) FROM json_each(f.value, '\$.ranks') AS x WHERE x.key > 0
	 AND x.value <= json_extract(f.value, '\$.ranks[' || (x.key - 1) || ']'))
	FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings')) AS f
	WHERE json_type(value, '\$.ranks') IS NOT NULL" >"$tmp/actual"
echo "ranks,worst_rank,cost_per_step_ns_min,cost_per_step_ns_median,cost_per_step_ns_max|1|1|1|0" |
	diff -u - "$tmp/actual" >&2 || fail "folded findings: ranks and spread"
"$SQLITE3" -batch :memory: "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.severity') NOT IN ('high', 'medium', 'low', 'info')
	OR json_extract(value, '\$.phase') NOT IN ('steady', 'once')
	OR (json_extract(value, '\$.phase') = 'once' AND json_extract(value, '\$.severity') <> 'info')
	OR json_extract(value, '\$.rule') NOT IN ('host-sync', 'sync-copy', 'pageable-async-copy',
	 'memset-pinned', 'alloc-in-loop', 'legacy-stream', 'polling', 'graph-instantiate-in-loop',
	 'module-load-in-loop', 'copy-on-compute-stream', 'managed-round-trip',
	 'nccl-straggler', 'rank-imbalance')
	OR json_type(value, '\$.advice') <> 'text' OR json_type(value, '\$.site') <> 'text'" >"$tmp/actual"
echo 0 | diff -u - "$tmp/actual" >&2 || fail "finding values"
"$SQLITE3" -batch :memory: "SELECT count(*) FROM (SELECT json_extract(value, '\$.severity') = 'info' AS i,
	json_extract(value, '\$.share') AS s, json_extract(value, '\$.blocked_ns') AS b,
	lag(json_extract(value, '\$.severity') = 'info') OVER w AS pi, lag(json_extract(value, '\$.share')) OVER w AS ps,
	lag(json_extract(value, '\$.blocked_ns')) OVER w AS pb
	FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WINDOW w AS (ORDER BY CAST(key AS INTEGER)))
	WHERE i < pi OR (i = pi AND NOT i AND s > ps) OR (i = pi AND i AND b > pb)" >"$tmp/actual"
echo 0 | diff -u - "$tmp/actual" >&2 || fail "findings not in ANALYSIS-1 order"
j "json_extract(d, '\$.notes[1]')" >"$tmp/actual"
echo "communication/compute overlap: not measurable without GPU timeline" | diff -u - "$tmp/actual" >&2 ||
	fail "overlap note"
exit 0
