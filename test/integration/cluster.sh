#!/usr/bin/env bash
# cluster.sh - the test harness's dev cluster: `setup DIR BUILD [vstart args]` starts a fresh one
# (a previous one in DIR is stopped and removed, so that the OSDs load the class just built),
# `cleanup DIR BUILD` stops it and checks that none of its daemons is left.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vstart=$here/../../vstart/vstart.sh
action=$1 dir=$2 build=$3
shift 3

ours() { pgrep -f -- "-c $dir/ceph.conf" || true; }

case "$action" in
setup)
    "$vstart" stop --dir "$dir" --build "$build" >/dev/null 2>&1 || true
    rm -rf "$dir"
    "$vstart" start --dir "$dir" --build "$build" "$@"
    ;;
cleanup)
    "$vstart" stop --dir "$dir" --build "$build"
    left=$(ours)
    if [ -n "$left" ]; then
        echo "cluster.sh: daemons of $dir still running after stop: $left" >&2
        exit 1
    fi
    ;;
*)
    echo "usage: cluster.sh setup|cleanup DIR BUILD [vstart args]" >&2
    exit 2
    ;;
esac
