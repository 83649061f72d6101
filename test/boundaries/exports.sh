#!/usr/bin/env bash
# exports.sh CLASS.so LIBSOPHON.so - what the shared objects show the process that loads them.
# The class (loaded into ceph-osd) exports __cls_init alone; libsophon exports sophon_* alone.
# Neither needs a libjpeg.so: libjpeg-turbo is linked in statically, with its symbols hidden, so
# that huffman.c runs against the libjpeg it was written for whatever the host has installed
# (prep/jpeg/CMakeLists.txt), and neither binds to nor lends its copy to another in the process.
set -uo pipefail
cls=$1 lib=$2
fail=0
check() { # what condition-output
    if [ -z "$2" ]; then echo "ok: $1"; else echo "FAIL: $1: $2"; fail=1; fi
}
exports() { nm -D --defined-only "$1" | awk '{print $3}' | sort; }

check "the class exports __cls_init alone" "$(exports "$cls" | grep -vx '__cls_init')"
check "the class exports __cls_init" "$(exports "$cls" | grep -cx '__cls_init' | grep -vx 1)"
check "libsophon exports sophon_* alone" "$(exports "$lib" | grep -v '^sophon_')"
for so in "$cls" "$lib"; do
    check "$(basename "$so") needs no libjpeg.so" \
        "$(readelf -d "$so" | grep NEEDED | grep -i 'jpeg' || true)"
    check "$(basename "$so") imports no libjpeg symbol" \
        "$(nm -D --undefined-only "$so" | grep -E ' (jpeg|jinit|jpeg_|jsimd)_' || true)"
    check "$(basename "$so") carries libjpeg's decoder, hidden" \
        "$(nm "$so" | grep -c ' t jpeg_read_coefficients$' | grep -vx 1)"
done
exit $fail
