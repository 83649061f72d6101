#!/usr/bin/env bash
# bench_stages.sh BUILD [CORPUS_DIR] [RATE] [OSD_CORES] [EPOCHS] - the lossless crop stage on the
# shaped testbed: per dataset (the main job's photos, and an OpenImages-like set made from the
# corpus by scripts/make-openimages-like.py), per policy and stage list (the paper's stored/u8/f32
# ladder, and every stage), the bytes received per epoch, the epoch time (median of EPOCHS,
# default 3) and the planner's, and the crops sent. Then the paper's OpenImages profile through
# the model (`sophon plan --records`). 3 OSDs behind a RATE link (default 100Mbit) capped at
# OSD_CORES (default 1) cores together; the client on one core (--threads 1 --client-cores 1).
# Prints markdown tables (for BENCHMARKS.md). Needs root (the testbed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$here/../..
build=$(cd "$1" && pwd) corpus=${2:-$HOME/.cache/sophon-corpus} rate=${3:-100Mbit}
cores=${4:-1} epochs=${5:-3}
sophon=$build/client/sophon
vstart=$top/vstart/vstart.sh
dir=$build/bench-stages
work=$(mktemp -d)
pool=sophon
trap '"$vstart" stop --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$work" "$dir"' EXIT
on_client() { "$vstart" exec --dir "$dir" -- "$@"; }

"$vstart" stop --dir "$dir" >/dev/null 2>&1 || true
rm -rf "$dir"
"$vstart" start --build "$build" --dir "$dir" --pool "$pool" --osds 3 --net "$rate" \
    --osd-cores "$cores" >/dev/null
"$top/scripts/make-dataset.sh" "$corpus" "$work/photos" "$sophon" >&2
/usr/bin/python3 "$top/scripts/make-openimages-like.py" "$corpus" "$work/oi" 400 >&2
for ds in photos oi; do
    on_client "$sophon" put --id sophon -p "$pool" --dataset "$ds" --labels-from-dirs "$work/$ds" \
        >/dev/null
    on_client "$sophon" profile --id sophon -p "$pool" --dataset "$ds" >/dev/null
done

budget=(--net "$rate" --storage-cores "$cores" --client-cores 1 --threads 1)
echo "3 OSDs behind a $rate link capped at $cores cores, the client on one core; $epochs epochs" \
    "each, f32, seed 1"
for ds in photos oi; do
    echo
    echo "Dataset $ds: $(find "$work/$ds" -type f | wc -l) objects," \
        "$(du -sb "$work/$ds" | awk '{printf "%.1f MB", $1 / 1e6}') stored"
    echo
    echo "| policy | stages | MB per epoch | vs none | crops | epoch s (median) | planner s | OSD CPU s |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|"
    none=
    for run in none:all resize:all sophon:all selective:stored,u8,f32 selective:all \
        oracle:stored,u8,f32 oracle:all; do
        p=${run%%:*} st=${run#*:}
        args=(--policy "$p")
        [ "$st" = all ] || args+=(--stages "$st")
        on_client "$sophon" load --id sophon -p "$pool" --dataset "$ds" "${args[@]}" --seed 1 \
            --epochs "$epochs" --discard "${budget[@]}" >"$work/$ds-$p-$st.log" 2>&1
        /usr/bin/python3 - "$work/$ds-$p-$st.log" "$p" "$st" "${none:-0}" <<'PY' >"$work/row"
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in open(sys.argv[1]) if l.startswith("stats:")]
mb = statistics.mean(float(r["bytes"]) for r in rows) / 1e6
none = float(sys.argv[4]) or mb
print("| %s | %s | %.2f | %.2fx | %.0f | %.2f | %.2f | %.2f |" % (
    sys.argv[2], sys.argv[3].replace(",", "/"), mb, none / mb,
    statistics.mean(float(r["crop_samples"]) for r in rows),
    statistics.median(float(r["seconds"]) for r in rows),
    statistics.median(float(r["model_s"]) for r in rows),
    statistics.mean(float(r["osd_cpu"]) for r in rows)))
PY
        cat "$work/row"
        [ -n "$none" ] || none=$(/usr/bin/python3 -c "
import statistics,sys
rows=[dict(kv.split('=',1) for kv in l.split()[1:]) for l in open('$work/$ds-none-all.log') if l.startswith('stats:')]
print(statistics.mean(float(r['bytes']) for r in rows)/1e6)")
    done
done

echo
echo "The SOPHON paper's OpenImages profile through the model (crop bytes modelled), 500Mbit,"
echo "5 storage cores, 32 client cores:"
echo
for st in stored,u8,f32 stored,crop,u8,f32; do
    "$sophon" plan --records "$top/data/openimages-40k-prep-sizes.csv" --net 500Mbit \
        --storage-cores 5 --client-cores 32 --stages "$st" |
        awk -v st="$st" '$1 == "none" {none = $2} $1 == "oracle" || $1 == "selective" {
            printf "- %s, stages %s: %s GB, %.2fx below none (%s GB)\n", $1, st, $2, none / $2, none }'
done
