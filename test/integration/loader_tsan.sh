#!/usr/bin/env bash
# loader_tsan.sh BUILD CLUSTER_DIR CORPUS_DIR SRC SUPPRESSIONS - the loader under ThreadSanitizer.
# BUILD is a -DSOPHON_SANITIZE_THREAD=ON build: its `sophon` command (libsophon's loader, worker
# and dispatcher threads, librados's callbacks) runs load.sh, load_osd_restart.sh and faults.sh
# (every policy, shards, the validation transform, the read-only key's local path, a corrupt
# object, an OSD stopped and restarted mid-epoch, an OSD frozen past the timeout, the mon
# restarted, objects deleted or rewritten) against a 3-OSD cluster of its own in CLUSTER_DIR.
# The OSDs load a class built from SRC without sanitizers into BUILD/plain-class (a TSan class
# would need TSan's runtime inside the OSD, and the class is not what is checked here).
#
# librados is not instrumented: TSan sees its threads and its pthread calls but not its atomics,
# so what it hands over through them looks unsynchronized. SUPPRESSIONS (test/tsan.supp) names
# those librados and ceph symbols, never sophon's. The test fails if a workload fails or if TSan
# wrote any report (kept in CLUSTER_DIR-reports).
set -uo pipefail
build=$1 dir=$2 corpus=$3 src=$4 supp=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cluster=$here/cluster.sh
plain=$build/plain-class
reports=$dir-reports
trap '"$cluster" cleanup "$dir" "$plain" >/dev/null 2>&1 || true' EXIT
. "$here/expect.sh"

sophon=$build/client/sophon
nm "$sophon" 2>/dev/null | grep ' __tsan_init$' >/dev/null ||
    { echo "FAIL: $sophon is not built with TSan (cmake -DSOPHON_SANITIZE_THREAD=ON)"; exit 1; }
[ -f "$supp" ] || { echo "FAIL: no suppressions file $supp"; exit 1; }
rm -rf "$reports"
mkdir -p "$reports"

# Every option given, so that a cache left there does not change the class (kept between runs:
# only what changed is rebuilt).
t0=$SECONDS
CC=${SOPHON_PLAIN_CC:-gcc} cmake -S "$src" -B "$plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS= -DSOPHON_SANITIZE=OFF -DSOPHON_SANITIZE_THREAD=OFF -DSOPHON_FUZZ=OFF \
    -DSOPHON_TESTS=OFF >"$reports/plain-class.log" 2>&1 &&
    cmake --build "$plain" --target cls_sophon -j "$(nproc)" >>"$reports/plain-class.log" 2>&1 ||
    { echo "FAIL: cannot build the class: see $reports/plain-class.log"; exit 1; }
"$cluster" setup "$dir" "$plain" --osds 3 >/dev/null 2>"$reports/setup.err" ||
    { echo "FAIL: no cluster: $(tail -3 "$reports/setup.err")"; exit 1; }
echo "class built and cluster up in $((SECONDS - t0))s"
export CEPH_CONF=$dir/ceph.conf SOPHON_POOL=sophon SOPHON_CLUSTER_DIR=$dir
# Reports go to files, one per process, and do not change a command's exit code: the
# workloads' own checks stay what they are, and the reports are counted below.
export TSAN_OPTIONS="suppressions=$supp:log_path=$reports/tsan:exitcode=0:second_deadlock_stack=1"

# The workloads call the command through this shim, which notes each load (the same process:
# exec, so the pid a workload waits for or signals is the loader's).
cat >"$reports/sophon" <<EOF
#!/bin/sh
[ "\$1" = load ] && echo "\$*" >>"$reports/loads"
exec "$sophon" "\$@"
EOF
chmod +x "$reports/sophon"

# SOPHON_TSAN_WORKLOADS chooses some of them (a quicker run by hand).
for w in ${SOPHON_TSAN_WORKLOADS:-load load_osd_restart faults}; do
    t=$SECONDS
    if "$here/$w.sh" "$reports/sophon" "$corpus" >"$reports/$w.log" 2>&1; then
        ok "$w: $(tail -1 "$reports/$w.log") ($((SECONDS - t))s)"
    else
        bad "$w: see $reports/$w.log"
        grep -E '^FAIL' "$reports/$w.log" | head -20 | sed 's/^/    /'
    fi
done
# What ran under TSan: `sophon load` runs and the epochs they asked for (shards count alone).
loads=$(wc -l <"$reports/loads" 2>/dev/null || echo 0)
epochs=$(awk '{e = 1; for (i = 1; i < NF; i++) if ($i == "--epochs") e = $(i + 1); n += e}
    END {print n + 0}' "$reports/loads" 2>/dev/null)
echo "under TSan: $loads sophon load runs, $epochs epochs"

# Reports whose two racing accesses are both inside Ceph (no frame of this source tree in
# either stack: a messenger thread freeing a message another Ceph thread read, in functions
# without symbols that tsan.supp cannot name) are Ceph's, counted and kept but not failed on.
# Any report with one of sophon's frames in an access stack fails the test.
mapfile -t found < <(find "$reports" -name 'tsan.*' | sort)
verdict=$(/usr/bin/python3 - "$src" "${found[@]}" <<'EOF'
import re, sys
src, files = sys.argv[1].rstrip("/") + "/", sys.argv[2:]
ours = ceph = 0
first = None
for f in files:
    for rep in open(f).read().split("==================\n"):
        if "WARNING: ThreadSanitizer" not in rep:
            continue
        # The access stacks: from each "Read/Write of size" or "Previous ..." line to a blank line.
        accesses = re.findall(r"\n  (?:Previous |Atomic )*(?:[Rr]ead|[Ww]rite)[^\n]*\n((?:    #[^\n]*\n)+)", rep)
        if any(src in a for a in accesses) or not accesses:
            ours += 1
            first = first or rep
        else:
            ceph += 1
print(ours, ceph)
if first:
    print(first[:6000])
EOF
)
read -r ours ceph <<<"$(head -1 <<<"$verdict")"
[ "${ceph:-0}" = 0 ] || echo "note: $ceph ThreadSanitizer reports inside Ceph alone (no sophon frame in" \
    "either access), kept in $reports/tsan.*"
if [ "${ours:-1}" = 0 ]; then ok "no ThreadSanitizer report on sophon's code"; else
    bad "$ours ThreadSanitizer reports on sophon's code in $reports/tsan.*; the first:"
    tail -n +2 <<<"$verdict" | head -60 | sed 's/^/    /'
fi
finish
