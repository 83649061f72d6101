#!/usr/bin/env bash
# prep_tests.sh MODE BUILD CORPUS_DIR - runs one mode of test_cls_prep on the dev cluster with
# inputs picked from the real-photo corpus (scripts/fetch-corpus.sh), and for `corpus` checks
# the outputs against Pillow too.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=$1 build=$2 corpus=$3
list=$corpus/list.txt
sophon=$build/client/sophon
bin=$build/test/integration/test_cls_prep
work=$build/test-work/$mode
[ -s "$list" ] || { echo "no corpus list at $list: run scripts/fetch-corpus.sh $corpus" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"

# JPEGs the pipeline accepts, between MIN and MAX bytes, smallest first.
accepted() { # min max count
    local n=0 f size
    while IFS= read -r f; do
        size=$(stat -c %s "$f")
        [ "$size" -ge "$1" ] && [ "$size" -le "$2" ] || continue
        "$sophon" prep "$f" --box 0,0,1,1 >/dev/null 2>&1 || continue
        echo "$f"
        n=$((n + 1))
        [ "$n" -lt "$3" ] || break
    done < <(xargs -d '\n' stat -c '%s %n' <"$list" | sort -n | cut -d' ' -f2-)
}

largest() {
    local f
    while IFS= read -r f; do
        "$sophon" prep "$f" --box 0,0,1,1 >/dev/null 2>&1 && { echo "$f"; return; }
    done < <(xargs -d '\n' stat -c '%s %n' <"$list" | sort -rn | cut -d' ' -f2-)
}

case "$mode" in
hostile)
    real=$(accepted 200000 2000000 1)
    bomb=$(grep -m1 '/issue205\.jpg$' "$list") ||
        { echo "the header bomb issue205.jpg (gdk-pixbuf-tests) is not in the corpus" >&2; exit 1; }
    /usr/bin/python3 "$here/make_hostile.py" "$work" "$real" "$bomb" "$build/test/integration/many_scans"
    # The class's refusals of bad input are logged at a debug level: a client storing or sending
    # garbage adds nothing to the OSDs' log files (level 0 there), whatever else they hold.
    # (An OSD's first call loads the class, which says so at level 0.)
    class_lines() { cat "${SOPHON_CLUSTER_DIR:?}"/log/osd.*.log | grep '<cls> sophon: ' |
        grep -v ': loading class sophon ' || true; }
    before=$(class_lines | wc -l)
    "$bin" hostile "$work" "$(largest)"
    after=$(class_lines | wc -l)
    if [ "$after" != "$before" ]; then
        echo "FAIL: the hostile inputs put $((after - before)) lines into the OSDs' logs:" >&2
        class_lines | tail -n $((after - before)) | head -5 >&2
        exit 1
    fi
    echo "ok: the refusals left no line in the OSDs' log files"
    ;;
requests | layouts | eperm)
    exec "$bin" "$mode" "$(accepted 20000 300000 1)"
    ;;
concurrency)
    mapfile -t photos < <(accepted 20000 300000 12)
    exec "$bin" concurrency "${photos[@]}"
    ;;
corpus)
    "$bin" corpus "$list" "$work/cases.tsv" "${SOPHON_CORPUS_MAX:-0}"
    exec /usr/bin/python3 "$here/../exact/pillow_check.py" "$work/cases.tsv"
    ;;
*)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
