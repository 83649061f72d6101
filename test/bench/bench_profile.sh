#!/usr/bin/env bash
# bench_profile.sh BUILD [N] - `sophon profile` of a dataset of N (default 100,000) objects on a
# dev cluster: records per second of a first profile, and of a second one that finds nothing
# new. The objects are small real JPEGs (hard links of corpus files), so the cluster holds them.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$here/../..
build=$(cd "$1" && pwd) n=${2:-100000}
corpus=${SOPHON_CORPUS_DIR:-$HOME/.cache/sophon-corpus}
dir=$build/scale-cluster tree=$build/scale-dataset
sophon=$build/client/sophon
trap '"$top/test/integration/cluster.sh" cleanup "$dir" "$build" >/dev/null 2>&1 || true' EXIT
mapfile -t small < <(xargs -d '\n' stat -c '%s %n' <"$corpus/list.txt" | sort -n |
    awk '$1 > 1500 && $1 < 4000 { print $2 }' | head -n 50)
rm -rf "$tree"
for ((i = 0; i < n; i++)); do
    ((i % 1000 == 0)) && mkdir -p "$tree/c$((i / 1000))"
    ln "${small[$((i % ${#small[@]}))]}" "$tree/c$((i / 1000))/$i.jpg"
done
"$top/test/integration/cluster.sh" setup "$dir" "$build" --osds 1 >/dev/null 2>&1
export CEPH_CONF=$dir/ceph.conf
"$sophon" put --id sophon -p sophon --dataset scale --labels-from-dirs --jobs 64 "$tree"
"$sophon" profile --id sophon -p sophon --dataset scale --jobs 64
"$sophon" profile --id sophon -p sophon --dataset scale --jobs 64
"$sophon" plan -p sophon --dataset scale --net 500Mbit --storage-cores 5 --client-cores 32 --policy selective
rm -rf "$tree"
