#!/usr/bin/python3
"""pillow_ref.py - the reference pipeline, as torchvision runs it on its PIL loader.

    Image.open(f).convert('RGB').crop((x, y, x + w, y + h)).resize((W, H), Image.BILINEAR)
        [.transpose(Image.FLIP_LEFT_RIGHT)]

and for lines "FILE val RESIZE SIZE", torchvision 0.14's own validation transform on that image:

    transforms.Compose([transforms.Resize(RESIZE), transforms.CenterCrop(SIZE)])(img)

Run with /usr/bin/python3 (Debian's Pillow 9.4, linked against the same libjpeg-turbo, and
python3-torchvision, imported only when a val line comes).

    pillow_ref.py run FILE X Y W H OUT_W OUT_H FLIP > out.raw
    pillow_ref.py batch < cases > stream

batch reads such lines and writes, per line, a little-endian int32 status (0, or -1 when Pillow
raised) and on success the OUT_W * OUT_H * 3 (SIZE * SIZE * 3) RGB bytes: the same stream format
as prep_tool batch. Consecutive lines of the same file reuse one decode.
"""
import struct
import sys

from PIL import Image


def reference(img, x, y, w, h, out_w, out_h, flip):
    """The exact torchvision steps after convert('RGB')."""
    out = img.crop((x, y, x + w, y + h)).resize((out_w, out_h), Image.BILINEAR)
    if flip:
        out = out.transpose(Image.FLIP_LEFT_RIGHT)
    return out.tobytes()


def val_reference(img, resize, size):
    """torchvision's Resize + CenterCrop on the PIL image, as its validation pipelines run."""
    from torchvision import transforms  # pylint: disable=import-outside-toplevel
    return transforms.Compose([transforms.Resize(resize), transforms.CenterCrop(size)])(img)


def load(path):
    with Image.open(path) as im:
        return im.convert('RGB')


def parse(fields):
    return (fields[0],) + tuple(int(v) for v in fields[1:8])


def main(argv):
    if len(argv) == 10 and argv[1] == 'run':
        path, x, y, w, h, ow, oh, flip = parse(argv[2:])
        sys.stdout.buffer.write(reference(load(path), x, y, w, h, ow, oh, flip))
        return 0
    if len(argv) != 2 or argv[1] != 'batch':
        sys.stderr.write(__doc__)
        return 2
    out = sys.stdout.buffer
    cached_path, cached = None, None
    for line in sys.stdin:
        fields = line.split()
        if not fields:
            continue
        path = fields[0]
        try:
            if path != cached_path:
                cached_path, cached = path, None
                cached = load(path)
            if cached is None:
                raise OSError('previous load failed')
            if fields[1] == 'val':
                data = val_reference(cached, int(fields[2]), int(fields[3])).tobytes()
            else:
                _, x, y, w, h, ow, oh, flip = parse(fields)
                data = reference(cached, x, y, w, h, ow, oh, flip)
        except Exception as e:  # Any refusal counts; the reason goes to stderr.
            sys.stderr.write('%s\t%s: %s\n' % (path, type(e).__name__, e))
            out.write(struct.pack('<i', -1))
            continue
        out.write(struct.pack('<i', 0))
        out.write(data)
    out.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
