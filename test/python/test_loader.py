#!/usr/bin/python3
"""test_loader.py SOPHON - sophon.Loader and sophon.torch.SophonDataset against the dev cluster
(CEPH_CONF, SOPHON_POOL, SOPHON_DATASET and SOPHON_DATASET_DIR set by with_dataset.sh): shapes,
dtypes and labels; the same bytes as `sophon load --out` for the same seed and epoch; ranks that
cover an epoch exactly once; set_epoch; one thread at a time; close and garbage collection; and
three training steps of a torchvision resnet18 from a DataLoader over the dataset."""

import collections
import errno
import gc
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import torch
import torch.utils.data
import torchvision

import sophon
import sophon.torch

pool, ds = os.environ.get("SOPHON_POOL"), os.environ.get("SOPHON_DATASET")
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures += 1


def loader(**kw):
    kw.setdefault("client_id", "sophon")
    return sophon.Loader(pool, ds, **kw)


# The command runs without the sanitizer runtime a sanitizer build preloads into python.
cli_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def threads_now():
    return len(os.listdir("/proc/self/task"))


def main():
    sophon_cli, tree = sys.argv[1], os.environ["SOPHON_DATASET_DIR"]
    files = sorted(os.path.relpath(os.path.join(d, f), tree)
                   for d, _, fs in os.walk(tree) for f in fs)
    n = len(files)
    classes = sorted(os.listdir(tree))
    per_class = collections.Counter(f.split("/")[0] for f in files)

    # Shapes, dtypes, labels.
    with loader(batch_size=7, format="f32") as l:
        check(l.classes == classes and l.dataset_size == n and len(l) == n,
              f"{n} samples of classes {l.classes}")
        seen = 0
        for images, labels in l.epoch(seed=0, epoch=0):
            ok = (images.dtype == np.float32 and images.shape[1:] == (3, 224, 224) and
                  labels.dtype == np.int64 and images.shape[0] == labels.shape[0] <= 7)
            seen += images.shape[0]
            if not ok:
                break
        check(ok and seen == n, "f32 batches of (<=7, 3, 224, 224) float32 and int64 labels")
        st = l.stats()
        check(st["samples"] == n and st["failed"] == 0 and st["samples_per_s"] > 0 and
              sum(st["samples_by_stage"].values()) == n and 0.25 < st["crop_work"] < 4 and
              st["msgr_cpu_s"] > 0 and 0 < st["client_byte_s"] < 1e-7,
              f"stats: {st['samples']} samples, {st['offloaded']} offloaded, "
              f"{st['bytes_received']} bytes, {st['samples_per_s']:.0f} samples/s, "
              f"crops {st['crop_work']:.2f}x the mean decode, librados {st['msgr_cpu_s']:.3f} s "
              f"(planned {st['client_byte_s'] * 1e9:.2f} ns a byte)")
        named = all(l.classes[lab] == name.split("/")[0] and name in files
                    for b in l.batches(seed=0, epoch=1)
                    for lab, name in zip(b.labels, b.names))
        check(named, "each label is the class directory of its object")

    # The same samples as `sophon load --out` for the same seed, epoch, batch and policy.
    with tempfile.TemporaryDirectory() as tmp:
        for policy, fmt, extra, kw in (
                ("selective", "f32", [], {}),
                ("all", "u8", ["--size", "96", "--scale", "0.25,1", "--ratio", "1/2,2/1"],
                 dict(size=96, scale=(0.25, 1), ratio=(0.5, 2))),
                ("none", "f32", ["--transform", "val", "--size", "160", "--resize", "182"],
                 dict(transform="val", size=160, resize=182))):
            out = os.path.join(tmp, policy)
            subprocess.run([sophon_cli, "load", "--id", "sophon", "-p", pool, "--dataset", ds,
                            "--out", out, "--format", fmt, "--batch", "5", "--policy", policy,
                            "--seed", "42", "--first-epoch", "3", *extra],
                           check=True, stdout=subprocess.DEVNULL, env=cli_env)
            want = open(os.path.join(out, "epoch-3.data"), "rb").read()
            want_names = [line.split()[4] for line in open(os.path.join(out, "epoch-3.index"))]
            with loader(format=fmt, batch_size=5, policy=policy, **kw) as l:
                got, names = [], []
                for b in l.batches(seed=42, epoch=3):
                    got.append(b.images.tobytes())
                    names += b.names
            check(b"".join(got) == want and names == want_names,
                  f"policy {policy} {fmt} {kw}: the bytes and order of `sophon load --out` "
                  f"({len(want)} bytes)")

    # The loader's box and flip are draw_crop's for (seed, epoch, dataset index): sophon.prep with
    # that seed, epoch and index makes each sample of the loader's batch from the photo here.
    with loader(format="u8", size=128, batch_size=6, policy="all", scale=(0.3, 1)) as l:
        b = next(l.batches(seed=9, epoch=4))
        same = all(np.array_equal(img, sophon.prep(open(os.path.join(tree, name), "rb").read(),
                                                   seed=9, epoch=4, index=int(i), size=128,
                                                   scale=(0.3, 1)))
                   for img, name, i in zip(b.images, b.names, b.indices))
    check(same, "the loader's samples are sophon.prep's with draw_crop's (seed, epoch, index)")

    # namespace=: a dataset stored in a namespace of its own (`sophon put -N`), under names no
    # object of the default namespace has, loads from there and only from there.
    ns, nsds = f"pyns.{os.getpid()}", ds + ".ns"
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "nsonly"))
        for f in files[:4]:
            with open(os.path.join(tree, f), "rb") as src, \
                    open(os.path.join(tmp, "nsonly", f.replace("/", "_")), "wb") as dst:
                dst.write(src.read())
        for cmd in (["put", "-N", ns, "--dataset", nsds, "--labels-from-dirs", tmp],
                    ["profile", "-N", ns, "--dataset", nsds, "--sample", "0"]):
            subprocess.run([sophon_cli, *cmd[:1], "--id", "sophon", "-p", pool, *cmd[1:]],
                           check=True, stdout=subprocess.DEVNULL, env=cli_env)
    errors = {}
    for name in (ns, None):
        with sophon.Loader(pool, nsds, client_id="sophon", namespace=name, policy="none",
                           format="u8") as l:
            errors[name] = [int(e) for b in l.batches(seed=1, epoch=0) for e in b.errors]
    check(errors[ns] == [0] * 4 and errors[None] == [0] * 4,
          f"namespace= reads the namespace's objects, and without it the one the dataset was put "
          f"in (errors {errors[ns]}, {errors[None]})")
    try:
        sophon.Loader(pool, nsds, client_id="sophon", namespace="elsewhere").close()
        refused, code = "opened", 0
    except OSError as e:
        refused, code = str(e), e.errno
    check(code == errno.EXDEV and "namespace 'elsewhere'" in refused,
          f"another namespace is refused: {refused}")
    for f in files[:4]:
        subprocess.run(["rados", "-p", pool, "-N", ns, "rm", "nsonly/" + f.replace("/", "_")],
                       check=False, env=cli_env)
    subprocess.run(["rados", "-p", pool, "-N", ".sophon", "rm", "dataset." + nsds], check=False,
                   env=cli_env)

    # Two ranks cover an epoch exactly once, and each epoch has its own order.
    idx = []
    for rank in (0, 1):
        with loader(format="u8", size=32, rank=rank, world=2, batch_size=4) as l:
            idx.append([int(i) for b in l.batches(seed=1, epoch=2) for i in b.indices])
    check(sorted(idx[0] + idx[1]) == list(range(n)) and abs(len(idx[0]) - len(idx[1])) <= 1,
          f"ranks 0 and 1 of 2: {len(idx[0])} + {len(idx[1])} samples, each once")

    # One thread at a time: a second thread finds the loader busy and gets RuntimeError.
    with loader(format="f32", batch_size=2, threads=1) as l:
        busy = 0
        for attempt in range(5):
            l._l.epoch_start(0, attempt)
            stop = threading.Event()

            def drain():
                try:
                    while not stop.is_set() and l._l.next() is not None:
                        pass
                except RuntimeError:
                    pass

            t = threading.Thread(target=drain)
            t.start()
            while t.is_alive():
                try:
                    if l._l.next() is None:
                        break
                except RuntimeError:
                    busy += 1
                    time.sleep(0.001)
            stop.set()
            t.join()
            if busy:
                break
        check(busy > 0, f"two threads at once: {busy} RuntimeErrors, no crash")

    # close() and garbage collection free the loader's threads; a view outliving close stays readable.
    base = threads_now()
    for _ in range(3):
        l = loader(format="u8", size=32, batch_size=4, threads=2)
        kept = next(iter(l.epoch()))[0]
        l.close()
        check(int(kept.sum()) >= 0, "a batch kept past close() is still readable")
        try:
            l._l.next()
            check(False, "next() after close() raised nothing")
        except ValueError:
            pass
        del kept
        l = loader(format="u8", size=32, batch_size=4, threads=2)
        next(iter(l.epoch()))
        del l
        gc.collect()
    check(threads_now() == base, f"close() and del leave no thread behind ({threads_now()} now, "
          f"{base} before)")

    # prefetch: how far ahead the loader prepares, never what it delivers.
    runs = []
    for pf in (0, 1, 9):
        with loader(format="u8", size=32, batch_size=4, threads=2, prefetch=pf) as l:
            runs.append([(bytes(x), list(y)) for x, y in l.epoch(seed=5, epoch=1, copy=True)])
    check(runs[0] == runs[1] == runs[2] and len(runs[0]) > 0,
          "prefetch 0, 1 and 9 deliver the same batches")
    # window: the operations in flight, the loader's choice (0) or the one given; never what
    # the batches hold.
    runs, windows = [], []
    for w in (0, 3):
        with loader(format="u8", size=32, batch_size=4, threads=2, window=w) as l:
            runs.append([(bytes(x), list(y)) for x, y in l.epoch(seed=5, epoch=1, copy=True)])
            windows.append(l.stats()["window"])
    check(runs[0] == runs[1] and 32 <= windows[0] <= 256 and windows[1] == 3,
          f"window 0 (the loader chose {windows[0]}) and 3 deliver the same batches")
    # trace: a dict per sample delivered, in position order, as the batches are taken; what it
    # adds up to is what the stats say.
    traced, names = [], []
    with loader(format="u8", size=32, batch_size=4, threads=2, trace=traced.append) as l:
        for b in l.batches(seed=5, epoch=1):
            names += b.names
        st = l.stats()
    check([t["position"] for t in traced] == list(range(n)) and
          [t["object"] for t in traced] == names and
          sum(t["bytes"] for t in traced) == st["bytes_received"] and
          all(0 <= t["issued_s"] <= t["completed_s"] <= t["ready_s"] <= t["delivered_s"]
              and t["epoch"] == 1 and t["stage"] in ("stored", "crop", "u8", "f32")
              for t in traced),
          f"trace: {len(traced)} samples in order, their bytes and times as the epoch's")
    try:
        loader(trace="trace.csv")
        check(False, "trace='trace.csv' raised nothing")
    except TypeError:
        pass
    try:
        loader(window=-1)
        check(False, "window=-1 raised nothing")
    except ValueError:
        pass
    try:
        loader(prefetch=65537)
        check(False, "prefetch=65537 raised nothing")
    except ValueError:
        pass

    # sophon.torch: tensors, set_epoch, DataLoader workers splitting the epoch.
    dset = sophon.torch.SophonDataset(pool=pool, dataset=ds, client_id="sophon", transform="train",
                                      size=64, batch_size=8, rank=0, world=1)
    dl = torch.utils.data.DataLoader(dset, batch_size=None)
    dset.set_epoch(0)
    e0 = [(x.clone(), y.clone()) for x, y in dl]
    check(all(x.dtype == torch.float32 and x.shape[1:] == (3, 64, 64) and y.dtype == torch.int64
              for x, y in e0) and sum(len(y) for _, y in e0) == n,
          f"SophonDataset: {len(e0)} batches of float32 (B, 3, 64, 64) tensors, int64 labels")
    e0again = [(x.clone(), y.clone()) for x, y in dl]
    dset.set_epoch(1)
    e1 = [(x.clone(), y.clone()) for x, y in dl]
    check(all(torch.equal(a[0], b[0]) for a, b in zip(e0, e0again)), "the same epoch twice: the same")
    check(not torch.equal(torch.cat([y for _, y in e0]), torch.cat([y for _, y in e1])) or
          not torch.equal(e0[0][0], e1[0][0]), "set_epoch(1) changes the order and the crops")
    os.environ["RANK"], os.environ["WORLD_SIZE"] = "1", "3"
    check((sophon.torch.SophonDataset(pool=pool, dataset=ds).rank,
           sophon.torch.SophonDataset(pool=pool, dataset=ds).world) == (1, 3),
          "rank and world from RANK and WORLD_SIZE")
    del os.environ["RANK"], os.environ["WORLD_SIZE"]
    # librados is not fork-safe once this process has connected: workers are spawned.
    wdl = torch.utils.data.DataLoader(dset, batch_size=None, num_workers=2,
                                      multiprocessing_context="spawn")
    labels = collections.Counter(int(v) for _, y in wdl for v in y)
    check(labels == collections.Counter({classes.index(c): k for c, k in per_class.items()}),
          "two DataLoader workers deliver every sample once")

    # A real training smoke test: resnet18 on the CPU, three steps.
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=len(classes))
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    model.train()
    for step, (x, y) in enumerate(dl):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
        if step == 2:
            break
    changed = sum(not torch.equal(a, p.detach()) for a, p in zip(before, model.parameters()))
    check(len(losses) == 3 and all(np.isfinite(losses)) and changed > 0,
          f"resnet18: 3 steps, losses {[round(v, 3) for v in losses]}, {changed} parameter "
          "tensors changed")
    dset.close()

    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
