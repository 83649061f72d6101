# expect.sh - sourced by the command-line tests: ok, bad, expect and the closing count line.
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
