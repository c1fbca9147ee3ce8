#!/usr/bin/env bash
# clang-tidy over core/, widgets/ and app/ with the repo's .clang-tidy; exits 1 if any file has a warning.
#   tools/tidy.sh [BUILD_DIR [DIR...]]   (BUILD_DIR has compile_commands.json; default build/release;
#                                         DIRs default to core widgets app)
# The files of a folder that compile alike are checked as one unit (tools/tidy-units): a file's tidy time is
# mostly the headers it includes, parsed and matched once per unit instead of once per file. A unit that
# does not compile as one (two files defining the same helper, say) is checked file by file, as is every
# LibTorch file. TIDY_JOBS units are checked at once (default: the number of cores); each prints its
# warnings whole.
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

# tidy_unit "UNIT<tab>FILE...": the unit's warnings on stdout, exit 1 if any. The unit takes the checks of
# its files' folder (dumped from the first file: the folder's .clang-tidy, with what it inherits), less the
# one that flags including a .cpp, which is what a unit is.
tidy_unit() {
    local unit=${1%%$'\t'*} files=() out f rc=0
    read -r -a files <<< "${1#*$'\t'}"
    if [ "${#files[@]}" -eq 1 ] && [ "${files[0]}" = "$unit" ]; then
        tidy_one "$unit"
        return
    fi
    clang-tidy --dump-config "${files[0]}" > "$unit.yaml" 2>/dev/null
    out=$(clang-tidy -p "$UNITS" --quiet --config-file="$unit.yaml" --checks=-bugprone-suspicious-include \
        "$unit" 2>/dev/null | grep -E '(warning|error):' || true)
    if grep -qE ': error: ' <<< "$out"; then
        echo "tidy: ${files[*]} do not compile as one unit: checked one by one" >&2
        for f in "${files[@]}"; do
            tidy_one "$f" || rc=1
        done
        return $rc
    fi
    [ -z "$out" ] && return 0
    echo "$out"
    return 1
}
export -f tidy_one tidy_unit

UNITS=$(mktemp -d)
trap 'rm -rf "$UNITS"' EXIT
export UNITS
start=$SECONDS
count=$(find "${DIRS[@]}" -name '*.cpp' | wc -l)
plan=$(tools/tidy-units "$BUILD" "$UNITS" "${DIRS[@]}") || { echo "tidy: could not group the files" >&2; exit 2; }
units=$(wc -l <<< "$plan")
if tr '\n' '\0' <<< "$plan" | xargs -0 -n 1 -P "${TIDY_JOBS:-$(nproc)}" bash -c 'tidy_unit "$1"' _; then
    echo "tidy: ${DIRS[*]} clean ($count files in $units units, $((SECONDS - start)) s)"
    exit 0
fi
echo "tidy: warnings above ($count files in $units units, $((SECONDS - start)) s)"
exit 1
