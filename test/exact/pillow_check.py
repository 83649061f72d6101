#!/usr/bin/python3
"""pillow_check.py CASES.tsv - checks sophon's outputs against Pillow, the reference torchvision's
RandomResizedCrop runs on.

Each line of CASES.tsv: path, box x, y, w, h, resize w, h, window x, y, output w, h, flip,
CRC-32 (hex) of sophon's u8 output. For each, Pillow computes
    Image.open(path).convert('RGB').crop((x, y, x + w, y + h)).resize((RW, RH), BILINEAR)
    .crop((WX, WY, WX + W, WY + H)) [.transpose(FLIP_LEFT_RIGHT)]
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
        path, *numbers, crc = line.rstrip("\n").split("\t")
        x, y, w, h, rw, rh, wx, wy, ow, oh, flip = map(int, numbers)
        if path != cache_path:
            cache_img = Image.open(path).convert("RGB")
            cache_path = path
        out = cache_img.crop((x, y, x + w, y + h)).resize((rw, rh), Image.BILINEAR)
        if (wx, wy, ow, oh) != (0, 0, rw, rh):
            out = out.crop((wx, wy, wx + ow, wy + oh))
        if flip:
            out = out.transpose(Image.FLIP_LEFT_RIGHT)
        cases += 1
        images.add(path)
        if "%08x" % zlib.crc32(out.tobytes()) != crc:
            differ += 1
            print("DIFFERS: %s box %d,%d,%d,%d flip %d" % (path, x, y, w, h, flip))
print("Pillow check: %d images, %d cases, %d differ from Pillow" % (len(images), cases, differ))
sys.exit(1 if differ or cases == 0 else 0)
