#!/bin/sh
# synthetic.sh [CACHE_DIR] - makes, once per version of gen_synthetic.py, the synthetic JPEGs in
# every colour and sampling mode that the exactness checks compare (compare.sh, crop_check.sh),
# under CACHE_DIR (default: ~/.cache/sophon-corpus, whose real photos it needs), and prints the
# set's directory; its list.txt names the files. The ctest fixture integration.exact_synthetic
# makes it before the checks that share it run side by side.
# Needs /usr/bin/python3 with PIL (Debian python3-pil) and cjpeg (libjpeg-turbo-progs).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${1:-"$HOME/.cache/sophon-corpus"}
PY=/usr/bin/python3
SYN="$CACHE/synthetic-$(sha256sum "$HERE/gen_synthetic.py" | cut -c1-12)"
if [ ! -f "$SYN/list.txt" ]; then
    mkdir -p "$SYN"
    photo=$(grep -m1 -i 'backgrounds.*\.jpg$' "$CACHE/list.txt" || true)
    "$PY" "$HERE/gen_synthetic.py" "$SYN/pattern" > "$SYN/list.tmp"
    if [ -n "$photo" ]; then
        "$PY" "$HERE/gen_synthetic.py" "$SYN/photo" "$photo" >> "$SYN/list.tmp"
    fi
    mv "$SYN/list.tmp" "$SYN/list.txt"
    echo "synthetic set: $(wc -l < "$SYN/list.txt") JPEGs made in $SYN" >&2
fi
echo "$SYN"
