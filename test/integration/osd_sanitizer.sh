#!/usr/bin/env bash
# osd_sanitizer.sh BUILD CLUSTER_DIR CORPUS_DIR RUNTIME - the class under ASan+UBSan inside a real
# OSD. BUILD is a -DSOPHON_SANITIZE=ON clang build; its class is loaded by the one OSD of a
# cluster of its own in CLUSTER_DIR, started with the sanitizer runtime RUNTIME (clang's
# libclang_rt.asan-x86_64.so, which carries UBSan's handlers too) preloaded through vstart's
# SOPHON_OSD_WRAPPER. ceph-osd itself is not instrumented, but with the runtime preloaded every
# malloc of the process is ASan's, so the buffers the OSD hands the class (the request, the
# object read) have redzones too, and the class's own code is checked at every access.
#
# The workloads are the class's integration tests, run with BUILD's (sanitized) clients:
# prep_tests.sh hostile, requests, layouts and concurrency, then load.sh (profile, an epoch per
# policy, shards, the validation transform, the read-only key, a corrupt object). The test fails
# if any of them fails, if the OSD died, or if the sanitizers wrote any report (kept, with the
# OSD's log, in CLUSTER_DIR-reports).
set -uo pipefail
build=$1 dir=$2 corpus=$3 runtime=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cluster=$here/cluster.sh
reports=$dir-reports
trap '"$cluster" cleanup "$dir" "$build" >/dev/null 2>&1 || true' EXIT
. "$here/expect.sh"

class=$build/cls/libcls_sophon.so
[ -f "$runtime" ] || { echo "FAIL: no sanitizer runtime at $runtime"; exit 1; }
nm -D --undefined-only "$class" 2>/dev/null | grep ' __asan_init$' >/dev/null ||
    { echo "FAIL: $class is not built with ASan (cmake -DSOPHON_SANITIZE=ON)"; exit 1; }
rm -rf "$reports"
mkdir -p "$reports"

# The OSD's sanitizer options. Leaks are not looked for: LeakSanitizer reports ceph-osd's own
# allocations at its exit (from modules it has unloaded, no stacks to tell them from the class's),
# and the class's leaks are what integration.prep_hostile's memory check finds in the normal
# build (here ASan's allocator makes that check meaningless, and SOPHON_OSD_ASAN turns it off).
# An error aborts the OSD (which the test sees as a death) after writing its report to $reports.
# (The reports name functions and lines where llvm-symbolizer is on the PATH.)
osd_asan=abort_on_error=1:detect_leaks=0:log_path=$reports/asan
export SOPHON_OSD_WRAPPER="env LD_PRELOAD=$runtime ASAN_OPTIONS=$osd_asan UBSAN_OPTIONS=print_stacktrace=1:log_path=$reports/ubsan"
t0=$SECONDS
"$cluster" setup "$dir" "$build" --osds 1 >/dev/null 2>"$reports/setup.err" ||
    { echo "FAIL: no cluster: $(tail -3 "$reports/setup.err")"; exit 1; }
unset SOPHON_OSD_WRAPPER
echo "cluster with an ASan OSD up in $((SECONDS - t0))s"
export CEPH_CONF=$dir/ceph.conf SOPHON_POOL=sophon SOPHON_CLUSTER_DIR=$dir SOPHON_OSD_ASAN=1
# The clients are sanitized too; librados's allocations at their exit are not ours to look for.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
osd=$(cat "$dir/run/osd.0.pid")
grep -q libclang_rt.asan "/proc/$osd/maps" && ok "the OSD (pid $osd) runs with the ASan runtime" ||
    bad "the OSD runs without the ASan runtime"

for mode in hostile requests layouts concurrency; do
    t=$SECONDS
    if "$here/prep_tests.sh" "$mode" "$build" "$corpus" >"$reports/prep_$mode.log" 2>&1; then
        ok "prep_$mode ($((SECONDS - t))s)"
    else
        bad "prep_$mode: see $reports/prep_$mode.log"
        tail -20 "$reports/prep_$mode.log" | sed 's/^/    /'
    fi
done
grep -q libcls_sophon "/proc/$osd/maps" && ok "the OSD loaded the sanitized class" ||
    bad "the OSD has not loaded the class"
t=$SECONDS
if "$here/load.sh" "$build/client/sophon" "$corpus" >"$reports/load.log" 2>&1; then
    ok "load: $(tail -1 "$reports/load.log") ($((SECONDS - t))s)"
else
    bad "load: see $reports/load.log"
    grep -E '^FAIL' "$reports/load.log" | head -20 | sed 's/^/    /'
fi

# What the OSD served under the sanitizers: its op counters (class calls are read ops).
ops=$(timeout 60 ceph tell osd.0 perf dump 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)["osd"]
print("%d ops, %d reads (class calls among them), %d writes" % (d["op"], d["op_r"], d["op_w"]))')
echo "the OSD served ${ops:-?}"

if kill -0 "$osd" 2>/dev/null; then ok "the OSD lived through every workload"; else
    bad "the OSD died (pid $osd)"
fi
"$cluster" cleanup "$dir" "$build" >/dev/null 2>&1 || bad "the cluster did not stop cleanly"
cp "$dir/log/osd.0.log" "$reports/" 2>/dev/null
grep -q 'Caught signal' "$dir/log/osd.0.log" && bad "the OSD caught a signal: see $reports/osd.0.log"
found=$(find "$reports" -name 'asan.*' -o -name 'ubsan.*')
if [ -z "$found" ]; then ok "no sanitizer report"; else
    for f in $found; do
        bad "sanitizer report $f:"
        grep -m1 -E 'ERROR|runtime error' "$f" | sed 's/^/    /'
        grep -m8 -E '^ +#[0-9]+ ' "$f" | sed 's/^/    /'
    done
fi
finish
