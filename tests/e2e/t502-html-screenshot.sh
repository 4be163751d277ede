#!/bin/sh
# SPDX-License-Identifier: MIT
# t502: a screenshot of the HTML report in headless Chromium (1280x900) is a real picture of
# the page: a PNG of that size, many colors, and the red of a high-severity finding above the
# fold (the findings come first). The PNG is read with Python's standard library only.
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
import struct, sys, zlib
png = open(sys.argv[1], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
assert len(png) > 20000, "only %d bytes" % len(png)
pos, idat, head = 8, b"", None
while pos < len(png):
    length, kind = struct.unpack(">I4s", png[pos:pos + 8])
    body = png[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        head = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
width, height, depth, ctype = head[:4]
assert (width, height) == (1280, 900), (width, height)
assert depth == 8 and ctype in (2, 6), head
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), width * bpp
rows, prev, at = [], bytearray(stride), 0
for y in range(height):  # undo the PNG scanline filters (RFC 2083, 6.1)
    f, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
    at += 1 + stride
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
pixels = [tuple(r[i:i + 3]) for r in rows for i in range(0, stride, bpp)]
colors = set(pixels)
white = sum(1 for p in pixels if p == (255, 255, 255))
red = sum(1 for p in pixels if abs(p[0] - 0xc0) < 12 and abs(p[1] - 0x39) < 12 and abs(p[2] - 0x2b) < 12)
assert len(colors) > 50, "only %d colors" % len(colors)
assert 0.03 < 1 - white / len(pixels) < 0.9, "non-white share %.3f" % (1 - white / len(pixels))
assert red > 200, "no high-severity red above the fold (%d pixels)" % red
print("%dx%d, %d colors, %.1f%% non-white, %d red pixels" % (width, height, len(colors), 100 - 100 * white / len(pixels), red))
PY
exit 0
