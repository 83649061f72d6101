#!/usr/bin/env bash
# bench_osd.sh BUILD [CORPUS_DIR] - OSD-side preparation against plain reads of the same objects,
# on a dev cluster of 1 and of 3 OSDs, in one run: calls/s, bytes stored and received, OSD CPU
# per call. The dataset is scripts/make-dataset.sh's real photos.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$here/../..
build=$(cd "$1" && pwd)
corpus=${2:-$HOME/.cache/sophon-corpus}
sophon=$build/client/sophon
dir=$build/bench-cluster
trap '"$top/test/integration/cluster.sh" cleanup "$dir" "$build" >/dev/null 2>&1 || true' EXIT

"$top/scripts/fetch-corpus.sh" "$corpus" >/dev/null
"$top/scripts/make-dataset.sh" "$corpus" "$build/bench-dataset" "$sophon"
for osds in 1 3; do
    "$top/test/integration/cluster.sh" setup "$dir" "$build" --osds "$osds" >/dev/null 2>&1
    export CEPH_CONF=$dir/ceph.conf
    "$sophon" put --id sophon -p sophon "$build/bench-dataset" >/dev/null
    for format in u8 f32; do
        echo "== $osds OSD(s), $(nproc) cores shared by client and OSDs, format $format"
        "$sophon" bench --id sophon -p sophon --jobs 16 --repeat 3 --seed 1 --format "$format"
    done
    "$top/test/integration/cluster.sh" cleanup "$dir" "$build" >/dev/null
done
