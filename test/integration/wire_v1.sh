#!/usr/bin/env bash
# wire_v1.sh BUILD CLUSTER_DIR SRC COMMIT CORPUS_DIR - this client against a real class of wire
# format 1: the class of the source tree at COMMIT (the last commit before wire format 2), built
# from git into BUILD/wire-v1 and loaded into a dev cluster of its own in CLUSTER_DIR.
# What layout 1 can carry (RandomResizedCrop, any size) goes to the OSD in layout 1, byte-
# identical to the local path; what it cannot (the validation transform) is prepared on the
# client from the stored object, and said so. Needs the git history of SRC (a clone, not an
# archive).
set -uo pipefail
build=$1 dir=$2 src=$3 commit=$4 corpus=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sophon=$build/client/sophon
cluster=$here/cluster.sh
v1=$build/wire-v1
work=$(mktemp -d)
trap '"$cluster" cleanup "$dir" "$v1/build" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
. "$here/expect.sh"

# The wire format 1 class, built from git once per commit.
if [ "$(cat "$v1/commit" 2>/dev/null)" != "$commit" ] || [ ! -f "$v1/build/cls/libcls_sophon.so" ]; then
    if ! git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null; then
        echo "FAIL: commit $commit (the last of wire format 1) is not in the git history of $src:" \
            "this test builds that class from git and needs a clone with its history" >&2
        exit 1
    fi
    rm -rf "$v1"
    mkdir -p "$v1/src"
    git -C "$src" archive "$commit" | tar -x -C "$v1/src" || exit 1
    echo "building the wire format 1 class of $commit"
    cmake -S "$v1/src" -B "$v1/build" -DSOPHON_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        >"$v1/cmake.log" 2>&1 &&
        cmake --build "$v1/build" --target cls_sophon -j "$(nproc)" >"$v1/build.log" 2>&1 ||
        { echo "FAIL: cannot build the class of $commit: see $v1/build.log"; exit 1; }
    echo "$commit" >"$v1/commit"
fi
"$cluster" setup "$dir" "$v1/build" --osds 1 >/dev/null || { echo "FAIL: no cluster"; exit 1; }
export CEPH_CONF=$dir/ceph.conf
pool=sophon

# A dataset of real photos, 6 per class of make-dataset.sh's four.
small_dataset "$corpus" "$sophon" "$work/ds" 6 || exit 1
n=$(find "$work/ds" -type f | wc -l)
"$sophon" put --id sophon -p "$pool" --dataset v1 --labels-from-dirs "$work/ds" >/dev/null &&
    "$sophon" profile --id sophon -p "$pool" --dataset v1 --sample 4 >"$work/profile.log" 2>&1 ||
    { echo "FAIL: cannot make the dataset"; cat "$work/profile.log"; exit 1; }
obj=$(rados -p "$pool" ls | grep -v '^dataset\.' | sort | head -1)
file=$work/ds/$obj

expect "the class speaks wire format 1" 0 "^class: .*, wire format 1 \(OSD holding" \
    "$sophon" version --id sophon -p "$pool" "$obj"
expect "and the client says what that means" 0 "^note: the class speaks an older wire format" \
    "$sophon" version --id sophon -p "$pool" "$obj"
grep -q "calibrat" "$work/profile.log" && ! grep -qi "failed" "$work/profile.log" &&
    ok "profile calibrates against the OSD in layout 1" || bad "profile: $(cat "$work/profile.log")"

for args in "--seed 3" "--seed 5 --size 160 --format f32" "--box 0,0,40,30 --size 64x48 --flip"; do
    # shellcheck disable=SC2086
    "$sophon" exec --id sophon -p "$pool" "$obj" $args -o "$work/osd.raw" >"$work/osd.txt" &&
        "$sophon" prep "$file" $args -o "$work/file.raw" >/dev/null
    if grep -q "OSD CPU" "$work/osd.txt" && cmp -s "$work/osd.raw" "$work/file.raw"; then
        ok "exec $args: prepared by the wire format 1 class, the bytes of prep"
    else
        bad "exec $args: $(cat "$work/osd.txt")"
    fi
done
for args in "--transform val" "--transform val --size 160 --resize 182 --format f32"; do
    # shellcheck disable=SC2086
    "$sophon" exec --id sophon -p "$pool" "$obj" $args -o "$work/osd.raw" >"$work/osd.txt" &&
        "$sophon" prep "$file" $args -o "$work/file.raw" >/dev/null
    if grep -q "speaks wire format 1, which cannot carry this request: prepared here" \
        "$work/osd.txt" && grep -q "local CPU" "$work/osd.txt" &&
        cmp -s "$work/osd.raw" "$work/file.raw"; then
        ok "exec $args: prepared here from the stored object, and said so"
    else
        bad "exec $args: $(cat "$work/osd.txt")"
    fi
done

load() { # out-dir log args...
    local out=$1 log=$2
    shift 2
    "$sophon" load --id sophon -p "$pool" --dataset v1 --batch 5 --out "$out" "$@" \
        >"$log" 2>"$log.err"
}
load "$work/none" "$work/none.log" --policy none --size 160 &&
    load "$work/all" "$work/all.log" --policy all --size 160 || bad "train loads failed"
cmp -s "$work/none/epoch-0.data" "$work/all/epoch-0.data" &&
    grep -q "^stats: .* samples=$n failed=0 .* offloaded=$n .* fallbacks=0 " "$work/all.log" &&
    ok "load --size 160: every sample prepared by the wire format 1 class, the local bytes" ||
    bad "train: $(grep ^stats: "$work/all.log") $(head -3 "$work/all.log.err")"
load "$work/vnone" "$work/vnone.log" --policy none --transform val &&
    load "$work/vall" "$work/vall.log" --policy all --transform val || bad "val loads failed"
cmp -s "$work/vnone/epoch-0.data" "$work/vall/epoch-0.data" &&
    grep -q "^stats: .* samples=$n failed=0 .* offloaded=0 .* fallbacks=$n " "$work/vall.log" &&
    ok "load --transform val: every sample prepared here, the same bytes" ||
    bad "val: $(grep ^stats: "$work/vall.log")"
[ "$(grep -c 'speaks wire format 1, which cannot carry the validation transform' \
    "$work/vall.log.err")" = 1 ] && ok "the loader warns once why" ||
    bad "warning: $(head -3 "$work/vall.log.err")"
expect "bench refuses the validation transform for this class" 1 \
    "speaks wire format 1, which cannot carry the validation transform" \
    "$sophon" bench --id sophon -p "$pool" --objects 3 --transform val

trap - EXIT
"$cluster" cleanup "$dir" "$v1/build" >/dev/null || bad "the cluster did not stop cleanly"
rm -rf "$work"
finish
