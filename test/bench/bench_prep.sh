#!/usr/bin/env bash
# bench_prep.sh BUILD [CORPUS_DIR] [REPS] [ROUNDS] - sophon's pipeline against Pillow on the same
# images and boxes (two RandomResizedCrop boxes per corpus image), one core, in one run: images
# per second by image-size bucket and coding (baseline, progressive), exact and fast mode, and
# the ratios. Then fast mode's distance from exact (PSNR, largest byte difference).
#
# The machine's speed drifts (a shared VM: 20% between minutes is common), so the two are timed
# in ROUNDS alternating rounds (sophon, then Pillow, each case REPS times in a row), and each
# bucket's figure is its best round, for both alike.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 corpus=${2:-$HOME/.cache/sophon-corpus} reps=${3:-3} rounds=${4:-5}
cases=$(mktemp)
trap 'rm -f "$cases" "$cases".*' EXIT
/usr/bin/python3 "$here/bench_pillow.py" make "$corpus/list.txt" "$cases"
for r in $(seq "$rounds"); do
    taskset -c 1 "$build/test/bench/bench_prep" "$cases" "$reps" >"$cases.ours.$r"
    taskset -c 1 /usr/bin/python3 "$here/bench_pillow.py" run "$cases" "$reps" >"$cases.pillow.$r"
    awk -v r="$r" '$1 == "any/all" { printf "round %d: sophon %.1f exact, %.1f fast; ", r, $3, $4 }' \
        "$cases.ours.$r"
    awk '$1 == "any/all" { printf "Pillow %.1f img/s\n", $3 }' "$cases.pillow.$r"
done
# The last round's own report (its probe timings too), then the best rounds side by side.
echo
cat "$cases.ours.$rounds" "$cases.pillow.$rounds"
echo
echo "Best of $rounds rounds, each case $reps times:"
echo
echo "| bucket | cases | sophon exact img/s | sophon fast img/s | Pillow img/s | exact / Pillow | fast / Pillow |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk 'FILENAME ~ /pillow/ { if ($1 ~ /\//) { if ($3 > pillow[$1]) pillow[$1] = $3 }; next }
     $1 ~ /\// {
         if (!($1 in order)) { order[$1] = ++n; name[n] = $1; count[$1] = $2 }
         if ($3 > exact[$1]) exact[$1] = $3
         if ($4 > fast[$1]) fast[$1] = $4
     }
     END {
         for (i = 1; i <= n; i++) {
             b = name[i]
             if (!(b in pillow)) continue
             printf "| %s | %d | %.1f | %.1f | %.1f | %.2fx | %.2fx |\n", b, count[b], exact[b],
                    fast[b], pillow[b], exact[b] / pillow[b], fast[b] / pillow[b]
         }
     }' "$cases".ours.* "$cases".pillow.*
echo
/usr/bin/python3 "$here/fast_psnr.py" "$build/test/exact/prep_tool" "$cases"
