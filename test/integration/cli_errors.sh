#!/usr/bin/env bash
# cli_errors.sh - what `sophon version` tells a user, against the dev cluster (CEPH_CONF set).
# $1: the sophon command.
set -uo pipefail
sophon=$1
pool=${SOPHON_POOL:-sophon}
. "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

echo payload | rados -p "$pool" put test.cli - || exit 1
expect "client and class versions" 0 "^class: +sophon [0-9.]+, wire format 3" \
    "$sophon" version --id sophon -p "$pool" test.cli
expect "options before the subcommand" 0 "^class: " \
    "$sophon" --id sophon -p "$pool" version test.cli
expect "key without class caps is told what is missing" 1 \
    "permission denied \(EPERM\).*client.sophon-read.*class-read" \
    "$sophon" version --id sophon-read -p "$pool" test.cli
expect "missing object" 1 "no object test.missing in pool $pool \(ENOENT\)" \
    "$sophon" version --id sophon -p "$pool" test.missing
expect "missing pool" 1 "pool no-such-pool does not exist" \
    "$sophon" version --id sophon -p no-such-pool test.cli
expect "unknown client key" 1 "cannot connect to the cluster as client.nobody" \
    "$sophon" version --id nobody -p "$pool" test.cli
expect "unreadable conf" 1 "cannot read ceph.conf /nonexistent" \
    "$sophon" version -c /nonexistent -p "$pool" test.cli
expect "help on the subcommand" 0 "Usage: sophon version" "$sophon" version --help
expect "unknown subcommand" 2 "unknown command 'frobnicate'" "$sophon" frobnicate
rados -p "$pool" rm test.cli
finish
