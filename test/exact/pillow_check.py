#!/usr/bin/python3
"""pillow_check.py CASES.tsv - checks sophon's outputs against Pillow, the reference torchvision's
RandomResizedCrop runs on.

Each line of CASES.tsv: path, box x, y, w, h, output w, h, flip, CRC-32 (hex) of sophon's u8
output. For each, Pillow computes
    Image.open(path).convert('RGB').crop((x, y, x + w, y + h)).resize((W, H), BILINEAR)
    [.transpose(FLIP_LEFT_RIGHT)]
and the CRC-32 of its bytes must be the same. Prints the counts; exits 1 on any difference.
Run with Debian's /usr/bin/python3 (python3-pil, Pillow 9.4).
"""
import sys
import zlib

from PIL import Image

Image.MAX_IMAGE_PIXELS = None  # sophon applies its own limit; compare what it accepted

cases = differ = 0
images = set()
cache_path, cache_img = None, None
with open(sys.argv[1]) as f:
    for line in f:
        path, x, y, w, h, ow, oh, flip, crc = line.rstrip("\n").split("\t")
        x, y, w, h, ow, oh, flip = map(int, (x, y, w, h, ow, oh, flip))
        if path != cache_path:
            cache_img = Image.open(path).convert("RGB")
            cache_path = path
        out = cache_img.crop((x, y, x + w, y + h)).resize((ow, oh), Image.BILINEAR)
        if flip:
            out = out.transpose(Image.FLIP_LEFT_RIGHT)
        cases += 1
        images.add(path)
        if "%08x" % zlib.crc32(out.tobytes()) != crc:
            differ += 1
            print("DIFFERS: %s box %d,%d,%d,%d flip %d" % (path, x, y, w, h, flip))
print("Pillow check: %d images, %d cases, %d differ from Pillow" % (len(images), cases, differ))
sys.exit(1 if differ or cases == 0 else 0)
