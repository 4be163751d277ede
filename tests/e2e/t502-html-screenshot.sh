#!/bin/sh
# SPDX-License-Identifier: MIT
# t502: a screenshot of the HTML report in headless Chromium (1280x900) is a real picture of
# the page: a PNG of that size, many colors, and the red of a high-severity finding above the
# fold (the findings come first). The PNG is read with Python's standard library only (png.py).
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
need_chromium
[ -n "${PYTHON3:-}" ] || skip "no python3"

make_html_inputs
html_report "$tmp/r.html" "$tmp/in"
chromium_run --screenshot="$tmp/shot.png" --window-size=1280,900 "file://$tmp/r.html" >/dev/null ||
	fail "chromium failed: $(tail -5 "$tmp/chromium.log")"
no_console_messages
[ -s "$tmp/shot.png" ] || fail "no screenshot"

"$PYTHON3" - "$tmp/shot.png" <<'PY' || fail "the screenshot is not a picture of the report"
import os, sys
sys.path.insert(0, os.environ["E2E_DIR"])
import png
width, height, pixels = png.read(sys.argv[1])
assert os.path.getsize(sys.argv[1]) > 20000, "only %d bytes" % os.path.getsize(sys.argv[1])
assert (width, height) == (1280, 900), (width, height)
colors = set(pixels)
white = sum(1 for p in pixels if p == (255, 255, 255))
red = sum(1 for p in pixels if png.near(p, (0xc0, 0x39, 0x2b)))
assert len(colors) > 50, "only %d colors" % len(colors)
assert 0.03 < 1 - white / len(pixels) < 0.9, "non-white share %.3f" % (1 - white / len(pixels))
assert red > 200, "no high-severity red above the fold (%d pixels)" % red
print("%dx%d, %d colors, %.1f%% non-white, %d red pixels" % (width, height, len(colors), 100 - 100 * white / len(pixels), red))
PY
exit 0
