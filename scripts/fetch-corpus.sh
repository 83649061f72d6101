#!/bin/sh
# fetch-corpus.sh - fetch real-photo JPEGs from Debian packages for the exactness check.
#
# Usage: fetch-corpus.sh [CACHE_DIR]   (default: ~/.cache/sophon-corpus)
#
# Each package is fetched with `apt-get download` and unpacked with `dpkg-deb -x` into
# CACHE_DIR/pkg/NAME; a package already unpacked is skipped, so the script is idempotent.
# Finally every *.jpg / *.jpeg under CACHE_DIR/pkg is listed, one path a line, in
# CACHE_DIR/list.txt. The package set can be overridden with SOPHON_CORPUS_PKGS.
# Default set is about 200 MB of downloads (apt-cache show, Debian 12):
#   opencv-doc 96 MB (samples/data: real photos), mate-backgrounds 47 MB (photo wallpapers),
#   gimp-help-en 50 MB (screenshots and photos), gdk-pixbuf-tests 6 MB (edge cases, header bombs).
# plasma-workspace-wallpapers (94 MB) is optional.
set -eu

CACHE=${1:-"$HOME/.cache/sophon-corpus"}
PKGS=${SOPHON_CORPUS_PKGS:-"opencv-doc mate-backgrounds gimp-help-en gdk-pixbuf-tests"}

mkdir -p "$CACHE/pkg" "$CACHE/deb"
for pkg in $PKGS; do
    dest="$CACHE/pkg/$pkg"
    if [ -f "$dest/.done" ]; then
        echo "cached: $pkg"
        continue
    fi
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then
        # The package lists may be missing or stale on this machine: refresh them once.
        if [ -z "${updated:-}" ] && [ "$(id -u)" = 0 ]; then
            apt-get update -qq >/dev/null 2>&1 || true
            updated=1
        fi
        if ! apt-cache show "$pkg" >/dev/null 2>&1; then
            echo "fetch-corpus: $pkg is not in the package lists (run apt-get update?): skipped" >&2
            continue
        fi
    fi
    echo "fetching: $pkg"
    (cd "$CACHE/deb" && apt-get download "$pkg")
    rm -rf "$dest"
    mkdir -p "$dest"
    dpkg-deb -x "$CACHE"/deb/"$pkg"_*.deb "$dest"
    # The .deb is not needed once unpacked; keep the cache small.
    rm -f "$CACHE"/deb/"$pkg"_*.deb
    touch "$dest/.done"
done

# Into a file of this run's own, then renamed: tests running side by side call this script and
# read the list, and a rename never shows them a half-written one.
find "$CACHE/pkg" -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) | LC_ALL=C sort > "$CACHE/list.txt.$$"
mv -f "$CACHE/list.txt.$$" "$CACHE/list.txt"
echo "$(wc -l < "$CACHE/list.txt") JPEG files listed in $CACHE/list.txt"
