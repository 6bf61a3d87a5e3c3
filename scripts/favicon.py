"""Draws the site's icon: core/static/core/favicon.svg and the same picture as favicon.ico (PNGs at 16, 32 and 48 px).

Run `python scripts/favicon.py` after changing the picture; it needs only the standard library.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "core" / "static" / "core"
BLUE = (31, 95, 191)
WHITE = (255, 255, 255)

SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">
  <rect width="64" height="64" rx="14" fill="#1f5fbf"/>
  <path d="M14 16h36a4 4 0 0 1 4 4v20a4 4 0 0 1-4 4H28l-10 8v-8h-4a4 4 0 0 1-4-4V20a4 4 0 0 1 4-4z" fill="#fff"/>
  <circle cx="22" cy="30" r="3.5" fill="#1f5fbf"/>
  <circle cx="32" cy="30" r="3.5" fill="#1f5fbf"/>
  <circle cx="42" cy="30" r="3.5" fill="#1f5fbf"/>
</svg>
"""


def inside_rounded(x: float, y: float, left, top, right, bottom, radius) -> bool:
    cx = min(max(x, left + radius), right - radius)
    cy = min(max(y, top + radius), bottom - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2 and left <= x <= right and top <= y <= bottom


def colour_at(x: float, y: float) -> tuple[int, int, int, int]:
    """The picture in a 64-unit square, as the SVG above draws it."""
    if not inside_rounded(x, y, 0, 0, 64, 64, 14):
        return (0, 0, 0, 0)
    bubble = inside_rounded(x, y, 10, 16, 54, 44, 4)
    tail = 18 <= x <= 28 and 44 <= y <= 52 and y - 44 <= (28 - x) * 0.8
    if bubble or tail:
        dots = any((x - cx) ** 2 + (y - 30) ** 2 <= 3.5 ** 2 for cx in (22, 32, 42))
        return (*BLUE, 255) if dots else (*WHITE, 255)
    return (*BLUE, 255)


def png(size: int, samples: int = 4) -> bytes:
    rows = []
    for py in range(size):
        row = bytearray([0])
        for px in range(size):
            total = [0, 0, 0, 0]
            for sy in range(samples):
                for sx in range(samples):
                    x = (px + (sx + 0.5) / samples) * 64 / size
                    y = (py + (sy + 0.5) / samples) * 64 / size
                    r, g, b, a = colour_at(x, y)
                    total = [total[0] + r * a, total[1] + g * a, total[2] + b * a, total[3] + a]
            alpha = total[3]
            row += bytes([total[0] // alpha, total[1] // alpha, total[2] // alpha] if alpha else [0, 0, 0])
            row.append(alpha // (samples * samples))
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
            + chunk(b"IEND", b""))


def ico(sizes=(16, 32, 48)) -> bytes:
    images = [png(size) for size in sizes]
    offset = 6 + 16 * len(images)
    entries = b""
    for size, image in zip(sizes, images, strict=True):
        entries += struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(image), offset)
        offset += len(image)
    return struct.pack("<HHH", 0, 1, len(images)) + entries + b"".join(images)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "favicon.svg").write_text(SVG)
    (OUT / "favicon.ico").write_bytes(ico())
