#!/usr/bin/env bash
# clang-tidy over core/, widgets/ and app/ with the repo's .clang-tidy; exits 1 if any file has a warning.
#   tools/tidy.sh [BUILD_DIR [DIR...]]   (BUILD_DIR has compile_commands.json; default build/release;
#                                         DIRs default to core widgets app)
# TIDY_JOBS files are checked at once (default: the number of cores); each prints its warnings whole.
# The LibTorch translation units are checked as C++17: clang 14 rejects Debian's LibTorch headers in C++20
# mode (std::vector<c10::IValue> needs a complete type where C++20 makes its destructor constexpr), while
# GCC accepts them. Our own code in those files is C++17-clean, so nothing is skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
shift || true
DIRS=("$@")
[ ${#DIRS[@]} -gt 0 ] || DIRS=(core widgets app)
[ -f "$BUILD/compile_commands.json" ] || { echo "tidy: no $BUILD/compile_commands.json (configure first)" >&2; exit 2; }
command -v clang-tidy > /dev/null || { echo "tidy: clang-tidy is not installed" >&2; exit 2; }
export BUILD

# tidy_one FILE: its warnings on stdout, exit 1 if any.
tidy_one() {
    local f=$1 extra=() out
    grep -qE '#include (<torch/|"train/Models.h")' "$f" && extra=(--extra-arg=-std=c++17)
    out=$(clang-tidy -p "$BUILD" --quiet "${extra[@]}" "$f" 2>/dev/null | grep -E '(warning|error):' || true)
    [ -z "$out" ] && return 0
    echo "$out"
    return 1
}
export -f tidy_one

start=$SECONDS
count=$(find "${DIRS[@]}" -name '*.cpp' | wc -l)
if find "${DIRS[@]}" -name '*.cpp' -print0 | sort -z |
       xargs -0 -n 1 -P "${TIDY_JOBS:-$(nproc)}" bash -c 'tidy_one "$1"' _; then
    echo "tidy: ${DIRS[*]} clean ($count files, $((SECONDS - start)) s)"
    exit 0
fi
echo "tidy: warnings above ($count files, $((SECONDS - start)) s)"
exit 1
