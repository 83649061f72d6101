#!/usr/bin/python3
"""make-openimages-like.py CORPUS_DIR OUT_DIR [N] [SEED] - an ImageFolder dataset that resembles
OpenImages, made from the real-photo corpus (scripts/fetch-corpus.sh).

The SOPHON paper's profile of 40,000 OpenImages training images (data/openimages-40k-prep-sizes.csv)
gives each image's size in pixels and in stored bytes: three quarters are over 150,528 bytes. For
N of its rows (default 400, drawn with SEED), a photo of the corpus (one whose stored bytes per
pixel are at least the row's, where there is one: detail does not grow with quality) is scaled
and centre-cropped to the row's width and height and saved as a baseline JPEG at the quality
whose size comes nearest the row's stored bytes (a binary search over 20..100 in 4:2:0, then in
4:4:4 when even 4:2:0 at 100 is smaller).
Classes are the corpus packages the photos come from. Prints the size distribution it made
next to the profile's. Run with Debian's /usr/bin/python3 (python3-pil).
"""
import io
import os
import random
import sys

from PIL import Image

Image.MAX_IMAGE_PIXELS = None
here = os.path.dirname(os.path.abspath(__file__))
corpus, out = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 400
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
rng = random.Random(seed)

rows = []
with open(os.path.join(here, "..", "data", "openimages-40k-prep-sizes.csv")) as f:
    next(f)
    for line in f:
        cols = line.split(";")
        w, h = (int(v) for v in cols[3].strip("()").split(","))
        rows.append((int(cols[1]), w, h))
rows = rng.sample(rows, n)

# Photos: the corpus's JPEGs of at least 0.5 MP that Pillow reads as RGB.
photos = []
with open(os.path.join(corpus, "list.txt")) as f:
    for path in (line.strip() for line in f):
        try:
            with Image.open(path) as im:
                if im.mode == "RGB" and im.width * im.height >= 500000:
                    photos.append((path, im.width, im.height,
                                   os.path.getsize(path) / (im.width * im.height)))
        except Exception:
            pass
if not photos:
    sys.exit(f"make-openimages-like: no photos of 0.5 MP or more in {corpus}")


def encode(im, q, ss):
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=q, subsampling=ss)
    return buf.getvalue()


def nearest(img, raw, ss):
    lo, hi, best = 20, 100, None
    while lo <= hi:
        q = (lo + hi) // 2
        data = encode(img, q, ss)
        if best is None or abs(len(data) - raw) < abs(len(best) - raw):
            best = data
        if len(data) < raw:
            lo = q + 1
        else:
            hi = q - 1
    return best


def fit(im, w, h):
    """im scaled to cover w x h, then its centre w x h."""
    s = max(w / im.width, h / im.height)
    sw, sh = max(w, round(im.width * s)), max(h, round(im.height * s))
    im = im.resize((sw, sh), Image.BILINEAR)
    x, y = (sw - w) // 2, (sh - h) // 2
    return im.crop((x, y, x + w, y + h))


made = []
tty = sys.stderr.isatty()
for k, (raw, w, h) in enumerate(rows):
    dense = [p for p in photos if p[3] >= raw / (w * h)]
    src = rng.choice(dense or photos)
    with Image.open(src[0]) as im:
        img = fit(im.convert("RGB"), w, h)
    best = nearest(img, raw, 2)
    if len(best) < 0.9 * raw:
        best = min(best, nearest(img, raw, 0), key=lambda d: abs(len(d) - raw))
    cls = src[0].split("/pkg/")[-1].split("/")[0] if "/pkg/" in src[0] else "corpus"
    os.makedirs(os.path.join(out, cls), exist_ok=True)
    with open(os.path.join(out, cls, f"oi{k:05d}.jpg"), "wb") as f:
        f.write(best)
    made.append((len(best), raw))
    if tty:
        print(f"\r{k + 1}/{n} images", end="", file=sys.stderr)
if tty:
    print(file=sys.stderr)
over = sum(1 for b, _ in made if b > 150528)
print(f"make-openimages-like: {n} images under {out}: {sum(b for b, _ in made) / 1e6:.1f} MB, "
      f"mean {sum(b for b, _ in made) / n / 1e3:.0f} KB, {100 * over / n:.0f}% over 150,528 bytes "
      f"(the profile's rows: {sum(r for _, r in made) / n / 1e3:.0f} KB mean, "
      f"{100 * sum(1 for _, r in made if r > 150528) / n:.0f}% over)")
