#!/bin/sh
# SPDX-License-Identifier: MIT
# t503: GPU lanes in the HTML report. A database with CUPTI's tables (make-db.sh's fixture plus
# the GPU rows of t206) gets, per rank, one GPU lane per (device, CUPTI stream id) and its
# kernels, copies and memsets at their GPU times, each tied to the host thread lane and time of
# its launch (correlation id -> gpu_api); the page renders in headless Chromium without a console
# message. Without the tables the data has no GPU field and the viewer's GPU code is left out.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"

sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/plain.sqlite" >/dev/null || fail "make-db.sh"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" --gpu-tables "$tmp/gpu.sqlite" >/dev/null || fail "make-db.sh --gpu-tables"
"$SQLITE3" -batch -bail "$tmp/gpu.sqlite" <<'SQL' || fail "GPU rows"
-- times: ms after start_mono_ns 1000000000000; the first host call is at 0.001 ms
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, bytes,
 copy_kind, src_kind, dst_kind, name, grid, block) VALUES
 ('memcpy', 1000052000000, 1000052500000, 0, 7, 101, 67108864, 1, 'pageable', 'device', NULL, NULL, NULL),
 ('kernel', 1000056000000, 1000057200000, 0, 7, 201, NULL, NULL, NULL, NULL, '_Z4gemmPfS_', '64,1,1', '256,1,1'),
 ('memset', 1000058000000, 1000058100000, 0, 7, 301, 1024, NULL, NULL, NULL, NULL, NULL, NULL),
 ('kernel', 1000060000000, 1000070000000, 0, 13, 401, NULL, NULL, NULL, NULL, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL', '2,1,1', '512,1,1'),
 ('kernel', 1000095000000, 1000096000000, 1, 3, 601, NULL, NULL, NULL, NULL, '</script><!--', NULL, NULL),
 ('sync', 1000055300000, 1000055301000, 0, 7, 501, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- 101: the S5 copy at 51 on thread 4242; 201: the E1 launch at 55.7 on thread 4250; 401: a
-- thread that made no calls (no launch on a lane)
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns) VALUES
 (101, 'runtime', 41, 4242, 1000051000500, 1000052700000),
 (201, 'runtime', 211, 4250, 1000055700500, 1000055703000),
 (201, 'driver', 307, 4250, 1000055700900, 1000055702000),
 (401, 'runtime', 211, 9999, 1000059000000, 1000059001000);
SQL
html_report "$tmp/gpu.html" "$tmp/gpu.sqlite"
html_report "$tmp/plain.html" "$tmp/plain.sqlite"
# Still two script elements, nothing from the data ending one.
[ "$(grep -oi '</script' "$tmp/gpu.html" | wc -l)" -eq 2 ] || fail "$(grep -oi '</script' "$tmp/gpu.html" | wc -l) </script> in the GPU page"

"$PYTHON3" - "$tmp/gpu.html" "$tmp/plain.html" "$TOP_SRCDIR/viewer" <<'PY' || fail "data check failed"
import json, re, sys
def data(path):
    html = open(path, encoding="utf-8").read()
    return html, json.loads(re.search(r'<script type="application/json" id="syncspy-data">(.*?)</script>', html, re.S).group(1))
html, d = data(sys.argv[1])
r = d["timeline"]["ranks"][0]
assert (r["gpu_total"], r["gpu_shown"], r["gpu_truncated"]) == (5, 5, False), r
assert r["gpu_lanes"] == [[0, 7, 0], [0, 13, 1], [1, 3, 2]], r["gpu_lanes"]
strings = dict(r["gpu_strings"])
items = [it + [0, -1, -1, -1, 0][len(it) - 6:] for it in r["gpu"]]  # trailing defaults put back
# [start, dur, kind, GPU lane, thread lane, launch, bytes, name, src, dst, copy_kind]; times from
# the first host call (1000000001000)
first = 1000000001000
want = [
    [1000052000000 - first, 500000, 1, 0, 0, 1000051000500 - first, 67108864, -1, "pageable", "device", 1],
    [1000056000000 - first, 1200000, 0, 0, 1, 1000055700500 - first, 0, "_Z4gemmPfS_", -1, -1, 0],
    [1000058000000 - first, 100000, 2, 0, -1, 0, 1024, -1, -1, -1, 0],
    [1000060000000 - first, 10000000, 0, 1, -1, 0, 0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", -1, -1, 0],
    [1000095000000 - first, 1000000, 0, 2, -1, 0, 0, "</script><!--", -1, -1, 0],
]
got = [it[:7] + [strings.get(i, -1) if i >= 0 else -1 for i in it[7:10]] + it[10:] for it in items]
assert got == want, got
assert "\\u003c/script>" in html
# kernel names that are C++ symbols also come demangled (the page shows these, the symbol in
# the tooltip); the others are not repeated
assert r["gpu_demangled"] == \
    [[i, "gemm(float*, float*)"] for i, v in r["gpu_strings"] if v == "_Z4gemmPfS_"], r["gpu_demangled"]
lanes = [l[0] for l in r["lanes"]]
assert lanes[:2] == ["thread", "thread"], lanes
# The viewer's GPU code is in this page, and in no page without GPU data.
gpu_code = "function gpuFirstVisible("
assert gpu_code in html
plain, p = data(sys.argv[2])
assert gpu_code not in plain and "SYNCSPY_GPU_JS" not in plain
assert not [k for k in p["timeline"]["ranks"][0] if k.startswith("gpu")], p["timeline"]["ranks"][0].keys()
assert open(sys.argv[3] + "/report.js", encoding="utf-8").read() in plain, "report.js is not inlined verbatim"
PY

# The cap (SS_HTML_CALL_CAP = 200,000 GPU items per rank, docs/viewer.md): 5 more kernels than
# that, the last 5 the latest; the page holds the earliest 200,000 and says that some were cut.
cp "$tmp/gpu.sqlite" "$tmp/many.sqlite"
"$SQLITE3" -batch -bail "$tmp/many.sqlite" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
	INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, name)
	SELECT 'kernel', 1000100000000 + i * 1000, 1000100000000 + i * 1000 + 500, 0, 7, 700000 + i, '_Z4stepv' FROM n" ||
	fail "many GPU rows"
html_report "$tmp/many.html" "$tmp/many.sqlite"
"$PYTHON3" - "$tmp/many.html" <<'PY' || fail "GPU cap"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script type="application/json" id="syncspy-data">(.*?)</script>', html, re.S).group(1))
r = d["timeline"]["ranks"][0]
assert (r["gpu_total"], r["gpu_shown"], r["gpu_truncated"]) == (200005, 200000, True), (r["gpu_total"], r["gpu_shown"], r["gpu_truncated"])
assert len(r["gpu"]) == 200000, len(r["gpu"])
starts = [it[0] for it in r["gpu"]]
assert starts == sorted(starts), "not in time order"
first = 1000000001000
# the 5 fixture items all start before the synthetic kernels: all kept; the latest 5 cut
assert max(starts) == 1000100000000 + 199995 * 1000 - first, max(starts)
PY

need_chromium
chromium_run --dump-dom "file://$tmp/gpu.html" >"$tmp/dom.html" || fail "chromium failed: $(tail -5 "$tmp/chromium.log")"
no_console_messages
grep -q '<body[^>]* data-rendered="ok"' "$tmp/dom.html" || fail "the page did not finish rendering: $(grep -o '<body[^>]*>' "$tmp/dom.html")"
grep -q 'data-error=' "$tmp/dom.html" && fail "the page had an uncaught error: $(grep -o '<body[^>]*>' "$tmp/dom.html")"
for want in '5 GPU items' 'GPU kernel' 'GPU memcpy' 'GPU memset' 'GPU lanes (recorded through CUPTI)'; do
	grep -qF -- "$want" "$tmp/dom.html" || fail "the page does not show: $want"
done
# The capped page renders too, and says where GPU items were cut (the rank's title, the notes).
chromium_run --dump-dom "file://$tmp/many.html" >"$tmp/many-dom.html" || fail "chromium failed on the capped page"
no_console_messages
grep -q '<body[^>]* data-rendered="ok"' "$tmp/many-dom.html" || fail "the capped page did not finish rendering"
grep -qF '(first 200,000 of 200,005: see notes)' "$tmp/many-dom.html" || fail "the capped page's title does not say it"
grep -qF 'the GPU lanes show the first 200,000 of 200,005 kernels, copies and memsets.' "$tmp/many-dom.html" ||
	fail "the capped page's notes do not say it"
exit 0
