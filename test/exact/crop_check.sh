#!/usr/bin/env bash
# crop_check.sh BUILD CORPUS_DIR [EVERY] - the crop stage on the real-photo corpus (every EVERY-th
# file of its list, default 2) and the synthetic set: the pipeline on each crop gives the bytes
# it gives on the file (prep_tool crops), and Pillow opens each crop and decodes the box to the
# original's pixels (crop_pillow.py).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 corpus=$2 every=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk -v e="$every" '(NR - 1) % e == 0' "$corpus/list.txt" > "$work/list"
cat "$("$here/synthetic.sh" "$corpus")/list.txt" >> "$work/list"
echo "$(wc -l < "$work/list") JPEGs, two boxes each"
mkdir "$work/crops"
"$build/test/exact/prep_tool" crops "$work/list" "$work/crops" > "$work/crops.tsv"
/usr/bin/python3 "$here/crop_pillow.py" "$work/crops.tsv"
