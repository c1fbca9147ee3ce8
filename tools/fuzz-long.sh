#!/usr/bin/env bash
# Long fuzzing of every target (docs/reliability.md, "Fuzzing"):
#   tools/fuzz-long.sh [RUNFILE_MINUTES [OTHER_MINUTES]]        (defaults: 60 and 10)
# A target given 0 minutes is not run; the causes of the crash inputs already in $FUZZ_OUT are still
# printed (so a long run can be done in parts: `60 0`, then `0 10`).
# fuzz_runfile gets RUNFILE_MINUTES split evenly between its two modes (HDF5 API mutations and raw byte
# flips, RANKSIGHT_FUZZ_MODE); fuzz_ranktable, fuzz_config and fuzz_cifar get OTHER_MINUTES each. Each run is
# libFuzzer's fork mode with crashes, timeouts and OOMs ignored, so one crash inside libhdf5 does not end the
# run; every crash input is replayed afterwards to name its cause (the sanitizer's SUMMARY line and the first
# stack frame). Needs the fuzz targets of a release build (`cmake --build --preset release`, clang and
# libclang-rt-14-dev installed). Scratch corpora and crash inputs go to $FUZZ_OUT (default
# /tmp/ranksight-fuzz-long); the repository's corpora are only read. Prints one line per run and a summary.
set -uo pipefail
cd "$(dirname "$0")/.."
runfile_min=${1:-60}
other_min=${2:-10}
bin=${FUZZ_BIN:-build/release/fuzz}
out=${FUZZ_OUT:-/tmp/ranksight-fuzz-long}
for t in ranktable config cifar runfile; do
  [ -x "$bin/fuzz_$t" ] || { echo "fuzz-long: $bin/fuzz_$t not built (cmake --build --preset release)" >&2; exit 2; }
done
mkdir -p "$out"
summary="$out/summary.txt"
echo "== $(date -u +%FT%TZ) tools/fuzz-long.sh $runfile_min $other_min" >> "$summary"

# run NAME TARGET SECONDS [MODE]: one fork-mode run; appends "NAME inputs crashes timeouts ooms" to summary
run() {
  local name=$1 target=$2 secs=$3 mode=${4:-}
  local corpus="$out/corpus/$name" art="$out/artifacts/$name/" log="$out/$name.log"
  if [ "$secs" -eq 0 ]; then
    echo "fuzz-long: $name not run (0 minutes)" >&2
    return
  fi
  mkdir -p "$corpus" "$art"
  echo "fuzz-long: $name for ${secs}s (log $log)" >&2
  RANKSIGHT_FUZZ_MODE=$mode "$bin/fuzz_$target" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -artifact_prefix="$art" \
    "$corpus" "fuzz/corpus/$target" > "$log" 2>&1
  # The last fork-mode status line: "#N: cov: ... oom/timeout/crash: O/T/C time: Ss ..."
  local last inputs otc
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
  inputs=$(sed -E 's/^#([0-9]+):.*/\1/' <<< "$last")
  otc=$(sed -E 's#.*oom/timeout/crash: ([0-9]+)/([0-9]+)/([0-9]+).*#\1 \2 \3#' <<< "$last")
  read -r ooms timeouts crashes <<< "${otc:-0 0 0}"
  printf '%-16s %5ss %9s inputs  crashes %s  timeouts %s  ooms %s\n' "$name" "$secs" "${inputs:-0}" \
    "${crashes:-0}" "${timeouts:-0}" "${ooms:-0}" | tee -a "$summary"
}

# causes NAME TARGET [MODE]: replays each crash input once and prints its cause, grouped with counts.
causes() {
  local name=$1 target=$2 mode=${3:-} f cause frame
  shopt -s nullglob
  for f in "$out/artifacts/$name/"crash-* "$out/artifacts/$name/"timeout-* "$out/artifacts/$name/"oom-*; do
    local replay
    replay=$(UBSAN_OPTIONS=print_stacktrace=1 RANKSIGHT_FUZZ_MODE=$mode timeout 120 "$bin/fuzz_$target" \
             -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 "$f" 2>&1)
    cause=$(grep -m1 -E '^SUMMARY:' <<< "$replay" | sed -E 's/ \(.*BuildId[^)]*\)//; s/SUMMARY: //')
    # The first frame that is not a sanitizer interceptor or libc: where it happened.
    frame=$(grep -E '^ +#[0-9]+ ' <<< "$replay" | grep -vE 'interceptor|__asan|__ubsan|libc\.so|sanitizer' |
            head -1 | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in //; s/ \(.*BuildId[^)]*\)//')
    [ -n "$cause" ] || cause="no crash on replay ($(basename "$f" | cut -d- -f1))"
    echo "  $name: $cause | at ${frame:-?} | e.g. $(basename "$f")"
  done | sort | awk -F' [|] e[.]g[.] ' '{ n[$1]++; if (!($1 in ex)) ex[$1] = $2 }
                   END { for (k in n) printf "%4d %s | e.g. %s\n", n[k], k, ex[k] }' | tee -a "$summary"
}

# portable NAME MODE: copies of fuzz_runfile's crash and timeout inputs that replay without RANKSIGHT_FUZZ_MODE
# (byte 1, the mode byte, rewritten to select the same mode by itself), ready for tests/data/fuzz-regressions/.
portable() {
  local name=$1 mode=$2 f
  mkdir -p "$out/portable/$name"
  shopt -s nullglob
  for f in "$out/artifacts/$name/"crash-* "$out/artifacts/$name/"timeout-*; do
    /usr/bin/python3 - "$f" "$mode" "$out/portable/$name/$(basename "$f")" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
if len(data) > 1:  # api: mode = b % 6; bytes: mode = 6 + b % 2; without the variable: mode = b % 8
    b = data[1]
    data[1] = (b & ~7) | (b % 6 if sys.argv[2] == "api" else 6 + b % 2)
open(sys.argv[3], "wb").write(bytes(data))
PY
  done
}

half=$((runfile_min * 30))
run runfile-api runfile "$half" api
run runfile-bytes runfile "$half" bytes
for t in ranktable config cifar; do
  run "$t" "$t" $((other_min * 60))
done
echo "causes (count, sanitizer summary, first frame, an example input):" | tee -a "$summary"
causes runfile-api runfile api
causes runfile-bytes runfile bytes
portable runfile-api api
portable runfile-bytes bytes
for t in ranktable config cifar; do causes "$t" "$t"; done
echo "fuzz-long: summary in $summary; crash inputs in $out/artifacts/ (fuzz_runfile's, replayable without" \
  "RANKSIGHT_FUZZ_MODE, in $out/portable/)" >&2
