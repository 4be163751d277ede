#!/bin/sh
# SPDX-License-Identifier: MIT
# t206: `syncspy report` with a GPU timeline (CUPTI's extension tables gpu_activity and gpu_api,
# docs/cupti.md): the GPU idle time behind host syncs (gpu_idle_ns), communication/compute
# overlap per rank (comm_ns, comm_overlap, exposed_comm_ns) and copy-without-overlap, each
# number checked exactly against hand-computed intervals on the fixture of make-db.sh. Without
# the tables nothing changes: no GPU fields, no GPU columns, the two "not measurable" notes.
. "$E2E_DIR/lib.sh"
gpu_db() { # OUT: make-db.sh's fixture plus GPU rows (times: ms after start_mono_ns 1000000000000)
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" --gpu-tables "$1" || fail "make-db.sh"
	"$SQLITE3" -batch -bail "$1" <<'SQL' || fail "GPU rows"
-- device 0: copies at 5 (warm-up), 52 (H2D), 53.1 (D2H), 57 (H2D, beside a kernel), 90 (D2H,
-- no gpu_api row); kernels [50.9, 51.2) (running when the copy at 52 was issued, at 51: the
-- copy waited behind work), [56, 57.2), nccl [60, 70) and [62, 68), compute [65, 80), [66, 67);
-- a memset at 58; a sync record of the stream sync at 55.3; on side stream 9 a 1 MiB copy at
-- 58.2 and a kernel at 59 launched during it (stream 7 ran most kernels: the compute stream).
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, bytes,
 copy_kind, src_kind, dst_kind, name, grid, block) VALUES
 ('memcpy', 1000005000000, 1000005500000, 0, 7, 104, 4096, 2, 'device', 'pinned', NULL, NULL, NULL),
 ('memcpy', 1000052000000, 1000052500000, 0, 7, 101, 67108864, 1, 'pageable', 'device', NULL, NULL, NULL),
 ('kernel', 1000050900000, 1000051200000, 0, 7, 206, NULL, NULL, NULL, NULL, '_Z4prepPf', '8,1,1', '128,1,1'),
 ('memcpy', 1000053100000, 1000053200000, 0, 7, 103, 4, 2, 'device', 'pageable', NULL, NULL, NULL),
 ('kernel', 1000056000000, 1000057200000, 0, 7, 201, NULL, NULL, NULL, NULL, '_Z4gemmPfS_', '64,1,1', '256,1,1'),
 ('memcpy', 1000057000000, 1000057500000, 0, 7, 102, 67108864, 1, 'pageable', 'device', NULL, NULL, NULL),
 ('memset', 1000058000000, 1000058100000, 0, 7, 301, 1024, NULL, NULL, NULL, NULL, NULL, NULL),
 ('kernel', 1000060000000, 1000070000000, 0, 13, 401, NULL, NULL, NULL, NULL, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL', '2,1,1', '512,1,1'),
 ('kernel', 1000062000000, 1000068000000, 0, 13, 402, NULL, NULL, NULL, NULL, 'ncclKernel_Broadcast', '2,1,1', '512,1,1'),
 ('kernel', 1000065000000, 1000080000000, 0, 7, 202, NULL, NULL, NULL, NULL, '_Z4gemmPfS_', '64,1,1', '256,1,1'),
 ('kernel', 1000066000000, 1000067000000, 0, 7, 203, NULL, NULL, NULL, NULL, '_Z4reluPf', '8,1,1', '128,1,1'),
 ('memcpy', 1000090000000, 1000091000000, 0, 7, 999, 4096, 2, 'device', 'pinned', NULL, NULL, NULL),
 ('memcpy', 1000058200000, 1000058900000, 0, 9, 105, 1048576, 1, 'pinned', 'device', NULL, NULL, NULL),
 ('kernel', 1000059000000, 1000059100000, 0, 9, 204, NULL, NULL, NULL, NULL, '_Z4castPf', '8,1,1', '128,1,1'),
 ('kernel', 1000055900000, 1000055950000, 0, 9, 205, NULL, NULL, NULL, NULL, '_Z4castPf', '8,1,1', '128,1,1'),
 ('sync', 1000055300000, 1000055301000, 0, 7, 501, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- each API record 0.2-0.5 us after its host call (calls of make-db.sh): 101 -> the S5 copy at 51,
-- 102 -> the S5 copy at 56, 103 -> the S4 copy at 53.1, 104 -> no call within 1 ms; kernel 201
-- (at 56) was launched at 52.2, during the copy at 52, and waited behind it.
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns) VALUES
 (101, 'runtime', 41, 4242, 1000051000500, 1000052700000),
 (102, 'runtime', 41, 4242, 1000056000500, 1000057600000),
 (103, 'runtime', 31, 4242, 1000053100200, 1000055200000),
 (104, 'runtime', 31, 4242, 1000004000000, 1000004100000),
 (201, 'runtime', 211, 4250, 1000052200500, 1000052203000),
 (204, 'runtime', 211, 4250, 1000058500000, 1000058503000),
 (205, 'runtime', 211, 4250, 1000055800000, 1000055803000),
 (202, 'runtime', 211, 4242, 1000057700500, 1000057703000),
 (501, 'runtime', 131, 4242, 1000055300200, 1000055301400);
SQL
}
gpu_db "$tmp/gpu.sqlite"
"$SYNCSPY" report --format json "$tmp/gpu.sqlite" >"$tmp/r.json" 2>"$tmp/err" || fail "json exited $?: $(cat "$tmp/err")"
"$SYNCSPY" report "$tmp/gpu.sqlite" >"$tmp/r.txt" 2>"$tmp/err" || fail "text exited $?: $(cat "$tmp/err")"
doc="readfile('$tmp/r.json')"

# Overlap: comm = [60, 70) (the nccl kernels' union), compute = [65, 80) -> 5 of 10 ms.
[ "$(rq "SELECT json_extract(value, '\$.comm_ns') || ' ' || json_extract(value, '\$.comm_overlap') || ' ' ||
	json_extract(value, '\$.exposed_comm_ns') FROM json_each(json_extract($doc, '\$.ranks'))")" = "10000000 0.5 5000000" ] ||
	fail "overlap: $(rq "SELECT json_extract($doc, '\$.ranks')")"
# GPU idle behind host syncs: S1 at 65 (busy: 0), S2 at 55.41 (the next work, kernel 205 at
# 55.9, was issued at 55.8, after the sync), no site: S2 at 55.3015 + S3 at 55.65. Each of these
# three found the device idle (its last work, the copy at 53.1, ended before they started:
# GPU-IDLE-2), so each costs its own time, not the gap after it (0.49, 0.5985, 0.25 ms): 0.1 ms,
# and 0.0015 + 0.15 ms. Kernel 201 at 56 was issued at 52.2, before them: had it been the next
# work, the GPU would not have been waiting for the host (idle 0, docs/rules.md). t216 has
# GPU-IDLE-1 to 3 one case each.
cat >"$tmp/expected" <<'END'
host-sync|(no call site)|151500
host-sync|libtorch_cuda.so+0x1234|100000
host-sync|train.py:50 torch.cuda.synchronize()|0
END
rq "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.site'), json_extract(value, '\$.gpu_idle_ns')
	FROM json_each(json_extract($doc, '\$.findings')) WHERE json_extract(value, '\$.rule') = 'host-sync'
	ORDER BY 2" >"$tmp/actual"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "gpu_idle_ns"
# sync-copy too: loss.item()'s blocking copies end at 55.2 (next activity: kernel 205 at 55.9,
# issued after: 0.7 ms, and the call's own copy [53.1, 53.2) inside it, GPU-IDLE-3: 0.1 ms) and
# 59.7 (next: the nccl kernel at 60, no API record: 0.3 ms): 1.1 ms.
[ "$(rq "SELECT json_extract(value, '\$.gpu_idle_ns') FROM json_each(json_extract($doc, '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'sync-copy'")" = 1100000 ] || fail "gpu_idle_ns of sync-copy"
# Other findings: gpu_idle_ns present and null.
[ "$(rq "SELECT count(*) FROM json_each(json_extract($doc, '\$.findings'))
	WHERE json_extract(value, '\$.rule') NOT IN ('host-sync', 'sync-copy') AND json_type(value, '\$.gpu_idle_ns') = 'null'")" = 3 ] ||
	fail "gpu_idle_ns of other rules"
# copy-without-overlap: 52 (H2D, x.to: no kernel beside it, kernel 201 of its stream launched at
# 52.2 and waiting). Not: the warm-up copy at 5; 53.1 (4 bytes: under 64 KiB, though 201 waits
# behind it too); the copy at 57 (beside the kernel [56, 57.2)); 58.2 (kernel 204 waits, but on
# side stream 9, not the compute stream); 90 (4 KiB, nothing after it).
cat >"$tmp/expected" <<'END'
train.py:37 x.to(device, non_blocking=True)|1|500000|500000|67108864
END
rq "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.count'), json_extract(value, '\$.blocked_ns'),
	json_extract(value, '\$.worst_ns'), json_extract(value, '\$.bytes')
	FROM json_each(json_extract($doc, '\$.findings')) WHERE json_extract(value, '\$.rule') = 'copy-without-overlap'
	ORDER BY 1" >"$tmp/actual"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "copy-without-overlap"
# No "not measurable" notes with a GPU timeline.
[ "$(rq "SELECT count(*) FROM json_each(json_extract($doc, '\$.notes')) WHERE value LIKE '%not measurable%'")" = 0 ] ||
	fail "notes: $(rq "SELECT json_extract($doc, '\$.notes')")"
# Text: the rank table's GPU columns, the idle time in the detail.
grep -q '^   rank .* nccl_ms     comm_ms  overlap     exposed_ms$' "$tmp/r.txt" || fail "text header: $(cat "$tmp/r.txt")"
grep -q '^      0  fixture-host .*  10.000    0.500          5.000$' "$tmp/r.txt" || fail "text rank row"
# (the text report gives what happened once one line: the idle time is in the JSON's detail)
[ "$(rq "SELECT count(*) FROM json_each(json_extract($doc, '\$.findings'))
	WHERE json_extract(value, '\$.detail') LIKE 'cuStreamSynchronize x1; worst 0.100 ms; GPU idle behind it: 0.100 ms; once: %'")" = 1 ] ||
	fail "idle in the detail"
# (one copy, in a recording without steps: `info`, docs/rules.md "Steady state")
grep -q '^  \[info\] copy-without-overlap  rank 0  (1 call, [0-9.]* ms)  train.py:37 x.to(device, non_blocking=True)$' "$tmp/r.txt" || fail "text copy finding"

# Several devices: a sync's device is its CUPTI sync record's (joined to the call); syncs
# without one are skipped (gpu_idle_ns null when none of a site's syncs is measured). The one
# measured, the S2 at 55.3015 with its sync record, found its device idle: its own 1.5 us.
cp "$tmp/gpu.sqlite" "$tmp/two.sqlite"
"$SQLITE3" -batch "$tmp/two.sqlite" "INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, name)
	VALUES('kernel', 1000095000000, 1000096000000, 1, 3, 601, '_Z4gemmPfS_')" || fail "device 1"
"$SYNCSPY" report --format json "$tmp/two.sqlite" >"$tmp/two.json" || fail "json of two devices"
cat >"$tmp/expected" <<'END'
(no call site)|1500
libtorch_cuda.so+0x1234|
train.py:50 torch.cuda.synchronize()|
END
rq "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.gpu_idle_ns')
	FROM json_each(json_extract(readfile('$tmp/two.json'), '\$.findings')) WHERE json_extract(value, '\$.rule') = 'host-sync'
	ORDER BY 1" >"$tmp/actual"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "two devices"

# No NCCL kernel: comm_ns 0, comm_overlap null, exposed 0.
cp "$tmp/gpu.sqlite" "$tmp/nonccl.sqlite"
"$SQLITE3" -batch "$tmp/nonccl.sqlite" "DELETE FROM gpu_activity WHERE name LIKE 'nccl%'" || fail "delete"
"$SYNCSPY" report --format json "$tmp/nonccl.sqlite" >"$tmp/nonccl.json" || fail "json without nccl"
[ "$(rq "SELECT json_extract(value, '\$.comm_ns') || ' ' || json_type(value, '\$.comm_overlap') || ' ' ||
	json_extract(value, '\$.exposed_comm_ns') FROM json_each(json_extract(readfile('$tmp/nonccl.json'), '\$.ranks'))")" = "0 null 0" ] ||
	fail "without nccl kernels"

# meta.cupti names a partial timeline: the report says so, in the recording's own words (what
# SYNCSPY_CUPTI_KINDS left out; what another CUPTI client took), and nothing else changes.
for status in "on: only kernel,memcpy (SYNCSPY_CUPTI_KINDS)|GPU timeline limited to what was asked" \
	"yielded: another CUPTI client (libtorch_cpu.so) took CUPTI at 5 ns (CLOCK_MONOTONIC); no GPU rows after that|GPU timeline partial"; do
	cp "$tmp/gpu.sqlite" "$tmp/partial.sqlite"
	"$SQLITE3" -batch "$tmp/partial.sqlite" "INSERT OR REPLACE INTO meta(key, value) VALUES('cupti', '${status%%|*}')" || fail "meta.cupti"
	"$SYNCSPY" report --format json "$tmp/partial.sqlite" >"$tmp/partial.json" || fail "json with meta.cupti ${status%%|*}"
	[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/partial.json'), '\$.notes'))
		WHERE value = '$tmp/partial.sqlite: ${status#*|}: ${status%%|*}'")" = 1 ] ||
		fail "note for ${status%%|*}: $(rq "SELECT json_extract(readfile('$tmp/partial.json'), '\$.notes')")"
	[ "$(rq "SELECT json_extract(value, '\$.comm_ns') FROM json_each(json_extract(readfile('$tmp/partial.json'), '\$.ranks'))")" = 10000000 ] ||
		fail "the GPU timeline with meta.cupti ${status%%|*}"
done

# pause_note NAME META_ROWS EXPECTED: the report of gpu.sqlite with META_ROWS added to its meta
# gives the note EXPECTED about the GPU timeline (PATH: stands for the copy's path).
pause_note() {
	cp "$tmp/gpu.sqlite" "$tmp/$1.sqlite"
	"$SQLITE3" -batch "$tmp/$1.sqlite" "INSERT INTO meta(key, value) VALUES$2" || fail "$1: meta"
	"$SYNCSPY" report --format json "$tmp/$1.sqlite" >"$tmp/$1.json" || fail "$1: json"
	rq "SELECT value FROM json_each(json_extract(readfile('$tmp/$1.json'), '\$.notes')) WHERE value LIKE '%GPU timeline%'" >"$tmp/actual"
	echo "$tmp/$1.sqlite: $3" >"$tmp/expected"
	diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "$1: note"
}
# The recording's length (make-db.sh: 0.1 s), and that less 60 ms.
wall=$(db=$tmp/gpu.sqlite q "SELECT printf('%.3f', ((SELECT value FROM meta WHERE key = 'end_mono_ns') - (SELECT value FROM meta WHERE key = 'start_mono_ns')) / 1e9)")
traced=$(db=$tmp/gpu.sqlite q "SELECT printf('%.3f', ((SELECT value FROM meta WHERE key = 'end_mono_ns') - (SELECT value FROM meta WHERE key = 'start_mono_ns') - 60000000) / 1e9)")
# The program paused the timeline (syncspy_gpu_trace, meta.cupti_pauses/cupti_paused_ns): the
# report says for how long, against the recording's length.
pause_note paused "('cupti_pauses', 3), ('cupti_paused_ns', 25000000)" \
	"GPU timeline paused by the program (syncspy_gpu_trace) 3 times, 0.025 s of $wall s: GPU figures cover the traced part only"
# The sampler traced windows (SYNCSPY_CUPTI_SAMPLE, meta.cupti_sample/cupti_windows, CUPTI-4):
# the note says so, with the time traced, instead of the program's pauses.
# The time traced is meta.cupti_traced_ns (from CUPTI's start, which is after the process's):
pause_note sampled "('cupti_pauses', 4), ('cupti_paused_ns', 60000000), ('cupti_traced_ns', 20000000), ('cupti_sample', '10/50'), ('cupti_windows', 4)" \
	"GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=10/50 ms): 4 windows, 0.020 s of $wall s traced: GPU figures cover the traced part only"
# and without it (a recording made before it was written), the recording's length less the pauses.
pause_note sampled_untimed "('cupti_pauses', 4), ('cupti_paused_ns', 60000000), ('cupti_sample', '10/50'), ('cupti_windows', 4)" \
	"GPU timeline sampled (SYNCSPY_CUPTI_SAMPLE=10/50 ms): 4 windows, $traced s of $wall s traced: GPU figures cover the traced part only"

# Without the tables: no GPU field, column, rule or finding text; the two notes as before.
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/plain.sqlite" || fail "make-db.sh"
"$SYNCSPY" report --format json "$tmp/plain.sqlite" >"$tmp/p.json" || fail "json of plain"
"$SYNCSPY" report "$tmp/plain.sqlite" >"$tmp/p.txt" || fail "text of plain"
grep -q 'gpu_idle_ns\|comm_ns\|comm_overlap\|copy-without-overlap\|GPU idle behind' "$tmp/p.json" && fail "GPU fields without tables"
grep -q 'comm_ms\|copy-without-overlap\|GPU idle behind' "$tmp/p.txt" && fail "GPU text without tables"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/p.json'), '\$.notes')) WHERE value LIKE '%not measurable without GPU timeline%'")" = 2 ] ||
	fail "notes without tables"

# A report of both: GPU fields for all, null for the rank without the tables, and a note for it.
"$SQLITE3" -batch "$tmp/plain.sqlite" "UPDATE meta SET value = 1 WHERE key = 'rank'; UPDATE meta SET value = 4343 WHERE key = 'pid'" || fail "rank 1"
"$SYNCSPY" report --format json "$tmp/gpu.sqlite" "$tmp/plain.sqlite" >"$tmp/both.json" || fail "json of both"
[ "$(rq "SELECT group_concat(json_extract(value, '\$.rank') || ':' || json_type(value, '\$.comm_ns'), ' ')
	FROM json_each(json_extract(readfile('$tmp/both.json'), '\$.ranks'))")" = "0:integer 1:null" ] || fail "mixed ranks"
grep -q 'plain.sqlite: no GPU timeline' "$tmp/both.json" || fail "mixed note"
exit 0
