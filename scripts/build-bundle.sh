#!/usr/bin/env bash
# `make bundle`: the PyInstaller one-folder build, packed as
# dist/hearthside-<version>-linux-x86_64.tar.gz with install.sh, uninstall.sh, the launcher
# and the icons beside the app. Runs with the checkout's .venv (pyinstaller from the `bundle`
# extra). Usage: scripts/build-bundle.sh [OUTDIR]   (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
VERSION=$($PY -c 'import sys; sys.path.insert(0, "desktop"); from hearthside import __version__; print(__version__)')
ARCH=$(uname -m)
NAME=hearthside-$VERSION-linux-$ARCH
WORK=build/bundle

$PY -c 'import PyInstaller' 2>/dev/null || $PY -m pip install -q --disable-pip-version-check -e '.[bundle]'
rm -rf "$WORK/dist" "$WORK/$NAME"
$PY -m PyInstaller --noconfirm --log-level WARN --distpath "$WORK/dist" --workpath "$WORK/work" \
  packaging/hearthside.spec

stage=$WORK/$NAME
mkdir -p "$stage"
mv "$WORK/dist/hearthside" "$stage/app"
printf '%s\n' "$VERSION" >"$stage/app/VERSION"
QT_QPA_PLATFORM=offscreen $PY packaging/make_icons.py "$stage/icons"
cp packaging/install.sh packaging/uninstall.sh packaging/hearthside.desktop "$stage/"
cat >"$stage/README.txt" <<TXT
Hearthside $VERSION for Linux ($ARCH)

Install (no root needed):   ./install.sh
Remove again:               ./uninstall.sh   (your personas, settings, memory and secrets stay)

The app goes to ~/.local/share/hearthside/app, the command to ~/.local/bin/hearthside, and
Hearthside appears in your application menu. More: docs/install.md in the source repository.
TXT
# BUNDLE_GZIP_LEVEL: 6 (gzip's default) for a release; the tests use 1 (a third of the time,
# 8 % larger), as what they check is the content.
tar -C "$WORK" -cf - "$NAME" | gzip "-${BUNDLE_GZIP_LEVEL:-6}" >"$OUT/$NAME.tar.gz"
echo "$OUT/$NAME.tar.gz"
