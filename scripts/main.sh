#!/usr/bin/env bash
# main.sh - the main job, from a fresh Debian 12 machine: installs what is missing, builds, starts
# a dev cluster of 3 OSDs with the sophon class behind a shaped 100 Mbit/s link with the OSDs
# capped at half a core (vstart.sh's testbed: needs root), ingests a dataset of real photos with
# their labels, profiles it in the OSDs, plans it, loads one training epoch per policy and ends
# with a table and a plot of bytes and time per policy, measured and modelled.
#
# BUILD_DIR (default build) may be set. The cluster keeps running afterwards in BUILD/testbed;
# `vstart/vstart.sh exec --dir BUILD/testbed -- CMD` runs a client behind its link, `vstart/
# vstart.sh stop --dir BUILD/testbed` stops it and removes the link.
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

# The bottleneck sophon is for, made on this machine (vstart.sh's testbed): the OSDs behind a
# 100 Mbit/s link, all of them together capped at half a core. There the policies differ: the
# stored photos take about 4 s an epoch to cross the link, and the OSDs cannot prepare them all.
# vstart.sh gives the pool 128 placement groups (32 an OSD, rounded up; real clusters run ~100):
# a preparation holds its PG, and the reads that land in it wait for it.
net=100Mbit osd_cores=0.5
cluster=$build/testbed
vstart=("$top/vstart/vstart.sh")
on_client() { "${vstart[@]}" exec --dir "$cluster" -- "$@"; }
sophon() { on_client "$build/client/sophon" "$@"; }

step "dev cluster: 3 OSDs behind a $net link, capped at $osd_cores cores together"
"${vstart[@]}" start --build "$build" --dir "$cluster" --pool "$pool" --osds 3 --net "$net" \
    --osd-cores "$osd_cores" >/dev/null
"${vstart[@]}" status --dir "$cluster" --build "$build"

step "sample data: real photos from Debian packages, as an ImageFolder dataset"
corpus=${SOPHON_CORPUS_DIR:-$HOME/.cache/sophon-corpus}
"$top/scripts/fetch-corpus.sh" "$corpus" >/dev/null
"$top/scripts/make-dataset.sh" "$corpus" "$build/dataset" "$build/client/sophon"

dataset=photos
step "ingest: sophon put, with ImageFolder labels from the class directories (through the link)"
sophon put --id sophon -p "$pool" --dataset "$dataset" --labels-from-dirs "$build/dataset"

step "profile: records made in the OSDs (sophon.probe), CPU calibrated on a sample"
sophon profile --id sophon -p "$pool" --dataset "$dataset"

step "one sample, prepared in the OSD holding it"
first=$(on_client rados -p "$pool" ls | grep '^wallpapers/' | sort | head -n 1)
sophon probe --id sophon -p "$pool" "$first"
sophon exec --id sophon -p "$pool" "$first" --seed 1 -o "$build/sample.png"
echo "  (the prepared sample is $build/sample.png)"

# The plans assume the testbed's true budget: the link, the OSDs' cap, one client core (the
# loader measures the cores it may use; this keeps the table the same on any machine).
budget=(--net "$net" --storage-cores "$osd_cores" --client-cores 1)
step "plan: every policy under ${budget[*]}"
sophon plan --id sophon -p "$pool" --dataset "$dataset" "${budget[@]}"

step "load: one training epoch (f32, seed 1) per policy"
table=$(mktemp)
trap 'rm -f "$table"' EXIT
# Each line goes on to this script's own stdout, never reopened (a `tee /dev/stderr` would open
# the caller's log file anew and truncate it), and the stats lines into the table too.
for policy in none all resize sophon selective oracle; do
    sophon load --id sophon -p "$pool" --dataset "$dataset" --policy "$policy" --seed 1 \
        --epochs 1 --discard "${budget[@]}" | while IFS= read -r line; do
        printf '%s\n' "$line"
        case $line in "stats: "*) printf '%s\n' "${line#stats: }" >>"$table" ;; esac
    done
done

step "traffic and time per policy (one epoch of ${dataset}, $(wc -l <"$table") policies)"
/usr/bin/python3 - "$table" "$build/epoch-report.png" <<'PY'
import sys
rows = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1])]
none = next(float(r["bytes"]) for r in rows if r["policy"] == "none")
print("| policy | MB received | vs none | planner MB | offloaded | as crops | epoch s | modelled s | client CPU s | OSD CPU s | failed |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print("| %s | %.2f | %.2fx | %.2f | %s/%s | %s | %.2f | %.2f | %.2f | %.2f | %s |" % (
        r["policy"], float(r["bytes"]) / 1e6, float(r["bytes"]) / none,
        float(r["predicted"]) / 1e6, r["offloaded"], r["samples"], r.get("crop_samples", "0"),
        float(r["seconds"]), float(r["model_s"]), float(r["client_cpu"]), float(r["osd_cpu"]),
        r["failed"]))

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

step "done: the cluster keeps running behind its link (vstart/vstart.sh status|exec|stop --dir $cluster)"
