#!/bin/sh
# SPDX-License-Identifier: MIT
# t402: `syncspy export --format chrome` on the 4-rank NCCL scenario and the e123 scenario:
# valid JSON, one process per rank (named, sorted by rank), thread and stream tracks named,
# every E3 wait tied to its E2 record by a flow (s on the record's stream, f on the waiting
# stream), timestamps non-negative and sorted on each track; -o - writes to stdout.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
under_shim "$PROGS/scenarios" nccl 4 >/dev/null 2>&1 || fail "scenario nccl failed"
mkdir "$tmp/e123" || exit 1
env LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$tmp/e123" "$PROGS/scenarios" e123 >/dev/null 2>&1 || fail "scenario e123 failed"

"$SYNCSPY" export --format chrome -o "$tmp/ranks.json" "$out" 2>"$tmp/err" || fail "export exited $?: $(cat "$tmp/err")"
grep -q '^syncspy: export: 4 databases, ' "$tmp/err" || fail "message: $(cat "$tmp/err")"
"$SYNCSPY" export -o - "$tmp/e123" >"$tmp/e123.json" 2>"$tmp/err" || fail "export to stdout exited $?"

"$PYTHON3" - "$tmp/ranks.json" "$tmp/e123.json" <<'END' || fail "trace checks"
import json, sys, collections

def load(path):
    trace = json.load(open(path))
    assert trace["displayTimeUnit"] == "ns"
    return trace["traceEvents"]

def check_tracks(events):
    per_track = collections.defaultdict(list)
    for e in events:
        if e["ph"] in "Xsf":
            assert e["ts"] >= 0, e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
            per_track[(e["pid"], e["tid"])].append(e["ts"])
    for track, ts in per_track.items():
        assert ts == sorted(ts), ("unsorted track", track)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    for track in per_track:
        assert track in names, ("unnamed track", track)
    return names

ranks = load(sys.argv[1])
procs = {e["pid"]: e["args"]["name"] for e in ranks if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(procs) == [0, 1, 2, 3], procs
for pid, name in procs.items():
    assert name.startswith("rank %d (" % pid), name
sort = {e["pid"]: e["args"]["sort_index"] for e in ranks if e["name"] == "process_sort_index"}
assert sort == {0: 0, 1: 1, 2: 2, 3: 3}, sort
names = check_tracks(ranks)
for pid in range(4):
    mine = [n for (p, t), n in names.items() if p == pid]
    assert any(n.startswith("scenarios (tid ") for n in mine), mine
    assert any(n.startswith("stream 0x") for n in mine), mine
    assert "legacy stream" in mine, mine
    ops = [e for e in ranks if e["ph"] == "X" and e["pid"] == pid and e["name"] == "ncclAllReduce"]
    assert len(ops) == 4, ops  # 2 on the thread track, 2 on the stream track
    assert {e["cat"] for e in ops} == {"N2"}

e123 = load(sys.argv[2])
names = check_tracks(e123)
x = [e for e in e123 if e["ph"] == "X"]
waits = [e for e in x if e["cat"] == "E3" and not names[(e["pid"], e["tid"])].startswith("stream")]
starts = {e["id"]: e for e in e123 if e["ph"] == "s"}
ends = {e["id"]: e for e in e123 if e["ph"] == "f"}
assert len(waits) == 10 and len(starts) == 10 and starts.keys() == ends.keys(), (len(waits), len(starts))
for fid, s in starts.items():
    f = ends[fid]
    assert names[(s["pid"], s["tid"])].startswith("stream 0x")
    assert names[(f["pid"], f["tid"])].startswith("stream 0x")
    assert s["tid"] != f["tid"], "a flow between two streams"
    assert s["ts"] <= f["ts"], (s, f)
    # each end lies inside an E2 (start) or E3 (end) slice on its track
    def inside(ev, cat):
        return any(e["cat"] == cat and e["tid"] == ev["tid"] and e["ts"] <= ev["ts"] <= e["ts"] + e["dur"] for e in x)
    assert inside(s, "E2") and inside(f, "E3"), (s, f)
syncs = [e for e in x if e["cat"].startswith("S")]
assert syncs and all(e.get("cname") == "terrible" for e in syncs)
END

# Errors: no -o, unknown format.
"$SYNCSPY" export "$out" 2>/dev/null
[ $? -eq 2 ] || fail "missing -o should exit 2"
"$SYNCSPY" export --format nope -o "$tmp/x.json" "$out" 2>/dev/null
[ $? -eq 2 ] || fail "unknown format should exit 2"
[ -e "$tmp/x.json" ] && fail "a failed export left a file"
exit 0
