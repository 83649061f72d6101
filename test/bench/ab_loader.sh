#!/usr/bin/env bash
# ab_loader.sh OLD_BUILD NEW_BUILD RATE CAP RUNS [LOAD_ARGS...] - two builds' loaders against each
# other on one shaped testbed (3 OSDs with the new build's class, the main job's photos): per
# run, OLD then NEW, `sophon load --policy selective` over 4 epochs and its last epoch alone
# planned afresh (--first-epoch 3), seed 1, f32, the client on one core, the true budget; the
# two alternate RUNS times, as this machine's speed drifts by more than the changes measured.
# Prints one line per epoch (build, run, epoch: seconds, model, MB, samples offloaded) and the
# medians per build. LOAD_ARGS go to every load (e.g. --policy none for a control). Needs root.
#   CORPUS  the real-photo corpus (default ~/.cache/sophon-corpus)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$here/../..
[ $# -ge 5 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) rate=$3 cap=$4 runs=$5
shift 5
[ "$(id -u)" = 0 ] || { echo "ab_loader.sh: needs root (the shaped testbed)" >&2; exit 1; }
corpus=${CORPUS:-$HOME/.cache/sophon-corpus}
vstart=$top/vstart/vstart.sh
dir=$new/ab-loader-cluster
work=$(mktemp -d)
trap '"$vstart" stop --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$work" "$dir"' EXIT
on_client() { "$vstart" exec --dir "$dir" -- "$@"; }

"$top/scripts/fetch-corpus.sh" "$corpus" >/dev/null
"$top/scripts/make-dataset.sh" "$corpus" "$work/photos" "$new/client/sophon" >/dev/null
"$vstart" stop --dir "$dir" >/dev/null 2>&1 || true
rm -rf "$dir"
# Profiled at a full core, as bench_epoch.sh profiles under its grid's largest cap.
"$vstart" start --build "$new" --dir "$dir" --pool sophon --osds 3 --net "$rate" --osd-cores 1 \
    >/dev/null
on_client "$new/client/sophon" put --id sophon -p sophon --dataset photos --labels-from-dirs \
    "$work/photos" >/dev/null
on_client "$new/client/sophon" profile --id sophon -p sophon --dataset photos >/dev/null
"$vstart" start --build "$new" --dir "$dir" --pool sophon --osds 3 --net "$rate" \
    --osd-cores "$cap" >/dev/null
for i in $(seq "$runs"); do
    for build in old new; do
        bin=$new/client/sophon
        [ $build = old ] && bin=$old/client/sophon
        for epochs in "--epochs 4" "--epochs 1 --first-epoch 3"; do
            # shellcheck disable=SC2086 # two words each
            on_client "$bin" load --id sophon -p sophon --dataset photos --seed 1 --discard \
                --threads 1 --client-cores 1 --format f32 --net "$rate" --storage-cores "$cap" \
                --policy selective $epochs "$@" >"$work/load.log" 2>&1 ||
                { cat "$work/load.log" >&2; exit 1; }
            awk -v b=$build -v i="$i" -v f="${epochs#--epochs 1 }" '/^stats:/ {
                for (k = 2; k <= NF; k++) { split($k, kv, "="); r[kv[1]] = kv[2] }
                printf "%s run %s epoch %s%s: %s s, model %s s, %.1f MB, %s offloaded\n", b, i,
                    r["epoch"], f == "--epochs 4" ? "" : " afresh", r["seconds"], r["model_s"],
                    r["bytes"] / 1e6, r["offloaded"] }' "$work/load.log" | tee -a "$work/all"
        done
    done
done
echo "medians ($rate, OSDs capped at $cap cores, $runs runs each):"
for build in old new; do
    for kind in "every epoch" afresh; do
        grep "^$build " "$work/all" | { [ "$kind" = afresh ] && grep afresh || grep -v afresh; } |
            awk '{ print $(NF - 8) }' | sort -g |
            awk -v b=$build -v k="$kind" '{ v[NR] = $1 } END {
                printf "  %s, %s: %.3f s (%d epochs)\n", b, k, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, NR }'
    done
done
