#!/usr/bin/env bash
# test.sh - the whole test suite, as CI runs it: installs what is missing, builds with -Werror,
# runs the unit, fuzz-corpus and integration tests (the harness starts and stops the dev
# cluster), then builds again with ASan+UBSan (clang) and runs the unit tests and replays the
# fuzz corpora there.
#
# BUILD_DIR (default build) and ASAN_BUILD_DIR (default build-asan) may be set.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
build=${BUILD_DIR:-$top/build}
asan=${ASAN_BUILD_DIR:-$top/build-asan}
jobs=$(nproc)

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
"$top/scripts/deps.sh"

step "build ($build, -Werror)"
cmake -S "$top" -B "$build" -DSOPHON_WERROR=ON >/dev/null
cmake --build "$build" -j "$jobs"

step "unit and integration tests"
(cd "$build" && ctest --output-on-failure)

step "ASan+UBSan build ($asan, clang): unit tests and fuzz corpora"
CC=clang cmake -S "$top" -B "$asan" -DSOPHON_WERROR=ON -DSOPHON_SANITIZE=ON >/dev/null
cmake --build "$asan" -j "$jobs"
(cd "$asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -L 'unit|fuzz')

step "all tests passed"
