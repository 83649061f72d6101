#!/usr/bin/env bash
# vstart.sh - a Ceph dev cluster (mon, mgr, OSDs) from Debian's packaged Ceph 16.2, with the
# freshly built sophon class loaded, cephx on, on free loopback ports, in a directory of its own.
#
# It never touches /etc/ceph, /var/lib/ceph or any other cluster on the machine, and stops only
# the daemons it started (by their pid files).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)

usage() {
    cat <<EOF
Usage: vstart/vstart.sh start [--osds N] [--dir DIR] [--pool NAME] [--pg-num N] [--build DIR]
                               [--no-mgr]
       vstart/vstart.sh stop [--dir DIR]
       vstart/vstart.sh status [--dir DIR] [--build DIR]
       vstart/vstart.sh env [--dir DIR]

start   starts a mon, a mgr and N OSDs (default 1) with memstore, creates a replicated data pool
        (default 'sophon', size 1), the key client.sophon (read, write and call classes on that
        pool only) and client.sophon-read (read only: no class calls). Idempotent: a running
        cluster is left alone, a stopped one is restarted with its data.
stop    stops the daemons of the cluster in DIR, and only those.
status  health, OSDs up, and whether the sophon class answers.
env     prints the export line that points ceph, rados and sophon at this cluster.

DIR defaults to BUILD/vstart, BUILD to \$SOPHON_BUILD_DIR or $top/build.
The class is taken from BUILD/cls/libcls_sophon.so (build it first: cmake --build BUILD).
\$SOPHON_OSD_WRAPPER, when set, is a command prefix for ceph-osd only, split at blanks: for
example 'env LD_PRELOAD=/path/libclang_rt.asan-x86_64.so ASAN_OPTIONS=...' for a class built
with ASan (test/integration/osd_sanitizer.sh).
EOF
}

die() {
    echo "vstart: $*" >&2
    exit 1
}
log() { echo "vstart: $*" >&2; }

cmd=${1:-}
[ -n "$cmd" ] || {
    usage >&2
    exit 2
}
shift
osds=1
build=${SOPHON_BUILD_DIR:-$top/build}
dir=
pool=sophon
pg_num=16
with_mgr=1
while [ $# -gt 0 ]; do
    case "$1" in
    --osds) osds=${2:?--osds wants a number}; shift 2 ;;
    --dir) dir=${2:?--dir wants a directory}; shift 2 ;;
    --pool) pool=${2:?--pool wants a name}; shift 2 ;;
    --pg-num) pg_num=${2:?--pg-num wants a number}; shift 2 ;;
    --build) build=${2:?--build wants a directory}; shift 2 ;;
    --no-mgr) with_mgr=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
case "$osds" in '' | *[!0-9]* | 0) die "--osds wants a positive number, not '$osds'" ;; esac
[ "$osds" -le 16 ] || die "--osds: at most 16 on one machine"
build=$(mkdir -p "$build" && cd "$build" && pwd)
dir=${dir:-$build/vstart}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf=$dir/ceph.conf
system_classes=/usr/lib/x86_64-linux-gnu/rados-classes
[ -d "$system_classes" ] || system_classes=$(dirname "$(dpkg -L ceph-osd 2>/dev/null | grep -m1 '/rados-classes/')" 2>/dev/null || true)

# The cluster's own tools, always with its own conf and admin key.
ceph_() { timeout 60 ceph -c "$conf" --connect-timeout 20 "$@"; }

need_packages() {
    local missing=() b
    for b in ceph-mon:ceph-mon ceph-osd:ceph-osd ceph-mgr:ceph-mgr ceph:ceph-common \
        ceph-authtool:ceph-common monmaptool:ceph-common; do
        command -v "${b%%:*}" >/dev/null 2>&1 || missing+=("${b#*:}")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        die "missing Ceph programs; install them with: apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
    fi
}

# A free TCP port on 127.0.0.1, as the kernel hands one out.
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pid_alive() { # pidfile
    local pid
    [ -f "$1" ] || return 1
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

daemons() { # the daemon names of this cluster
    echo mon.a
    [ -f "$dir/mgr.x/keyring" ] && echo mgr.x
    local d
    for d in "$dir"/osd.*; do
        [ -f "$d/keyring" ] && basename "$d"
    done
    return 0
}

write_conf() { # port
    cat >"$conf" <<EOF
# Written by sophon's vstart/vstart.sh: a dev cluster, not for production.
[global]
fsid = $(cat "$dir/fsid")
mon host = [v2:127.0.0.1:$1]
mon initial members = a
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $dir/keyring
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/run/\$name.pid
crash dir = $dir/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
auth allow insecure global id reclaim = false
mon data avail crit = 1
mon data avail warn = 2
mon osd min down reporters = 1
osd objectstore = memstore
memstore device bytes = 2147483648
# Recent log lines kept in memory for crash dumps (default 10,000): fewer in a dev cluster.
log max recent = 500

[client]
# Clients (sophon, rados, ceph) keep no log file or admin socket of their own here.
log file = /dev/null
admin socket =

[mon]
mon data = $dir/mon.\$id
keyring = $dir/mon.keyring

[mgr]
mgr data = $dir/mgr.\$id
keyring = $dir/mgr.\$id/keyring

[osd]
osd data = $dir/osd.\$id
keyring = $dir/osd.\$id/keyring
# memstore writes its contents to disk only on a clean stop.
osd fast shutdown = false
osd class dir = $dir/classes
osd class load list = *
osd class default list = *
osd heartbeat grace = 8
osd heartbeat interval = 2
EOF
}

# The class directory: the system classes, and ours next to them.
install_classes() {
    local so=$build/cls/libcls_sophon.so f
    [ -f "$so" ] || die "no class at $so: build it first (cmake -S $top -B $build && cmake --build $build)"
    mkdir -p "$dir/classes"
    if [ -d "$system_classes" ]; then
        for f in "$system_classes"/libcls_*.so*; do
            ln -sf "$f" "$dir/classes/$(basename "$f")"
        done
    fi
    # A copy, not a link: rebuilding must not change the file under a running OSD.
    cp -f "$so" "$dir/classes/libcls_sophon.so.tmp"
    mv -f "$dir/classes/libcls_sophon.so.tmp" "$dir/classes/libcls_sophon.so"
}

wait_for() { # seconds description command...
    local limit=$1 what=$2 i
    shift 2
    for ((i = 0; i < limit * 4; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.25
    done
    die "timed out after ${limit}s waiting for $what (logs in $dir/log)"
}

start_daemon() { # name
    local name=$1 type=${1%%.*} id=${1#*.} wrapper=()
    pid_alive "$dir/run/$name.pid" && return 0
    # The OSDs alone run the class, so they alone get the wrapper (a sanitizer's runtime and
    # options): the mon and mgr stay as fast as ever.
    [ "$type" = osd ] && read -ra wrapper <<<"${SOPHON_OSD_WRAPPER:-}"
    "${wrapper[@]}" "ceph-$type" -c "$conf" -i "$id" 2>>"$dir/log/$name.stderr" ||
        die "ceph-$type -i $id failed to start: see $dir/log/$name.log"
}

mon_port() { sed -n 's/^mon host = \[v2:127.0.0.1:\([0-9]*\)\]$/\1/p' "$conf"; }

create_cluster() {
    log "creating a new cluster in $dir"
    local port
    port=$(free_port)
    mkdir -p "$dir/run" "$dir/log" "$dir/crash" "$dir/mon.a"
    cat /proc/sys/kernel/random/uuid >"$dir/fsid"
    write_conf "$port"
    ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    ceph-authtool --create-keyring "$dir/keyring" --gen-key -n client.admin \
        --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
    ceph-authtool "$dir/mon.keyring" --import-keyring "$dir/keyring" >/dev/null
    monmaptool --create --clobber --fsid "$(cat "$dir/fsid")" --addv a "[v2:127.0.0.1:$port]" \
        "$dir/monmap" >/dev/null
    ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.keyring" \
        >"$dir/log/mkfs.mon.a.log" 2>&1 || die "ceph-mon --mkfs failed: see $dir/log/mkfs.mon.a.log"
    start_daemon mon.a
    wait_for 30 "the monitor" ceph_ mon stat
    if [ "$with_mgr" = 1 ]; then
        mkdir -p "$dir/mgr.x"
        ceph_ auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
            -o "$dir/mgr.x/keyring" >/dev/null
    fi
    touch "$dir/created"
}

add_osd() {
    local uuid key id
    uuid=$(cat /proc/sys/kernel/random/uuid)
    key=$(ceph-authtool --gen-print-key)
    printf '{"cephx_secret": "%s"}\n' "$key" >"$dir/osd-new.json"
    id=$(ceph_ osd new "$uuid" -i "$dir/osd-new.json") || die "ceph osd new failed"
    rm -f "$dir/osd-new.json"
    mkdir -p "$dir/osd.$id"
    printf '[osd.%s]\n\tkey = %s\n' "$id" "$key" >"$dir/osd.$id/keyring"
    ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >"$dir/log/mkfs.osd.$id.log" 2>&1 ||
        die "ceph-osd --mkfs failed: see $dir/log/mkfs.osd.$id.log"
}

osd_count() { local n=0 d; for d in "$dir"/osd.*; do [ -f "$d/keyring" ] && n=$((n + 1)); done; echo $n; }

osds_up() { # wanted
    local up
    up=$(ceph_ osd stat -f json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])')
    [ "$up" -ge "$1" ]
}

pgs_clean() { # every PG of the data pool is active+clean
    local want
    want=$(ceph_ osd pool get "$pool" pg_num -f json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["pg_num"])')
    ceph_ pg ls-by-pool "$pool" -f json | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
pgs = s["pg_stats"] if isinstance(s, dict) else s
clean = [p for p in pgs if p["state"] == "active+clean"]
sys.exit(0 if len(pgs) == int(sys.argv[1]) and len(clean) == len(pgs) else 1)' "$want"
}

make_keys() {
    local caps_rw="allow rwx pool=$pool" caps_r="allow r pool=$pool"
    ceph_ auth get-or-create client.sophon mon 'allow r' osd "$caps_rw" >/dev/null
    ceph_ auth get-or-create client.sophon-read mon 'allow r' osd "$caps_r" >/dev/null
    # Both keys go into the cluster's client keyring, so --id sophon works with just CEPH_CONF.
    local k
    for k in client.sophon client.sophon-read; do
        ceph_ auth get "$k" -o "$dir/$k.keyring" >/dev/null 2>&1
        ceph-authtool "$dir/keyring" --import-keyring "$dir/$k.keyring" >/dev/null
    done
}

do_start() {
    local t0=$SECONDS
    need_packages
    command -v /usr/bin/python3 >/dev/null || die "missing /usr/bin/python3: apt-get install python3"
    if [ -e "$dir/ceph.conf" ] && [ ! -f "$dir/created" ]; then
        die "$dir holds a cluster that was never completely created: remove it (rm -rf $dir) and start again"
    fi
    if [ ! -f "$dir/created" ]; then
        # A stale directory without a conf: only ours may be wiped.
        if [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
            die "$dir is not empty and holds no sophon dev cluster: choose another --dir or empty it"
        fi
    fi
    install_classes
    if [ -f "$dir/created" ]; then
        local port
        port=$(mon_port)
        if ! pid_alive "$dir/run/mon.a.pid"; then
            if ! /usr/bin/python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",int(sys.argv[1])))' "$port" 2>/dev/null; then
                die "the monitor's port 127.0.0.1:$port is in use by another program: stop it, or remove $dir to make a new cluster"
            fi
            start_daemon mon.a
        fi
        wait_for 30 "the monitor" ceph_ mon stat
    else
        create_cluster
    fi
    [ "$with_mgr" = 1 ] && [ -f "$dir/mgr.x/keyring" ] && start_daemon mgr.x
    local have
    have=$(osd_count)
    while [ "$have" -lt "$osds" ]; do
        add_osd
        have=$(osd_count)
    done
    local d
    for d in $(daemons); do
        case "$d" in osd.*) start_daemon "$d" ;; esac
    done
    wait_for 60 "$have OSDs to come up" osds_up "$have"
    if ! ceph_ osd pool ls | grep -qx "$pool"; then
        ceph_ osd pool create "$pool" "$pg_num" "$pg_num" replicated >/dev/null
        ceph_ osd pool application enable "$pool" sophon >/dev/null
    fi
    make_keys
    wait_for 60 "placement groups to be active+clean" pgs_clean
    log "cluster up in $((SECONDS - t0))s: $have OSD(s), pool '$pool', keys client.admin, client.sophon, client.sophon-read"
    echo "export CEPH_CONF=$conf"
}

do_stop() {
    [ -f "$conf" ] || {
        log "no cluster in $dir"
        return 0
    }
    local d pids=() pid
    # OSDs first, so that memstore saves its data while the monitor still answers.
    for d in $(daemons | sort -r); do
        if pid_alive "$dir/run/$d.pid"; then
            pid=$(cat "$dir/run/$d.pid")
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    local i left
    for ((i = 0; i < 120; i++)); do
        left=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
        [ $left = 0 ] && break
        sleep 0.25
    done
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            log "pid $pid did not stop in 30s: killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    rm -f "$dir"/run/*.pid
    log "stopped ${#pids[@]} daemon(s) of $dir"
}

do_status() {
    [ -f "$conf" ] || die "no cluster in $dir: start one with vstart/vstart.sh start"
    local d state rc=0
    for d in $(daemons); do
        if pid_alive "$dir/run/$d.pid"; then state="running (pid $(cat "$dir/run/$d.pid"))"; else
            state="stopped"
            rc=1
        fi
        printf '%-8s %s\n' "$d" "$state"
    done
    pid_alive "$dir/run/mon.a.pid" || {
        echo "the monitor is not running: vstart/vstart.sh start --dir $dir"
        return 1
    }
    ceph_ health || rc=1
    ceph_ osd stat || rc=1
    local sophon=$build/client/sophon
    if [ -x "$sophon" ]; then
        local obj=vstart.status
        # A check object in a namespace of its own, so that it never shows in the dataset.
        if echo status | rados -c "$conf" -p "$pool" -N .sophon put "$obj" - 2>/dev/null &&
            "$sophon" version -c "$conf" -p "$pool" -N .sophon "$obj"; then
            echo "class sophon: answers"
        else
            echo "class sophon: does not answer"
            rc=1
        fi
    else
        echo "class sophon: not checked ($sophon not built)"
    fi
    echo "export CEPH_CONF=$conf"
    return $rc
}

case "$cmd" in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
env) echo "export CEPH_CONF=$conf" ;;
-h | --help | help) usage ;;
*) usage >&2; die "unknown command '$cmd'" ;;
esac
