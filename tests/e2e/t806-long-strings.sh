#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t806-long-strings.sh: 1 MB strings in a database (issue 18, item 12), documented in
# docs/export.md ("Long texts") and docs/viewer.md:
#   - the HTML page of a database whose thread name and call-site text are 1 MB renders in
#     headless Chromium (the lane label was cut one character at a time: it never finished);
#   - its Chrome export stays proportional to the database (the site text was repeated in
#     every call's event: 1.8 GB for a few MB): at most 3 times the database's size, with each
#     long text cut in the events (1024 characters and "…", its id in args) and whole once in a
#     "syncspy_text" metadata event, and still a trace Perfetto reads (JSON, traceEvents, every
#     event well-formed, every call present).
# No timing assertion: `timeout` only guards against a hang.
#
# env: SYNCSPY, SQLITE3, PYTHON3 (set by tests/Makefile.am). Exit 0 pass, 1 fail, 77 skip.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
[ -n "${PYTHON3:-}" ] && "$PYTHON3" -c 'import json' 2>/dev/null || skip "no python3"

db=$tmp/long.sqlite
SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$db" >/dev/null ||
	fail "make-db.sh failed"
# 1 MiB texts (hex of a zeroblob is all '0's: replace() makes them readable), and 200 more
# calls of the long site and the long API: what made the export one copy per call.
q "UPDATE threads SET name = 'worker-' || replace(hex(zeroblob(524288)), '00', 'ab') WHERE tid = 4242;
UPDATE sites SET text = 'train.py:42 ' || replace(hex(zeroblob(524288)), '00', 'cd') WHERE id = 1;
UPDATE apis SET name = 'cudaMemcpy' || replace(hex(zeroblob(262144)), '00', 'Qé')
	WHERE name = 'cudaMemcpy';
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, ret, site_id, count)
	WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
	SELECT 4242, (SELECT id FROM apis WHERE name GLOB 'cudaMemcpyQ*'), 'S4',
	1000066000000 + i * 10000, 1000066000000 + i * 10000 + 5000, 0, 1, 1 FROM n;
VACUUM;" || fail "cannot write the long strings"
db_size=$(wc -c <"$db")
calls=$(q "SELECT count(*) FROM calls")
stream_calls=$(q "SELECT count(*) FROM calls WHERE stream IS NOT NULL")

# The export: proportional, and a trace.
timeout 300 "$SYNCSPY" export -o "$tmp/trace.json" "$db" 2>"$tmp/export.err" ||
	fail "export failed: $(head -c 300 "$tmp/export.err")"
size=$(wc -c <"$tmp/trace.json")
[ "$size" -le $((3 * db_size)) ] ||
	fail "the export is $size bytes for a database of $db_size (more than 3 times)"
"$PYTHON3" - "$tmp/trace.json" "$calls" "$stream_calls" <<'EOF' || fail "the export is not a good trace (above)"
import json, sys
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
calls, stream_calls = int(sys.argv[2]), int(sys.argv[3])
events = doc["traceEvents"]
assert isinstance(events, list) and events, "no traceEvents"
slices = 0
texts = {}
for e in events:
    assert isinstance(e.get("ph"), str) and isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), e
    if e["ph"] == "X":
        assert isinstance(e["name"], str) and isinstance(e["ts"], (int, float)) and e["dur"] >= 0, e
        assert len(e["name"]) <= 1025, "an event name of %d characters" % len(e["name"])
        assert len(e["args"].get("site", "")) <= 1025, "a site of %d characters" % len(e["args"]["site"])
        slices += 1
    elif e["ph"] == "M":
        assert isinstance(e["args"], dict), e
        if e["name"] == "syncspy_text":
            key = "site_id" if "site_id" in e["args"] else "api_id"
            texts[(key, e["args"][key])] = e["args"]["text"]
        if e["name"] == "thread_name" and e["tid"] == 4242:
            assert e["args"]["name"].startswith("worker-abab") and len(e["args"]["name"]) > 2**20, "thread name"
    elif e["ph"] in "sf":
        assert "id" in e, e
assert slices == calls + stream_calls, "%d slices for %d calls and %d on streams" % (slices, calls, stream_calls)
cut = [e for e in events if e["ph"] == "X" and "site_id" in e["args"]]
assert len(cut) >= 200, "%d events name the long site" % len(cut)
for e in cut:
    full = texts[("site_id", e["args"]["site_id"])]
    assert len(full) == 12 + 2**20 and e["args"]["site"] == full[:1024] + "\u2026", "the cut site"
named = [e for e in events if e["ph"] == "X" and "api_id" in e["args"]]
assert len(named) >= 200, "%d events name the long API" % len(named)
full = texts[("api_id", named[0]["args"]["api_id"])]
assert full.startswith("cudaMemcpyQé") and len(full) == 10 + 2**19 and named[0]["name"] == full[:1024] + "\u2026"
EOF

# Short texts are left alone: the fixture's export has no syncspy_text and no id arguments.
SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/good.sqlite" \
	>/dev/null || fail "make-db.sh failed"
"$SYNCSPY" export -o "$tmp/good.json" "$tmp/good.sqlite" 2>/dev/null || fail "export of the fixture"
grep -qE 'syncspy_text|"site_id"|"api_id"' "$tmp/good.json" && fail "long-text fields in an ordinary export"

# The page: it renders (chromium_run's timeout is the hang guard), with the lane label cut.
need_chromium
html_report "$tmp/r.html" "$db"
chromium_run --dump-dom "file://$tmp/r.html" >"$tmp/dom.html" ||
	fail "chromium failed or did not finish: $(tail -5 "$tmp/chromium.log")"
no_console_messages
grep -q '<body[^>]* data-rendered="ok"' "$tmp/dom.html" ||
	fail "the page did not finish rendering: $(grep -o '<body[^>]*>' "$tmp/dom.html")"
grep -q 'data-error=' "$tmp/dom.html" && fail "the page had an uncaught error: $(grep -o '<body[^>]*>' "$tmp/dom.html")"
exit 0
