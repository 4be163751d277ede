#!/bin/sh
# SPDX-License-Identifier: MIT
# t258: copy-without-overlap's floor of a few microseconds a step (rules/copy_without_overlap.c
# SS_OVERLAP_MIN_STEP_NS, docs/rules.md). A loop of 20 steps: a 200 us kernel, then a 1 MiB
# result download on the same stream that the next step's kernel, launched long before, waits
# behind (the host runs ahead). A 40 us download is a finding (16% of the step); a 3 us one
# (1.5% of the step: above the 1% floor that holds against the share) is `info`: an event and a
# second stream would cost about what it could win back (c140 of examples/corpus). The last
# step's download has no kernel behind it: 18 of the 19 steady ones count.
. "$E2E_DIR/lib.sh"
loop_db() { # OUT COPY_NS: make-db.sh's tables, its calls replaced by the loop's
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" --gpu-tables "$1" || fail "make-db.sh"
	"$SQLITE3" -batch -bail "$1" <<SQL || fail "rows"
DELETE FROM calls;
DELETE FROM gpu_activity;
DELETE FROM gpu_api;
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (31, 0, 'prog', 31, 'main', 'prog.c:31 in main'), (32, 0, 'prog', 32, 'main', 'prog.c:32 in main');
-- host: step k at 1000010000000 + k * 50 us: the launch, then the copy 10 us later
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, bytes, dir, host_mem, ret, site_id)
 SELECT 4242, v.api, 'E1', 1000010000000 + k * 50000 + v.at, 1000010000000 + k * 50000 + v.at + 3000,
        139637976731648, v.bytes, v.dir, v.mem, 0, v.site
 FROM step, (SELECT 9 AS api, 0 AS at, NULL AS bytes, NULL AS dir, NULL AS mem, 31 AS site
  UNION ALL SELECT 6, 10000, 1048576, 2, 2, 32) v
 ORDER BY 4;
-- GPU: step k's kernel at 1000011000000 + k * (200 us + COPY_NS), the copy right after it
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, bytes,
 copy_kind, src_kind, dst_kind, name)
 SELECT 'kernel', 1000011000000 + k * (200000 + $2), 1000011000000 + k * (200000 + $2) + 200000,
        0, 7, 1000 + 2 * k, NULL, NULL, NULL, NULL, '_Z4stepPf' FROM step
 UNION ALL
 SELECT 'memcpy', 1000011000000 + k * (200000 + $2) + 200000, 1000011000000 + (k + 1) * (200000 + $2),
        0, 7, 1001 + 2 * k, 1048576, 2, 'device', 'pinned', NULL FROM step;
WITH RECURSIVE step(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM step WHERE k < 19)
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns)
 SELECT 1000 + 2 * k, 'runtime', 211, 4242, 1000010000000 + k * 50000 + 200, 1000010000000 + k * 50000 + 2500 FROM step
 UNION ALL
 SELECT 1001 + 2 * k, 'runtime', 41, 4242, 1000010000000 + k * 50000 + 10200, 1000010000000 + k * 50000 + 12500 FROM step;
SQL
}
finding() { # DB: severity|phase|steady count|detail says why it is info
	"$SYNCSPY" report --format json "$1" >"$tmp/r.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
	rq "SELECT json_extract(value, '\$.severity'), json_extract(value, '\$.phase'), json_extract(value, '\$.count'),
		json_extract(value, '\$.detail') LIKE '%a few microseconds a step to win back%'
		FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'copy-without-overlap' AND json_extract(value, '\$.site') = 'prog.c:32 in main'"
}
loop_db "$tmp/long.sqlite" 40000
finding "$tmp/long.sqlite" >"$tmp/actual"
[ "$(rq "SELECT json_extract(readfile('$tmp/r.json'), '\$.ranks[0].steps.steady')")" = 19 ] ||
	fail "steps: $(rq "SELECT json_extract(readfile('$tmp/r.json'), '\$.ranks[0].steps')")"
echo "high|steady|18|0" | diff -u - "$tmp/actual" >&2 || fail "a 40 us download a step: $(cat "$tmp/r.json")"
loop_db "$tmp/short.sqlite" 3000
finding "$tmp/short.sqlite" >"$tmp/actual"
echo "info|steady|18|1" | diff -u - "$tmp/actual" >&2 || fail "a 3 us download a step: $(cat "$tmp/r.json")"
finish
