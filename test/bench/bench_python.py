#!/usr/bin/python3
"""bench_python.py TREE [--rounds R] [--workers W] [--pool P --dataset D [--id ID]]

Training samples per second, and per second of CPU (per core), of the same photos in the same
run: torchvision's ImageFolder + DataLoader(num_workers=W) on its PIL path
(RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize), and sophon.prep over the
same files in W threads (the same transform, f32, batched into tensors of 32). With --pool and
--dataset, also sophon.Loader from a dev cluster (client CPU only; OSD CPU is reported apart).
The two local paths alternate for --rounds rounds (the machine may be noisy); the best round of
each is summarized. TREE is an ImageFolder tree (scripts/make-dataset.sh). Prints numbers only;
nothing is asserted.
"""

import argparse
import concurrent.futures
import os
import resource
import time

import numpy as np
import torch
import torch.utils.data
import torchvision
import torchvision.transforms as T

import sophon

BATCH = 32


def cpu_now():
    """CPU seconds of this process and its waited-for children (DataLoader workers are joined at
    the end of an epoch, so theirs count)."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def run_torchvision(tree, workers, epoch):
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    ds = torchvision.datasets.ImageFolder(tree, transform=tf)
    torch.manual_seed(epoch)
    dl = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers)
    n = 0
    for images, labels in dl:
        n += len(labels)
    return n


def run_sophon(samples, workers, epoch):
    """samples: (path, label) in ImageFolder's order. Each thread reads and prepares one sample
    at a time into its batch slot; the batches become tensors without a copy."""
    order = np.random.default_rng(epoch).permutation(len(samples))
    n = 0

    def one(args):
        batch, k, i = args
        path, _ = samples[i]
        with open(path, "rb") as f:
            batch[k] = sophon.prep(f.read(), seed=0, epoch=epoch, index=int(i), format="f32")

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for start in range(0, len(order), BATCH):
            idx = order[start:start + BATCH]
            batch = np.empty((len(idx), 3, 224, 224), dtype=np.float32)
            list(pool.map(one, [(batch, k, i) for k, i in enumerate(idx)]))
            images = torch.from_numpy(batch)
            labels = torch.tensor([samples[i][1] for i in idx])
            n += images.shape[0] if len(labels) else 0
    return n


def run_loader(args, epoch):
    with sophon.Loader(args.pool, args.dataset, client_id=args.id, policy=args.policy,
                       format="f32", batch_size=BATCH, threads=args.workers) as loader:
        n = 0
        for images, labels in loader.epoch(seed=0, epoch=epoch):
            torch.from_numpy(images)
            n += len(labels)
        return n, loader.stats()


def measure(fn, *a):
    c0, t0 = cpu_now(), time.perf_counter()
    out = fn(*a)
    return out, time.perf_counter() - t0, cpu_now() - c0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tree")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--pool")
    p.add_argument("--dataset")
    p.add_argument("--id")
    p.add_argument("--policy", default="selective")
    args = p.parse_args()

    samples = torchvision.datasets.ImageFolder(args.tree).samples
    mb = sum(os.path.getsize(f) for f, _ in samples) / 1e6
    print(f"{len(samples)} photos ({mb:.1f} MB) in {args.tree}; {args.workers} workers/threads; "
          f"{os.cpu_count()} CPUs; torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}, sophon {sophon.version}")
    for f, _ in samples:  # the page cache, for both alike
        open(f, "rb").read()
    best = {}
    for r in range(args.rounds):
        for name, fn in (("torchvision", run_torchvision), ("sophon.prep", run_sophon)):
            src = args.tree if fn is run_torchvision else samples
            n, wall, cpu = measure(fn, src, args.workers, r)
            rate, per_core = n / wall, n / cpu
            print(f"round {r} {name:12s}: {n} samples in {wall:6.2f} s, {rate:7.1f} samples/s, "
                  f"CPU {cpu:6.2f} s, {per_core:7.1f} samples/s per core", flush=True)
            b = best.get(name)
            if b is None or per_core > b[1]:
                best[name] = (rate, per_core)
        if args.pool and args.dataset:
            (n, st), wall, cpu = measure(run_loader, args, r)
            print(f"round {r} {'sophon.Loader':12s}: {n} samples in {wall:6.2f} s, "
                  f"{n / wall:7.1f} samples/s, client CPU {cpu:6.2f} s, "
                  f"{n / cpu:7.1f} samples/s per client core; {st['offloaded']} offloaded, OSD "
                  f"CPU {st['osd_cpu_s']:.2f} s, {st['bytes_received'] / 1e6:.1f} MB received",
                  flush=True)
    tv, so = best["torchvision"], best["sophon.prep"]
    print(f"best: torchvision {tv[0]:.1f} samples/s ({tv[1]:.1f} per core), sophon.prep "
          f"{so[0]:.1f} samples/s ({so[1]:.1f} per core): {so[1] / tv[1]:.2f}x per core, "
          f"{so[0] / tv[0]:.2f}x wall")


if __name__ == "__main__":
    main()
