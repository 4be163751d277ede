#!/bin/sh
# SPDX-License-Identifier: MIT
# t254: upload-behind-download (docs/rules.md): a pipeline of pages (gpu_loop shared-dma; d48 of
# examples/corpus) uploads each page on a DMA stream and queues the page's download on the same
# stream after an event wait on the compute, so the next page's upload waits behind that
# download, which waits for the kernels: upload, compute and download take turns on the
# stand-in's GPU timeline. The report names the download's line, steady, ranked first, with
# about the download's time per step as its cost. The fix (split-dma: the downloads on a stream
# of their own) has no such finding.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
# the stand-in CUPTI's MEMCPY records (tests/standin/cupti.c)
STANDIN_CUPTI_COPIES=1
export LD_LIBRARY_PATH STANDIN_CUPTI_COPIES
src=$TOP_SRCDIR/tests/progs/gpu_loop.c
download_line=$(grep -n "MARK:dma-down " "$src" | cut -d: -f1)
cd "$PROGS" || fail "no $PROGS"
for mode in shared-dma split-dma; do
	rm -rf "$out"
	SYNCSPY_CUPTI_SAMPLE=all under_shim ./gpu_loop 30 $mode >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
		fail "gpu_loop $mode failed: $(cat "$tmp/$mode.out" "$tmp/$mode.err")"
	grep -q '^done 30 steps$' "$tmp/$mode.out" || fail "gpu_loop $mode: $(cat "$tmp/$mode.out")"
	one_db
	cp "$db" "$tmp/$mode.sqlite"
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" 2>"$tmp/err" ||
		fail "report $mode exited $?: $(cat "$tmp/err")"
done
db=$tmp/shared-dma.sqlite
# the timeline: the steady uploads started as a download ended, on one stream
golden "SELECT count(*) > 20, sum(EXISTS (SELECT 1 FROM gpu_activity d WHERE d.kind = 'memcpy'
	AND d.copy_kind = 2 AND d.stream_id = u.stream_id AND u.start_ns - d.end_ns BETWEEN 0 AND 500000)) > 20
	FROM gpu_activity u WHERE u.kind = 'memcpy' AND u.copy_kind = 1 AND u.bytes = 4194304" <<'END'
1|1
END
# the finding: the download's line, steady and first, nearly one per steady step, each held
# upload about a download's time of the cost (4 MiB at the stand-in's 2 GB/s: 2 ms or more,
# a few far more on a loaded machine)
set -- $(q "SELECT min(end_ns - start_ns), max(end_ns - start_ns) FROM gpu_activity
	WHERE kind = 'memcpy' AND copy_kind = 2 AND bytes = 4194304" | tr '|' ' ')
rq "SELECT json_extract(f.value, '\$.site') = '$src:$download_line in dma_pipeline', json_extract(f.value, '\$.phase'),
	json_extract(f.value, '\$.count') >= 20, json_extract(f.value, '\$.severity') <> 'info', f.key = 0,
	json_extract(f.value, '\$.cost_per_step_ns') BETWEEN $1 / 2 AND $2,
	json_extract(f.value, '\$.bytes') >= 20 * 4194304,
	json_extract(f.value, '\$.advice') LIKE 'Queue the downloads on a stream of their own%'
	FROM json_each(readfile('$tmp/shared-dma.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'upload-behind-download'" >"$tmp/actual"
echo "1|steady|1|1|1|1|1|1" | diff -u - "$tmp/actual" >&2 ||
	fail "shared DMA stream: $(cat "$tmp/shared-dma.json")"
# the fix: the uploads run beside the downloads and the kernels, and no finding
n=$(rq "SELECT count(*) FROM json_each(readfile('$tmp/split-dma.json'), '\$.findings') f
	WHERE json_extract(f.value, '\$.rule') = 'upload-behind-download'")
[ "$n" = 0 ] || fail "split DMA streams: $n findings: $(cat "$tmp/split-dma.json")"
db=$tmp/split-dma.sqlite
golden "SELECT sum((SELECT count(*) FROM gpu_activity k WHERE k.kind <> 'sync'
	AND k.stream_id <> c.stream_id AND k.start_ns < c.end_ns AND c.start_ns < k.end_ns) > 0) > 20
	FROM gpu_activity c WHERE c.kind = 'memcpy' AND c.copy_kind = 1 AND c.bytes = 4194304" <<'END'
1
END
finish
