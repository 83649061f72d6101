#!/usr/bin/env bash
# osd_memory.sh BUILD CLUSTER_DIR - the OSD's memory budget for sophon calls and its per-call
# pixel cap, on a 1-OSD cluster of its own whose class has a 192 MiB budget (the target
# cls_sophon_small_budget, in BUILD/test/small-budget). Sixteen large progressive photos loaded
# with policy all, every call in flight at once, would need over a gigabyte of decoder memory:
# the OSD's peak memory stays under what it held before plus the budget (and the objects read),
# the calls over it are declined and prepared on the client, every sample is delivered and the
# epoch is byte-identical to the local one. An image over the per-call cap is never offloaded,
# and the class refuses it when asked.
set -uo pipefail
build=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sophon=$build/client/sophon
cluster=$here/cluster.sh
variant=$build/test/small-budget
work=$(mktemp -d)
trap '"$cluster" cleanup "$dir" "$variant" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
. "$here/expect.sh"
budget_mb=192 cap_mp=24

[ -f "$variant/cls/libcls_sophon.so" ] ||
    { echo "FAIL: no $variant/cls/libcls_sophon.so: build the target cls_sophon_small_budget"; exit 1; }
"$cluster" setup "$dir" "$variant" --osds 1 >/dev/null || { echo "FAIL: no cluster"; exit 1; }
export CEPH_CONF=$dir/ceph.conf
pool=sophon

# Four distinct 12-megapixel progressive 4:4:4 photos-like images (gradients and noise), four
# copies each; and one 26-megapixel grayscale image, over the cap.
/usr/bin/python3 - "$work/ds" <<'EOF' || { echo "FAIL: cannot make the images"; exit 1; }
import os, random, sys
from PIL import Image, ImageFilter
out = sys.argv[1]
for c in ("big", "huge"):
    os.makedirs(os.path.join(out, c), exist_ok=True)
for k in range(4):
    rng = random.Random(k)
    small = Image.new("RGB", (400, 300))
    small.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256))
                   for _ in range(400 * 300)])
    im = small.filter(ImageFilter.GaussianBlur(2)).resize((4000, 3000), Image.BILINEAR)
    for copy in range(4):
        im.save(os.path.join(out, "big", f"p{k}-{copy}.jpg"), quality=85, progressive=True,
                subsampling=0)
Image.new("L", (5000, 5200), 128).save(os.path.join(out, "huge", "gray26mp.jpg"), quality=90)
EOF
n=$(find "$work/ds" -type f | wc -l)
"$sophon" put --id sophon -p "$pool" --dataset mem --labels-from-dirs "$work/ds" >/dev/null &&
    "$sophon" profile --id sophon -p "$pool" --dataset mem --sample 0 >/dev/null ||
    { echo "FAIL: cannot make the dataset"; exit 1; }

expect "the class refuses an image over its per-call cap" 1 \
    "over the OSD|over the limits|E2BIG|Argument list too long" \
    "$sophon" exec --id sophon -p "$pool" huge/gray26mp.jpg --seed 1 -o "$work/x.raw"
expect "which the client prepares" 0 "" \
    "$sophon" exec --id sophon -p "$pool" huge/gray26mp.jpg --seed 1 --local -o "$work/x.raw"

osd=$(cat "$dir/run/osd.0.pid")
# The OSD's peak resident memory, from now on.
echo 5 >"/proc/$osd/clear_refs" || { echo "FAIL: cannot reset the OSD's peak memory"; exit 1; }
before=$(awk '/^VmRSS:/ {print $2}' "/proc/$osd/status")
"$sophon" load --id sophon -p "$pool" --dataset mem --policy all --batch 16 --out "$work/all" \
    >"$work/all.log" 2>"$work/all.err"
rc=$?
peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$osd/status")
"$sophon" load --id sophon -p "$pool" --dataset mem --policy none --batch 16 --out "$work/none" \
    >"$work/none.log" 2>"$work/none.err"

[ $rc = 0 ] && ok "policy all loads the epoch" || bad "rc $rc: $(head -5 "$work/all.err")"
grep -q "^stats: .* samples=$n failed=0 " "$work/all.log" && ok "every sample delivered" ||
    bad "$(grep ^stats: "$work/all.log")"
declined=$(grep -o ' declined=[0-9]*' "$work/all.log" | cut -d= -f2)
[ "${declined:-0}" -gt 0 ] && ok "the OSD declined $declined calls over its budget" ||
    bad "nothing declined: $(grep ^stats: "$work/all.log")"
grep -Eq "^stats: .* offloaded=([1-9]|1[0-5]) " "$work/all.log" &&
    ok "and prepared the others, never the image over the cap" ||
    bad "$(grep ^stats: "$work/all.log")"
cmp -s "$work/all/epoch-0.data" "$work/none/epoch-0.data" &&
    ok "the epoch is byte-identical to the local one" || bad "epochs differ"
# What the OSD may hold beyond what it held: the budget, and the objects its calls read (each
# read whole before the call asks for its share) with 32 MiB of slack.
objects_kb=$(du -sk "$work/ds/big" | cut -f1)
limit=$((budget_mb * 1024 + objects_kb + 32 * 1024))
grown=$((peak - before))
echo "OSD memory: $before kB before, peak $peak kB (+$((grown / 1024)) MiB; allowed" \
    "+$((limit / 1024)) MiB: the budget $budget_mb MiB, objects $((objects_kb / 1024)) MiB, slack)"
[ "$grown" -le "$limit" ] && ok "the OSD's peak memory stays within the budget" ||
    bad "the OSD grew by $((grown / 1024)) MiB, over $((limit / 1024)) MiB"
finish
