#!/bin/sh
# SPDX-License-Identifier: MIT
# t037: aggregate mode (SYNCSPY_MODE=aggregate, SHIM-7) on the CPU stand-ins. progs/aggregate runs
# 20 marked steps of 50 launches, a copy, an event record and wait, a side launch and an
# allreduce, with a helper thread launching 3 kernels per step, and its sync points, in both
# modes:
#   - the sync points (and every other row that is not an enqueue: N1, X1) are the same rows in
#     both modes: the same sequence per thread (API, class, site, stream kind, S7 queries), the
#     same stacks taken; aggregate mode writes no enqueue row;
#   - its aggregates count per (API, class, site, stream kind, direction, memory kind) what trace
#     mode wrote as rows, bytes included, and add up to the enqueues the program made;
#   - step_figures has one row per syncspy_step step, with the enqueues (the helper thread's
#     too) and sync points that started in it, as trace mode's rows in the same step;
#   - host times are histogrammed where timed: ncclAllReduce always, launches only with
#     SYNCSPY_ENQUEUE_TIMING=1; meta.mode says the mode; a bad SYNCSPY_MODE is trace, warned.
. "$E2E_DIR/lib.sh"
export SYNCSPY_CUPTI=0
for mode in trace aggregate; do
	rm -rf "$out"
	SYNCSPY_MODE=$mode under_shim "$PROGS/aggregate" steps 20 launches 50 helper >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
		fail "aggregate ($mode) failed: $(cat "$tmp/$mode.out" "$tmp/$mode.err")"
	one_db
	cp "$db" "$tmp/$mode.sqlite"
done
enqueues=$(sed -n 's/^steps 20 launches [0-9]* enqueues //p' "$tmp/trace.out")
[ "$enqueues" = 1160 ] || fail "the program made $enqueues enqueues, not 20 x (50 + 5 + 3)"
grep -q "sync points, 1160 enqueues (aggregated) ->" "$tmp/aggregate.err" || fail "summary line: $(cat "$tmp/aggregate.err")"

db=$tmp/aggregate.sqlite
golden "SELECT key, value FROM meta WHERE key IN ('mode', 'schema_version', 'aggregate_enqueues', 'aggregate_steps') ORDER BY key" <<'END'
aggregate_enqueues|1160
aggregate_steps|20
mode|aggregate
schema_version|4
END
[ "$("$SQLITE3" -batch "$tmp/trace.sqlite" "SELECT value FROM meta WHERE key = 'mode'")" = trace ] || fail "trace mode's meta.mode"
golden "SELECT count(*) FROM calls WHERE class IN ('E1', 'E2', 'E3', 'N2')" <<'END'
0
END

# The rows that are not enqueues, thread by thread (the main thread, then the helper by its
# first row), in order; the stacks taken of them.
rows_sql="SELECT t.ord, a.name, c.class, coalesce(s.text, '-'),
	CASE WHEN c.stream IS NULL THEN '-' WHEN c.stream <= 2 THEN c.stream ELSE 'handle' END,
	c.count, c.native_stack_id IS NOT NULL, c.py_stack_id IS NOT NULL
	FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id
	JOIN (SELECT tid, row_number() OVER (ORDER BY min(start_ns)) AS ord FROM calls GROUP BY tid) t ON t.tid = c.tid
	WHERE c.class NOT IN ('E1', 'E2', 'E3', 'N2') ORDER BY t.ord, c.start_ns, c.id"
"$SQLITE3" -batch "$tmp/trace.sqlite" "$rows_sql" >"$tmp/trace.rows" || fail "trace rows"
"$SQLITE3" -batch "$tmp/aggregate.sqlite" "$rows_sql" >"$tmp/aggregate.rows" || fail "aggregate rows"
[ "$(wc -l <"$tmp/trace.rows")" -ge 110 ] || fail "too few sync rows: $(wc -l <"$tmp/trace.rows")"
diff -u "$tmp/trace.rows" "$tmp/aggregate.rows" >&2 || fail "the sync rows differ between the modes"

# Enqueues per (API, class, site, stream kind, direction, memory kind): rows in trace mode,
# counts of aggregates in aggregate mode.
"$SQLITE3" -batch "$tmp/trace.sqlite" "SELECT a.name, c.class, coalesce(s.text, '-'),
	CASE WHEN c.stream IS NULL THEN '-' WHEN c.stream <= 2 THEN c.stream ELSE 'handle' END,
	coalesce(c.dir, '-'), coalesce(c.host_mem, '-'), count(*), coalesce(sum(c.bytes), '-')
	FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id
	WHERE c.class IN ('E1', 'E2', 'E3', 'N2') GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6" >"$tmp/trace.sites"
q "SELECT a.name, g.class, coalesce(s.text, '-'),
	CASE WHEN g.stream IS NULL THEN '-' WHEN g.stream <= 2 THEN g.stream ELSE 'handle' END,
	coalesce(g.dir, '-'), coalesce(g.host_mem, '-'), sum(g.count), coalesce(sum(g.bytes), '-')
	FROM enqueue_aggregates g JOIN apis a ON a.id = g.api_id LEFT JOIN sites s ON s.id = g.site_id
	GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6" >"$tmp/aggregate.sites"
[ "$(wc -l <"$tmp/trace.sites")" -eq 7 ] || fail "trace mode's enqueue sites: $(cat "$tmp/trace.sites")"
diff -u "$tmp/trace.sites" "$tmp/aggregate.sites" >&2 || fail "enqueue counts per site differ between the modes"
golden "SELECT sum(count), count(DISTINCT tid), sum(errors) FROM enqueue_aggregates" <<'END'
1160|2|0
END

# Step figures: each step's enqueues (both threads) and sync points; the same as trace mode's
# rows that started in each of its steps, and as the aggregate database's own sync rows.
golden "SELECT count(*), min(step), max(step), count(DISTINCT tid), sum(enqueues), min(enqueues), max(enqueues), sum(end_ns IS NULL)
	FROM step_figures" <<'END'
20|0|19|1|1160|58|58|0
END
per_step="SELECT r.start_ns, (SELECT count(*) FROM calls c WHERE c.class IN ('E1', 'E2', 'E3', 'N2')
	AND c.start_ns >= r.start_ns AND c.start_ns < r.end_ns),
	(SELECT coalesce(sum(c.count), 0) FROM calls c JOIN classes k ON k.class = c.class AND k.sync_point
	WHERE c.start_ns >= r.start_ns AND c.start_ns < r.end_ns)
	FROM ranges r WHERE r.kind = 'step' ORDER BY r.start_ns"
"$SQLITE3" -batch "$tmp/trace.sqlite" "$per_step" | cut -d'|' -f2,3 >"$tmp/trace.steps"
q "SELECT enqueues, syncs FROM step_figures ORDER BY step" >"$tmp/aggregate.steps"
diff -u "$tmp/trace.steps" "$tmp/aggregate.steps" >&2 || fail "step figures differ from trace mode's rows per step"
golden "SELECT count(*) FROM step_figures f WHERE f.syncs != (SELECT coalesce(sum(c.count), 0) FROM calls c
	JOIN classes k ON k.class = c.class AND k.sync_point WHERE c.start_ns >= f.start_ns AND c.start_ns < f.end_ns)
	OR f.sync_ns != (SELECT coalesce(sum(c.end_ns - c.start_ns), 0) FROM calls c JOIN classes k ON k.class = c.class
	AND k.sync_point WHERE c.start_ns >= f.start_ns AND c.start_ns < f.end_ns)
	OR f.start_ns NOT IN (SELECT r.start_ns FROM ranges r WHERE r.kind = 'step');
	SELECT count(*) FROM ranges WHERE kind = 'step'" <<'END'
0
20
END

# Host times: ncclAllReduce is always timed (a histogram adding up to its count), launches are
# not without SYNCSPY_ENQUEUE_TIMING=1.
golden "SELECT a.name, g.host_ns IS NOT NULL, g.max_ns IS NOT NULL, coalesce((SELECT sum(h.count) FROM enqueue_histogram h WHERE h.aggregate_id = g.id), 0)
	FROM enqueue_aggregates g JOIN apis a ON a.id = g.api_id WHERE a.name IN ('ncclAllReduce', 'cudaMemcpyAsync') ORDER BY 1" <<'END'
cudaMemcpyAsync|0|0|0
ncclAllReduce|1|1|20
END
rm -rf "$out"
SYNCSPY_MODE=aggregate SYNCSPY_ENQUEUE_TIMING=1 under_shim "$PROGS/aggregate" steps 5 launches 10 >/dev/null 2>&1 || fail "timed run failed"
one_db
golden "SELECT count(*), sum(g.host_ns IS NOT NULL AND g.max_ns <= g.host_ns),
	sum(g.count = (SELECT sum(h.count) FROM enqueue_histogram h WHERE h.aggregate_id = g.id)),
	sum((SELECT count(*) FROM enqueue_histogram h WHERE h.aggregate_id = g.id AND (h.bucket < 0 OR h.bucket > 63)))
	FROM enqueue_aggregates g" <<'END'
6|6|6|0
END
# bucket b holds host times of bit length b: the longest call is in the last bucket
golden "SELECT count(*) FROM enqueue_aggregates g WHERE g.max_ns > 0 AND NOT
	((1 << ((SELECT max(bucket) FROM enqueue_histogram h WHERE h.aggregate_id = g.id) - 1)) <= g.max_ns
	AND g.max_ns < (1 << (SELECT max(bucket) FROM enqueue_histogram h WHERE h.aggregate_id = g.id)))" <<'END'
0
END

# A value that is neither mode: one warning, trace mode.
rm -rf "$out"
SYNCSPY_MODE=sampled under_shim "$PROGS/aggregate" steps 2 launches 2 >/dev/null 2>"$tmp/bad.err" || fail "bad mode run failed"
grep -q 'ignoring SYNCSPY_MODE=sampled (not trace or aggregate), using trace' "$tmp/bad.err" || fail "no warning: $(cat "$tmp/bad.err")"
one_db
golden "SELECT value FROM meta WHERE key = 'mode'; SELECT count(*) > 0 FROM calls WHERE class = 'E1';
	SELECT count(*) FROM sqlite_master WHERE name = 'enqueue_aggregates'" <<'END'
trace
1
0
END
echo PASS
