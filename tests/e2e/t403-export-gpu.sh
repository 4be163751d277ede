#!/bin/sh
# SPDX-License-Identifier: MIT
# t403: `syncspy export --format chrome` of a database with a GPU timeline (CUPTI's tables,
# docs/cupti.md): valid JSON, one track per (device, CUPTI stream) named "GPU D stream S" with
# the kernels, copies and memsets as slices (name, bytes), and a flow from each host call's
# gpu_api record (on its thread's track) to the GPU work of the same correlation id. A database
# without the tables exports no GPU track. Rows without a time (start and end 0: work CUPTI had not
# finished at a forced flush) export nothing.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/plain.sqlite" || fail "make-db.sh"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" --gpu-tables "$tmp/gpu.sqlite" || fail "make-db.sh --gpu-tables"
"$SQLITE3" -batch -bail "$tmp/gpu.sqlite" <<'SQL' || fail "GPU rows"
INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id, correlation_id, bytes,
 copy_kind, src_kind, dst_kind, name, grid, block) VALUES
 ('memcpy', 1000052000000, 1000052500000, 0, 7, 101, 67108864, 1, 'pageable', 'device', NULL, NULL, NULL),
 ('kernel', 1000056000000, 1000057200000, 0, 7, 201, NULL, NULL, NULL, NULL, '_Z4gemmPfS_', '64,1,1', '256,1,1'),
 ('memset', 1000058000000, 1000058100000, 0, 7, 301, 1024, NULL, NULL, NULL, NULL, NULL, NULL),
 ('kernel', 1000060000000, 1000070000000, 0, 13, 401, NULL, NULL, NULL, NULL, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL', '2,1,1', '512,1,1'),
 ('memcpy', 1000090000000, 1000091000000, 0, 7, 999, 4096, 2, 'device', 'pinned', NULL, NULL, NULL),
 ('sync', 1000055300000, 1000055301000, 0, 7, 501, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 ('kernel', 0, 0, 0, 7, 601, NULL, NULL, NULL, NULL, '_Z4gemmPfS_', '64,1,1', '256,1,1'),
 ('memcpy', 0, 0, 0, 7, 602, 4096, 2, 'device', 'pinned', NULL, NULL, NULL);
-- 601, 602: work not finished at a forced flush, as CUPTI hands it over (start and end 0; the
-- H100 corpus traces before the shim dropped them): no slice, no flow.
-- 101: the S5 copy at 51 ms (tid 4242); 201: the launch at 55.7 ms (tid 4250); driver record of
-- 101 later than the runtime one (the flow starts at the earliest); no record for 301, 401, 999.
INSERT INTO gpu_api(correlation_id, layer, cbid, tid, start_ns, end_ns) VALUES
 (101, 'runtime', 41, 4242, 1000051000500, 1000052700000),
 (101, 'driver', 7, 4242, 1000051000900, 1000052600000),
 (201, 'runtime', 211, 4250, 1000055700500, 1000055703000),
 (501, 'runtime', 131, 4242, 1000055300200, 1000055301400),
 (601, 'runtime', 211, 4250, 1000055800500, 1000055803000);
SQL
"$SYNCSPY" export -o "$tmp/gpu.json" "$tmp/gpu.sqlite" 2>"$tmp/err" || fail "export exited $?: $(cat "$tmp/err")"
"$SYNCSPY" export -o "$tmp/plain.json" "$tmp/plain.sqlite" 2>"$tmp/err" || fail "plain export exited $?"

"$PYTHON3" - "$tmp/gpu.json" "$tmp/plain.json" <<'END' || fail "trace checks"
import json, sys
gpu = json.load(open(sys.argv[1]))["traceEvents"]
plain = json.load(open(sys.argv[2]))["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in gpu if e["ph"] == "M" and e["name"] == "thread_name"}
tracks = {n: k for k, n in names.items() if n.startswith("GPU ")}
assert sorted(tracks) == ["GPU 0 stream 13", "GPU 0 stream 7"], tracks
assert not any(n.startswith("GPU ") for n in
               (e["args"]["name"] for e in plain if e["ph"] == "M" and e["name"] == "thread_name"))
# the plain database's events are the GPU one's, minus the GPU events
gpu_tids = {k[1] for k in tracks.values()}
assert [e for e in gpu if e["tid"] not in gpu_tids and e.get("cat") != "gpu"] == plain
x = [e for e in gpu if e["ph"] == "X" and (e["pid"], e["tid"]) in tracks.values()]
s7 = [(e["name"], e["args"].get("bytes"), e["dur"]) for e in x if names[(e["pid"], e["tid"])] == "GPU 0 stream 7"]
assert s7 == [("memcpy HtoD", 67108864, 500.0), ("gemm(float*, float*)", None, 1200.0),
              ("memset", 1024, 100.0), ("memcpy DtoH", 4096, 1000.0)], s7
s13 = [e["name"] for e in x if names[(e["pid"], e["tid"])] == "GPU 0 stream 13"]
assert s13 == ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"], s13
# kernel names demangled (libstdc++'s demangler), the symbol kept as an argument; a name that is
# not a C++ symbol is as recorded, with no symbol argument
kernel = [e for e in x if e["name"] == "gemm(float*, float*)"][0]
assert kernel["args"]["grid"] == "64,1,1" and kernel["args"]["correlation_id"] == 201, kernel
assert kernel["args"]["symbol"] == "_Z4gemmPfS_", kernel
assert "symbol" not in [e for e in x if e["name"].startswith("nccl")][0]["args"]
# times: the HtoD copy starts 1 ms after its host call (on the shared axis)
copy = [e for e in x if e["name"] == "memcpy HtoD"][0]
assert abs(copy["ts"] - [e for e in gpu if e["ph"] == "X" and e["tid"] == 4242 and e["cat"] == "S5"][0]["ts"] - 1000.0) < 1e-6
# flows: one per GPU row with a gpu_api record (101, 201), from the earliest record's start on
# the host thread's track to the GPU slice's start
fs = {e["id"]: e for e in gpu if e["ph"] == "s" and e["cat"] == "gpu"}
ff = {e["id"]: e for e in gpu if e["ph"] == "f" and e["cat"] == "gpu"}
assert len(fs) == 2 and fs.keys() == ff.keys(), (fs, ff)
pairs = sorted((fs[i]["tid"], fs[i]["ts"], names[(ff[i]["pid"], ff[i]["tid"])], ff[i]["ts"]) for i in fs)
t0 = copy["ts"] - 52000.0  # start_mono_ns on the trace's axis, in us
got = [(tid, round(a - t0, 3), track, round(b - t0, 3)) for tid, a, track, b in pairs]
assert got == [(4242, 51000.5, "GPU 0 stream 7", 52000.0), (4250, 55700.5, "GPU 0 stream 7", 56000.0)], got
for i in fs:  # each start lies inside a host call's slice of its thread
    s = fs[i]
    assert any(e["ph"] == "X" and e["tid"] == s["tid"] and e["ts"] <= s["ts"] <= e["ts"] + e["dur"] for e in gpu), s
END
exit 0
