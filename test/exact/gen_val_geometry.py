#!/usr/bin/python3
"""gen_val_geometry.py - the geometry of torchvision 0.14's validation transform, from torchvision.

    gen_val_geometry.py > test/unit/val_geometry.tsv

For many image shapes and (resize, size) pairs, runs torchvision's own Resize(resize) on a PIL
image of that shape (the PIL path, max_size None) and its CenterCrop(size) on an image whose
pixels are their own positions, and prints one line per case:

    WIDTH HEIGHT RESIZE SIZE RESIZED_W RESIZED_H LEFT TOP

or, where torchvision pads (size larger than a resized side), RESIZED_W RESIZED_H and "pad".
test_geometry.c holds sophon_prep_set_val to it; unit.val_geometry_table regenerates it and
compares, so the table cannot drift from torchvision. Run with Debian's /usr/bin/python3
(python3-torchvision 0.14).
"""
import sys

import torch
from PIL import Image
from torchvision import transforms

SHAPES = [
    (1, 1), (2, 3), (7, 5), (100, 100), (223, 224), (224, 224), (225, 225), (255, 257),
    (256, 256), (257, 256), (299, 300), (320, 240), (333, 500), (375, 500), (500, 333),
    (500, 375), (500, 500), (512, 341), (640, 427), (640, 480), (480, 640), (720, 1280),
    (800, 600), (1023, 767), (1024, 768), (1200, 1600), (1280, 720), (1366, 768),
    (1599, 1201), (1920, 1080), (1080, 1920), (2048, 1536), (2592, 1944), (3000, 2000),
    (3024, 4032), (4032, 3024), (4000, 3000), (4608, 3456), (5000, 300), (300, 5000),
    (6000, 400), (9000, 250), (250, 9000), (4096, 111), (111, 4096), (257, 511), (511, 257),
    (301, 299), (299, 301), (1001, 999), (999, 1001), (641, 479), (479, 641),
]
PAIRS = [(256, 224), (232, 224), (256, 256), (160, 160), (182, 160), (288, 288), (320, 288),
         (146, 128), (224, 224), (300, 299), (256, 1), (1, 1), (8, 5), (33, 31), (224, 256),
         (100, 101)]


def centre_offsets(rw, rh, size):
    """CenterCrop(size) of an image whose value at (y, x) is y * rw + x: its corner's value."""
    positions = torch.arange(rw * rh, dtype=torch.int64).reshape(1, rh, rw)
    corner = int(transforms.CenterCrop(size)(positions)[0, 0, 0])
    return corner % rw, corner // rw


def main():
    resized = {}
    for w, h in SHAPES:
        img = Image.new("1", (w, h))
        for resize, size in PAIRS:
            if (w, h, resize) not in resized:
                resized[(w, h, resize)] = transforms.Resize(resize)(img).size
            rw, rh = resized[(w, h, resize)]
            if size > rw or size > rh:
                print(w, h, resize, size, rw, rh, "pad")
                continue
            left, top = centre_offsets(rw, rh, size)
            print(w, h, resize, size, rw, rh, left, top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
