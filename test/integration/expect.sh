# expect.sh - sourced by the command-line tests: ok, bad, expect, the closing count line, and
# small_dataset, primary_of and cluster_diag.
pass=0 fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
# expect DESCRIPTION EXPECTED-RC REGEX COMMAND...: the command exits with EXPECTED-RC and its
# output (stdout and stderr) matches REGEX.
expect() {
    local what=$1 want_rc=$2 want=$3 out rc
    shift 3
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" = "$want_rc" ] && grep -Eq -- "$want" <<<"$out"; then ok "$what"; else
        bad "$what: rc $rc (want $want_rc)"
        echo "$out" | head -20 | sed 's/^/    /'
    fi
}
# Prints "N passed, M failed" and fails if anything did.
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" = 0 ]
}
# small_dataset CORPUS SOPHON OUT N [CLASS...]: an ImageFolder tree in OUT of make-dataset.sh's
# real photos, the first N of each class (of the classes named, else of all of them).
small_dataset() {
    local corpus=$1 sophon=$2 out=$3 n=$4 all c
    shift 4
    all=$(mktemp -d)
    "$(dirname "${BASH_SOURCE[0]}")/../../scripts/make-dataset.sh" "$corpus" "$all" "$sophon" \
        >/dev/null || { rm -rf "$all"; return 1; }
    [ $# -gt 0 ] || set -- $(ls "$all")
    for c in "$@"; do
        mkdir -p "$out/$c"
        ls "$all/$c" | head -"$n" | while read -r f; do cp "$all/$c/$f" "$out/$c/"; done
    done
    rm -rf "$all"
}
# primary_of POOL OBJECT: the OSD id that serves OBJECT (its acting primary, as the mons map it).
primary_of() {
    ceph osd map "$1" "$2" -f json |
        /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["acting_primary"])'
}
# cluster_diag DIR OBJECT...: what the cluster in DIR says when a test's reads did not complete:
# its health, the placement groups that are not active+clean, where the OBJECTs map, and the
# operations each OSD holds with the step they wait at. For the log of a failed test.
cluster_diag() {
    local dir=$1 o s
    shift
    echo "--- cluster diagnostics ($dir)"
    ceph health detail 2>&1 | head -20
    ceph pg dump pgs_brief 2>/dev/null | awk 'NR == 1 || $2 != "active+clean"' | head -20
    for o in "$@"; do ceph osd map "${SOPHON_POOL:-sophon}" "$o" 2>&1; done
    for s in "$dir"/run/osd.*.asok; do
        [ -S "$s" ] || continue
        echo "${s##*/}: operations in flight"
        ceph --admin-daemon "$s" dump_ops_in_flight 2>&1 | /usr/bin/python3 -c '
import json, sys
try:
    ops = json.load(sys.stdin).get("ops", [])
except ValueError:
    ops = []
for op in ops[:10]:
    d = op.get("type_data", {})
    ev = d.get("events", [])
    print("  %.1f s %s: %s (last: %s)" % (op.get("age", 0), d.get("flag_point", "?"),
          op.get("description", "?")[:120], ev[-1].get("event", "?") if ev else "-"))
print("  %d in all" % len(ops))'
    done
    echo "---"
}
