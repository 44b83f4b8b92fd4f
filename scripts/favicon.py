#!/usr/bin/env python3
"""Writes assets/favicon.ico, the icon of the pages the binary serves (/console, /docs): a white
briefcase on the console's dark bar colour, drawn at 16x16 and 32x32 from the shapes below (in a
32-unit square) with 4x4 supersampling, as 32-bit BMP images with alpha. Python's standard
library only; run it again after changing a shape and commit the file it writes."""

import pathlib
import struct

BAR = (0x24, 0x29, 0x2F)
WHITE = (0xFF, 0xFF, 0xFF)


def rounded(x0, y0, x1, y1, r):
    """Whether a point is inside the rectangle (x0, y0)-(x1, y1) with corners of radius r."""

    def inside(x, y):
        if not (x0 <= x < x1 and y0 <= y < y1):
            return False
        cx = min(max(x, x0 + r), x1 - r)
        cy = min(max(y, y0 + r), y1 - r)
        return (x - cx) ** 2 + (y - cy) ** 2 <= r * r

    return inside


# (shape, colour), painted in order.
SHAPES = [
    (rounded(0, 0, 32, 32, 6), BAR),
    # The handle: a ring, its lower part hidden by the case.
    (lambda x, y: rounded(11, 5, 21, 13, 2.5)(x, y) and not rounded(13, 7, 19, 15, 1)(x, y), WHITE),
    (rounded(5, 11, 27, 26, 2.5), WHITE),
    # The seam across the case, and its clasp.
    (rounded(5, 17, 27, 18.5, 0), BAR),
    (rounded(14, 15.5, 18, 20, 1), WHITE),
]


def pixels(size, samples=4):
    """Rows of (r, g, b, a), top row first."""
    rows = []
    scale = 32 / size
    for py in range(size):
        row = []
        for px in range(size):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(samples):
                for sx in range(samples):
                    x = (px + (sx + 0.5) / samples) * scale
                    y = (py + (sy + 0.5) / samples) * scale
                    colour = None
                    for inside, c in SHAPES:
                        if inside(x, y):
                            colour = c
                    if colour is not None:
                        for i in range(3):
                            acc[i] += colour[i]
                        acc[3] += 1
            n = acc[3]
            if n == 0:
                row.append((0, 0, 0, 0))
            else:
                row.append(tuple(round(acc[i] / n) for i in range(3)) + (round(255 * n / samples**2),))
        rows.append(row)
    return rows


def bmp(size):
    rows = pixels(size)
    header = struct.pack("<IiiHHIIiiII", 40, size, size * 2, 1, 32, 0, 0, 0, 0, 0, 0)
    colour = b"".join(bytes((b, g, r, a)) for row in reversed(rows) for (r, g, b, a) in row)
    stride = ((size + 31) // 32) * 4
    mask = b""
    for row in reversed(rows):
        bits = bytearray(stride)
        for x, (_, _, _, a) in enumerate(row):
            if a == 0:
                bits[x // 8] |= 0x80 >> (x % 8)
        mask += bytes(bits)
    return header + colour + mask


def ico(sizes=(16, 32)):
    images = [bmp(s) for s in sizes]
    out = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    for size, image in zip(sizes, images):
        out += struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(image), offset)
        offset += len(image)
    return out + b"".join(images)


if __name__ == "__main__":
    path = pathlib.Path(__file__).resolve().parent.parent / "assets" / "favicon.ico"
    path.write_bytes(ico())
    print(f"wrote {path} ({path.stat().st_size} bytes)")
