#!/usr/bin/python3
"""gen_selfcheck_jpegs.py > prep/jpeg/selfcheck_jpegs.h - the two small JPEGs selfcheck.c decodes.

A 48 x 32 picture of gradients and noise (4:2:0, quality 85), written by Pillow once as a
baseline file and once as a progressive one (libjpeg's simple progression: spectral selection
and successive approximation, so DC and AC first and refinement scans all occur). The bytes are
kept in the source: the check must not depend on anything read at run time.
"""
import io
import random

from PIL import Image


def picture():
    rng = random.Random(7)
    im = Image.new("RGB", (48, 32))
    px = im.load()
    for y in range(32):
        for x in range(48):
            px[x, y] = ((x * 5 + rng.randrange(40)) % 256, (y * 7 + rng.randrange(60)) % 256,
                        ((x ^ y) * 9 + rng.randrange(30)) % 256)
    return im


def array(name, data):
    rows = ["    " + " ".join(f"0x{b:02x}," for b in data[i:i + 16]) for i in range(0, len(data), 16)]
    return f"static const uint8_t {name}[{len(data)}] = {{\n" + "\n".join(rows) + "\n};\n"


def main():
    im = picture()
    out = ["/* selfcheck_jpegs.h - made by gen_selfcheck_jpegs.py; do not edit. */",
           "/* clang-format off */"]
    for name, kw in (("baseline_jpeg", {}), ("progressive_jpeg", {"progressive": True})):
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=85, **kw)
        out.append(array(name, buf.getvalue()))
    out.append("/* clang-format on */")
    print("\n".join(out))


if __name__ == "__main__":
    main()
