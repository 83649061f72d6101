#!/usr/bin/env bash
# with_dataset.sh SOPHON CORPUS_DIR PER_CLASS CMD... - runs CMD against a small dataset of real
# photos in the dev cluster (CEPH_CONF set): PER_CLASS photos of each of make-dataset.sh's classes,
# stored with their labels and profiled as load.sh makes its own. CMD gets SOPHON_DATASET (its
# name), SOPHON_DATASET_DIR (the ImageFolder tree) and SOPHON_POOL in its environment.
set -euo pipefail
sophon_cli=$1 corpus=$2 per_class=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
pool=${SOPHON_POOL:-sophon}
ds=py.$$
work=$(mktemp -d)
# The command has its own sanitizer runtime, if any: not the one a sanitizer build preloads for
# python (test/python/CMakeLists.txt), which only CMD gets back.
preload=${LD_PRELOAD-}
unset LD_PRELOAD
sophon() { "$sophon_cli" "$@"; }
trap 'rm -rf "$work"' EXIT

"$here/../../scripts/make-dataset.sh" "$corpus" "$work/all" "$sophon_cli" >/dev/null
for d in "$work"/all/*/; do
    c=$(basename "$d")
    mkdir -p "$work/$ds/$c"
    photos=("$d"*)
    cp "${photos[@]:0:per_class}" "$work/$ds/$c/"
done
sophon put --id sophon -p "$pool" --dataset "$ds" --labels-from-dirs "$work/$ds" >/dev/null
sophon profile --id sophon -p "$pool" --dataset "$ds" --sample 4 >/dev/null
echo "with_dataset: $(find "$work/$ds" -type f | wc -l) photos as dataset $ds"
LD_PRELOAD=$preload SOPHON_DATASET=$ds SOPHON_DATASET_DIR=$work/$ds SOPHON_POOL=$pool "$@"
