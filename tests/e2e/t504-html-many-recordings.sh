#!/bin/sh
# SPDX-License-Identifier: MIT
# t504: the HTML report of 1 and of 30 recordings is usable at first view (issue 15), checked in
# headless Chromium by the DOM the page leaves (--dump-dom) and by screenshots:
#   - every recording has a panel with its name (its rank, else its command and pid) and a time
#     axis of its own, fitted to its own span on open (data-view-t0/t1 against the calls' span
#     in the embedded data); only the ranks of one job (rank 0 and 1 of world size 2, one
#     command, at the same time) share an axis; recordings 10 minutes apart do not;
#   - the ranks table names each recording with its rank, host, pid, command and step columns;
#   - a finding's link (#finding-N, what a click on the card sets) zooms its recording's axis to
#     the finding's calls and leaves the other recordings' axes as they were.
# The screenshots go to $SYNCSPY_SHOT_DIR (default: e2e/t504-shots in the build tree), to be
# looked at; each is checked to be a picture of the page, not a blank one.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
need_chromium
shots=${SYNCSPY_SHOT_DIR:-$PWD/e2e/t504-shots}
rm -rf "$shots"
mkdir -p "$shots" || fail "cannot make $shots"

# The base: make-db.sh's fixture with report-rules.sql's rows (findings at repeating sites).
SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/base.sqlite" >/dev/null ||
	fail "make-db.sh failed"
"$SQLITE3" -batch "$tmp/base.sqlite" <"$TOP_SRCDIR/tests/fixtures/report-rules.sql" || fail "report-rules.sql failed"

# One recording: rank 0 of the fixture.
mkdir -p "$tmp/one" "$tmp/many"
cp "$tmp/base.sqlite" "$tmp/one/rank0.sqlite"
# Thirty: ranks 0 and 1 of one job (world size 2), then 28 runs of other commands with no rank,
# 10 minutes apart, each with its own pid and its calls stretched 1 to 5 times.
cp "$tmp/base.sqlite" "$tmp/many/job0.sqlite"
cp "$tmp/base.sqlite" "$tmp/many/job1.sqlite"
"$SQLITE3" -batch "$tmp/many/job1.sqlite" "UPDATE meta SET value = 1 WHERE key = 'rank';
	UPDATE meta SET value = 4243 WHERE key = 'pid';" || fail "cannot edit job1.sqlite"
i=1
while [ "$i" -le 28 ]; do
	db=$tmp/many/run$(printf %02d "$i").sqlite
	cp "$tmp/base.sqlite" "$db"
	"$SQLITE3" -batch "$db" "DELETE FROM meta WHERE key IN ('rank', 'world_size', 'local_rank', 'rank_source');
		UPDATE meta SET value = 5000 + $i WHERE key = 'pid';
		UPDATE meta SET value = 'python /work/bench/train.py --run $i' WHERE key = 'cmdline';
		UPDATE meta SET value = value + $i * 600000000000 WHERE key = 'start_realtime_ns';
		UPDATE comms SET id_hash = id_hash || '-run$i';
		UPDATE calls SET start_ns = 1000000000000 + (start_ns - 1000000000000) * (1 + $i % 5),
			end_ns = 1000000000000 + (end_ns - 1000000000000) * (1 + $i % 5);" ||
		fail "cannot edit $db"
	i=$((i + 1))
done
html_report "$tmp/one.html" "$tmp/one"
html_report "$tmp/many.html" "$tmp/many"

# The finding to follow: host-sync at train.py:50 of a recording ($pick: the one recording; of
# the thirty, the third, run01); its index in the report's findings.
pick_finding() {
	"$PYTHON3" - "$1" "$2" <<'PY'
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'id="syncspy-data">(.*?)</script>', html, re.S).group(1))
want = int(sys.argv[2])
for i, f in enumerate(d["report"]["findings"]):
    if d["timeline"]["finding_ranks"][i] == want and f["site"] == "train.py:50 torch.cuda.synchronize()":
        print(i)
        break
PY
}
one_finding=$(pick_finding "$tmp/one.html" 0)
many_finding=$(pick_finding "$tmp/many.html" 2)
[ -n "$one_finding" ] && [ -n "$many_finding" ] || fail "no host-sync finding linked to its recording"

# DOM after rendering: as opened, and opened at the finding (a click on its card sets the hash).
for page in one many; do
	chromium_run --dump-dom "file://$tmp/$page.html" >"$tmp/$page-dom.html" || fail "chromium failed on $page"
	no_console_messages
done
chromium_run --dump-dom "file://$tmp/one.html#finding-$one_finding" >"$tmp/one-focus-dom.html" || fail "chromium failed"
no_console_messages
chromium_run --dump-dom "file://$tmp/many.html#finding-$many_finding" >"$tmp/many-focus-dom.html" || fail "chromium failed"
no_console_messages

"$PYTHON3" - "$tmp" "$one_finding" "$many_finding" <<'PY' || fail "DOM check failed"
import html as H, json, re, sys
tmp, one_f, many_f = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def data(page):
    text = open("%s/%s.html" % (tmp, page), encoding="utf-8").read()
    return json.loads(re.search(r'id="syncspy-data">(.*?)</script>', text, re.S).group(1))

def dom(name):
    text = open("%s/%s.html" % (tmp, name), encoding="utf-8").read()
    body = re.search(r"<body([^>]*)>", text).group(1)
    assert 'data-rendered="ok"' in body and "data-error" not in body, body
    panels = []
    for attrs in re.findall(r'<div class="rank-panel"([^>]*)>', text):
        a = {k: H.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', attrs)}
        panels.append(a)
    return text, body, panels

def span_of(r):  # the calls' span from the rank's first call: [0, last end]
    return max(c[0] + c[1] for c in r["calls"])

def check_fit(p, r, shared):
    t0, t1 = float(p["data-view-t0"]), float(p["data-view-t1"])
    s0, s1 = float(p["data-span-start"]), float(p["data-span-end"])
    if not shared:
        assert s0 == 0 and s1 == span_of(r), (p, span_of(r))
        # fitted to its own span: from its first call to just past its last end
        assert t0 == 0 and s1 <= t1 <= s1 * 1.02 + 1, p
    else:
        assert t0 <= s0 and t1 >= s1, p
    return t0, t1

def check_focus(page, panels_before, panels_after, finding, data_):
    f = data_["report"]["findings"][finding]
    k = data_["timeline"]["finding_ranks"][finding]
    r = data_["timeline"]["ranks"][k]
    ids = {s[0] for s in r["sites"] if s[1] == f["site"]}
    cls = [c[0] for c in data_["timeline"]["classes"]]
    calls = [c for c in r["calls"] if len(c) > 6 and c[6] in ids and (not f.get("class") or cls[c[3]] == f["class"])]
    assert calls, "no calls for the finding"
    p = panels_after[k]
    t0, t1 = float(p["data-view-t0"]), float(p["data-view-t1"])
    off = float(p["data-span-start"])
    s = off + min(c[0] for c in calls)
    e = off + max(c[0] + c[1] for c in calls)
    # the view moved: it shows the finding's calls, zoomed in (a fifth of the recording at most)
    assert t0 <= s and e <= t1, (t0, t1, s, e)
    full = float(panels_before[k]["data-view-t1"]) - float(panels_before[k]["data-view-t0"])
    assert t1 - t0 < full / 5, (t1 - t0, full)
    assert p.get("data-focus-calls") == str(len(calls)), (p, len(calls))
    # the other recordings' axes are as they were (not blanked, not moved), except the ranks
    # sharing this one's axis
    for j, (b, a) in enumerate(zip(panels_before, panels_after)):
        if j != k and a["data-axis"] != p["data-axis"]:
            assert (a["data-view-t0"], a["data-view-t1"]) == (b["data-view-t0"], b["data-view-t1"]), (j, a, b)
    return k

# --- one recording
d1 = data("one")
text, body, panels = dom("one-dom")
assert len(panels) == 1 and panels[0]["data-name"] == "rank 0", panels
check_fit(panels[0], d1["timeline"]["ranks"][0], False)
for col in ("recording", "rank", "host", "pid", "command", "steady steps", "syncs/step", "blocked/step"):
    assert "<th" in text and re.search(r"<th[^>]*>%s</th>" % re.escape(col), text), "ranks table lacks " + col
assert "python train.py --steps 2</td>" in text, "no command in the ranks table"
ftext, fbody, fpanels = dom("one-focus-dom")
assert 'data-focus="%d"' % one_f in fbody, fbody
cards = re.findall(r'<div class="(finding [^"]*)"', ftext)
assert [k for k, c in enumerate(cards) if "focused" in c] == [one_f], "the finding's card is not marked"
check_focus("one", panels, fpanels, one_f, d1)

# --- thirty recordings
d30 = data("many")
ranks = d30["timeline"]["ranks"]
text, body, panels = dom("many-dom")
assert len(panels) == 30 == len(ranks), len(panels)
names = [p["data-name"] for p in panels]
assert len(set(names)) == 30, names
assert names[:2] == ["rank 0", "rank 1"], names[:2]
for p, r in zip(panels[2:], ranks[2:]):
    n = int(r["cmdline"].rsplit(" ", 1)[1])
    # the script after its interpreter, its arguments, the pid
    assert p["data-name"] == "train.py --run %d (pid %d)" % (n, 5000 + n), p["data-name"]
    assert p["data-name"] in text.replace("&nbsp;", " "), p["data-name"]
axes = [p["data-axis"] for p in panels]
assert axes[0] == axes[1], "the two ranks of one job do not share an axis"
assert len(set(axes)) == 29, "only the job's ranks share an axis: %s" % axes
for i, (p, r) in enumerate(zip(panels, ranks)):
    check_fit(p, r, i < 2)
# the ranks table: one row per recording, with its name and pid
rows = re.findall(r"<tr[^>]*>(.*?)</tr>", text.split('id="ranks"', 1)[1].split("</table>", 1)[0], re.S)
assert len(rows) == 31, len(rows)
for n in names:
    assert any(">%s</td>" % H.escape(n, quote=False) in row for row in rows), "no ranks row for " + n
ftext, fbody, fpanels = dom("many-focus-dom")
assert 'data-focus="%d"' % many_f in fbody, fbody
assert check_focus("many", panels, fpanels, many_f, d30) == 2
print("ok: 1 and 30 recordings, axes %d, finding %d and %d followed" % (len(set(axes)), one_f, many_f))
PY

# Screenshots, to look at: the top of each page, and each page opened at the finding (a window
# tall enough to show the recording's panel without scrolling: headless Chromium's screenshot of
# a scrolled page is blank).
shoot() { # NAME WIDTHxHEIGHT URL
	chromium_run --screenshot="$shots/$1.png" --window-size="$2" "$3" >/dev/null || fail "chromium failed: $1"
	no_console_messages
}
shoot one-top 1280,900 "file://$tmp/one.html"
shoot one-finding 1280,2400 "file://$tmp/one.html#finding-$one_finding"
shoot many-top 1280,900 "file://$tmp/many.html"
shoot many-timeline 1280,4400 "file://$tmp/many.html#finding-$many_finding"
"$PYTHON3" - "$shots" <<'PY' || fail "a screenshot is not a picture of the page"
import struct, sys, zlib
def png(path):
    b = open(path, "rb").read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n", path
    w, h = struct.unpack(">II", b[16:24])
    return b, w, h
for name, size, least in (("one-top", (1280, 900), 50000), ("one-finding", (1280, 2400), 150000),
                          ("many-top", (1280, 900), 50000), ("many-timeline", (1280, 4400), 300000)):
    b, w, h = png("%s/%s.png" % (sys.argv[1], name))
    # a blank page compresses to a few KB; the report's text and lanes do not
    assert (w, h) == size and len(b) > least, (name, w, h, len(b))
    print(name, w, h, len(b))
PY
exit 0
