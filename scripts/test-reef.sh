#!/usr/bin/env bash
# test-reef.sh - the build and the whole ctest suite (unit, fuzz corpora, integration on a dev
# cluster) on Debian 13: Ceph 18.2 (reef), gcc 14, Pillow 11, in a chroot.
#
# The Debian 13 root is made once with debootstrap (minbase) and the packages below, and cached
# in $SOPHON_REEF_DIR (default ~/.cache/sophon-reef); it is made again when the package list or
# the mirror changes. Every run builds the source tree (mounted read-only at /src) in a fresh
# /build inside the root with -Werror, and runs ctest there; the vstart clusters of the tests run
# inside the root on loopback ports. The real-photo corpus ($SOPHON_CORPUS_DIR, default
# ~/.cache/sophon-corpus, fetched on this host first if missing) is mounted at the same path,
# under an overlay: the tests inside may add files (a list, synthetic JPEGs) without writing to
# the host's cache.
#
# Everything runs in a mount namespace of its own, so that no mount is ever seen outside it; an
# exit, an error or a signal stops the clusters, ends every process left in the root and
# unmounts it (cleanup() below). Needs root and, for the first run, the mirror
# (SOPHON_REEF_MIRROR, default http://deb.debian.org/debian).
#
# Usage: scripts/test-reef.sh [CTEST ARGUMENTS]   e.g. -R integration.load, or -L unit
# Without arguments it runs every test, as CI does.
set -euo pipefail
case "${1:-}" in
-h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SOPHON_REEF_DIR:-$HOME/.cache/sophon-reef}
corpus=${SOPHON_CORPUS_DIR:-$HOME/.cache/sophon-corpus}
mirror=${SOPHON_REEF_MIRROR:-http://deb.debian.org/debian}
suite=trixie
jobs=$(nproc)

# What the build, the tests and the dev cluster need (the Debian 13 names of scripts/deps.sh's
# list, without clang: the ASan build stays on the host). torchvision is the reference of the
# validation transform's tests (0.21 there, 0.14 on the host) and of the Python package's
# (built against python3-dev); git builds the wire format 1 class from the history
# (integration.wire_v1).
packages=(
    cmake make gcc libc6-dev pkg-config git
    libjpeg62-turbo-dev libturbojpeg0-dev librados-dev libcmocka-dev zlib1g-dev
    ceph-mon ceph-osd ceph-mgr ceph-common procps
    python3 python3-dev python3-pil python3-numpy python3-torch python3-torchvision
    libjpeg-turbo-progs valgrind
)
# Tests that check the source tree or the kernel rather than Ceph 18 and gcc 14, run on the host
# only: the format check pins clang-format 14, which Debian 13 does not ship (its 19 formats
# differently); the shaped testbed is network namespaces, tc and cgroups, the same kernel's
# inside the root, whose cgroup file systems the root does not mount. And, to keep CI near 30
# minutes, two that repeat the host's checks of the same C: valgrind on the unit tests (8 minutes
# here; gcc 14's code stays under the unit tests themselves), and the progressive cut against
# libjpeg's whole-file decode (5 minutes; integration.exact_pillow still runs the cut here,
# against Pillow 11).
host_only='^(unit\.clang_format|integration\.shaped_.*|unit\.valgrind\..*|integration\.exact_cut)$'
# Bump when the way the root is made changes, so that cached roots are made again.
recipe=1

t0=$SECONDS
step() { printf '\n== reef: %s\n' "$*"; }
log() { printf 'reef: %s\n' "$*" >&2; }
die() {
    printf 'reef: error: %s\n' "$*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and mounts): sudo $0"

# Into a mount namespace of our own first: the mounts below never reach the host's namespace and
# vanish with the namespace whatever happens to this script.
if [ "${SOPHON_REEF_NS:-}" != "$$" ]; then
    command -v unshare >/dev/null || die "unshare not found: apt-get install util-linux"
    exec env SOPHON_REEF_NS=$$ unshare --mount --propagation private -- "$BASH" "$0" "$@"
fi

mkdir -p "$cache/log"
cache=$(cd "$cache" && pwd)
root=$cache/root
exec 9>"$cache/lock"
flock -n 9 || die "another test-reef.sh is using $cache: wait for it, or set SOPHON_REEF_DIR"

# ---- mounts and processes in a root ----

# Mount points under $1, deepest first (mountinfo's fifth field, with octal escapes).
mounts_under() {
    awk -v r="$1" '{ p = $5; gsub(/\\040/, " ", p); if (p == r || index(p, r "/") == 1) print p }' \
        /proc/self/mountinfo | sort -r
}

mount_root() { # root: what a chroot running apt, dpkg and Ceph needs
    local r=$1
    mount -t proc proc "$r/proc"
    mount -t sysfs sysfs "$r/sys"
    mount --bind /dev "$r/dev"
    mount --bind /dev/pts "$r/dev/pts"
    mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
}

# Processes whose root directory is $1: everything started inside that chroot.
procs_in() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
    done
    return 0
}

# Ends what still runs in root $1: TERM, then KILL after 10 s. Returns 1 if it found anything.
end_procs() {
    local r=$1 pids p i
    mapfile -t pids < <(procs_in "$r")
    [ ${#pids[@]} -gt 0 ] || return 0
    log "still running in $r, stopping:"
    for p in "${pids[@]}"; do
        printf '    %s %s\n' "$p" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-90)" >&2
    done
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        [ -n "$(procs_in "$r")" ] || return 1
        sleep 0.25
    done
    mapfile -t pids < <(procs_in "$r")
    [ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 0.5
    return 1
}

unmount_root() { # root
    local m
    while read -r m; do
        [ -n "$m" ] || continue
        umount "$m" 2>/dev/null || {
            log "$m is busy: detaching it (umount -l)"
            umount -l "$m" || true
        }
    done < <(mounts_under "$1")
    local left
    left=$(mounts_under "$1" | tr '\n' ' ')
    [ -z "$left" ] || die "still mounted under $1: $left"
}

# Runs a command in root $1 with a clean environment.
in_root() {
    local r=$1
    shift
    chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive "$@"
}

# Runs a step's command (debootstrap, apt-get) with its output in a log file, whose last line
# shows on a terminal as it goes, and whose end is shown if it fails. The command runs in a
# session of its own, without the terminal (nothing can wait there for an answer), so that an
# interrupt can stop its whole process group (stop_job): debootstrap runs outside the root,
# where end_procs would not find it.
job=
ticker=
logged() { # name command...
    local name=$1 logf=$cache/log/$1.log rc=0
    shift
    : >"$logf"
    setsid "$BASH" -c "$(declare -f in_root)"'; "$@"' logged "$@" </dev/null >"$logf" 2>&1 &
    job=$!
    if [ -t 2 ]; then
        while kill -0 $$ 2>/dev/null && sleep 1; do
            printf '\r\033[K  %s' "$(tail -n 1 "$logf" | cut -c1-76)" >&2
        done &
        ticker=$!
    fi
    wait "$job" || rc=$?
    job=
    stop_ticker
    if [ "$rc" != 0 ]; then
        tail -n 25 "$logf" | sed 's/^/    /' >&2
        die "$name failed (exit $rc; the whole log: $logf)"
    fi
}
stop_job() {
    local i
    [ -n "$job" ] || return 0
    kill -TERM -- "-$job" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        kill -0 -- "-$job" 2>/dev/null || break
        sleep 0.25
    done
    kill -KILL -- "-$job" 2>/dev/null || true
    wait "$job" 2>/dev/null || true
    job=
}
stop_ticker() {
    [ -n "$ticker" ] || return 0
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    ticker=
    printf '\r\033[K' >&2
}

# Stops the dev clusters under /build of the root (by their pid files, vstart's own way).
stop_clusters() {
    local conf d
    [ -x "$root/src/vstart/vstart.sh" ] || return 0
    while read -r conf; do
        [ -n "$conf" ] || continue
        d=${conf%/ceph.conf}
        compgen -G "$d/run/*.pid" >/dev/null || continue
        in_root "$root" /src/vstart/vstart.sh stop --dir "${d#"$root"}" --build /build || true
    done < <(find "$root/build" -maxdepth 4 -name ceph.conf 2>/dev/null)
}

active_root=
cleanup() {
    local rc=$? r=$active_root
    trap - EXIT INT TERM HUP
    stop_ticker
    stop_job
    if [ -n "$r" ]; then
        [ "$r" != "$root" ] || stop_clusters
        if ! end_procs "$r" && [ "$rc" = 0 ]; then
            log "processes were left running in the root after the tests"
            rc=1
        fi
        unmount_root "$r"
    fi
    if [ "$rc" = 0 ]; then
        step "all tests passed on Debian 13 in $((SECONDS - t0))s"
    else
        log "failed (exit $rc) after $((SECONDS - t0))s; no mount or process of it is left"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---- the cached Debian 13 root ----

stamp_text() {
    printf 'suite %s\nmirror %s\nrecipe %s\npackages %s\n' "$suite" "$mirror" "$recipe" \
        "$(printf '%s\n' "${packages[@]}" | LC_ALL=C sort | tr '\n' ' ')"
}
stamp=$(stamp_text | sha256sum | cut -c1-16)

root_is_current() {
    [ "$(cat "$root/.sophon-reef-stamp" 2>/dev/null)" = "$stamp" ] &&
        [ -x "$root/usr/bin/ceph-osd" ] && [ -x "$root/usr/bin/gcc" ]
}

# Removes a root that nothing runs in and nothing is mounted in; never crosses into a mount.
remove_root() {
    [ -e "$1" ] || return 0
    [ -z "$(procs_in "$1")" ] || die "processes still run in $1: $(procs_in "$1" | tr '\n' ' ')"
    [ -z "$(mounts_under "$1")" ] || die "something is mounted under $1: not removing it"
    rm -rf --one-file-system "$1"
}

# What dpkg has not finished in root $1, and which of our packages are not installed.
unfinished_packages() {
    in_root "$1" dpkg --audit 2>&1 || true
    in_root "$1" dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "${packages[@]}" 2>&1 |
        grep -v '^ii ' || true
}

make_root() {
    local new=$cache/root.new
    # No network to the mirror is the likely failure of a first run: say so before debootstrap.
    if ! timeout 60 /usr/lib/apt/apt-helper download-file "$mirror/dists/$suite/InRelease" \
        "$cache/InRelease" >"$cache/log/mirror.log" 2>&1; then
        grep '^E:' "$cache/log/mirror.log" | sed 's/^/    /' >&2
        die "cannot reach the Debian mirror ($mirror/dists/$suite/InRelease): the first run" \
            "needs it to make the root (SOPHON_REEF_MIRROR sets another mirror); later runs use" \
            "the root cached in $root"
    fi
    rm -f "$cache/InRelease"
    end_procs "$new" || true
    remove_root "$new"

    step "debootstrap --variant=minbase $suite ($mirror) into $new"
    local t=$SECONDS
    active_root=$new
    logged debootstrap debootstrap --variant=minbase "$suite" "$new" "$mirror"
    log "debootstrap done in $((SECONDS - t))s"

    # No daemon starts at install time, no fsync per file, no documentation.
    printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
    chmod 755 "$new/usr/sbin/policy-rc.d"
    echo force-unsafe-io >"$new/etc/dpkg/dpkg.cfg.d/sophon-unsafe-io"
    printf 'path-exclude=/usr/share/%s/*\n' doc man info locale \
        >"$new/etc/dpkg/dpkg.cfg.d/sophon-nodoc"
    printf 'APT::Install-Recommends "false";\nAcquire::Languages "none";\n' \
        >"$new/etc/apt/apt.conf.d/90sophon"
    cp -f /etc/resolv.conf "$new/etc/resolv.conf" 2>/dev/null || true

    step "apt-get install in the root: ${packages[*]}"
    t=$SECONDS
    mount_root "$new"
    logged apt-get-update in_root "$new" apt-get update
    logged apt-get-install in_root "$new" apt-get install -y "${packages[@]}"
    # apt-get can end with status 0 when interrupted: check that everything is installed.
    local broken
    broken=$(unfinished_packages "$new")
    [ -z "$broken" ] || die "packages not completely installed in $new: $broken"
    in_root "$new" apt-get clean
    end_procs "$new" || true
    unmount_root "$new"
    active_root=
    log "packages installed in $((SECONDS - t))s"

    stamp_text >"$new/.sophon-reef-recipe"
    echo "$stamp" >"$new/.sophon-reef-stamp"
    end_procs "$root" || true
    remove_root "$root"
    mv "$new" "$root"
}

step "dependencies on this host"
"$top/scripts/deps.sh"

step "Debian 13 root ($root)"
if root_is_current; then
    log "cached (stamp $stamp)"
else
    [ -e "$root" ] && log "the package list or the mirror changed: making the root again"
    make_root
fi

# ---- the corpus, on this host ----

if [ ! -s "$corpus/list.txt" ]; then
    step "the real-photo corpus is not in $corpus: fetching it on this host"
    "$top/scripts/fetch-corpus.sh" "$corpus"
fi
corpus=$(cd "$corpus" && pwd)

# ---- build and test inside the root ----

# A process left by an earlier run that was killed would hold files of /build.
end_procs "$root" || true
# A fresh /build, /tmp and corpus overlay every run.
rm -rf --one-file-system "$root/build" "$root/tmp" "$cache/run"
mkdir -m 1777 "$root/tmp"
mkdir -p "$root/src" "$root$corpus" "$cache/run/corpus-upper" "$cache/run/corpus-work"

active_root=$root
mount_root "$root"
mount --bind -o ro "$top" "$root/src"
mount -t overlay overlay "$root$corpus" \
    -o "lowerdir=$corpus,upperdir=$cache/run/corpus-upper,workdir=$cache/run/corpus-work" ||
    die "cannot mount the corpus overlay on $root$corpus (overlayfs: modprobe overlay)"

# Runs a long command in the root. In the background, so that a signal to this script alone
# (kill PID) runs the trap at once rather than when the command ends; the trap stops it with
# everything else in the root.
run_in_root() {
    in_root "$root" "$@" &
    wait $!
}

build() { # dir build-type
    run_in_root cmake -S /src -B "$1" -DCMAKE_BUILD_TYPE="$2" -DCMAKE_C_COMPILER=gcc \
        -DSOPHON_WERROR=ON -DSOPHON_TESTS=ON -DSOPHON_SANITIZE=OFF -DSOPHON_FUZZ=OFF \
        -DSOPHON_CORPUS_DIR="$corpus" >/dev/null
    run_in_root cmake --build "$1" -j "$jobs" -- --no-print-directory
}

versions=$(in_root "$root" sh -c 'printf "gcc %s, %s, Pillow %s" "$(gcc -dumpfullversion)" \
    "$(ceph --version | cut -d" " -f1-3)" \
    "$(/usr/bin/python3 -c "import PIL; print(PIL.__version__)")"')
step "build with -Werror in the root: $versions"
t=$SECONDS
build /build RelWithDebInfo
# Some warnings (-Wmaybe-uninitialized) show only at other optimization levels: the tree builds
# warning-free at -O3 and -O0 as well (compiled, not tested).
build /build/Release Release >/dev/null
build /build/Debug Debug >/dev/null
log "built in $((SECONDS - t))s (RelWithDebInfo for the tests, Release and Debug for warnings)"

step "unit, fuzz-corpus and integration tests in the root (logs under $root/build)"
if [ $# -eq 0 ]; then
    # As on the host (test.sh): the tests that need no cluster (label nocluster) $jobs at a
    # time, then the cluster's one at a time.
    run_in_root sh -c 'cd /build && ctest --output-on-failure -j "$1" -L nocluster -E "$0" &&
        exec ctest --output-on-failure -LE nocluster -E "$0"' "$host_only" "$jobs"
else
    run_in_root sh -c 'cd /build && exec ctest --output-on-failure -E "$0" "$@"' "$host_only" "$@"
fi
