#!/bin/sh
# SPDX-License-Identifier: MIT
# t216: the GPU idle time a sync caused (docs/rules.md, host-sync; report/gpu.c idle_behind),
# GPU-IDLE-1 to GPU-IDLE-3 and GPU-IDLE-7, each site's gpu_idle_ns checked against hand-computed intervals
# (times: ms after start_mono_ns 1000000000000; thread 4242 syncs, 4250 launches elsewhere):
#   a.cu:10  S2 [10.5, 12.1] while kernel K1 [10, 12) runs; K2 at 12.5 issued at 12.2:
#            the sync waited for the GPU, which then idled until K2: 0.4 ms
#   b.cu:20  S2 [20, 20.01], the device idle since 13 (nothing ran during it); K3 at 21 issued
#            at 20.5: the sync drained nothing, the GPU idled behind the host already
#            (GPU-IDLE-2): the call's own 0.01 ms (0.99 ms before the rule)
#   c.cu:30  S4 pageable H2D [30, 30.4], its own copy [30.05, 30.42) (API record inside the
#            call), K4 at 30.5 issued at 30.45: the copy's time in the call, 0.35 ms, and the
#            gap after it less its own 0.02 ms, 0.08 ms (GPU-IDLE-3): 0.43 ms
#   d.cu:40  S4 [40, 40.05] through a static runtime (its API record [39.9995, 40.06] encloses
#            the call), K5 [39, 40.03) waited for, its own small copy [40.06, 40.07) after the
#            call, K6 at 40.2 issued at 40.1: 0.2 - 0.05 - 0.01 = 0.14 ms (before the rule the
#            own copy counted as queued work: 0)
#   e.cu:50  S4 [50, 50.2], own copy [50.1, 50.15), K7 at 50.3 queued at 49 by thread 4250
#            (GPU-IDLE-1): 0
#   f.cu:60  S2 [60, 60.3] ending while K8 [59.9, 61) still runs (GPU-IDLE-1): 0
#   g.cu:70  a lane's sync (GPU-IDLE-7): synced by 4242 and 4243, each on its own stream. 4242's
#            S2 [70, 70.5] waits for K10 [69.8, 70.5) on stream 7 while 4243's K11 [70.1,
#            70.3) runs on stream 8; the GPU then idles until K12 at 71 (issued by 4243 at
#            70.9): another lane's work ran during the wait, so the idle after it is all lanes
#            being in host work at once, no cost of this sync: 0 (0.5 ms before the rule).
#            4243's S2 [75, 75.1] ends while its K13 [74.9, 75.5) runs: 0
#   h.cu:80  lanes side by side (GPU-IDLE-7, the site's quarter): 4242's S2 [80, 80.5] waits for
#            K20 [79.8, 80.5) on stream 7 while 4243's K21 [80.1, 80.3) runs on stream 8; 4243's
#            S2 [82, 82.4] waits for its K22 [81.9, 82.4) with no other lane's work beside it,
#            and the GPU idles until its K23 at 83 (issued at 82.9): one of the site's two syncs
#            had another lane beside it, so the site's lanes run side by side and the second
#            sync is one lane's too: 0 (0.6 ms before the site's count, c118 of examples/corpus)
#   i.cu:90  lanes a lock serializes: 4242's S2 [90, 90.5] waits for K30 [89.9, 90.5) on stream
#            7, then 4243's K31 [90.6, 91.1) (issued at 90.55); 4243's S2 [90.6, 91.1] waits for
#            it, then 4242's K32 [91.3, 91.5) (issued at 91.2): no sync of the site had another
#            lane's work beside it, so each one's idle counts: 0.1 + 0.2 = 0.3 ms (c105)
. "$E2E_DIR/lib.sh"
db=$tmp/idle.sqlite
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" --gpu-tables "$db" || fail "make-db.sh"
"$SQLITE3" -batch -bail "$db" <<'SQL' || fail "rows"
DELETE FROM calls;
DELETE FROM sites;
INSERT INTO sites(id, address, module, module_offset, symbol, text) VALUES
 (1, 0, 'a.cu', 10, 'main', 'a.cu:10 in main'), (2, 0, 'b.cu', 20, 'main', 'b.cu:20 in main'),
 (3, 0, 'c.cu', 30, 'main', 'c.cu:30 in main'), (4, 0, 'd.cu', 40, 'main', 'd.cu:40 in main'),
 (5, 0, 'e.cu', 50, 'main', 'e.cu:50 in main'), (6, 0, 'f.cu', 60, 'main', 'f.cu:60 in main'),
 (7, 0, 'g.cu', 70, 'lane', 'g.cu:70 in lane'), (8, 0, 'h.cu', 80, 'lane', 'h.cu:80 in lane'),
 (9, 0, 'i.cu', 90, 'lane', 'i.cu:90 in lane');
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, bytes, dir, host_mem, ret, site_id)
 SELECT 4242, a.id, v.class, v.s, v.e, 7, v.bytes, v.dir, v.mem, 0, v.site FROM (
  SELECT 'cudaStreamSynchronize' AS api, 'S2' AS class, 1000010500000 AS s, 1000012100000 AS e,
         NULL AS bytes, NULL AS dir, NULL AS mem, 1 AS site
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 1000020000000, 1000020010000, NULL, NULL, NULL, 2
  UNION ALL SELECT 'cudaMemcpy', 'S4', 1000030000000, 1000030400000, 4194304, 1, 1, 3
  UNION ALL SELECT 'cudaMemcpy', 'S4', 1000040000000, 1000040050000, 16, 1, 1, 4
  UNION ALL SELECT 'cudaMemcpy', 'S4', 1000050000000, 1000050200000, 4096, 2, 2, 5
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 1000060000000, 1000060300000, NULL, NULL, NULL, 6
  UNION ALL SELECT 'cudaStreamSynchronize', 'S2', 1000070000000, 1000070500000, NULL, NULL, NULL, 7
 ) v JOIN apis a ON a.name = v.api;
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, ret, site_id)
 SELECT v.tid, a.id, 'S2', v.s, v.e, v.stream, 0, v.site FROM (
  SELECT 4243 AS tid, 1000075000000 AS s, 1000075100000 AS e, 8 AS stream, 7 AS site
  UNION ALL SELECT 4242, 1000080000000, 1000080500000, 7, 8
  UNION ALL SELECT 4243, 1000082000000, 1000082400000, 8, 8
  UNION ALL SELECT 4242, 1000090000000, 1000090500000, 7, 9
  UNION ALL SELECT 4243, 1000090600000, 1000091100000, 8, 9
 ) v JOIN apis a ON a.name = 'cudaStreamSynchronize';
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, bytes,
 copy_kind, name) VALUES
 ('kernel', 1000010000000, 1000012000000, 0, 7, 1, NULL, NULL, 'K1'),
 ('kernel', 1000012500000, 1000013000000, 0, 7, 2, NULL, NULL, 'K2'),
 ('kernel', 1000021000000, 1000021500000, 0, 7, 3, NULL, NULL, 'K3'),
 ('memcpy', 1000030050000, 1000030420000, 0, 7, 10, 4194304, 1, NULL),
 ('kernel', 1000030500000, 1000031000000, 0, 7, 4, NULL, NULL, 'K4'),
 ('kernel', 1000039000000, 1000040030000, 0, 7, 5, NULL, NULL, 'K5'),
 ('memcpy', 1000040060000, 1000040070000, 0, 7, 11, 16, 1, NULL),
 ('kernel', 1000040200000, 1000040500000, 0, 7, 6, NULL, NULL, 'K6'),
 ('memcpy', 1000050100000, 1000050150000, 0, 7, 12, 4096, 2, NULL),
 ('kernel', 1000050300000, 1000050400000, 0, 7, 7, NULL, NULL, 'K7'),
 ('kernel', 1000059900000, 1000061000000, 0, 7, 8, NULL, NULL, 'K8'),
 ('kernel', 1000062000000, 1000062100000, 0, 7, 9, NULL, NULL, 'K9'),
 ('kernel', 1000069800000, 1000070500000, 0, 7, 20, NULL, NULL, 'K10'),
 ('kernel', 1000070100000, 1000070300000, 0, 8, 21, NULL, NULL, 'K11'),
 ('kernel', 1000071000000, 1000071500000, 0, 8, 22, NULL, NULL, 'K12'),
 ('kernel', 1000074900000, 1000075500000, 0, 8, 23, NULL, NULL, 'K13'),
 ('kernel', 1000079800000, 1000080500000, 0, 7, 30, NULL, NULL, 'K20'),
 ('kernel', 1000080100000, 1000080300000, 0, 8, 31, NULL, NULL, 'K21'),
 ('kernel', 1000081900000, 1000082400000, 0, 8, 32, NULL, NULL, 'K22'),
 ('kernel', 1000083000000, 1000083200000, 0, 8, 33, NULL, NULL, 'K23'),
 ('kernel', 1000089900000, 1000090500000, 0, 7, 40, NULL, NULL, 'K30'),
 ('kernel', 1000090600000, 1000091100000, 0, 8, 41, NULL, NULL, 'K31'),
 ('kernel', 1000091300000, 1000091500000, 0, 7, 42, NULL, NULL, 'K32');
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns) VALUES
 (1, 'runtime', 211, 4250, 1000009000000, 1000009003000),
 (2, 'runtime', 211, 4242, 1000012200000, 1000012203000),
 (3, 'runtime', 211, 4242, 1000020500000, 1000020503000),
 (10, 'runtime', 31, 4242, 1000030000200, 1000030390000),
 (4, 'runtime', 211, 4242, 1000030450000, 1000030453000),
 (5, 'runtime', 211, 4250, 1000038500000, 1000038503000),
 (11, 'runtime', 41, 4242, 1000039999500, 1000040060000),
 (6, 'runtime', 211, 4242, 1000040100000, 1000040103000),
 (12, 'runtime', 31, 4242, 1000050000300, 1000050190000),
 (7, 'runtime', 211, 4250, 1000049000000, 1000049003000),
 (8, 'runtime', 211, 4250, 1000059000000, 1000059003000),
 (9, 'runtime', 211, 4242, 1000061500000, 1000061503000),
 (20, 'runtime', 211, 4242, 1000069700000, 1000069703000),
 (21, 'runtime', 211, 4243, 1000070050000, 1000070053000),
 (22, 'runtime', 211, 4243, 1000070900000, 1000070903000),
 (23, 'runtime', 211, 4243, 1000074800000, 1000074803000),
 (30, 'runtime', 211, 4242, 1000079700000, 1000079703000),
 (31, 'runtime', 211, 4243, 1000080050000, 1000080053000),
 (32, 'runtime', 211, 4243, 1000081800000, 1000081803000),
 (33, 'runtime', 211, 4243, 1000082900000, 1000082903000),
 (40, 'runtime', 211, 4242, 1000089800000, 1000089803000),
 (41, 'runtime', 211, 4243, 1000090550000, 1000090553000),
 (42, 'runtime', 211, 4242, 1000091200000, 1000091203000);
SQL
"$SYNCSPY" report --format json "$db" >"$tmp/r.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
cat >"$tmp/expected" <<'EOF'
host-sync|a.cu:10 in main|400000
host-sync|b.cu:20 in main|10000
sync-copy|c.cu:30 in main|430000
sync-copy|d.cu:40 in main|140000
sync-copy|e.cu:50 in main|0
host-sync|f.cu:60 in main|0
host-sync|g.cu:70 in lane|0
host-sync|h.cu:80 in lane|0
host-sync|i.cu:90 in lane|300000
EOF
rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.site'), json_extract(value, '\$.gpu_idle_ns')
	FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') IN ('host-sync', 'sync-copy')
	ORDER BY json_extract(value, '\$.site')" >"$tmp/actual"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "gpu_idle_ns"
