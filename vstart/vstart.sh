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
                               [--no-mgr] [--net RATE [--delay MS]] [--osd-cores N]
       vstart/vstart.sh stop [--dir DIR]
       vstart/vstart.sh status [--dir DIR] [--build DIR]
       vstart/vstart.sh env [--dir DIR]
       vstart/vstart.sh exec [--dir DIR] -- CMD [ARGS...]
       vstart/vstart.sh osd-cpu [--dir DIR]

start   starts a mon, a mgr and N OSDs (default 1) with memstore, creates a replicated data pool
        (default 'sophon', size 1, with --pg-num placement groups: by default 32 an OSD rounded
        up to a power of two, 32 for 1 OSD and 128 for 3, as a sophon call holds its placement
        group and reads of other objects in it wait; the mgr's balancer off, so that they stay
        where they are), the key client.sophon (read, write and call classes on that pool only)
        and client.sophon-read (read only: no class calls). Idempotent: a running cluster is
        left alone (a new --net RATE or --osd-cores N is applied to it), a stopped one is
        restarted with its data.
stop    stops the daemons of the cluster in DIR, and only those, then removes what the testbed
        made (below): its namespaces with their veth and qdiscs, and its cgroup, also stale ones
        left by an earlier run of the same DIR that crashed. Nothing else is touched.
status  health, OSDs up, and whether the sophon class answers; the link (rate, delay,
        addresses, bytes each end sent) and the CPU cap (quota, CPU time used, throttling).
env     prints the export line that points ceph, rados and sophon at this cluster. A shaped
        cluster is reachable only from its client namespace: env says to use exec instead.
osd-cpu prints the CPU seconds the OSDs of a cluster started with --osd-cores have used in their
        cgroup (every thread, living or exited): the difference over a run is what it took.
exec    runs CMD on the client side of the cluster with CEPH_CONF set to its ceph.conf: in the
        client namespace of a shaped cluster, else right here. Its exit code is CMD's. Scripts
        that run their clients through exec work alike on a shaped and an unshaped cluster.

The shaped testbed (as root; needs network namespaces, tc with tbf, and the cpu cgroup):

--net RATE     puts a link of RATE between the clients and the cluster, as between two hosts.
               RATE as tc writes rates: a number with bit, kbit, mbit, gbit, tbit, kibit, ...
               (bits/s) or bps, kbps, mbps, ... (bytes/s), e.g. 500kbit, 100Mbit, 1Gbit.
               The daemons (mon, mgr, OSDs) run in a network namespace of their own,
               sophon-HASH-srv (HASH from DIR), the clients in another, sophon-HASH-cli, joined
               by one veth pair (sphHASH-s, sphHASH-c) with a /30 of 10.0.0.0/8 derived from DIR
               that the host does not use. Both ends of the veth are shaped with tbf at RATE
               (burst 10 ms of RATE, at least 16 KiB; queue 100 ms), so both directions are
               limited. The daemons bind to the server end and reach each other inside their
               namespace, unshaped. The clients get a namespace rather than the host's: there
               the link is their only route, nothing can bypass it, and no address, route or
               qdisc is ever added to the host's own network. The mon's address is in its
               monmap, so a cluster made with --net always starts shaped (at the last RATE
               unless given a new one), and one made without cannot get a link: remove DIR.
--delay MS     adds MS milliseconds of delay to each direction (netem under the tbf; the kernel
               must have sch_netem). Remembered like RATE; --delay 0 removes it.
--osd-cores N  caps the OSD daemons together at N cores (e.g. 0.25) with a cgroup named
               sophon-HASH in the cpu controller: cgroup v1 cpu.cfs_quota_us/cpu.cfs_period_us
               (and cpuacct for the CPU time used) or v2 cpu.max, whichever the machine mounts.
               Each OSD process joins it before it starts (cgroup.procs), so every thread it
               ever starts is capped. Remembered like RATE; works with or without --net.

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
pg_num=
with_mgr=1
net= delay= osd_cores= exec_argv=()
while [ $# -gt 0 ]; do
    case "$1" in
    --net) net=${2:?--net wants a rate such as 100Mbit}; shift 2 ;;
    --delay) delay=${2:?--delay wants milliseconds}; shift 2 ;;
    --osd-cores) osd_cores=${2:?--osd-cores wants a number of cores such as 0.25}; shift 2 ;;
    --)
        shift
        exec_argv=("$@")
        break
        ;;
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
if [ -z "$pg_num" ]; then
    pg_num=1
    while [ "$pg_num" -lt $((32 * osds)) ]; do pg_num=$((pg_num * 2)); done
fi
case "$pg_num" in *[!0-9]* | 0) die "--pg-num wants a positive number, not '$pg_num'" ;; esac
build=$(mkdir -p "$build" && cd "$build" && pwd)
dir=${dir:-$build/vstart}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf=$dir/ceph.conf
[ "$cmd" = exec ] || [ ${#exec_argv[@]} = 0 ] || die "'--' and a command are for exec only"
[ "$cmd" = start ] || [ -z "$net$delay$osd_cores" ] || die "--net, --delay and --osd-cores are for start"
system_classes=/usr/lib/x86_64-linux-gnu/rados-classes
[ -d "$system_classes" ] || system_classes=$(dirname "$(dpkg -L ceph-osd 2>/dev/null | grep -m1 '/rados-classes/')" 2>/dev/null || true)

# The shaped testbed (--net, --osd-cores): everything it makes is named after DIR, so that stop
# finds it again after a crash and never touches another testbed's or the host's.
hash=$(printf '%s' "$dir" | sha256sum | cut -c1-8)
ns_srv=sophon-$hash-srv ns_cli=sophon-$hash-cli
veth_srv=sph$hash-s veth_cli=sph$hash-c
cg_name=sophon-$hash
testbed=$dir/testbed # key=value lines: rate, rate_bits, delay_ms, srv_addr, cli_addr, osd_cores

tb_get() { # key: its value in the testbed file, or nothing
    [ -f "$testbed" ] || return 0
    sed -n "s/^$1=//p" "$testbed" | tail -n 1
}
tb_set() { # key value
    local rest=
    [ -f "$testbed" ] && rest=$(grep -v "^$1=" "$testbed" || true)
    { [ -z "$rest" ] || printf '%s\n' "$rest"; printf '%s=%s\n' "$1" "$2"; } >"$testbed.tmp"
    mv -f "$testbed.tmp" "$testbed"
}
shaped() { [ -n "$(tb_get srv_addr)" ]; }

# Commands that must reach the daemons directly: inside the server namespace when shaped.
srv_run=()
if shaped; then srv_run=(ip netns exec "$ns_srv"); fi

# RATE as tc parses rates, in bits per second; fails on anything else.
parse_rate() {
    /usr/bin/python3 - "$1" <<'EOF'
import re, sys
units = {"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
         "kibit": 2**10, "mibit": 2**20, "gibit": 2**30, "tibit": 2**40}
units.update({k.replace("bit", "bps") if k else "bps": v * 8 for k, v in units.items()})
m = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?)([a-z]*)", sys.argv[1].lower())
if not m or m.group(2) not in units:
    sys.exit(1)
bits = float(m.group(1)) * units[m.group(2)]
sys.exit(1) if not 8e3 <= bits <= 100e9 else print(int(bits))
EOF
}

need_root() { # what
    [ "$(id -u)" = 0 ] || die "$1 needs root (network namespaces, tc and cgroups): run it as root"
}

need_net_tools() {
    command -v ip >/dev/null 2>&1 || die "missing ip: apt-get install iproute2"
    command -v tc >/dev/null 2>&1 || die "missing tc: apt-get install iproute2"
    [ -e /proc/self/ns/net ] || die "this kernel has no network namespaces (CONFIG_NET_NS): --net cannot work here"
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }

# A /30 of 10.0.0.0/8 from DIR's hash (the next candidate if the host or another sophon testbed
# uses it): server .1, client .2. Prints "srv cli".
pick_subnet() {
    local i others=() n
    for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^sophon-[0-9a-f]{8}-srv$' || true); do
        [ "$n" = "$ns_srv" ] || others+=("$n")
    done
    local used
    used=$({
        ip -4 -o addr show 2>/dev/null | awk '{print $4}'
        ip -4 route show table all 2>/dev/null | awk '$1 != "default" && $1 != "broadcast" && $1 != "local" {print $1}'
        for n in "${others[@]}"; do ip -n "$n" -4 -o addr show 2>/dev/null | awk '{print $4}'; done
    } | tr '\n' ' ')
    for i in 0 1 2 3 4 5 6 7; do
        /usr/bin/python3 - "$dir:$i" "$used" <<'EOF' && return 0
import hashlib, ipaddress, sys
h = hashlib.sha256(sys.argv[1].encode()).digest()
net = ipaddress.ip_network("10.%d.%d.%d/30" % (h[0], h[1], h[2] & 0xFC))
for u in sys.argv[2].split():
    try:
        if ipaddress.ip_network(u, strict=False).overlaps(net):
            sys.exit(1)
    except ValueError:
        pass
print(net.network_address + 1, net.network_address + 2)
EOF
    done
    die "no free /30 in 10.0.0.0/8 for the link after 8 tries: the host uses them (ip -4 addr, ip -4 route)"
}

# The tc qdiscs of one end of the link: netem for the delay (if any), tbf for the rate.
shape_end() { # namespace device
    local ns=$1 dev=$2 bits delay_ms burst
    bits=$(tb_get rate_bits) delay_ms=$(tb_get delay_ms)
    # tbf needs a burst over the MTU, and one timer tick's worth of bytes at high rates.
    burst=$((bits / 8 / 100))
    [ "$burst" -ge 16384 ] || burst=16384
    ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
    if [ -n "$delay_ms" ] && [ "$delay_ms" != 0 ]; then
        ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "${delay_ms}ms" limit 100000 ||
            die "cannot add a netem qdisc for --delay: this kernel lacks sch_netem (modprobe sch_netem), or start without --delay"
        ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "${bits}bit" \
            burst "$burst" latency 100ms || die "cannot add a tbf qdisc under netem on $dev in $ns"
    else
        ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: tbf rate "${bits}bit" \
            burst "$burst" latency 100ms ||
            die "cannot add a tbf qdisc on $dev in $ns: this kernel lacks sch_tbf (CONFIG_NET_SCH_TBF)"
    fi
}

# Makes (or completes) the two namespaces and the shaped veth between them. Idempotent.
link_up() {
    local srv cli
    srv=$(tb_get srv_addr) cli=$(tb_get cli_addr)
    need_root "--net"
    need_net_tools
    local ns
    for ns in "$ns_srv" "$ns_cli"; do
        if ! ns_exists "$ns"; then
            ip netns add "$ns" || die "cannot make the network namespace $ns (kernel without CONFIG_NET_NS?)"
        fi
        ip -n "$ns" link set lo up || die "cannot bring up lo in $ns"
    done
    if ! ip -n "$ns_srv" link show "$veth_srv" >/dev/null 2>&1; then
        # Made inside the namespaces, so that even a crash leaves nothing in the host's.
        ip -n "$ns_cli" link del "$veth_cli" 2>/dev/null || true
        ip -n "$ns_srv" link add "$veth_srv" type veth peer name "$veth_cli" netns "$ns_cli" ||
            die "cannot make the veth pair $veth_srv/$veth_cli (kernel without CONFIG_VETH?)"
    fi
    ip -n "$ns_srv" addr replace "$srv/30" dev "$veth_srv" &&
        ip -n "$ns_cli" addr replace "$cli/30" dev "$veth_cli" &&
        ip -n "$ns_srv" link set "$veth_srv" up && ip -n "$ns_cli" link set "$veth_cli" up ||
        die "cannot address the veth pair $veth_srv/$veth_cli"
    shape_end "$ns_srv" "$veth_srv"
    shape_end "$ns_cli" "$veth_cli"
}

# The cpu cgroup: sets cg_kind (v1 or v2) and cg_dirs (the directories a capped process joins:
# cpu, and cpuacct where v1 mounts it apart); fails with what the machine lacks.
cg_kind= cg_dirs=() cg_cpu= cg_acct=
cg_find() {
    local dev mnt type opts o v2=
    while read -r dev mnt type opts _; do
        if [ "$type" = cgroup ]; then
            for o in ${opts//,/ }; do
                [ "$o" = cpu ] && cg_cpu=$mnt/$cg_name
                [ "$o" = cpuacct ] && cg_acct=$mnt/$cg_name
            done
        elif [ "$type" = cgroup2 ] && [ -z "$v2" ]; then
            grep -qw cpu "$mnt/cgroup.controllers" 2>/dev/null && v2=$mnt
        fi
    done </proc/self/mounts
    if [ -n "$cg_cpu" ]; then
        cg_kind=v1 cg_dirs=("$cg_cpu")
        [ -z "$cg_acct" ] || [ "$cg_acct" = "$cg_cpu" ] || cg_dirs+=("$cg_acct")
    elif [ -n "$v2" ]; then
        cg_kind=v2 cg_cpu=$v2/$cg_name cg_acct=$v2/$cg_name cg_dirs=("$cg_cpu")
    else
        return 1
    fi
}

cg_make() { # cores
    need_root "--osd-cores"
    cg_find || die "no cpu cgroup controller is mounted (neither cgroup v1 'cpu' nor cgroup v2 with cpu): --osd-cores cannot work here"
    local period=100000 quota d
    quota=$(/usr/bin/python3 -c 'import sys; print(round(float(sys.argv[1]) * 100000))' "$1")
    if [ "$cg_kind" = v2 ]; then
        grep -qw cpu "${cg_cpu%/*}/cgroup.subtree_control" ||
            die "cgroup v2 at ${cg_cpu%/*} does not give the cpu controller to its children: echo +cpu >${cg_cpu%/*}/cgroup.subtree_control, then start again"
    fi
    for d in "${cg_dirs[@]}"; do mkdir -p "$d" || die "cannot make the cgroup $d"; done
    if [ "$cg_kind" = v1 ]; then
        echo "$period" >"$cg_cpu/cpu.cfs_period_us" && echo "$quota" >"$cg_cpu/cpu.cfs_quota_us" ||
            die "cannot set the CPU quota in $cg_cpu (kernel without CONFIG_CFS_BANDWIDTH?)"
    else
        echo "$quota $period" >"$cg_cpu/cpu.max" || die "cannot set $cg_cpu/cpu.max"
    fi
}

cg_join() { # pid: the whole process, every thread, now and later
    local d
    for d in "${cg_dirs[@]}"; do
        echo "$1" >"$d/cgroup.procs" || die "cannot move pid $1 into the cgroup $d"
    done
}

# CPU time used by the cgroup so far, in nanoseconds (empty if the machine does not count it).
cg_usage_ns() {
    if [ "$cg_kind" = v1 ] && [ -n "$cg_acct" ] && [ -f "$cg_acct/cpuacct.usage" ]; then
        cat "$cg_acct/cpuacct.usage"
    elif [ "$cg_kind" = v2 ] && [ -f "$cg_cpu/cpu.stat" ]; then
        awk '$1 == "usage_usec" {print $2 * 1000}' "$cg_cpu/cpu.stat"
    fi
}

# Removes the namespaces, their veth and qdiscs, and the cgroup of this DIR, found by name, with
# any process still in them (only this script puts processes there).
testbed_down() {
    local ns pids pid d i gone=()
    if command -v ip >/dev/null 2>&1; then
        for ns in "$ns_srv" "$ns_cli"; do
            ns_exists "$ns" || continue
            pids=$(ip netns pids "$ns" 2>/dev/null || true)
            if [ -n "$pids" ]; then
                log "stopping what still runs in $ns: $(echo $pids)"
                for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
                for ((i = 0; i < 40; i++)); do
                    [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] || break
                    sleep 0.25
                done
                for pid in $(ip netns pids "$ns" 2>/dev/null || true); do kill -KILL "$pid" 2>/dev/null || true; done
            fi
            ip netns del "$ns" || die "cannot remove the network namespace $ns: remove it with ip netns del $ns"
            gone+=("netns $ns")
        done
    fi
    if cg_find; then
        for d in "${cg_dirs[@]}"; do
            [ -d "$d" ] || continue
            pids=$(cat "$d/cgroup.procs" 2>/dev/null || true)
            if [ -n "$pids" ]; then
                log "stopping what still runs in the cgroup $d: $(echo $pids)"
                for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
            fi
            # A killed process leaves its cgroup only once it is reaped: a few tries.
            for ((i = 0; i < 40; i++)); do
                rmdir "$d" 2>/dev/null && break
                sleep 0.25
            done
            [ ! -d "$d" ] || die "cannot remove the cgroup $d: see cat $d/cgroup.procs, then rmdir $d"
            gone+=("cgroup $d")
        done
    fi
    [ ${#gone[@]} = 0 ] || log "removed $(printf '%s, ' "${gone[@]}" | sed 's/, $//') (with their veth and qdiscs)"
}

# The cluster's own tools, always with its own conf and admin key.
ceph_() { timeout 60 "${srv_run[@]}" ceph -c "$conf" --connect-timeout 20 "$@"; }

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

write_conf() { # port [address]: the mon's, and the daemons' public address
    local addr=${2:-127.0.0.1}
    cat >"$conf" <<EOF
# Written by sophon's vstart/vstart.sh: a dev cluster, not for production.
[global]
fsid = $(cat "$dir/fsid")
mon host = [v2:$addr:$1]
mon initial members = a
public addr = $addr
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
# The PGs' read lease: 8 x the heartbeat grace (64 s) instead of 0.8 x (6.4 s, renewed every
# 3.2 s). Ceph 16.2.15 and 18.2 never clear the laggy state of a PG whose only OSD let its lease
# lapse (PeeringState::proc_renew_lease does not recheck readability with no replicas, Ceph
# PR 49304), and its reads then wait for good ("waiting for readable"). A lease lapses when the
# renewal waits behind long preparations under a CPU cap, or across a SIGSTOP; the pools here
# have one replica, so the lease guards nothing a shorter one would.
osd pool default read lease ratio = 8
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
    if [ "$type" = osd ] && [ -n "$(tb_get osd_cores)" ]; then
        # The OSD's launcher joins the cgroup first: the daemon it forks, and every thread that
        # one ever starts, are capped from the first instruction on.
        (
            cg_join "$BASHPID"
            exec "${srv_run[@]}" "${wrapper[@]}" "ceph-$type" -c "$conf" -i "$id"
        ) 2>>"$dir/log/$name.stderr" || die "ceph-$type -i $id failed to start: see $dir/log/$name.log"
    else
        "${srv_run[@]}" "${wrapper[@]}" "ceph-$type" -c "$conf" -i "$id" 2>>"$dir/log/$name.stderr" ||
            die "ceph-$type -i $id failed to start: see $dir/log/$name.log"
    fi
}

mon_port() { sed -n 's/^mon host = \[v2:[0-9.]*:\([0-9]*\)\]$/\1/p' "$conf"; }

create_cluster() {
    log "creating a new cluster in $dir"
    local port addr=127.0.0.1
    if shaped; then
        # The server namespace is the daemons' own host: the mon takes the usual port there.
        port=3300 addr=$(tb_get srv_addr)
    else
        port=$(free_port)
    fi
    mkdir -p "$dir/run" "$dir/log" "$dir/crash" "$dir/mon.a"
    cat /proc/sys/kernel/random/uuid >"$dir/fsid"
    write_conf "$port" "$addr"
    ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    ceph-authtool --create-keyring "$dir/keyring" --gen-key -n client.admin \
        --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
    ceph-authtool "$dir/mon.keyring" --import-keyring "$dir/keyring" >/dev/null
    monmaptool --create --clobber --fsid "$(cat "$dir/fsid")" --addv a "[v2:$addr:$port]" \
        "$dir/monmap" >/dev/null
    "${srv_run[@]}" ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.keyring" \
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
    # --mkfs asks the mon for its config: from where the mon is reachable.
    "${srv_run[@]}" ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >"$dir/log/mkfs.osd.$id.log" 2>&1 ||
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

# The flags of the testbed, checked, and remembered in DIR/testbed for the next start.
testbed_configure() {
    local bits=
    # Every value checked before anything is written.
    if [ -n "$net" ]; then
        bits=$(parse_rate "$net") ||
            die "--net wants a rate as tc writes it (a number with bit, kbit, mbit, gbit or bps, kbps, mbps, gbps; 8kbit to 100Gbit), e.g. 100Mbit, 1Gbit, 500kbit; not '$net'"
        if [ -f "$dir/created" ] && ! shaped; then
            die "the cluster in $dir was made without --net: its mon's address is in its monmap, so it cannot be moved behind a link; stop it and remove $dir (rm -rf $dir) to make a shaped one"
        fi
    fi
    if [ -n "$delay" ]; then
        [[ "$delay" =~ ^[0-9]+(\.[0-9]+)?$ ]] && /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 10000)' "$delay" ||
            die "--delay wants milliseconds from 0 to 10000, e.g. 20 or 0.5; not '$delay'"
        [ -n "$net" ] || shaped || die "--delay is the delay of the --net link: give --net RATE too"
    fi
    if [ -n "$osd_cores" ]; then
        [[ "$osd_cores" =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ ]] &&
            /usr/bin/python3 -c 'import sys; c = float(sys.argv[1]); sys.exit(not 0.01 <= c <= 1024)' "$osd_cores" ||
            die "--osd-cores wants a number of cores from 0.01 to 1024, e.g. 0.25 or 2; not '$osd_cores'"
    fi
    if [ -n "$net" ]; then
        if ! shaped; then
            need_root "--net"
            need_net_tools
            local addrs
            addrs=$(pick_subnet)
            tb_set srv_addr "${addrs% *}"
            tb_set cli_addr "${addrs#* }"
        fi
        tb_set rate "$net"
        tb_set rate_bits "$bits"
    fi
    [ -z "$delay" ] || tb_set delay_ms "$delay"
    [ -z "$osd_cores" ] || tb_set osd_cores "$osd_cores"
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
    testbed_configure
    if [ ! -f "$dir/created" ] && [ -f "$testbed" ]; then
        # A first start that fails (no netem for --delay, say) leaves no testbed behind, and DIR
        # as empty as it was, if it failed before the cluster's files were made.
        trap '[ -f "$dir/created" ] || { testbed_down; rm -f "$testbed"; }' EXIT
    fi
    if shaped; then
        srv_run=(ip netns exec "$ns_srv")
        link_up
    fi
    [ -z "$(tb_get osd_cores)" ] || cg_make "$(tb_get osd_cores)"
    install_classes
    if [ -f "$dir/created" ]; then
        local port
        port=$(mon_port)
        if ! pid_alive "$dir/run/mon.a.pid"; then
            if ! "${srv_run[@]}" /usr/bin/python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",int(sys.argv[1])))' "$port" 2>/dev/null; then
                die "the monitor's port 127.0.0.1:$port is in use by another program: stop it, or remove $dir to make a new cluster"
            fi
            start_daemon mon.a
        fi
        wait_for 30 "the monitor" ceph_ mon stat
    else
        create_cluster
    fi
    # No balancer: it moves placement groups between the OSDs once a minute when their counts
    # differ by more than 5, which they do with 32 an OSD. In a pool of one replica each move
    # copies the PG's objects in the middle of tests and benchmarks, and an OSD stopped during
    # one left PGs laggy for good (reads "waiting for readable"; Ceph 16.2 and 18.2).
    ceph_ config set mgr mgr/balancer/active false --force >/dev/null ||
        die "cannot turn the balancer off (ceph config set mgr mgr/balancer/active false)"
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
    if [ -n "$(tb_get osd_cores)" ]; then
        # OSDs that were already running when the cap was first asked for join it now.
        for d in $(daemons); do
            case "$d" in osd.*) pid_alive "$dir/run/$d.pid" && cg_join "$(cat "$dir/run/$d.pid")" ;; esac
        done
    fi
    wait_for 60 "$have OSDs to come up" osds_up "$have"
    if ! ceph_ osd pool ls | grep -qx "$pool"; then
        ceph_ osd pool create "$pool" "$pg_num" "$pg_num" replicated >/dev/null
        ceph_ osd pool application enable "$pool" sophon >/dev/null
    fi
    make_keys
    wait_for 60 "placement groups to be active+clean" pgs_clean
    log "cluster up in $((SECONDS - t0))s: $have OSD(s), pool '$pool', keys client.admin, client.sophon, client.sophon-read"
    if shaped; then
        log "behind a link of $(tb_get rate) ($(tb_get srv_addr) <-> $(tb_get cli_addr)): run clients with $0 exec --dir $dir -- CMD"
    else
        echo "export CEPH_CONF=$conf"
    fi
}

do_stop() {
    [ -f "$conf" ] || {
        log "no cluster in $dir"
        testbed_down
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
    testbed_down
}

# The link and the cap, as the kernel has them now.
testbed_status() {
    local rc=0 ns dev
    if shaped; then
        local delay_ms
        delay_ms=$(tb_get delay_ms)
        echo "link     $(tb_get rate) ($(tb_get rate_bits) bit/s)${delay_ms:+, ${delay_ms} ms delay each way}, both directions: $ns_srv $(tb_get srv_addr) <-> $ns_cli $(tb_get cli_addr)"
        for ns in "$ns_srv" "$ns_cli"; do
            dev=$veth_srv
            [ "$ns" = "$ns_cli" ] && dev=$veth_cli
            if ns_exists "$ns" && ip -n "$ns" link show "$dev" >/dev/null 2>&1; then
                ip netns exec "$ns" tc -s qdisc show dev "$dev" | awk -v n="$ns/$dev" '
                    /^qdisc/ {q = $0; sub(/^qdisc /, "", q)}
                    /Sent/ {d = $7; sub(/,/, "", d); printf "  %s: %s\n    sent %s bytes, %s packets, %s dropped\n", n, q, $2, $4, d}'
            else
                echo "  $ns/$dev: missing (the link is down: vstart/vstart.sh start --dir $dir)"
                rc=1
            fi
        done
    fi
    local cores
    cores=$(tb_get osd_cores)
    if [ -n "$cores" ]; then
        if cg_find && [ -d "$cg_cpu" ]; then
            local quota usage
            if [ "$cg_kind" = v1 ]; then
                quota="$(cat "$cg_cpu/cpu.cfs_quota_us")/$(cat "$cg_cpu/cpu.cfs_period_us") us"
            else
                quota="$(cat "$cg_cpu/cpu.max") (cpu.max)"
            fi
            usage=$(cg_usage_ns)
            echo "cap      OSDs at $cores cores: cgroup $cg_kind $cg_cpu, quota $quota, pids $(cat "$cg_cpu/cgroup.procs" | tr '\n' ' ')"
            if [ -n "$usage" ]; then usage=$(awk -v u="$usage" 'BEGIN {printf "%.2f s", u / 1e9}'); else usage="not counted"; fi
            echo "  CPU used: $usage; $(grep -E '^(nr_periods|nr_throttled) ' "$cg_cpu/cpu.stat" | tr '\n' ' ')"
        else
            echo "cap      OSDs at $cores cores: the cgroup $cg_name is missing (vstart/vstart.sh start --dir $dir)"
            rc=1
        fi
    fi
    return $rc
}

# CMD on the client side of the link: the client namespace of a shaped cluster, else here.
do_exec() {
    [ ${#exec_argv[@]} -gt 0 ] || die "exec wants a command after '--': vstart/vstart.sh exec --dir DIR -- rados lspools"
    [ -f "$conf" ] || die "no cluster in $dir: start one with vstart/vstart.sh start --dir $dir"
    export CEPH_CONF=$conf
    if shaped; then
        need_root "exec on a shaped cluster"
        ns_exists "$ns_cli" || die "the link of $dir is down (no namespace $ns_cli): start the cluster with vstart/vstart.sh start --dir $dir"
        exec ip netns exec "$ns_cli" "${exec_argv[@]}"
    fi
    exec "${exec_argv[@]}"
}

do_env() {
    if shaped; then
        die "the cluster in $dir sits behind a shaped link and is reachable only from the namespace $ns_cli: run clients with vstart/vstart.sh exec --dir $dir -- CMD (or a shell: ... exec --dir $dir -- bash)"
    fi
    echo "export CEPH_CONF=$conf"
}

do_osd_cpu() {
    [ -n "$(tb_get osd_cores)" ] || die "the OSDs of $dir have no CPU cap, so no cgroup counts their CPU: start the cluster with --osd-cores N"
    cg_find && [ -d "$cg_cpu" ] || die "the cgroup $cg_name of $dir is missing: vstart/vstart.sh start --dir $dir"
    local ns
    ns=$(cg_usage_ns)
    [ -n "$ns" ] || die "the cgroup $cg_name does not count CPU time (no cpuacct.usage or cpu.stat)"
    awk -v u="$ns" 'BEGIN {printf "%.6f\n", u / 1e9}'
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
    testbed_status || rc=1
    pid_alive "$dir/run/mon.a.pid" || {
        echo "the monitor is not running: vstart/vstart.sh start --dir $dir"
        return 1
    }
    ceph_ health || rc=1
    ceph_ osd stat || rc=1
    local sophon=$build/client/sophon cli_run=()
    # The class is asked from the client side, across the link of a shaped cluster.
    shaped && cli_run=(ip netns exec "$ns_cli")
    if [ -x "$sophon" ]; then
        local obj=vstart.status
        # A check object in a namespace of its own, so that it never shows in the dataset.
        if echo status | "${cli_run[@]}" rados -c "$conf" -p "$pool" -N .sophon put "$obj" - 2>/dev/null &&
            "${cli_run[@]}" "$sophon" version -c "$conf" -p "$pool" -N .sophon "$obj"; then
            echo "class sophon: answers"
        else
            echo "class sophon: does not answer"
            rc=1
        fi
    else
        echo "class sophon: not checked ($sophon not built)"
    fi
    if shaped; then echo "clients: vstart/vstart.sh exec --dir $dir -- CMD"; else echo "export CEPH_CONF=$conf"; fi
    return $rc
}

case "$cmd" in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
env) do_env ;;
exec) do_exec ;;
osd-cpu) do_osd_cpu ;;
-h | --help | help) usage ;;
*) usage >&2; die "unknown command '$cmd'" ;;
esac
