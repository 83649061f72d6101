#!/usr/bin/env bash
# bench_prep.sh BUILD [CORPUS_DIR] [REPS] - sophon's pipeline against Pillow on the same images
# and boxes (two RandomResizedCrop boxes per corpus image), one core, in one run: images per
# second by image-size bucket and coding (baseline, progressive), exact and fast mode, and the
# ratios. Then fast mode's distance from exact (PSNR, largest byte difference).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 corpus=${2:-$HOME/.cache/sophon-corpus} reps=${3:-3}
cases=$(mktemp)
trap 'rm -f "$cases" "$cases".*' EXIT
/usr/bin/python3 "$here/bench_pillow.py" make "$corpus/list.txt" "$cases"
taskset -c 1 "$build/test/bench/bench_prep" "$cases" "$reps" | tee "$cases.ours"
taskset -c 1 /usr/bin/python3 "$here/bench_pillow.py" run "$cases" "$reps" | tee "$cases.pillow"
echo
echo "| bucket | cases | sophon exact img/s | sophon fast img/s | Pillow img/s | exact / Pillow | fast / Pillow |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk 'FNR == NR { if ($1 ~ /\//) pillow[$1] = $3; next }
     $1 ~ /\// && ($1 in pillow) {
         printf "| %s | %d | %.1f | %.1f | %.1f | %.2fx | %.2fx |\n", $1, $2, $3, $4, pillow[$1],
                $3 / pillow[$1], $4 / pillow[$1] }' "$cases.pillow" "$cases.ours"
echo
/usr/bin/python3 "$here/fast_psnr.py" "$build/test/exact/prep_tool" "$cases"
