#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the installed ranksight-cli finds its engine and its reader
# process (libexec/ranksight), trains from a bundled preset found by name and reads the run, and Debian's python3 imports the installed recorder package
# from the prefix's dist-packages. Usage: install_tree.sh BUILD_DIR
set -euo pipefail
BUILD=$1
PREFIX=$(mktemp -d)
trap 'rm -rf "$PREFIX"' EXIT
cmake --install "$BUILD" --prefix "$PREFIX" > "$PREFIX/install.log"
CLI=$PREFIX/bin/ranksight-cli
test -x "$CLI" || { echo "FAIL: no $CLI"; exit 1; }
test -x "$PREFIX/libexec/ranksight/ranksight-reader" || { echo "FAIL: no reader process installed"; exit 1; }
test -x "$PREFIX/libexec/ranksight/ranksight-engine" || { echo "FAIL: no engine installed"; exit 1; }
# The command line itself loads no LibTorch (the engine does).
ldd "$CLI" | grep -q torch && { echo "FAIL: ranksight-cli links LibTorch"; ldd "$CLI" | grep torch; exit 1; }
# The installed engine (RANKSIGHT_ENGINE unset), and the preset from the prefix's share/ranksight.
env -u RANKSIGHT_ENGINE "$CLI" train --config quick --model mlp --ranks 2 --batch 4 --steps 3 --quiet \
    --out "$PREFIX/run.h5"
# The installed reader, not the build tree's: RANKSIGHT_READER unset, and the build tree out of reach.
env -u RANKSIGHT_READER "$CLI" inspect "$PREFIX/run.h5" --json > "$PREFIX/inspect.json"
grep -q '"steps_recorded": 3' "$PREFIX/inspect.json" || { echo "FAIL: inspect"; cat "$PREFIX/inspect.json"; exit 1; }
PY=$(find "$PREFIX/lib" -path '*dist-packages/ranksight/ddp.py' | head -1)
test -n "$PY" || { echo "FAIL: the ranksight package is not under $PREFIX/lib/*/dist-packages"; exit 1; }
SITE=$(dirname "$(dirname "$PY")")
WHERE=$(cd / && env -u PYTHONPATH PYTHONPATH="$SITE" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c \
    'import ranksight.runfile, ranksight; print(ranksight.__file__)')
case "$WHERE" in
"$SITE"/ranksight/*) ;;
*) echo "FAIL: ranksight imported from $WHERE, not $SITE"; exit 1 ;;
esac
find "$SITE/ranksight" -name '__pycache__' | grep -q . && { echo "FAIL: byte-code caches installed"; exit 1; }
# The native statistics kernel next to it, and the one the installed package loads.
KERNEL=$(cd / && env -u PYTHONPATH -u RANKSIGHT_GRADSTATS_LIB PYTHONPATH="$SITE" PYTHONDONTWRITEBYTECODE=1 \
    /usr/bin/python3 -c 'import ranksight.gradstats as g; print(*g.kernel_info())')
case "$KERNEL" in # kind, library, and the bodies it runs (AVX2 or baseline)
"native $SITE/ranksight/_gradstats.so AVX2" | "native $SITE/ranksight/_gradstats.so baseline") ;;
*) echo "FAIL: statistics kernel: $KERNEL"; exit 1 ;;
esac
find "$SITE/ranksight" -name '*.c' | grep -q . && { echo "FAIL: C sources installed"; exit 1; }
echo "ok: bin/ranksight-cli, libexec/ranksight/ranksight-{engine,reader}, ${SITE#$PREFIX/}/ranksight"
