#!/usr/bin/env python3
"""load_check.py - checks `sophon load --out` directories.

  same A B            epoch files of A and B are byte-identical (data and index)
  shards FULL EPOCH N S0 S1 ...
                      shard directories S0..S(N-1) of epoch EPOCH cover the epoch of FULL
                      exactly once, sample for sample (shard r's k-th sample is position r + k*N)
  bytes STATS_LINE    bytes within 1% of predicted (a `stats:` line)
"""
import os
import sys


def read_epoch(d, e):
    with open(os.path.join(d, f"epoch-{e}.index")) as f:
        idx = [line.split(" ", 4) for line in f.read().splitlines()]
    with open(os.path.join(d, f"epoch-{e}.data"), "rb") as f:
        data = f.read()
    n = len(idx)
    if n == 0 or len(data) % n:
        sys.exit(f"{d}: {len(data)} bytes for {n} samples")
    size = len(data) // n
    return idx, [data[k * size:(k + 1) * size] for k in range(n)]


def main():
    what = sys.argv[1]
    if what == "shards":
        full, epoch, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
        shards = sys.argv[5:]
        assert len(shards) == n, "one directory per shard"
        fidx, fdata = read_epoch(full, epoch)
        seen = {}
        for r, d in enumerate(shards):
            idx, data = read_epoch(d, epoch)
            for k, (line, sample) in enumerate(zip(idx, data)):
                pos = r + k * n
                index = int(line[1])
                if index in seen:
                    sys.exit(f"dataset index {index} in shard {seen[index]} and shard {r}")
                seen[index] = r
                if int(fidx[pos][1]) != index or sample != fdata[pos]:
                    sys.exit(f"shard {r} sample {k} is not position {pos} of the full epoch")
        if sorted(seen) != list(range(len(fidx))):
            sys.exit(f"shards cover {len(seen)} of {len(fidx)} samples")
        print(f"{n} shards cover the {len(fidx)} samples of epoch {epoch} exactly once")
    elif what == "bytes":
        kv = dict(x.split("=", 1) for x in sys.argv[2].split()[1:])
        got, want = int(kv["bytes"]), int(kv["predicted"])
        if abs(got - want) > 0.01 * want:
            sys.exit(f"{kv['policy']}: received {got} bytes, planner predicted {want}")
        print(f"{kv['policy']}: received {got} bytes, predicted {want}")
    else:
        sys.exit("usage: load_check.py shards|bytes ...")


main()
