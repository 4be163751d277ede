#!/bin/sh
# SPDX-License-Identifier: MIT
# t500: `syncspy report --format html` writes one self-contained file: the CSS and JS of viewer/
# inlined verbatim, no reference to anything outside it, one JSON data block that parses and
# holds the report and a timeline per rank; a hostile call-site text cannot end the data
# block; a real recording (two NCCL ranks under the shim) gets lanes and calls; a rank with
# more calls than the timeline's cap is cut to the cap, sync points first, and says so.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"

make_html_inputs
html_report "$tmp/r.html" "$tmp/in"

# Nothing external: no URL at all (the data holds none), no link element, no CSS import.
if grep -Eni 'https?:|<link|@import|url\(' "$tmp/r.html" >&2; then
	fail "the report refers to something outside itself (above)"
fi
# Exactly the two script elements of the template: the data and the viewer's JS.
[ "$(grep -oi '</script' "$tmp/r.html" | wc -l)" -eq 2 ] || fail "the file has $(grep -oi '</script' "$tmp/r.html" | wc -l) </script>"
grep -q '<img' "$tmp/r.html" && fail "a call site's markup reached the page unescaped"

"$PYTHON3" - "$tmp/r.html" "$TOP_SRCDIR/viewer" "$HOSTILE" <<'PY' || fail "content check failed"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
for name in ("report.css", "report.js"):
    assert open(sys.argv[2] + "/" + name, encoding="utf-8").read() in html, name + " is not inlined verbatim"
blocks = re.findall(r'<script type="application/json" id="syncspy-data">(.*?)</script>', html, re.S)
assert len(blocks) == 1, "data blocks: %d" % len(blocks)
data = json.loads(blocks[0])
report, tl = data["report"], data["timeline"]
assert [r["rank"] for r in report["ranks"]] == [0, 1], report["ranks"]
assert len(report["findings"]) > 0
ranks = tl["ranks"]
assert [(r["rank"], r["pid"], r["calls_total"], r["calls_shown"], r["truncated"]) for r in ranks] == \
    [(0, 4242, 35, 35, False), (1, 4243, 35, 35, False)], ranks  # make-db.sh 23 + report-rules.sql 12
assert [c[0] for c in tl["classes"]][:7] == ["S1", "S2", "S3", "S4", "S5", "S6", "S7"]
r1 = ranks[1]
assert [l[:3] for l in r1["lanes"]] == [["thread", 4242, "python"], ["thread", 4250, "pt_autograd_0"],
    ["stream", "0x7f0000001000", None], ["stream", "per-thread", 4242], ["stream", "legacy", None],
    ["stream", "per-thread", 4250]], r1["lanes"]
# The hostile text survives as data, and every '<' of the data is escaped in the file.
assert [s[1] for s in r1["sites"] if s[0] == 1] == [sys.argv[3]], r1["sites"]
assert "<" not in blocks[0]
# Calls in time order; the S1 call of the fixture: 5 ms, 20 ms in rank 1 (syncs made slower).
cls = [c[0] for c in tl["classes"]]
assert all(a[0] <= b[0] for a, b in zip(r1["calls"], r1["calls"][1:]))
assert [c[1] for c in ranks[0]["calls"] if cls[c[3]] == "S1"] == [5000000]
assert [c[1] for c in r1["calls"] if cls[c[3]] == "S1"] == [20000000]
PY

# A real recording: two ranks over the NCCL stand-in.
under_shim "$PROGS/scenarios" nccl 2 >"$tmp/nccl.out" 2>&1 || fail "nccl scenario failed: $(cat "$tmp/nccl.out")"
html_report "$tmp/nccl.html" "$out"
"$PYTHON3" - "$tmp/nccl.html" <<'PY' || fail "recorded-run check failed"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r'id="syncspy-data">(.*?)</script>', html, re.S).group(1))
ranks = data["timeline"]["ranks"]
assert sorted(r["rank"] for r in ranks) == [0, 1], [r["rank"] for r in ranks]
for r in ranks:
    kinds = {l[0] for l in r["lanes"]}
    assert kinds == {"thread", "stream"}, r["lanes"]
    assert r["calls_shown"] == r["calls_total"] == len(r["calls"]) > 0
    apis = dict(r["apis"])
    assert "ncclAllReduce" in apis.values(), apis
PY

# The cap: 200100 enqueues and 3 syncs at the end; the timeline keeps every sync point.
big=$tmp/big/rank0.sqlite
mkdir -p "$tmp/big"
cp "$tmp/in/rank0.sqlite" "$big"
"$SQLITE3" -batch "$big" "
	WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200100)
	INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, ret, count)
	SELECT 4242, 9, 'E1', 1000100000000 + i * 1000, 1000100000000 + i * 1000 + 500, 2, 0, 1 FROM n;
	INSERT INTO calls(tid, api_id, class, start_ns, end_ns, ret, count)
	VALUES (4242, 1, 'S1', 1000400000000, 1000400001000, 0, 1),
	       (4242, 1, 'S1', 1000400002000, 1000400003000, 0, 1),
	       (4242, 1, 'S1', 1000400004000, 1000400005000, 0, 1);" || fail "cannot build the big database"
html_report "$tmp/big.html" "$big"
"$PYTHON3" - "$tmp/big.html" <<'PY' || fail "cap check failed"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r'id="syncspy-data">(.*?)</script>', html, re.S).group(1))
tl = data["timeline"]
r = tl["ranks"][0]
cls = [c[0] for c in tl["classes"]]
assert (r["calls_total"], r["calls_shown"], r["truncated"], len(r["calls"])) == \
    (200138, tl["call_cap"], True, tl["call_cap"]) == (200138, 200000, True, 200000), \
    (r["calls_total"], r["calls_shown"], r["truncated"])
assert sum(1 for c in r["calls"] if cls[c[3]] == "S1") == 4
PY
exit 0
