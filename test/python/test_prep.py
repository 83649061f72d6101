#!/usr/bin/python3
"""test_prep.py CORPUS_DIR SOPHON - the Python package without a cluster, against torchvision
itself on real photos: sophon.prep (boxes, flips, sizes, scale/ratio draws, f32, the validation
transform), sophon.draw_crop against the C sampler as `sophon prep --seed` uses it, errors as
exceptions, the GIL released (threads give the same bytes), the loader's argument checks."""

import concurrent.futures
import errno
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import PIL.Image
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F

import sophon

corpus, sophon_cli = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures += 1


def raises(exc, fn, what, errno_=None):
    try:
        fn()
    except exc as e:
        if errno_ is not None and getattr(e, "errno", None) != errno_:
            check(False, f"{what}: errno {e.errno}, not {errno_} ({e})")
        else:
            check(True, f"{what}: {type(e).__name__}: {e}")
        return
    except Exception as e:  # noqa: BLE001 - the test reports any other exception as a failure
        check(False, f"{what}: {type(e).__name__} ({e}), not {exc.__name__}")
        return
    check(False, f"{what}: no exception")


def photos(n=30):
    """n real photos spread over the corpus by file size, from 10 kB to the largest wallpapers:
    JPEGs that sophon accepts (as make-dataset.sh picks them)."""
    with open(os.path.join(corpus, "list.txt")) as f:
        files = [line.strip() for line in f if line.strip()]
    ok = []
    for path in files:
        if os.path.getsize(path) < 10000:
            continue
        data = open(path, "rb").read()
        try:
            sophon.prep(data, box=(0, 0, 1, 1))
        except sophon.Error:
            continue
        ok.append(path)
    ok.sort(key=os.path.getsize)
    return [ok[k * (len(ok) - 1) // (n - 1)] for k in range(n)]


def torchvision_u8(img, box, size, flip):
    x, y, w, h = box
    out = F.resized_crop(img, y, x, h, w, [size, size], T.InterpolationMode.BILINEAR)
    if flip:
        out = F.hflip(out)
    return np.array(out, dtype=np.uint8)


files = photos()
check(len(files) == 30, f"{len(files)} photos picked from the corpus")
mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
worst_f32 = 0.0
for i, path in enumerate(files):
    data = open(path, "rb").read()
    img = PIL.Image.open(path).convert("RGB")
    w, h = img.size
    name = os.path.basename(path)
    check(sophon.probe(data) == (w, h), f"{name}: probe says {w}x{h}")

    # RandomResizedCrop at three sizes: the box the sampler draws, as a box and by seed.
    for size in (160, 224, 288):
        box, flip = sophon.draw_crop(w, h, 7, i, size)
        a = sophon.prep(data, box=box, size=size, flip=flip)
        ref = torchvision_u8(img, box, size, flip)
        check(a.shape == (size, size, 3) and a.dtype == np.uint8 and np.array_equal(a, ref),
              f"{name}: u8 {size} box {box} flip {flip} is torchvision's resized_crop")
        b = sophon.prep(data, seed=7, epoch=i, index=size, size=size)
        check(np.array_equal(a, b), f"{name}: seed=7 gives the drawn box's bytes")
    # The flip both ways on one box.
    box, _ = sophon.draw_crop(w, h, 1, 0, i)
    for flip in (False, True):
        check(np.array_equal(sophon.prep(data, box=box, flip=flip),
                             torchvision_u8(img, box, 224, flip)),
              f"{name}: flip={flip} is torchvision's (h)flip")

    # Non-default scale and ratio, drawn by the sampler.
    box, flip = sophon.draw_crop(w, h, 3, 1, i, scale=(0.25, 0.5), ratio=(0.5, 2.0))
    area = box[2] * box[3] / (w * h)
    a = sophon.prep(data, box=box, size=224, flip=flip)
    check(np.array_equal(a, torchvision_u8(img, box, 224, flip)) and
          (area <= 0.5 + 1e-9 or box == (0, 0, w, h) or box[2] == w or box[3] == h),
          f"{name}: scale (0.25, 0.5), ratio (1/2, 2): box {box} ({area:.2f} of the area)")
    b = sophon.prep(data, seed=3, epoch=1, index=i, scale=(0.25, 0.5), ratio=(0.5, 2.0))
    check(np.array_equal(a, b), f"{name}: seed= with that scale and ratio, the same bytes")

    # f32: ToTensor + Normalize of the same crop, default and other mean/std.
    box, flip = sophon.draw_crop(w, h, 11, 0, i)
    u8 = torchvision_u8(img, box, 224, flip)
    for m, s in ((None, None), (mean, std)):
        f = sophon.prep(data, box=box, flip=flip, format="f32", mean=m, std=s)
        ref = F.normalize(F.to_tensor(u8), m or (0.485, 0.456, 0.406),
                          s or (0.229, 0.224, 0.225)).numpy()
        err = float(np.abs(f - ref).max())
        worst_f32 = max(worst_f32, err)
        check(f.shape == (3, 224, 224) and f.dtype == np.float32 and err <= 1e-6,
              f"{name}: f32 mean {m} is to_tensor + normalize (max error {err:g})")

    # The validation transform.
    for resize, size in ((256, 224), (182, 160), (320, 288)):
        a = sophon.prep(data, transform="val", size=size, resize=resize)
        ref = np.asarray(T.Compose([T.Resize(resize), T.CenterCrop(size)])(img))
        check(np.array_equal(a, ref), f"{name}: val Resize({resize}) + CenterCrop({size})")
    f = sophon.prep(data, transform="val", format="f32")
    ref = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                     T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])(img).numpy()
    check(f.shape == (3, 224, 224) and float(np.abs(f - ref).max()) <= 1e-6,
          f"{name}: val f32 is the whole ImageNet validation transform")
print(f"f32: largest difference from torchvision {worst_f32:g}")

# The command runs without the sanitizer runtime a sanitizer build preloads into python (its own
# is linked in).
cli_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
# draw_crop is the C sampler: `sophon prep --seed S --epoch E --index I` prints the box it drew
# and writes the sample.
with tempfile.TemporaryDirectory() as tmp:
    for i, path in enumerate(files[:10]):
        data = open(path, "rb").read()
        w, h = sophon.probe(data)
        seed, epoch, index = 1000 + i, i % 3, 17 * i
        out = os.path.join(tmp, "s.raw")
        r = subprocess.run([sophon_cli, "prep", path, "--seed", str(seed), "--epoch", str(epoch),
                            "--index", str(index), "--scale", "0.3,0.9", "--ratio", "2/3,3/2",
                            "-o", out], capture_output=True, text=True, env=cli_env)
        m = re.search(r"box (\d+),(\d+),(\d+),(\d+)", r.stdout)
        box, flip = sophon.draw_crop(w, h, seed, epoch, index, scale=(0.3, 0.9),
                                     ratio=(2 / 3, 3 / 2))
        cli_box = tuple(int(v) for v in m.groups()) if m else None
        a = sophon.prep(data, box=box, flip=flip)
        same = r.returncode == 0 and np.array_equal(a.ravel(),
                                                    np.fromfile(out, dtype=np.uint8))
        check(cli_box == box and same,
              f"{os.path.basename(path)}: draw_crop {box} flip {flip} is `sophon prep --seed`'s")

# The GIL is released: samples made by four threads at once are the same bytes.
datas = [open(p, "rb").read() for p in files[:12]]
serial = [sophon.prep(d, seed=5, index=k) for k, d in enumerate(datas)]
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    threaded = list(pool.map(lambda kd: sophon.prep(kd[1], seed=5, index=kd[0]),
                             enumerate(datas)))
check(all(np.array_equal(a, b) for a, b in zip(serial, threaded)),
      "threads prepare the same bytes")
# Any buffer is an image: bytearray, memoryview, numpy.
d = datas[0]
check(all(np.array_equal(sophon.prep(x, seed=5, index=0), serial[0])
          for x in (bytearray(d), memoryview(d), np.frombuffer(d, np.uint8))),
      "bytearray, memoryview and numpy arrays are accepted")
t = torch.from_numpy(sophon.prep(d, seed=5, index=0))
check(t.dtype == torch.uint8 and t.shape == (224, 224, 3), "the arrays become tensors")

# Errors.
w, h = sophon.probe(d)
raises(sophon.Error, lambda: sophon.prep(b"not a jpeg at all", box=(0, 0, 1, 1)),
       "not a JPEG", errno.EBADMSG)
raises(sophon.Error, lambda: sophon.prep(d[: len(d) // 2], box=(0, 0, w, h)),
       "a truncated JPEG", errno.EBADMSG)
corrupt = bytearray(d)
corrupt[len(d) // 2: len(d) // 2 + 64] = b"\xff\xd9" * 32
raises(sophon.Error, lambda: sophon.prep(bytes(corrupt), box=(0, 0, w, h)),
       "a corrupt JPEG", errno.EBADMSG)
raises(sophon.Error, lambda: sophon.prep(b"\x00" * 16, transform="val"),
       "val of garbage", errno.EBADMSG)
raises(OSError, lambda: sophon.prep(b"garbage", seed=1), "sophon.Error is an OSError",
       errno.EBADMSG)
raises(sophon.Error, lambda: sophon.prep(d, box=(w - 10, 0, 20, 20)),
       "a box outside the image", errno.EINVAL)
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 1)), "a box of 3 values")
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 0, 5)), "an empty box")
raises(ValueError, lambda: sophon.prep(d, box=(-1, 0, 5, 5)), "a negative box")
raises(TypeError, lambda: sophon.prep(d, box="0,0,1,1"), "a box that is a string")
raises(TypeError, lambda: sophon.prep(d, box=(0, 0, 1.5, 1)), "a box of floats")
raises(ValueError, lambda: sophon.prep(d), "no box, seed or transform")
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 1, 1), seed=1), "box and seed")
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 1, 1), format="f64"), "format f64")
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 1, 1), size=0), "size 0")
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 1, 1), size=100000), "size 100000")
raises(TypeError, lambda: sophon.prep(d, box=(0, 0, 1, 1), size="224"), "size a string")
raises(ValueError, lambda: sophon.prep(d, transform="test"), "transform test")
raises(ValueError, lambda: sophon.prep(d, transform="val", resize=200), "val resize < size")
raises(ValueError, lambda: sophon.prep(d, transform="val", flip=True), "val with a flip")
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 1, 1), std=(1, 0, 1)), "std 0")
raises(ValueError, lambda: sophon.prep(d, box=(0, 0, 1, 1), mean=(1, 2)), "mean of 2")
raises(ValueError, lambda: sophon.prep(d, seed=1, scale=(0.5, 0.1)), "scale reversed")
raises(ValueError, lambda: sophon.prep(d, seed=-1), "a negative seed")
raises(TypeError, lambda: sophon.prep(12345, box=(0, 0, 1, 1)), "an int as the JPEG")
raises(ValueError, lambda: sophon.draw_crop(0, 10, 1, 1, 1), "draw_crop of an empty image")
raises(ValueError, lambda: sophon.draw_crop(10, 10, 1, -1, 1), "draw_crop of epoch -1")
raises(ValueError, lambda: sophon.draw_crop(10, 10, 1, 1, 1, ratio=(0, 1)), "ratio from 0")
raises(ValueError, lambda: sophon.Loader("p", "d", rank=2, world=2), "Loader rank 2 of 2")
raises(ValueError, lambda: sophon.Loader("p", "d", format="png"), "Loader format png")
raises(ValueError, lambda: sophon.Loader("p", "d", batch_size=0), "Loader batch 0")
raises(ValueError, lambda: sophon.Loader("p", "d", transform="val", size=300),
       "Loader val with resize < size")
raises(sophon.Error, lambda: sophon.Loader("p", "d", conf="/nonexistent/ceph.conf"),
       "Loader with a missing ceph.conf", errno.ENOENT)

print(f"{failures} failures")
sys.exit(1 if failures else 0)
