#!/usr/bin/env bash
# Takes the README's screenshots (docs/screenshots/) from runs this script makes: each picture is the window
# as a user who opens that run sees it. Needs a release build, Xvfb and ImageMagick (../shared/tools/screenshot
# or this script's own fallback), python3-torch for the DDP job. About 7 minutes on 2 cores.
#   tools/readme-screenshots.sh [OUT_DIR]   (default docs/screenshots)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/screenshots}
cli=build/release/app/ranksight-cli
gui=build/release/app/ranksight
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# A GUI command under a virtual display for N seconds, then the screen as a PNG.
shot() {
  local png=$1 secs=$2
  shift 2
  SHOT_OUT=$(readlink -f "$png") SHOT_SECS=$secs xvfb-run -a -s '-screen 0 1600x1000x24' bash -c '
    "$@" & p=$!
    sleep "$SHOT_SECS"
    import -window root "$SHOT_OUT"
    kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; exit 0' _ "$@"
  echo "saved $png"
}

# Each shot starts from the defaults (no remembered layout or run form).
export XDG_CONFIG_HOME="$work/config"

echo "runs..."
"$cli" train --config resources/presets/quick.json --fault sdc-after@60:2 --out "$work/findings.h5" --force >/dev/null
"$cli" train --config resources/presets/seed-story.json --out "$work/seed-story.h5" --force >/dev/null
PYTHONPATH=python OMP_NUM_THREADS=1 /usr/bin/python3 examples/pytorch_ddp.py --out "$work/ddp-eval.h5" \
  --mistake eval-mode >/dev/null
/usr/bin/python3 tests/msprobe/make_msprobe_tree.py "$work/msprobe-tree" --mistake param-not-synced >/dev/null
/usr/bin/python3 tests/msprobe/make_msprobe_dump.py "$work/dump-tree" --mistake nan@1:3 >/dev/null
"$cli" import-msprobe "$work/dump-tree" --out "$work/dump.h5" >/dev/null
/usr/bin/python3 tests/flight/make_fr_dumps.py "$work/fr" --scenario hang >/dev/null
"$cli" import-flight-recorder "$work/fr" --out "$work/hang.h5" --quiet
"$cli" import-msprobe "$work/msprobe-tree" --out "$work/msprobe.h5" >/dev/null
"$cli" train --model mlp --ranks 4 --steps 60 --out "$work/clean60.h5" --force --quiet
"$cli" train --model mlp --ranks 4 --steps 60 --fault sdc-before@25:2:25 --out "$work/flip60.h5" --force --quiet
for layout in 1 2 4; do # O2 on 4 servers of 1 card, 2 of 2, one of 4: the same job, other arithmetic
  "$cli" train --model mlp --ranks 4 --set devices_per_server=$layout --out "$work/o2-$layout.h5" --force --quiet
done

echo "screenshots..."
shot "$out/first-launch.png" 8 "$gui" --runs-dir "$work/runs"
shot "$out/live.png" 14 "$gui" --runs-dir "$work/runs" --start --config resources/presets/quick.json
shot "$out/saved-run.png" 12 "$gui" "$work/seed-story.h5"
shot "$out/findings.png" 12 "$gui" "$work/findings.h5"
shot "$out/ddp-eval-mode.png" 12 "$gui" "$work/ddp-eval.h5"
shot "$out/msprobe-param-not-synced.png" 12 "$gui" "$work/msprobe.h5"
shot "$out/flight-recorder-hang.png" 12 "$gui" "$work/hang.h5"
shot "$out/msprobe-dump-nan.png" 12 "$gui" "$work/dump.h5"
shot "$out/reference.png" 12 "$gui" "$work/flip60.h5" --reference "$work/clean60.h5"
shot "$out/reference-spread.png" 14 "$gui" "$work/o2-2.h5" --reference "$work/o2-4.h5" --spread "$work/o2-1.h5"
