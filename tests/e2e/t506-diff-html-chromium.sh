#!/bin/sh
# SPDX-License-Identifier: MIT
# t506: the page of `syncspy diff --format html` in a real headless Chromium (Debian's
# chromium package): it renders (body[data-rendered=ok], no body[data-error]) without a
# console message and shows what the text format prints, figure for figure: each rank's steady
# steps, syncs, blocked and GPU-idle ms per step before -> after, every gone, new and changed
# finding with its rule, severity, site and numbers, the regressions marked and counted; the
# hostile call-site text of make_diff_inputs appears as text (no element, no script run). A
# screenshot (1280x900) is a real picture with the red of the regression verdict on top.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
need_chromium
[ -n "${PYTHON3:-}" ] || skip "no python3"

make_diff_inputs
cd "$tmp/diff" || fail "cd"
"$SYNCSPY" diff --format html -o d.html before.sqlite after.sqlite 2>err || fail "diff --format html: $(cat err)"
"$SYNCSPY" diff before.sqlite after.sqlite >d.txt 2>err || fail "diff: $(cat err)"
chromium_run --dump-dom "file://$tmp/diff/d.html" >dom.html || fail "chromium failed: $(tail -5 "$tmp/chromium.log")"
no_console_messages
grep -q '<body[^>]* data-rendered="ok"' dom.html || fail "the page did not finish rendering: $(grep -o '<body[^>]*>' dom.html)"
grep -q 'data-error=' dom.html && fail "the page had an uncaught error: $(grep -o '<body[^>]*>' dom.html)"
grep -q 'data-pwned' dom.html && fail "the hostile call site ran as script"
grep -q '<img' dom.html && fail "the hostile call site became an element"

# The DOM against the text format: the same figures, the same findings.
"$PYTHON3" - dom.html d.txt "$HOSTILE" <<'PY' || fail "the page does not show what the text shows"
import html.parser, re, sys

class Page(html.parser.HTMLParser):
    """The text of the steps table's rows, of each finding card, and of #verdict."""
    def __init__(self):
        super().__init__()
        self.stack, self.rows, self.cards, self.verdict = [], [], [], ""
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("meta", "br", "input"):
            return
        mark = None
        if tag == "tr" and "data-rank" in a:
            mark = ("row", [])
            self.rows.append(mark[1])
        elif tag == "div" and "data-status" in a:
            mark = ("card", [a["data-status"], a.get("class", "")])
            self.cards.append(mark[1])
        elif tag in ("td", "div", "span") and self.stack and self.stack[-1][0] in ("row", "card"):
            mark = ("cell", self.stack[-1][1], [])
            self.stack[-1][1].append(mark[2])
        elif a.get("id") == "verdict":
            mark = ("verdict",)
        self.stack.append(mark or ("other",))
    def handle_endtag(self, tag):
        if tag not in ("meta", "br", "input") and self.stack:
            self.stack.pop()
    def handle_data(self, data):
        for m in reversed(self.stack):
            if m[0] == "cell":
                m[2].append(data)
                return
            if m[0] == "verdict":
                self.verdict += data
                return

page = Page()
page.feed(open(sys.argv[1], encoding="utf-8").read())
text = open(sys.argv[2], encoding="utf-8").read().splitlines()
arrow = lambda s: s.replace(" -> ", " \u2192 ")

# Steps: the text's rank line "  #1  59 -> 59  1.00 -> 1.00  0.069 -> 2.069  0.482 -> 0.629"
rank_lines = [l for l in text if re.match(r"^  (#\d+|rank \d+) ", l)]
assert len(rank_lines) == len(page.rows) == 1, (rank_lines, page.rows)
for line, row in zip(rank_lines, page.rows):
    cells = ["".join(c) for c in row if isinstance(c, list)]
    want = re.findall(r"(#\d+|rank \d+|\S+ -> \S+|REGRESSION)", line)
    got = [c for c in cells if c]
    assert [arrow(w) for w in want] == got, (want, got)

# Findings: each text entry (status, rule, severity, site, then its numbers line) is a card.
entries = []
for i, l in enumerate(text):
    m = re.match(r"^(gone|new|changed) +(\S+) (\S+) (.*?)(  REGRESSION)?$", l)
    if m:
        entries.append((m.group(1), m.group(2), m.group(3), m.group(4), bool(m.group(5)),
                        text[i + 1].strip()))
assert sorted(e[0] for e in entries) == ["changed", "gone", "new"], entries
shown = [c for c in page.cards if c[0] != "same"]
assert len(shown) == len(entries), (len(shown), entries)
for e in entries:
    # a card's cells: its title (status, severity, rule, REGRESSION), its site, its numbers
    cards = [["".join(p) for p in c[2:]] for c in shown if c[0] == e[0]]
    hits = [p for p in cards if len(p) == 3 and p[1] == e[3] and e[1] in p[0]]
    assert len(hits) == 1, (e, cards)
    title, site, numbers = hits[0]
    assert title.startswith(e[0] + e[2] + e[1]), (e, title)
    assert title.endswith("REGRESSION") == e[4], (e, title)
    assert numbers == arrow(e[5]), (numbers, e[5])
assert [e[3] for e in entries if e[0] == "new"] == [sys.argv[3]], "the hostile site is not shown as text"

# The verdict: the regressions the text counts.
n = int(re.search(r"^regressions: (\d+) ", "\n".join(text), re.M).group(1))
assert page.verdict == ("%d regression%s" % (n, "" if n == 1 else "s") if n else "no regression"), page.verdict
print("steps, %d findings and the verdict '%s' as in the text" % (len(entries), page.verdict))
PY

chromium_run --screenshot="$tmp/shot.png" --window-size=1280,900 "file://$tmp/diff/d.html" >/dev/null ||
	fail "chromium failed: $(tail -5 "$tmp/chromium.log")"
no_console_messages
shot_is_page "$tmp/shot.png" 300 "of the regression verdict on top"
exit 0
