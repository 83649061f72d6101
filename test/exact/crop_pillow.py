#!/usr/bin/python3
"""crop_pillow.py CROPS.tsv - the crop JPEGs sophon's crop stage made open in Pillow 9.4, and the
box decodes to the same pixels from the crop as from the original.

Each line of CROPS.tsv (prep_tool crops): original path, crop path, box x, y, w, h, the crop's
origin x, y. Pillow must give
    Image.open(original).convert('RGB').crop(box)
        == Image.open(crop).convert('RGB').crop(box moved by minus the origin)
byte for byte. Originals Pillow reads as CMYK without an Adobe marker (Pillow then reads its
inks the other way round; the crop always carries the marker) are counted apart. Prints the
counts; exits 1 on any difference. Run with Debian's /usr/bin/python3 (python3-pil).
"""
import sys

from PIL import Image

Image.MAX_IMAGE_PIXELS = None

cases = differ = unmarked = 0
cache_path, cache_img = None, None
with open(sys.argv[1]) as f:
    for line in f:
        src, crop, *numbers = line.rstrip("\n").split("\t")
        x, y, w, h, ox, oy = map(int, numbers)
        if src != cache_path:
            im = Image.open(src)
            if im.mode == "CMYK" and "adobe" not in im.info:
                cache_path, cache_img = src, None
            else:
                cache_img = im.convert("RGB")
                cache_path = src
        if cache_img is None:
            unmarked += 1
            continue
        want = cache_img.crop((x, y, x + w, y + h)).tobytes()
        c = Image.open(crop)
        if c.format != "JPEG":
            sys.exit(f"{crop}: Pillow reads it as {c.format}")
        got = c.convert("RGB").crop((x - ox, y - oy, x - ox + w, y - oy + h)).tobytes()
        cases += 1
        if got != want:
            differ += 1
            print(f"DIFFERS: {src} box {x},{y},{w},{h} (crop {crop} at {ox},{oy})")
print(f"crop Pillow check: {cases} crops, {differ} differ from the original's box in Pillow, "
      f"{unmarked} of unmarked CMYK originals left out")
sys.exit(1 if differ or cases == 0 else 0)
