#!/usr/bin/python3
"""bench_pillow.py - Pillow's throughput on the cases bench_prep times, one thread.

    bench_pillow.py make LIST_FILE CASES [PER_IMAGE] [SEED]   write RandomResizedCrop(224) cases
    bench_pillow.py run CASES [REPS]                          time Pillow on them

Timed per case: Image.open(BytesIO(bytes)).convert('RGB').crop(box).resize(224, BILINEAR)
[.transpose]; the file bytes are read beforehand, as bench_prep does.
"""
import io
import os
import random
import sys
import time

from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'exact'))
from compare import random_resized_crop  # noqa: E402

SIZES = ['<1MP', '1-4MP', '>=4MP', 'any']
CODINGS = ['base', 'prog', 'all']


def size_class(w, h):
    mp = w * h / 1e6
    return 0 if mp < 1 else 1 if mp < 4 else 2


def make(list_file, cases_file, per_image=2, seed=1):
    rng = random.Random(seed)
    out = []
    for p in open(list_file):
        p = p.strip()
        try:
            with Image.open(p) as im:
                if im.format != 'JPEG':
                    continue
                w, h = im.size
        except Exception:
            continue
        for _ in range(per_image):
            x, y, bw, bh = random_resized_crop(rng, w, h)
            out.append('%s %d %d %d %d 224 224 %d' % (p, x, y, bw, bh, rng.randint(0, 1)))
    with open(cases_file, 'w') as f:
        f.write('\n'.join(out) + '\n')


def run(cases_file, reps=3):
    """Per bucket (size class x coding, with "any" and "all" rows), as bench_prep prints."""
    cases, times, data, facts = {}, {}, {}, {}
    refused = 0
    for line in open(cases_file):
        f = line.split()
        path, (x, y, w, h, ow, oh, flip) = f[0], map(int, f[1:8])
        if path not in data:
            data[path] = open(path, 'rb').read()
            try:
                with Image.open(io.BytesIO(data[path])) as im:
                    facts[path] = (size_class(*im.size), 1 if im.info.get('progressive') else 0)
            except Exception:
                facts[path] = None
        if facts[path] is None:
            refused += 1
            continue
        try:
            t0 = time.perf_counter()
            for _ in range(reps):
                im = Image.open(io.BytesIO(data[path])).convert('RGB')
                out = im.crop((x, y, x + w, y + h)).resize((ow, oh), Image.BILINEAR)
                if flip:
                    out = out.transpose(Image.FLIP_LEFT_RIGHT)
            dt = (time.perf_counter() - t0) / reps
        except Exception:
            refused += 1
            continue
        s, c = facts[path]
        for key in ((s, c), (s, 2), (3, c), (3, 2)):
            cases[key] = cases.get(key, 0) + 1
            times[key] = times.get(key, 0.0) + dt
    print('%-12s %7s %12s' % ('bucket', 'cases', 'pillow img/s'))
    for s in range(len(SIZES)):
        for c in range(len(CODINGS)):
            if (s, c) in cases:
                print('%-12s %7d %12.1f' % (SIZES[s] + '/' + CODINGS[c], cases[(s, c)],
                                            cases[(s, c)] / times[(s, c)]))
    print('refused: %d' % refused)


if __name__ == '__main__':
    a = sys.argv
    if len(a) >= 4 and a[1] == 'make':
        make(a[2], a[3], int(a[4]) if len(a) > 4 else 2, int(a[5]) if len(a) > 5 else 1)
    elif len(a) >= 3 and a[1] == 'run':
        run(a[2], int(a[3]) if len(a) > 3 else 3)
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
