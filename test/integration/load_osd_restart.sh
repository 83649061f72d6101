#!/usr/bin/env bash
# load_osd_restart.sh SOPHON CORPUS_DIR - an OSD stops in the middle of an epoch and starts again:
# the loader retries with backoff, and the epoch completes with every sample delivered exactly
# once, byte-identical to an undisturbed epoch. The dev pool has size 1, so the objects of the
# stopped OSD wait for its restart. Needs CEPH_CONF and SOPHON_CLUSTER_DIR (the cluster's dir).
set -uo pipefail
sophon=$1 corpus=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=${SOPHON_CLUSTER_DIR:?}
pool=${SOPHON_POOL:-sophon}
ds=lrs.$$
osd=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

"$here/../../scripts/make-dataset.sh" "$corpus" "$work/$ds" "$sophon" >/dev/null || exit 1
n=$(find "$work/$ds" -type f | wc -l)
"$sophon" put --id sophon -p "$pool" --dataset "$ds" --labels-from-dirs "$work/$ds" >/dev/null &&
    "$sophon" profile --id sophon -p "$pool" --dataset "$ds" --sample 4 >/dev/null ||
    { echo "cannot make the dataset"; exit 1; }

# Slow enough (one operation at a time) that an epoch is still running when the OSD stops.
"$sophon" load --id sophon -p "$pool" --dataset "$ds" --policy resize --window 1 --epochs 2 \
    --net 1Gbit --storage-cores 4 \
    --op-timeout 2 --retries 10 --backoff-ms 100 --out "$work/hit" >"$work/hit.log" \
    2>"$work/hit.err" &
loader=$!
until grep -q '^dataset' "$work/hit.log" 2>/dev/null || ! kill -0 $loader 2>/dev/null; do
    sleep 0.05
done
pid=$(cat "$dir/run/osd.$osd.pid")
kill "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
kill -0 $loader 2>/dev/null && ! grep -q "^stats: .* epoch=1 " "$work/hit.log" &&
    ok "osd.$osd stopped mid-epoch" || bad "the epochs were over before osd.$osd stopped"
sleep 5
ceph-osd -c "$dir/ceph.conf" -i $osd && ok "osd.$osd started again" || bad "osd.$osd restart"
wait $loader
rc=$?
[ $rc = 0 ] && ok "the epoch completes" || {
    bad "loader rc $rc"
    tail -5 "$work/hit.err"
    cluster_diag "$dir" $(sed -n 's/^sophon: \(.*\): failed: .*/\1/p' "$work/hit.err" | sort -u)
}
[ "$(grep -c "^stats: .* samples=$n failed=0 " "$work/hit.log")" = 2 ] &&
    grep -Eq "^stats: .* retries=[1-9]" "$work/hit.log" &&
    ok "all $n samples of each epoch, after retries" || bad "$(grep ^stats: "$work/hit.log")"
grep -q "Connection timed out, retry 1 of 10 in 0.10 s" "$work/hit.err" &&
    ok "retries back off from 0.1 s" || bad "no backoff in: $(head -3 "$work/hit.err")"
for e in 0 1; do
    awk -v n=$n '{c[$2]++} END {for (i = 0; i < n; i++) if (c[i] != 1) exit 1; exit NR != n}' \
        "$work/hit/epoch-$e.index" && ok "epoch $e: every index delivered exactly once" ||
        bad "epoch $e: index coverage"
done

# The same epoch undisturbed, once the cluster is clean again.
for _ in $(seq 120); do
    ceph pg stat 2>/dev/null | grep -Eq "^[0-9]+ pgs: [0-9]+ active\+clean;" && break
    sleep 1
done
"$sophon" load --id sophon -p "$pool" --dataset "$ds" --policy none --epochs 2 --out "$work/calm" \
    >"$work/calm.log" 2>&1 || bad "undisturbed load"
for e in 0 1; do
    cmp -s "$work/hit/epoch-$e.data" "$work/calm/epoch-$e.data" &&
        cmp -s "$work/hit/epoch-$e.index" "$work/calm/epoch-$e.index" &&
        ok "epoch $e is byte-identical to the undisturbed one" || bad "epoch $e differs"
done

find "$work/$ds" -type f | sed "s|^$work/$ds/||" | while read -r o; do rados -p "$pool" rm "$o"; done
rados -p "$pool" -N .sophon rm "dataset.$ds"
finish
