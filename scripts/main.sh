#!/usr/bin/env bash
# main.sh - the main job, from a fresh Debian 12 machine: installs what is missing, builds, starts
# a dev cluster of 3 OSDs with the sophon class, ingests a dataset of real photos with their
# labels, profiles it in the OSDs, plans it, loads one training epoch per policy and ends with a
# table of bytes and time per policy.
#
# BUILD_DIR (default build) may be set. The cluster keeps running afterwards; stop it with
# `vstart/vstart.sh stop`.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$top/build}
pool=sophon

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
"$top/scripts/deps.sh"

step "build ($build)"
cmake -S "$top" -B "$build" >/dev/null
cmake --build "$build" -j "$(nproc)"

step "dev cluster"
eval "$("$top/vstart/vstart.sh" start --build "$build" --pool "$pool" --osds 3)"
echo "CEPH_CONF=$CEPH_CONF"

step "sample data: real photos from Debian packages, as an ImageFolder dataset"
corpus=${SOPHON_CORPUS_DIR:-$HOME/.cache/sophon-corpus}
"$top/scripts/fetch-corpus.sh" "$corpus" >/dev/null
"$top/scripts/make-dataset.sh" "$corpus" "$build/dataset" "$build/client/sophon"

dataset=photos
step "ingest: sophon put, with ImageFolder labels from the class directories"
"$build/client/sophon" put --id sophon -p "$pool" --dataset "$dataset" --labels-from-dirs \
    "$build/dataset"

step "profile: records made in the OSDs (sophon.probe), CPU calibrated on a sample"
"$build/client/sophon" profile --id sophon -p "$pool" --dataset "$dataset"

step "one sample, prepared in the OSD holding it"
first=$(rados -p "$pool" ls | grep '^wallpapers/' | sort | head -n 1)
"$build/client/sophon" probe --id sophon -p "$pool" "$first"
"$build/client/sophon" exec --id sophon -p "$pool" "$first" --seed 1 -o "$build/sample.png"
echo "  (the prepared sample is $build/sample.png)"

# The budget the plans assume: this dev cluster's loopback network is not the bottleneck that a
# real cluster's is, so plan as for a 1 Gbit/s link, 4 OSD cores and this machine's cores.
budget=(--net 1Gbit --storage-cores 4 --client-cores "$(nproc)")
step "plan: every policy under ${budget[*]}"
"$build/client/sophon" plan --id sophon -p "$pool" --dataset "$dataset" "${budget[@]}"

step "load: one training epoch (f32, seed 1) per policy"
table=$(mktemp)
trap 'rm -f "$table"' EXIT
# Each line goes on to this script's own stdout, never reopened (a `tee /dev/stderr` would open
# the caller's log file anew and truncate it), and the stats lines into the table too.
for policy in none all resize sophon selective oracle; do
    "$build/client/sophon" load --id sophon -p "$pool" --dataset "$dataset" --policy "$policy" \
        --seed 1 --epochs 1 --discard "${budget[@]}" | while IFS= read -r line; do
        printf '%s\n' "$line"
        case $line in "stats: "*) printf '%s\n' "${line#stats: }" >>"$table" ;; esac
    done
done

step "traffic and time per policy (one epoch of ${dataset}, $(wc -l <"$table") policies)"
/usr/bin/python3 - "$table" "$build/epoch-report.png" <<'PY'
import sys
rows = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1])]
none = next(float(r["bytes"]) for r in rows if r["policy"] == "none")
print("| policy | MB received | vs none | planner MB | offloaded | epoch s | modelled s | client CPU s | OSD CPU s | failed |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print("| %s | %.2f | %.2fx | %.2f | %s/%s | %.2f | %.2f | %.2f | %.2f | %s |" % (
        r["policy"], float(r["bytes"]) / 1e6, float(r["bytes"]) / none,
        float(r["predicted"]) / 1e6, r["offloaded"], r["samples"], float(r["seconds"]),
        float(r["model_s"]), float(r["client_cpu"]), float(r["osd_cpu"]), r["failed"]))

# The same, as a picture: traffic and epoch time per policy, measured next to the planner's.
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
names = [r["policy"] for r in rows]
x = range(len(rows))
fig, (mb, sec) = plt.subplots(1, 2, figsize=(11, 4))
for ax, key, model, label in ((mb, "bytes", "predicted", "MB"), (sec, "seconds", "model_s", "s")):
    scale = 1e6 if key == "bytes" else 1.0
    ax.bar([i - 0.2 for i in x], [float(r[key]) / scale for r in rows], 0.4, label="measured")
    ax.bar([i + 0.2 for i in x], [float(r[model]) / scale for r in rows], 0.4, label="planner")
    ax.set_xticks(list(x))
    ax.set_xticklabels(names)
    ax.set_ylabel(label)
    ax.legend()
mb.set_title("received per epoch")
sec.set_title("epoch time")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
print("\n(the plot: %s)" % sys.argv[2])
PY

step "done: the cluster keeps running (vstart/vstart.sh status | stop)"
