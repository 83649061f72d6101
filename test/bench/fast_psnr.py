#!/usr/bin/python3
"""fast_psnr.py PREP_TOOL CASES - how far fast mode is from exact mode.

CASES has lines "FILE X Y W H OUT_W OUT_H FLIP" (bench_pillow.py make writes them). For each,
prep_tool runs the case exactly and in fast mode; prints the PSNR of fast against exact
(median, 5th percentile, minimum) and the largest absolute difference of a byte.
"""
import subprocess
import sys

import numpy as np

tool, cases = sys.argv[1], sys.argv[2]
psnrs, maxdiffs = [], []
with open(cases) as f:
    for line in f:
        a = line.split()
        exact = subprocess.run([tool, "run"] + a + ["0"], capture_output=True)
        fast = subprocess.run([tool, "run"] + a + ["1"], capture_output=True)
        if exact.returncode or fast.returncode:
            continue
        x = np.frombuffer(exact.stdout, np.uint8).astype(np.float64)
        y = np.frombuffer(fast.stdout, np.uint8).astype(np.float64)
        mse = np.mean((x - y) ** 2)
        psnrs.append(99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse))
        maxdiffs.append(int(np.max(np.abs(x - y))))
p = np.array(psnrs)
d = np.array(maxdiffs)
print("fast vs exact over %d cases: PSNR median %.1f dB, 5th percentile %.1f dB, minimum %.1f dB; "
      "largest byte difference median %d, 95th percentile %d, maximum %d"
      % (len(p), np.median(p), np.percentile(p, 5), p.min(), np.median(d), np.percentile(d, 95),
         d.max()))
