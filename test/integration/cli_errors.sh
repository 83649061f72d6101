#!/usr/bin/env bash
# cli_errors.sh - what `sophon version` tells a user, against the dev cluster (CEPH_CONF set).
# $1: the sophon command.
set -uo pipefail
sophon=$1
pool=${SOPHON_POOL:-sophon}
fail=0
check() { # description expected-rc expected-regex command...
    local what=$1 want_rc=$2 want=$3 out rc
    shift 3
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" != "$want_rc" ] || ! grep -Eq -- "$want" <<<"$out"; then
        echo "FAIL: $what: rc $rc (want $want_rc), output:"
        echo "$out" | sed 's/^/    /'
        fail=$((fail + 1))
    else
        echo "ok: $what"
    fi
}

echo payload | rados -p "$pool" put test.cli - || exit 1
check "client and class versions" 0 "^class: +sophon [0-9.]+, wire format 1" \
    "$sophon" version --id sophon -p "$pool" test.cli
check "options before the subcommand" 0 "^class: " \
    "$sophon" --id sophon -p "$pool" version test.cli
check "key without class caps is told what is missing" 1 \
    "permission denied \(EPERM\).*client.sophon-read.*class-read" \
    "$sophon" version --id sophon-read -p "$pool" test.cli
check "missing object" 1 "no object test.missing in pool $pool \(ENOENT\)" \
    "$sophon" version --id sophon -p "$pool" test.missing
check "missing pool" 1 "pool no-such-pool does not exist" \
    "$sophon" version --id sophon -p no-such-pool test.cli
check "unknown client key" 1 "cannot connect to the cluster as client.nobody" \
    "$sophon" version --id nobody -p "$pool" test.cli
check "unreadable conf" 1 "cannot read ceph.conf /nonexistent" \
    "$sophon" version -c /nonexistent -p "$pool" test.cli
check "help on the subcommand" 0 "Usage: sophon version" "$sophon" version --help
check "unknown subcommand" 2 "unknown command 'frobnicate'" "$sophon" frobnicate
rados -p "$pool" rm test.cli
echo "$((9 - fail)) passed, $fail failed"
[ "$fail" = 0 ]
