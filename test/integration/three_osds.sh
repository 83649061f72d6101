#!/usr/bin/env bash
# three_osds.sh - a 3-OSD dev cluster starts, spreads a pool's objects over its OSDs, answers
# with the class on each of them and the balancer off, tells a loader that its pool has few
# placement groups an OSD, and stops leaving no daemon behind.
# $1: build dir, $2: cluster dir, $3: the corpus (scripts/fetch-corpus.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$1 dir=$2 corpus=$3
cluster=$here/cluster.sh
work=$(mktemp -d)
trap '"$cluster" cleanup "$dir" "$build" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
. "$here/expect.sh" # primary_of

"$cluster" setup "$dir" "$build" --osds 3 --pool spread --pg-num 32 >/dev/null
export CEPH_CONF=$dir/ceph.conf
up=$(ceph osd stat -f json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])')
[ "$up" = 3 ] || { echo "FAIL: $up OSDs up, want 3"; exit 1; }
# The balancer off: PGs stay where CRUSH puts them, no copies in the middle of a test.
# From the monitors' configuration: Ceph 18's mgr on Debian 13 does not load the balancer at all,
# and then does not know the option to `ceph config get` it.
balancer=$(ceph config dump -f json | /usr/bin/python3 -c '
import json, sys
print(" ".join(o["value"] for o in json.load(sys.stdin) if o["name"] == "mgr/balancer/active"))')
[ "$balancer" = false ] ||
    { echo "FAIL: the mgr's balancer is not turned off (mgr/balancer/active: '$balancer')"; exit 1; }

for i in $(seq 1 48); do echo "object $i"; done | while read -r _ i; do
    echo "payload $i" | rados -p spread put "obj.$i" -
done
# Where each object is, as the OSDs themselves report it: PG stats by acting primary. The mgr
# aggregates them a few seconds late, so ask until every object is counted.
count_per_osd() {
    ceph pg ls-by-pool spread -f json | /usr/bin/python3 -c '
import collections, json, sys
s = json.load(sys.stdin)
pgs = s["pg_stats"] if isinstance(s, dict) else s
n = collections.Counter()
for p in pgs:
    n[p["acting_primary"]] += p["stat_sum"]["num_objects"]
print(" ".join("osd.%d=%d" % (k, v) for k, v in sorted(n.items()) if v))'
}
for try in $(seq 1 30); do
    ceph tell 'osd.*' flush_pg_stats >/dev/null 2>&1 || true
    per_osd=$(count_per_osd)
    total=0 osds=0
    for kv in $per_osd; do total=$((total + ${kv#*=})); osds=$((osds + 1)); done
    [ "$total" = 48 ] && break
    sleep 1
done
echo "objects per OSD: $per_osd"
[ "$total" = 48 ] || { echo "FAIL: PG stats count $total objects, want 48"; exit 1; }
[ "$osds" -ge 2 ] || { echo "FAIL: all objects on one OSD ($per_osd)"; exit 1; }

# The class answers on every OSD: call it on one object per primary.
declare -A seen=()
for i in $(seq 1 48); do
    primary=$(primary_of spread "obj.$i")
    [ "${#seen[@]}" = 3 ] && break
    [ -n "${seen[$primary]:-}" ] && continue
    seen[$primary]=1
    "$build/client/sophon" version --id sophon -p spread "obj.$i" | grep -q '^class: ' ||
        { echo "FAIL: class does not answer on osd.$primary"; exit 1; }
done
echo "class answers on ${#seen[@]} OSD(s)"
[ "${#seen[@]}" -ge 2 ]

# The pool has 32 placement groups for 3 OSDs (vstart.sh's default would be 128): a loader that
# offloads says that a preparation holds its PG and what pg_num spreads that thinner; one that
# only reads (policy none) says nothing. (awk, not head: under pipefail a grep that head cut
# short fails the pipeline, and set -e the test, without a word.)
mkdir -p "$work/ds/examples"
grep -F /gimp-help-en/usr/share/gimp/2.0/help/en/images/filters/examples/ "$corpus/list.txt" |
    grep -i '\.jpg$' | awk 'NR <= 6' | while read -r f; do cp "$f" "$work/ds/examples/"; done
"$build/client/sophon" put --id sophon -p spread --dataset few --labels-from-dirs "$work/ds" >/dev/null
"$build/client/sophon" profile --id sophon -p spread --dataset few >/dev/null
for p in all none; do
    "$build/client/sophon" load --id sophon -p spread --dataset few --epochs 1 --discard \
        --policy $p --net 100Mbit --storage-cores 1 >"$work/$p.out" 2>"$work/$p.err" ||
        { echo "FAIL: load --policy $p"; cat "$work/$p.err"; exit 1; }
done
note="pool spread has 32 placement groups for the cluster's 3 OSDs (10.7 an OSD).*128 or more"
grep -q "$note" "$work/all.err" ||
    { echo "FAIL: no note on the pool's placement groups:"; cat "$work/all.err"; exit 1; }
if grep -q "placement groups" "$work/none.err"; then
    echo "FAIL: a loader that does not offload spoke of placement groups:"; cat "$work/none.err"; exit 1
fi
echo "a loader that offloads notes 32 PGs for 3 OSDs; one that reads does not"

# client.sophon's caps cover the data pool only.
ceph osd pool create other 8 >/dev/null 2>&1
echo x | rados -p other put obj -
if "$build/client/sophon" version --id sophon -p other obj >/dev/null 2>&1; then
    echo "FAIL: client.sophon called the class on pool other"
    exit 1
fi

status=$("$here/../../vstart/vstart.sh" status --dir "$dir" --build "$build" --pool spread 2>&1) ||
    { echo "FAIL: status says the cluster is unwell:"; echo "$status"; exit 1; }
grep -q 'class sophon: answers' <<<"$status" ||
    { echo "FAIL: status does not see the class:"; echo "$status"; exit 1; }
trap 'rm -rf "$work"' EXIT
"$cluster" cleanup "$dir" "$build"
left=$(pgrep -f -- "-c $dir/ceph.conf" || true)
[ -z "$left" ] || { echo "FAIL: left running: $left"; exit 1; }
echo "3 OSDs: ok, nothing left running"
