#!/usr/bin/env bash
# unsupported.sh SOPHON CORPUS_DIR - a dataset of real photos and one 12-bit JPEG (a JPEG kind
# sophon does not decode, nor does Pillow), on the dev cluster (CEPH_CONF set). The class refuses
# it with EMEDIUMTYPE, never with EOPNOTSUPP (which is the OSD's "no such class"): probe, exec,
# profile and load all tell the image from the OSD. profile records it and goes on; load
# reports its sample as failed and keeps offloading the others.
set -uo pipefail
sophon=$1 corpus=$2
here=$(cd "$(dirname "$0")" && pwd)
pool=${SOPHON_POOL:-sophon}
ds=uds.$$
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$here/expect.sh"

# Four real photos in each of two classes, and a 12-bit copy of one of them in the first.
small_dataset "$corpus" "$sophon" "$work/$ds" 4 wallpapers opencv-samples || exit 1
src=$(find "$work/$ds/wallpapers" -type f | sort | head -1)
/usr/bin/python3 - "$src" "$work/$ds/wallpapers/zz-12bit.jpg" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
i = 2
while data[i] == 0xFF and data[i + 1] not in (0xC0, 0xC1, 0xC2):
    i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
data[i + 4] = 12  # the frame's sample precision
open(sys.argv[2], "wb").write(data)
EOF
obj=wallpapers/zz-12bit.jpg
n=$(find "$work/$ds" -type f | wc -l)
"$sophon" put --id sophon -p "$pool" --dataset "$ds" --labels-from-dirs "$work/$ds" >/dev/null ||
    { echo "FAIL: cannot store the dataset"; exit 1; }

expect "probe in the OSD names the image kind, not a missing class" 1 \
    "$obj: a JPEG of a kind sophon does not decode .*\(EMEDIUMTYPE\)" \
    "$sophon" probe --id sophon -p "$pool" "$obj"
out=$("$sophon" exec --id sophon -p "$pool" "$obj" --seed 1 -o "$work/x.raw" 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "a JPEG of a kind sophon does not decode" <<<"$out" &&
    ! grep -qi "no sophon class" <<<"$out" &&
    ok "exec in the OSD names the image kind, not a missing class" || bad "exec: rc $rc: $out"

if "$sophon" profile --id sophon -p "$pool" --dataset "$ds" --sample 2 >"$work/profile.log" \
    2>"$work/profile.err"; then
    ok "profile goes on past it"
else
    bad "profile: rc $?: $(cat "$work/profile.err")"
fi
grep -q "$obj: a JPEG of a kind sophon does not decode.*recorded, never offloaded" \
    "$work/profile.err" && ok "profile says what it did with it" || bad "$(cat "$work/profile.err")"
grep -q "$n profiled (new or changed; 1 of a kind sophon does not decode)" "$work/profile.log" &&
    ok "profile counts it" || bad "$(cat "$work/profile.log")"
grep -q "^calibration on [1-9]" "$work/profile.log" && ok "and calibrates on the others" ||
    bad "$(cat "$work/profile.log")"

for args in "--policy all" "--policy resize --transform val" "--policy selective"; do
    name=${args//[ -]/}
    "$sophon" load --id sophon -p "$pool" --dataset "$ds" --batch 3 $args --out "$work/$name" \
        >"$work/$name.log" 2>"$work/$name.err"
    rc=$?
    [ $rc = 1 ] && ok "$args: the failed sample makes the exit code 1" || bad "$args: rc $rc"
    grep -q "$obj: .*Wrong medium type" "$work/$name.err" &&
        ok "$args: the sample is reported by name and errno" || bad "$args: $(head -3 "$work/$name.err")"
    ! grep -q "cannot prepare samples" "$work/$name.err" &&
        ok "$args: the class is not taken for missing" || bad "$args: $(head -3 "$work/$name.err")"
    grep -q "^stats: .* samples=$((n - 1)) failed=1 " "$work/$name.log" &&
        ok "$args: the other samples delivered" || bad "$args: $(grep ^stats: "$work/$name.log")"
    awk -v v="$obj" '$5 == v && $4 == -124 {f++} END {exit f != 1}' "$work/$name/epoch-0.index" &&
        ok "$args: delivered once, as failed with -EMEDIUMTYPE" ||
        bad "$args: $(grep -F " $obj" "$work/$name/epoch-0.index")"
done
grep -Eq "^stats: .* offloaded=$((n - 1)) " "$work/policyall.log" &&
    ok "policy all offloads every other sample" || bad "$(grep ^stats: "$work/policyall.log")"

find "$work/$ds" -type f | sed "s|^$work/$ds/||" | while read -r o; do rados -p "$pool" rm "$o"; done
rados -p "$pool" -N .sophon rm "dataset.$ds"
finish
