#!/usr/bin/env bash
# The format check CI runs: every C++ file git knows, against .clang-format (clang-format 14, Debian's).
# Prints the first offending lines and exits 1 if any file would change; `clang-format -i FILE` fixes it.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v clang-format > /dev/null || { echo "format-check: clang-format is not installed" >&2; exit 2; }
out=$(git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror 2>&1)
if [ -n "$out" ]; then
    echo "$out" | head -40
    echo "format-check: $(echo "$out" | grep -c 'error:') places in $(echo "$out" | grep 'error:' | cut -d: -f1 | sort -u | wc -l) files differ from .clang-format"
    exit 1
fi
echo "format-check: $(git ls-files '*.cpp' '*.h' | wc -l) files match .clang-format"
