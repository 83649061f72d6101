#!/usr/bin/env bash
# check-format.sh [--fix] - every C file and header of the tree as the repository's .clang-format
# writes it with clang-format 14 (Debian's clang-format-14; scripts/deps.sh installs it). Lists
# the files that differ with their diff and fails; --fix rewrites them instead. ctest runs it as
# unit.clang_format.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fmt=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$fmt" >/dev/null; then
    echo "check-format: $fmt not found: apt-get install clang-format-14 (scripts/deps.sh)" >&2
    exit 1
fi
case $("$fmt" --version) in
*"version 14."*) ;;
*)
    echo "check-format: $fmt is not clang-format 14 ($("$fmt" --version)); the repository is" \
        "formatted with 14, other versions format differently" >&2
    exit 1
    ;;
esac
fix=0
[ "${1:-}" = --fix ] && fix=1
cd "$top"
files=()
while IFS= read -r -d '' f; do files+=("$f"); done < <(
    find cls client common prep python selector test -name '*.[ch]' -print0 2>/dev/null | sort -z)
if [ ${#files[@]} -eq 0 ]; then
    echo "check-format: no C files found under $top" >&2
    exit 1
fi
bad=0
for f in "${files[@]}"; do
    if ! "$fmt" --style=file "$f" | cmp -s - "$f"; then
        if [ $fix = 1 ]; then
            "$fmt" -i --style=file "$f"
            echo "formatted $f"
        else
            echo "$f differs from .clang-format:"
            "$fmt" --style=file "$f" | diff -u "$f" - | head -40 || true
            bad=$((bad + 1))
        fi
    fi
done
if [ $bad -gt 0 ]; then
    echo "check-format: $bad of ${#files[@]} files are not formatted; run scripts/check-format.sh --fix" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files formatted as .clang-format says"
