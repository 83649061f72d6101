#!/usr/bin/env bash
# test.sh - the whole test suite, as CI runs it: installs what is missing, builds with -Werror,
# runs the unit, fuzz-corpus and integration tests (the harness starts and stops the dev
# cluster), then builds again with ASan+UBSan (clang), runs the unit tests and replays the
# fuzz corpora there, and runs the class's integration workloads against an OSD that loads the
# sanitized class (sanitize.osd_asan); then builds with ThreadSanitizer (clang) and runs the
# loader's cluster tests with that `sophon` (sanitize.loader_tsan).
#
# BUILD_DIR (default build), ASAN_BUILD_DIR (default build-asan) and TSAN_BUILD_DIR (default
# build-tsan) may be set. All are configured afresh, with every option given, so that what a
# developer cached there (another compiler, -DSOPHON_WERROR=OFF, CMAKE_C_FLAGS) does not change
# what is tested; the objects are kept, and what else lives there (dev clusters) is left alone.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
build=${BUILD_DIR:-$top/build}
asan=${ASAN_BUILD_DIR:-$top/build-asan}
tsan=${TSAN_BUILD_DIR:-$top/build-tsan}
jobs=$(nproc)

step() { printf '\n== %s\n' "$*"; }

# configure DIR CC SANITIZE [SANITIZE_THREAD]: a new cache in DIR (its CMakeCache.txt and
# top-level CMakeFiles removed), every option explicit.
configure() {
    local dir=$1 cc=$2 sanitize=$3 thread=${4:-OFF}
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
    CC=$cc cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS= \
        -DSOPHON_WERROR=ON -DSOPHON_SANITIZE="$sanitize" -DSOPHON_SANITIZE_THREAD="$thread" \
        -DSOPHON_FUZZ=OFF -DSOPHON_TESTS=ON \
        -DSOPHON_CORPUS_DIR="${SOPHON_CORPUS_DIR:-$HOME/.cache/sophon-corpus}" >/dev/null
}

step "dependencies"
"$top/scripts/deps.sh"

step "build ($build, -Werror)"
configure "$build" "${CC:-gcc}" OFF
cmake --build "$build" -j "$jobs"

# The tests that need no cluster (label nocluster: unit, valgrind, fuzz corpora, the exactness
# checks against Pillow and libjpeg) two or more at a time: 5 minutes here instead of 12. Then
# the cluster's, one at a time (the shaped testbed's measure rates and CPU).
step "unit tests and exactness checks, $jobs at a time"
(cd "$build" && ctest --output-on-failure -j "$jobs" -L nocluster)
step "integration tests on the dev cluster"
(cd "$build" && ctest --output-on-failure -LE nocluster)

step "ASan+UBSan build ($asan, clang): unit tests, fuzz corpora, the class in an ASan OSD"
configure "$asan" clang ON
cmake --build "$asan" -j "$jobs"
# sanitize.osd_asan sets its own sanitizer options, for the OSD and for its clients.
(cd "$asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -L 'unit|fuzz|sanitize')

step "TSan build ($tsan, clang): the loader's cluster tests"
configure "$tsan" clang OFF ON
cmake --build "$tsan" -j "$jobs"
(cd "$tsan" && ctest --output-on-failure -L tsan)

step "all tests passed"
