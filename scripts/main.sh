#!/usr/bin/env bash
# main.sh - the main job, from a fresh Debian 12 machine: installs what is missing, builds, starts
# the dev cluster with the sophon class, stores real photos in it and has the OSDs answer on them.
#
# BUILD_DIR (default build) may be set. The cluster keeps running afterwards; stop it with
# `vstart/vstart.sh stop`.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$top/build}
pool=sophon

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
"$top/scripts/deps.sh"

step "build ($build)"
cmake -S "$top" -B "$build" >/dev/null
cmake --build "$build" -j "$(nproc)"

step "dev cluster"
eval "$("$top/vstart/vstart.sh" start --build "$build" --pool "$pool")"
echo "CEPH_CONF=$CEPH_CONF"

step "sample data: real photos from Debian's mate-backgrounds"
corpus=${SOPHON_CORPUS_DIR:-$HOME/.cache/sophon-corpus}
SOPHON_CORPUS_PKGS=mate-backgrounds "$top/scripts/fetch-corpus.sh" "$corpus" >/dev/null
mapfile -t photos < <(grep '/mate-backgrounds/.*/backgrounds/' "$corpus/list.txt" | head -n 8)
[ ${#photos[@]} -gt 0 ] || { echo "main: no photos found in $corpus" >&2; exit 1; }
for f in "${photos[@]}"; do
    obj=${f#*/backgrounds/}
    rados -p "$pool" put "$obj" "$f"
    printf '  stored %-50s %9d bytes\n' "$obj" "$(stat -c %s "$f")"
done

step "the sophon class answers in the OSD holding each photo"
for f in "${photos[@]}"; do
    "$build/client/sophon" version --id sophon -p "$pool" "${f#*/backgrounds/}" | tail -n 1
done

step "done: the cluster keeps running (vstart/vstart.sh status | stop)"
