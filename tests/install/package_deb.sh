#!/usr/bin/env bash
# The Debian package, as a user meets it: `cpack -G DEB` builds ranksight_<version>_amd64.deb; its control
# fields and file list are checked; the desktop entry, MIME type and AppStream file pass their validators
# (and lintian has no error); then the package is extracted into a temporary folder and its own programs
# run from there: ranksight-cli --version, trains a few steps from a bundled preset found by name and
# inspects the run through the packaged reader process, and ranksight opens that run under Xvfb.
# Usage: package_deb.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$WORK" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" > cpack.log 2>&1) ||
    { cat "$WORK/cpack.log"; fail "cpack"; }
DEB=$(ls "$WORK"/ranksight_*_amd64.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || { cat "$WORK/cpack.log"; fail "no ranksight_<version>_amd64.deb"; }
echo "built $(basename "$DEB") ($(du -k "$DEB" | cut -f1) KiB)"

# Control: the package's name, and runtime dependencies generated from the binaries.
dpkg-deb -f "$DEB" Package | grep -qx ranksight || fail "Package is not ranksight"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
for lib in libqt6widgets6 libhdf5 libtorch libfmt libqcustomplot libopenblas; do
    echo "$DEPENDS" | grep -q "$lib" || fail "Depends has no $lib: $DEPENDS"
done

dpkg-deb -c "$DEB" | awk '{print $NF}' | sed 's|^\./|/|' > "$WORK/files.txt"
for f in /usr/bin/ranksight /usr/bin/ranksight-cli /usr/libexec/ranksight/ranksight-reader \
         /usr/libexec/ranksight/ranksight-engine \
         /usr/lib/python3/dist-packages/ranksight/ddp.py /usr/lib/python3/dist-packages/ranksight/_gradstats.so \
         /usr/share/ranksight/presets/seed-story.json \
         /usr/share/ranksight/ranktables/hccl_4p.json /usr/share/man/man1/ranksight-cli.1.gz \
         /usr/share/man/man1/ranksight.1.gz /usr/share/doc/ranksight/README.md /usr/share/doc/ranksight/copyright \
         /usr/share/doc/ranksight/changelog.gz /usr/share/applications/org.ranksight.RankSight.desktop \
         /usr/share/mime/packages/org.ranksight.RankSight.xml \
         /usr/share/icons/hicolor/scalable/apps/org.ranksight.RankSight.svg \
         /usr/share/icons/hicolor/48x48/apps/org.ranksight.RankSight.png \
         /usr/share/metainfo/org.ranksight.RankSight.metainfo.xml; do
    grep -qx "$f" "$WORK/files.txt" || fail "the package has no $f"
done
grep -q '__pycache__\|\.pyc$' "$WORK/files.txt" && fail "byte-code caches packaged"

ROOT=$WORK/root
dpkg-deb -x "$DEB" "$ROOT"
# Validators: desktop entry, AppStream, MIME database (a broken XML fails update-mime-database).
desktop-file-validate "$ROOT/usr/share/applications/org.ranksight.RankSight.desktop" ||
    fail "desktop-file-validate"
appstreamcli validate --no-net --pedantic "$ROOT/usr/share/metainfo/org.ranksight.RankSight.metainfo.xml" \
    > "$WORK/appstream.log" 2>&1 || { cat "$WORK/appstream.log"; fail "appstreamcli validate"; }
cp -r "$ROOT/usr/share/mime" "$WORK/mime"
update-mime-database "$WORK/mime" 2>&1 | tee "$WORK/mime.log"
grep -q "x-ranksight-run" "$WORK/mime/magic" "$WORK/mime/globs2" ||
    fail "the MIME database has no application/x-ranksight-run"
if command -v lintian > /dev/null; then
    # every tag shown; errors fail the test, warnings are printed (the README says what they are)
    lintian --tag-display-limit 0 "$DEB" > "$WORK/lintian.log" 2>&1 || true
    cat "$WORK/lintian.log"
    grep -q '^E: ' "$WORK/lintian.log" && fail "lintian reports errors"
else
    echo "lintian not installed: skipped (.ci/install-deps installs it)"
fi

# The extracted programs, not the build tree's: no RANKSIGHT_READER, the build tree's reader out of reach
# because the packaged binaries look next to themselves and in ../libexec/ranksight first.
CLI=$ROOT/usr/bin/ranksight-cli
"$CLI" --version | grep -q "^ranksight-cli " || fail "ranksight-cli --version"
"$ROOT/usr/bin/ranksight" --version | grep -q "^RankSight .*run file format" || fail "ranksight --version"
env -u RANKSIGHT_READER -u RANKSIGHT_ENGINE "$CLI" train --config quick --set steps=3 --set eval_every=0 --quiet \
    --out "$WORK/run.h5" || fail "the packaged CLI could not train from the bundled preset 'quick'"
env -u RANKSIGHT_READER "$CLI" inspect "$WORK/run.h5" --json > "$WORK/inspect.json"
grep -q '"steps_recorded": 3' "$WORK/inspect.json" || { cat "$WORK/inspect.json"; fail "inspect"; }
# The desktop app opens the run and stays up until it is told to close (SIGTERM closes it like the user).
export XDG_CONFIG_HOME=$WORK/config
xvfb-run -a -s "-screen 0 1280x800x24" env -u RANKSIGHT_READER APP="$ROOT/usr/bin/ranksight" RUN="$WORK/run.h5" \
    sh -c '"$APP" "$RUN" & pid=$!; sleep 6; kill -0 $pid || exit 3; kill -TERM $pid; wait $pid' \
    > "$WORK/gui.log" 2>&1 || { cat "$WORK/gui.log"; fail "the packaged ranksight did not stay up on the run, or did not close cleanly"; }
echo "ok: $(basename "$DEB"): $(wc -l < "$WORK/files.txt") paths; Depends: $DEPENDS"
