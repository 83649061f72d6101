#!/usr/bin/python3
"""gen_synthetic.py - JPEGs in every colour and sampling mode, for the exactness check.

    gen_synthetic.py OUT_DIR [SOURCE_JPEG]

Pixels come from SOURCE_JPEG when given (a real photo, resized to odd sizes) or from a seeded
pattern of gradients, edges and noise. Writes with Pillow: 4:4:4, 4:2:2, 4:2:0, baseline and
progressive, grayscale, CMYK (Pillow's Adobe-inverted CMYK); with cjpeg (libjpeg-turbo-progs):
4:4:0, 4:1:1, restart intervals (baseline, and progressive every MCU row or every MCU),
progressions that make libjpeg smooth blocks (DC only, no refinement scans), arithmetic coding,
RGB (no colour transform). Prints the list of files written, one a line.
"""
import os
import subprocess
import sys

import numpy as np
from PIL import Image

SIZES = [(333, 217), (17, 9), (1, 1), (1023, 31), (64, 64), (250, 401), (1999, 1501)]


def content(w, h, rng, src):
    if src is not None:
        return src.resize((w, h), Image.LANCZOS)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / 7.0) * np.cos(y / 11.0)
    g = 255.0 * x / max(w - 1, 1)
    b = np.where((x // 5 + y // 3) % 2 == 0, 30.0, 220.0)
    a = np.stack([r, g, b], axis=-1) + rng.normal(0, 12, (h, w, 3))
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), 'RGB')


# Progressions that never send AC coefficients 1..9 in full, so that libjpeg smooths blocks with
# their neighbours' DC values (cjpeg -scans syntax: components: Ss-Se, Ah, Al).
SCANS = {'dc-only': '0,1,2: 0-0, 0, 0;\n',
         'no-refine': '0,1,2: 0-0, 0, 0;\n0: 1-63, 0, 1;\n1: 1-63, 0, 1;\n2: 1-63, 0, 1;\n'}


def main(argv):
    out_dir = argv[1]
    src = Image.open(argv[2]).convert('RGB') if len(argv) > 2 else None
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(7)
    written = []
    have_cjpeg = subprocess.call(['sh', '-c', 'command -v cjpeg >/dev/null']) == 0
    for name, text in SCANS.items():
        with open(os.path.join(out_dir, name + '.scans'), 'w') as f:
            f.write(text)
    for w, h in SIZES:
        im = content(w, h, rng, src)
        base = os.path.join(out_dir, '%dx%d' % (w, h))
        for ss, name in ((0, '444'), (1, '422'), (2, '420')):
            for prog in (False, True):
                p = '%s-%s%s.jpg' % (base, name, '-prog' if prog else '')
                try:
                    im.save(p, quality=90, subsampling=ss, progressive=prog)
                except OSError:
                    continue  # Pillow 9.4 cannot write progressive files this small.
                written.append(p)
        p = base + '-gray.jpg'
        im.convert('L').save(p, quality=85)
        written.append(p)
        p = base + '-cmyk.jpg'
        im.convert('CMYK').save(p, quality=90)
        written.append(p)
        if not have_cjpeg:
            continue
        ppm = base + '.ppm'
        im.save(ppm)
        for tag, opts in (('440', ['-sample', '1x2']), ('411', ['-sample', '4x1']),
                          ('420-restart', ['-sample', '2x2', '-restart', '1']),
                          ('420-arith', ['-sample', '2x2', '-arithmetic']),
                          ('rgb', ['-rgb']), ('422-prog', ['-sample', '2x1', '-progressive']),
                          ('420-prog-restart', ['-sample', '2x2', '-progressive', '-restart', '1']),
                          ('444-prog-restart', ['-sample', '1x1', '-progressive',
                                                '-restart', '1B']),
                          ('420-prog-dc-only', ['-sample', '2x2', '-scans',
                                                os.path.join(out_dir, 'dc-only.scans')]),
                          ('422-prog-no-refine', ['-sample', '2x1', '-scans',
                                                  os.path.join(out_dir, 'no-refine.scans')]),
                          ('444-fast', ['-dct', 'fast'])):
            if tag == '420-arith' and w * h > 1000000:
                # Pillow 9.4 feeds libjpeg through a suspending source, which libjpeg's
                # arithmetic decoder does not support: big arithmetic-coded files fail in Pillow
                # ("broken data stream") while libjpeg (and we) decode them. Not comparable.
                continue
            p = '%s-cj%s.jpg' % (base, tag)
            subprocess.check_call(['cjpeg', '-quality', '88'] + opts + ['-outfile', p, ppm])
            written.append(p)
        os.unlink(ppm)
    print('\n'.join(written))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
