# SPDX-License-Identifier: MIT
# tests/e2e/png.py: reads a screenshot of headless Chromium (8-bit RGB or RGBA PNG) with
# Python's standard library only, for the tests that look at pages (t502, t506): its size and
# its pixels, the PNG scanline filters undone (RFC 2083, 6.1), and what says it is a picture of
# a page (its colors, its share of white, its pixels of one color). Imported, never run.
import struct
import zlib


def read(path):
    """(width, height, [(r, g, b), ...] row by row) of the PNG at path."""
    png = open(path, "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG: " + path
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
    assert depth == 8 and ctype in (2, 6), head
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev, at = [], bytearray(stride), 0
    for _ in range(height):
        f, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, [tuple(r[i:i + 3]) for r in rows for i in range(0, stride, bpp)]


def near(pixel, rgb, tolerance=12):
    """Whether pixel is within tolerance of rgb on each channel."""
    return all(abs(p - q) < tolerance for p, q in zip(pixel, rgb))


def screenshot(path, size, rgb):
    """Checks that the PNG at path is a picture of a page of size (width, height): many colors,
    neither blank nor solid; returns (colors, non-white share, pixels near rgb)."""
    width, height, pixels = read(path)
    assert (width, height) == size, (width, height)
    colors = len(set(pixels))
    nonwhite = 1 - sum(1 for p in pixels if p == (255, 255, 255)) / len(pixels)
    assert colors > 50, "only %d colors" % colors
    assert 0.03 < nonwhite < 0.9, "non-white share %.3f" % nonwhite
    return colors, nonwhite, sum(1 for p in pixels if near(p, rgb))
