#!/usr/bin/env bash
# make-dataset.sh CORPUS_DIR OUT_DIR SOPHON - arranges real photos from the Debian-package corpus
# (scripts/fetch-corpus.sh) as an ImageFolder dataset: OUT_DIR/CLASS/NAME.jpg, one class per
# source, only JPEGs the pipeline accepts (no corrupt or bomb test files). Files are hard links
# into the corpus where possible.
set -euo pipefail
corpus=$1 out=$2 sophon=$3
list=$corpus/list.txt
[ -s "$list" ] || { echo "make-dataset: no corpus at $corpus: run scripts/fetch-corpus.sh" >&2; exit 1; }

classes=(
    "wallpapers:/mate-backgrounds/usr/share/backgrounds/"
    "opencv-samples:/opencv-doc/usr/share/doc/opencv-doc/examples/"
    "gimp-examples:/gimp-help-en/usr/share/gimp/2.0/help/en/images/filters/examples/"
    "gimp-tutorials:/gimp-help-en/usr/share/gimp/2.0/help/en/images/tutorials/"
)
rm -rf "$out"
n=0
for entry in "${classes[@]}"; do
    class=${entry%%:*} pattern=${entry#*:}
    mkdir -p "$out/$class"
    while IFS= read -r f; do
        [ "$(stat -c %s "$f")" -ge 10000 ] || continue
        "$sophon" prep "$f" --box 0,0,1,1 >/dev/null 2>&1 || continue
        name=${f#*"$pattern"}
        name=${name//\//_}
        ln "$f" "$out/$class/$name" 2>/dev/null || cp "$f" "$out/$class/$name"
        n=$((n + 1))
    done < <(grep -F "$pattern" "$list")
done
echo "make-dataset: $n photos in $(ls "$out" | wc -l) classes under $out"
