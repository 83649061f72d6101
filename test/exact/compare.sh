#!/bin/sh
# compare.sh - byte-exactness of sophon_prep against Pillow 9.4 on real photos and on synthetic
# JPEGs in every colour / sampling mode.
#
# Usage: compare.sh [BUILD_DIR] [CACHE_DIR] [CASES_PER_IMAGE] [REFERENCE]
#   BUILD_DIR   a configured and built tree with prep_tool (default: ./build)
#   CACHE_DIR   corpus cache for fetch-corpus.sh (default: ~/.cache/sophon-corpus)
#   REFERENCE   pillow (default), or whole: the progressive files against prep_tool's decode of
#               the whole file, exact and fast mode (compare.py --reference whole)
# Needs /usr/bin/python3 with PIL (Debian python3-pil) and, for 4:4:0 / 4:1:1 / arithmetic
# samples, cjpeg (libjpeg-turbo-progs). Exit status 0 only if no byte differs.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-build}
CACHE=${2:-"$HOME/.cache/sophon-corpus"}
CASES=${3:-4}
REFERENCE=${4:-pillow}
PY=/usr/bin/python3
TOOL="$BUILD/test/exact/prep_tool"

[ -x "$TOOL" ] || { echo "no $TOOL: build first (cmake --build $BUILD)" >&2; exit 2; }
"$HERE/../../scripts/fetch-corpus.sh" "$CACHE" >/dev/null

SYN=$("$HERE/synthetic.sh" "$CACHE")

status=0
echo "== real photos ($CACHE/list.txt), against $REFERENCE"
"$PY" "$HERE/compare.py" "$TOOL" "$CACHE/list.txt" --cases "$CASES" --reference "$REFERENCE" \
    --log "/tmp/sophon-compare-$REFERENCE-real" || status=1
echo "== synthetic modes ($SYN/list.txt), against $REFERENCE"
"$PY" "$HERE/compare.py" "$TOOL" "$SYN/list.txt" --cases "$CASES" --reference "$REFERENCE" \
    --log "/tmp/sophon-compare-$REFERENCE-syn" || status=1
exit $status
