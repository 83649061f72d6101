#!/usr/bin/env bash
# cli_prep.sh SOPHON CORPUS_DIR - sophon put, probe, exec and prep as a user runs them, against
# the dev cluster (CEPH_CONF set).
set -uo pipefail
sophon=$1 corpus=$2
pool=${SOPHON_POOL:-sophon}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

# A small tree: two classes, a nested directory, and a file that is not a JPEG.
photos=()
while IFS= read -r f; do
    [ "$(stat -c %s "$f")" -ge 20000 ] && "$sophon" prep "$f" --box 0,0,1,1 >/dev/null 2>&1 &&
        photos+=("$f")
    [ ${#photos[@]} -ge 3 ] && break
done < <(grep -F /opencv-doc/ "$corpus/list.txt")
mkdir -p "$work/tree/cats" "$work/tree/dogs/more"
cp "${photos[0]}" "$work/tree/cats/a.jpg"
cp "${photos[1]}" "$work/tree/dogs/b.jpg"
cp "${photos[2]}" "$work/tree/dogs/more/c.jpg"
echo "not a jpeg" >"$work/tree/dogs/notes.txt"

expect "put stores a tree and skips what is not a JPEG" 0 \
    "skipped .*notes.txt: not a JPEG" "$sophon" put --id sophon -p "$pool" "$work/tree"
expect "put reports the count" 0 "stored 3 objects .*skipped 1 file" \
    "$sophon" put --id sophon -p "$pool" "$work/tree"
if rados -p "$pool" ls | grep -qx 'dogs/more/c.jpg' && ! rados -p "$pool" ls | grep -q notes; then
    ok "objects are named by their path relative to the tree"
else
    bad "object names: $(rados -p "$pool" ls | tr '\n' ' ')"
fi

local_probe=$("$sophon" probe "$work/tree/cats/a.jpg")
case $local_probe in
*", "[1-9]*" scan"*" bytes, probed in "*" us") ok "probe here counts the scans and times the header" ;;
*) bad "probe here: '$local_probe'" ;;
esac
# The OSD reads the header only: the same facts without the scan count.
local_probe=$(echo "$local_probe" | sed 's/^[^:]*: //; s/, probed in .*//; s/, [0-9]* scans\{0,1\},/,/')
osd_probe=$("$sophon" probe --id sophon -p "$pool" cats/a.jpg | sed 's/^[^:]*: //')
[ "$local_probe" = "$osd_probe" ] && ok "probe in the OSD says what probe here says" ||
    bad "probe: local '$local_probe', OSD '$osd_probe'"

for args in "--seed 7" "--seed 8 --flip --format f32" "--box 0,0,100,80 --size 64x48" \
    "--transform val" "--transform val --size 160 --resize 182 --format f32" \
    "--seed 9 --size 288 --scale 0.3,0.9 --ratio 1/2,2/1" \
    "--seed 4 --format f32 --mean 0.5,0.5,0.5 --std 0.2,0.3,0.4"; do
    # shellcheck disable=SC2086
    "$sophon" exec --id sophon -p "$pool" dogs/b.jpg $args -o "$work/osd.raw" >"$work/osd.txt" &&
        "$sophon" exec --id sophon -p "$pool" dogs/b.jpg $args --local -o "$work/local.raw" \
            >/dev/null &&
        "$sophon" prep "$work/tree/dogs/b.jpg" $args -o "$work/file.raw" >/dev/null
    if cmp -s "$work/osd.raw" "$work/local.raw" && cmp -s "$work/osd.raw" "$work/file.raw" &&
        grep -q "stored .* bytes, returned .* bytes .*OSD CPU" "$work/osd.txt"; then
        ok "exec $args: OSD, --local and prep give the same bytes"
    else
        bad "exec $args differs"
    fi
done
expect "exec writes a PNG to look at" 0 "returned" \
    "$sophon" exec --id sophon -p "$pool" cats/a.jpg --seed 1 -o "$work/a.png"
[ "$(head -c 8 "$work/a.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] &&
    ok "the PNG has a PNG signature" || bad "not a PNG"
expect "prep writes a PPM" 0 "local CPU" "$sophon" prep "$work/tree/cats/a.jpg" --seed 1 -o "$work/a.ppm"
[ "$(head -c 2 "$work/a.ppm")" = P6 ] && ok "the PPM has a P6 header" || bad "not a PPM"

# One object limit (SOPHON_MAX_OBJECT_BYTES, 64 MiB) in the OSD and here: a photo padded with
# zeros after its EOI to exactly the limit is prepared alike; one byte more and the OSD, exec
# --local and prep all refuse it with EFBIG.
limit=$((64 << 20))
cp "$work/tree/cats/a.jpg" "$work/big.jpg"
truncate -s "$limit" "$work/big.jpg"
rados -p "$pool" put cli.big "$work/big.jpg"
if "$sophon" exec --id sophon -p "$pool" cli.big --seed 3 -o "$work/big-osd.raw" >/dev/null &&
    "$sophon" exec --id sophon -p "$pool" cli.big --seed 3 --local -o "$work/big-local.raw" \
        >/dev/null && cmp -s "$work/big-osd.raw" "$work/big-local.raw"; then
    ok "an object of exactly 64 MiB is prepared in the OSD and here, the same bytes"
else
    bad "an object of exactly 64 MiB"
fi
truncate -s $((limit + 1)) "$work/big.jpg"
rados -p "$pool" put cli.big "$work/big.jpg"
expect "the OSD refuses an object over 64 MiB" 1 "over the size limits \(File too large\)" \
    "$sophon" exec --id sophon -p "$pool" cli.big --box 0,0,8,8
expect "exec --local refuses it alike" 1 "cannot read cli.big: over the 64 MiB .*\(EFBIG\)" \
    "$sophon" exec --id sophon -p "$pool" cli.big --box 0,0,8,8 --local
expect "prep refuses such a file alike" 1 "over the 64 MiB .*\(EFBIG\)" \
    "$sophon" prep "$work/big.jpg" --box 0,0,8,8
rados -p "$pool" rm cli.big
rm -f "$work/big.jpg"

expect "exec with a key that may not call classes says which caps are missing" 1 \
    "permission denied \(EPERM\).*class-read" \
    "$sophon" exec --id sophon-read -p "$pool" cats/a.jpg --seed 1
expect "probe with that key too" 1 "permission denied \(EPERM\)" \
    "$sophon" probe --id sophon-read -p "$pool" cats/a.jpg
expect "exec --local works with that key" 0 "local CPU" \
    "$sophon" exec --id sophon-read -p "$pool" cats/a.jpg --seed 1 --local
echo garbage | rados -p "$pool" put cli.garbage -
expect "exec on a corrupt object explains" 1 "not a valid JPEG" \
    "$sophon" exec --id sophon -p "$pool" cli.garbage --box 0,0,1,1
expect "exec with a box outside the image explains" 1 "is the box inside the image" \
    "$sophon" exec --id sophon -p "$pool" cats/a.jpg --box 0,0,100000,10
expect "exec without box or seed" 2 "either --box X,Y,W,H or --seed S" \
    "$sophon" exec --id sophon -p "$pool" cats/a.jpg
expect "a bad --box" 2 "--box wants 4 numbers" "$sophon" prep "$work/tree/cats/a.jpg" --box 1,2,3
expect "a bad --format" 2 "--format wants u8 or f32" \
    "$sophon" prep "$work/tree/cats/a.jpg" --box 0,0,1,1 --format f16
expect "val takes no box" 2 "--transform val takes the whole image" \
    "$sophon" prep "$work/tree/cats/a.jpg" --transform val --box 0,0,1,1
expect "val does not pad" 2 "torchvision would pad the centre crop" \
    "$sophon" exec --id sophon -p "$pool" cats/a.jpg --transform val --size 300
expect "a bad --ratio" 2 "--ratio wants A,B with 0 < A <= B" \
    "$sophon" prep "$work/tree/cats/a.jpg" --seed 1 --ratio 4/3,3/4
expect "a bad --std" 2 "--std wants three numbers a,b,c .*none 0" \
    "$sophon" prep "$work/tree/cats/a.jpg" --seed 1 --std 0.2,0,0.2
expect "a bad --transform" 2 "--transform wants train or val" \
    "$sophon" prep "$work/tree/cats/a.jpg" --transform test
# The crop stage: the OSD's crop JPEG written as a file any viewer opens, the box placed in it;
# prepared with the box moved there, it gives the sample of the stored object.
if "$sophon" exec --id sophon -p "$pool" dogs/b.jpg --seed 4 --stage crop -o "$work/box.jpg" \
    >"$work/crop.txt"; then
    read -r bx by < <(sed -n 's/.*(the box at \([0-9]*\),\([0-9]*\) in it).*/\1 \2/p' "$work/crop.txt")
    box=$(sed -n 's/^[^:]*: box \([0-9]*\),\([0-9]*\),\([0-9]*\),\([0-9]*\) -> crop.*/\3,\4/p' \
        "$work/crop.txt")
    flip=$("$sophon" exec --id sophon -p "$pool" dogs/b.jpg --seed 4 -o "$work/whole.raw" |
        grep -q flipped && echo --flip)
    /usr/bin/python3 -c "from PIL import Image; im = Image.open('$work/box.jpg'); im.load(); assert im.format == 'JPEG'" &&
        "$sophon" prep "$work/box.jpg" --box "$bx,$by,$box" $flip -o "$work/fromcrop.raw" >/dev/null &&
        cmp -s "$work/whole.raw" "$work/fromcrop.raw" &&
        ok "exec --stage crop -o box.jpg: Pillow opens it, and the box in it gives the sample" ||
        bad "exec --stage crop: $(cat "$work/crop.txt")"
else
    bad "exec --stage crop failed"
fi
expect "exec --stage crop,pixels under --crop-max returns the pixels" 0 "pixels: smaller than the crop" \
    "$sophon" exec --id sophon -p "$pool" dogs/b.jpg --seed 4 --stage crop,pixels --crop-max 100
expect "exec --stage crop under --crop-max explains" 1 "larger than --crop-max" \
    "$sophon" exec --id sophon -p "$pool" dogs/b.jpg --seed 4 --stage crop --crop-max 100
expect "a bad --stage" 2 "--stage .*: want pixels, crop or crop,pixels" \
    "$sophon" prep "$work/tree/cats/a.jpg" --seed 1 --stage png
expect "help on exec" 0 "Usage: sophon exec" "$sophon" exec --help
for o in cats/a.jpg dogs/b.jpg dogs/more/c.jpg cli.garbage; do rados -p "$pool" rm "$o"; done
finish
