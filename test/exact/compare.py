#!/usr/bin/python3
"""compare.py - byte-exactness of sophon_prep against Pillow over a corpus of real JPEGs.

    compare.py PREP_TOOL LIST_FILE [--cases N] [--seed S] [--limit M] [--reference pillow|whole]

For each JPEG in LIST_FILE (one path a line), draws N RandomResizedCrop boxes (scale 0.08-1,
ratio 3/4-4/3, seeded) plus fixed edge cases (full image, 1x1 box, bottom-right corner box, a
small box upscaled, odd output sizes), each with a random flip, and torchvision's validation
transform at Resize(256) + CenterCrop(224) and one other (resize, size) pair; runs prep_tool
batch and pillow_ref.py batch (torchvision itself for the validation cases) on the same cases
and compares the streams byte by byte.
Prints: images, cases, cases compared, differing cases and bytes (must be 0), and refusals.
Exit status 1 if any byte differs or ours produced output where Pillow refused.

--reference whole compares the JPEGs of the list with prep_tool batch --whole-file instead: the
decode of every scan over the whole image that the progressive cut replaces, by libjpeg's own
Huffman decoders that prep/jpeg/huffman.c replaces. Exact and fast mode; progressive files get more
boxes, at and near the bottom and at every fast scale. There the two must agree on every case,
refusals and their errno included.
"""
import argparse
import collections
import math
import os
import random
import struct
import subprocess
import sys

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def random_resized_crop(rng, w, h):
    """torchvision RandomResizedCrop.get_params (scale 0.08-1, ratio 3/4-4/3)."""
    area = w * h
    log_ratio = (math.log(3 / 4), math.log(4 / 3))
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(*log_ratio))
        cw = int(round(math.sqrt(target * ratio)))
        ch = int(round(math.sqrt(target / ratio)))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, w - cw), rng.randint(0, h - ch), cw, ch
    cw, ch = w, h
    if w / h < 3 / 4:
        ch = int(round(w / (3 / 4)))
    elif w / h > 4 / 3:
        cw = int(round(h * (4 / 3)))
    cw, ch = min(cw, w), min(ch, h)
    return (w - cw) // 2, (h - ch) // 2, cw, ch


VAL_PAIRS = ((232, 224), (182, 160), (320, 288), (160, 160), (288, 288), (146, 128))


def output_size(fields):
    """The output's width and height of a case line (fields without the file name's)."""
    if fields[1] == 'val':
        return int(fields[3]), int(fields[3])
    return int(fields[5]), int(fields[6])


def cases_for(rng, path, w, h, n):
    out = []
    for _ in range(n):
        out.append(random_resized_crop(rng, w, h) + (224, 224))
    out.append((0, 0, w, h, 224, 224))
    out.append((rng.randrange(w), rng.randrange(h), 1, 1, 224, 224))
    cw, ch = max(1, w // 3), max(1, h // 5)
    out.append((w - cw, h - ch, cw, ch, 224, 224))
    sw, sh = min(w, rng.randint(1, 40)), min(h, rng.randint(1, 40))
    out.append((rng.randint(0, w - sw), rng.randint(0, h - sh), sw, sh, 224, 224))
    x, y, bw, bh = random_resized_crop(rng, w, h)
    out.append((x, y, bw, bh, rng.randint(1, 300), rng.randint(1, 300)))
    out.append((0, 0, w, h, w, max(1, h // 2)))  # one pass skipped (same width)
    lines = ['%s %d %d %d %d %d %d %d' % ((path,) + c + (rng.randint(0, 1),)) for c in out]
    # Resize(resize) + CenterCrop(size), where the crop fits (torchvision pads otherwise).
    for resize, size in ((256, 224), rng.choice(VAL_PAIRS)):
        lines.append('%s val %d %d' % (path, resize, size))
    return lines


def cut_cases_for(rng, path, w, h, n):
    """cases_for plus boxes ending at and just above the bottom, in the top rows, and boxes that
    fast mode decodes at 1/8, 1/4, 1/2 and 1/1; each case in exact and fast mode."""
    out = [line.split()[1:] for line in cases_for(rng, path, w, h, n)]
    for above in (0, 1, 15, 16, 17, 40, 64, 65, 100, 200):
        bh = min(h, rng.randint(1, 300))
        y1 = max(bh, h - above)
        bw = rng.randint(1, w)
        out.append([rng.randint(0, w - bw), y1 - bh, bw, bh, 224, 224, rng.randint(0, 1)])
    out.append([0, 0, w, max(1, h // 10), 224, 224, 0])
    out.append([rng.randrange(w), rng.randrange(max(1, h // 4)), 1, 1, 7, 7, 1])
    for d in (8, 4, 2, 1):
        if w >= d and h >= d:
            x, y, bw, bh = random_resized_crop(rng, w, h)
            out.append([x, y, bw, bh, max(1, bw // d), max(1, bh // d), rng.randint(0, 1)])
    return ['%s %s %d' % (path, ' '.join(str(v) for v in c), fast)
            for c in out for fast in (0, 1)]


def read_record(stream, w, h):
    head = stream.read(4)
    if len(head) != 4:
        raise EOFError('stream ended early')
    status = struct.unpack('<i', head)[0]
    if status != 0:
        return status, None
    data = stream.read(w * h * 3)
    if len(data) != w * h * 3:
        raise EOFError('stream ended inside a record')
    return 0, data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('prep_tool')
    ap.add_argument('list_file')
    ap.add_argument('--cases', type=int, default=4)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--limit', type=int, default=0)
    ap.add_argument('--log', default='/tmp/sophon-compare')
    ap.add_argument('--reference', choices=('pillow', 'whole'), default='pillow')
    args = ap.parse_args()
    whole = args.reference == 'whole'

    rng = random.Random(args.seed)
    with open(args.list_file) as f:
        paths = [p.strip() for p in f if p.strip() and ' ' not in p.strip()]
    if args.limit:
        paths = paths[:args.limit]
    lines = []
    for p in paths:
        try:
            with Image.open(p) as im:
                w, h = im.size
                jpeg = im.format == 'JPEG'
                progressive = jpeg and bool(im.info.get('progressive'))
        except Exception:
            w, h, jpeg, progressive = 1, 1, False, False  # Let both pipelines refuse it.
        if whole:
            if progressive:
                lines += cut_cases_for(rng, p, w, h, args.cases)
            elif jpeg:
                lines += ['%s %d' % (line, fast) for line in cases_for(rng, p, w, h, args.cases)
                          for fast in (0, 1)]
        else:
            lines += cases_for(rng, p, w, h, args.cases)
    os.makedirs(args.log, exist_ok=True)
    case_file = os.path.join(args.log, 'cases.txt')
    with open(case_file, 'w') as f:
        f.write('\n'.join(lines) + '\n')

    ours_err = open(os.path.join(args.log, 'ours.stderr'), 'w')
    ref_err = open(os.path.join(args.log, 'pillow.stderr'), 'w')
    ours = subprocess.Popen([args.prep_tool, 'batch'], stdin=open(case_file),
                            stdout=subprocess.PIPE, stderr=ours_err)
    ref_cmd = ([args.prep_tool, 'batch', '--whole-file'] if whole else
               ['/usr/bin/python3', os.path.join(HERE, 'pillow_ref.py'), 'batch'])
    ref = subprocess.Popen(ref_cmd, stdin=open(case_file), stdout=subprocess.PIPE, stderr=ref_err)

    stats = collections.Counter()
    refused = collections.Counter()
    bad_files = collections.defaultdict(set)
    images_ok = set()
    for line in lines:
        f = line.split()
        ow, oh = output_size(f)
        s1, d1 = read_record(ours.stdout, ow, oh)
        s2, d2 = read_record(ref.stdout, ow, oh)
        stats['cases'] += 1
        if s1 == 0 and s2 == 0:
            stats['compared'] += 1
            images_ok.add(f[0])
            if d1 != d2:
                nbytes = sum(a != b for a, b in zip(d1, d2))
                stats['differing_cases'] += 1
                stats['differing_bytes'] += nbytes
                bad_files['differs'].add(line)
        elif s1 != 0 and s2 != 0:
            stats['both_refused'] += 1
            refused['both %d' % s1] += 1
            if whole and s1 != s2:
                stats['other_errno'] += 1
                bad_files['other_errno'].add(line)
        elif s1 != 0:
            stats['only_ours_refused'] += 1
            refused['ours %d' % s1] += 1
            bad_files['ours_refused'].add(f[0])
        else:
            stats['only_pillow_refused'] += 1
            bad_files['pillow_refused'].add(line)
    ours.wait()
    ref.wait()

    print('images: %d (compared on %d)' % (len(paths), len(images_ok)))
    for k in ('cases', 'compared', 'differing_cases', 'differing_bytes', 'both_refused',
              'only_ours_refused', 'only_pillow_refused') + (('other_errno',) if whole else ()):
        print('%-20s %d' % (k, stats[k]))
    for k, v in sorted(refused.items()):
        print('refused (%s): %d cases' % (k, v))
    for k in ('ours_refused',):
        for p in sorted(bad_files[k]):
            print('only ours refused: %s' % p)
    for k in ('differs', 'pillow_refused', 'other_errno'):
        for line in sorted(bad_files[k])[:20]:
            print('%s: %s' % (k, line))
    print('logs (stderr of both, cases): %s' % args.log)
    if whole:
        return 1 if (stats['differing_bytes'] or stats['only_ours_refused'] or
                     stats['only_pillow_refused'] or stats['other_errno']) else 0
    return 1 if stats['differing_bytes'] or stats['only_pillow_refused'] else 0


if __name__ == '__main__':
    sys.exit(main())
