#!/usr/bin/env bash
# clang-tidy over core/, widgets/ and app/ with the repo's .clang-tidy; exits 1 if any file has a warning.
#   tools/tidy.sh [BUILD_DIR [DIR...]]   (BUILD_DIR has compile_commands.json; default build/release;
#                                         DIRs default to core widgets app)
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
status=0
for f in $(find "${DIRS[@]}" -name '*.cpp' | sort); do
    extra=()
    grep -qE '#include (<torch/|"train/Models.h")' "$f" && extra=(--extra-arg=-std=c++17)
    out=$(clang-tidy -p "$BUILD" --quiet "${extra[@]}" "$f" 2>/dev/null | grep -E '(warning|error):' || true)
    if [ -n "$out" ]; then
        echo "$out"
        status=1
    fi
done
[ $status -eq 0 ] && echo "tidy: ${DIRS[*]} clean"
exit $status
