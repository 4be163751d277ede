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

shot_is_page "$tmp/shot.png" 200 "of a high-severity finding above the fold"
exit 0
