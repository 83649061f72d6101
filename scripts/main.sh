#!/usr/bin/env bash
# main.sh - the main job, from a fresh Debian 12 machine: installs what is missing, builds, starts
# the dev cluster with the sophon class, stores a dataset of real photos in it, has the OSDs
# prepare samples, and reports the traffic of reading every object as stored against preparing
# it in the OSDs.
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

step "sample data: real photos from Debian packages, as an ImageFolder dataset"
corpus=${SOPHON_CORPUS_DIR:-$HOME/.cache/sophon-corpus}
"$top/scripts/fetch-corpus.sh" "$corpus" >/dev/null
"$top/scripts/make-dataset.sh" "$corpus" "$build/dataset" "$build/client/sophon"

step "ingest: sophon put"
"$build/client/sophon" put --id sophon -p "$pool" "$build/dataset"

step "the OSDs read the headers (sophon probe), then prepare samples (sophon exec)"
first=$(rados -p "$pool" ls | grep '^wallpapers/' | sort | head -n 1)
"$build/client/sophon" probe --id sophon -p "$pool" "$first"
"$build/client/sophon" exec --id sophon -p "$pool" "$first" --seed 1 -o "$build/sample.png"
echo "  (the prepared sample is $build/sample.png)"

step "traffic: every object read as stored, then prepared in the OSDs (224x224 u8)"
"$build/client/sophon" bench --id sophon -p "$pool" --seed 1

step "done: the cluster keeps running (vstart/vstart.sh status | stop)"
