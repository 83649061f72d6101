#!/usr/bin/env bash
# deps.sh - installs the Debian 12 packages sophon needs to build, test and run a dev cluster.
# Skips apt-get entirely when everything is already there.
set -euo pipefail

packages=(
    # build
    cmake make gcc clang libclang-rt-14-dev pkg-config
    libjpeg62-turbo-dev libturbojpeg0-dev librados-dev libcmocka-dev zlib1g-dev
    # the dev cluster, and its shaped testbed (ip netns, veth and tc: vstart.sh --net)
    ceph-mon ceph-osd ceph-mgr ceph-common procps iproute2
    # the reference for exactness (Pillow 9.4 is what torchvision runs on), torchvision itself,
    # and what the Python package builds against and is tested with
    python3 python3-pil python3-numpy python3-torch python3-torchvision python3-dev
    # the main job's plot of traffic and time per policy
    python3-matplotlib
    # sample data and test corpora come from Debian packages
    dpkg ca-certificates
    # synthetic test JPEGs (cjpeg), memory checking, the format check (scripts/check-format.sh)
    libjpeg-turbo-progs valgrind clang-format-14
    # the Ceph 18 suite's Debian 13 root (scripts/test-reef.sh)
    debootstrap
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "deps: missing packages: ${missing[*]}" >&2
    echo "deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
