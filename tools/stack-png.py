#!/usr/bin/env python3
"""Stack strata-bench timeline charts (`--plot=F.png`) top to bottom into one compressed PNG.

Usage: tools/stack-png.py OUT.png IN1.png IN2.png ...

strata-bench writes its charts with stored (uncompressed) deflate blocks to need no
compressor; this re-encodes them with zlib, so a figure of several runs is small enough to
keep in docs/bench/. Inputs must share a width (every strata-bench chart is 960 pixels wide);
8-bit RGB, non-interlaced, as strata-bench writes them.
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, head = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color, _, _, interlace = head
    if depth != 8 or color != 2 or interlace:
        sys.exit(f"{path}: only 8-bit RGB non-interlaced PNGs")
    raw = zlib.decompress(idat)
    bpp = 3
    stride = w * bpp
    rows = []
    prev = bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f != 0:  # undo the row filter (strata-bench writes none; other tools may)
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                if f == 1:
                    line[x] = (line[x] + a) & 255
                elif f == 2:
                    line[x] = (line[x] + b) & 255
                elif f == 3:
                    line[x] = (line[x] + (a + b) // 2) & 255
                elif f == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, rows


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, ins = sys.argv[1], sys.argv[2:]
    width, rows = None, []
    for p in ins:
        w, r = read_png(p)
        if width not in (None, w):
            sys.exit(f"{p}: {w} pixels wide, the others {width}")
        width = w
        rows += r
        rows.append(b"\x80" * (3 * w))  # a grey line between charts
    raw = b"".join(b"\x00" + r for r in rows)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    open(out, "wb").write(png)
    print(f"{out}: {width}x{len(rows)}, {len(png)} bytes")


if __name__ == "__main__":
    main()
