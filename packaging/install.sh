#!/bin/sh
# Install Hearthside for this user only (no root): the app, a `hearthside` command in
# ~/.local/bin, the application-menu entry and its icons. Idempotent; over an older version
# it upgrades in place. Your personas, settings, memory, packs and secrets are never touched.
#
#   ./install.sh                   from an unpacked bundle (the app is the `app/` folder beside it)
#   install.sh --source CHECKOUT   from a source checkout (`make install`): the command points at
#                                  CHECKOUT/.venv/bin/hearthside, nothing is copied
#
# Every file and folder it creates is listed in $DATA/hearthside/installed-files.txt, and
# uninstall.sh removes exactly those.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
BIN=$HOME/.local/bin
APPDIR=$DATA/hearthside/app
MANIFEST=$DATA/hearthside/installed-files.txt
SOURCE=""
if [ "${1:-}" = "--source" ]; then
  SOURCE=$(cd "${2:?--source needs the checkout folder}" && pwd)
fi

say() { printf '%s\n' "$*"; }
fail() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

if [ -n "$SOURCE" ]; then
  TARGET=$SOURCE/.venv/bin/hearthside
  [ -x "$TARGET" ] || fail "$TARGET is missing: run 'make run' (or 'make test') in $SOURCE first."
  ICONS=$SOURCE/build/icons/hicolor
  DESKTOP_IN=$SOURCE/packaging/hearthside.desktop
else
  [ -x "$HERE/app/hearthside" ] || fail "no app/ folder beside this script: run the install.sh of an unpacked bundle."
  TARGET=$APPDIR/hearthside
  ICONS=$HERE/icons/hicolor
  DESKTOP_IN=$HERE/hearthside.desktop
fi
[ -d "$ICONS" ] || fail "the icons ($ICONS) are missing."

# What an earlier install created stays listed (a re-run creates nothing new but must not
# forget what the first run made).
tmp_manifest=$(mktemp "${TMPDIR:-/tmp}/hearthside-install.XXXXXX")
trap 'rm -f "$tmp_manifest"' EXIT
if [ -f "$MANIFEST" ]; then cat "$MANIFEST" >"$tmp_manifest"; fi
record() { grep -qxF -- "$1" "$tmp_manifest" || printf '%s\n' "$1" >>"$tmp_manifest"; }
# mkdir -p that records each folder it creates (so uninstall can remove it if empty).
mkdirs() {
  _missing=""
  _d=$1
  while [ ! -d "$_d" ]; do _missing="$_d
$_missing"; _d=$(dirname "$_d"); done
  mkdir -p "$1"
  printf '%s' "$_missing" | while IFS= read -r _m; do [ -n "$_m" ] && record "dir:$_m"; done
  return 0
}

mkdirs "$DATA/hearthside"
if [ -z "$SOURCE" ]; then
  # The app: copied beside the old one, then swapped, so a failed copy leaves the old app working.
  rm -rf "$APPDIR.new"
  cp -R "$HERE/app" "$APPDIR.new"
  cp "$HERE/uninstall.sh" "$APPDIR.new/uninstall.sh"
  if [ -d "$APPDIR" ]; then
    old=$(cat "$APPDIR/VERSION" 2>/dev/null || echo "an older version")
    rm -rf "$APPDIR"
    say "Upgrading Hearthside $old in place."
  fi
  mv "$APPDIR.new" "$APPDIR"
  record "tree:$APPDIR"
fi

mkdirs "$BIN"
if [ -e "$BIN/hearthside" ] && [ ! -L "$BIN/hearthside" ]; then
  fail "$BIN/hearthside exists and is not a link this script made; move it away and run again."
fi
ln -sfn "$TARGET" "$BIN/hearthside"
record "file:$BIN/hearthside"

mkdirs "$DATA/applications"
sed -e "s|^Exec=.*|Exec=\"$BIN/hearthside\"|" -e "s|^TryExec=.*|TryExec=$BIN/hearthside|" \
  "$DESKTOP_IN" >"$DATA/applications/hearthside.desktop"
record "file:$DATA/applications/hearthside.desktop"

for src in "$ICONS"/*/apps/hearthside.*; do
  rel=${src#"$ICONS"/}
  dest=$DATA/icons/hicolor/$rel
  mkdirs "$(dirname "$dest")"
  cp "$src" "$dest"
  record "file:$dest"
done

cat "$tmp_manifest" >"$MANIFEST"
say "Hearthside is installed: find it in your application menu, or run 'hearthside'."
case ":$PATH:" in
  *":$BIN:"*) ;;
  *) say "Note: $BIN is not on your PATH; add it (for example in ~/.profile) to type 'hearthside' in a terminal." ;;
esac
