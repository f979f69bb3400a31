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
nl='
'
case "$HOME$DATA" in
  *"$nl"*) fail "your home or data folder name holds a line break; Hearthside cannot be installed there." ;;
esac

# Desktop Entry values (freedesktop.org spec). A string escapes "\" as "\\"; an Exec argument is
# put in double quotes with \ " ` $ escaped by a backslash and "%" doubled (field codes), and
# the string escaping applies on top. Paths are data here, never part of a sed program.
desktop_string() { printf '%s' "$1" | sed -e 's/\\/\\\\/g'; }
desktop_exec_arg() {
  printf '"%s"' "$(printf '%s' "$1" | sed -e 's/[\\"`$]/\\&/g' -e 's/%/%%/g')" | sed -e 's/\\/\\\\/g'
}

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
# forget what the first run made). Each thing is recorded *before* it is made, so a run that
# fails part way can take back exactly what it made: it ends with a complete install and its
# manifest, or with nothing of its own left behind.
tmp_manifest=$(mktemp "${TMPDIR:-/tmp}/hearthside-install.XXXXXX")
old_manifest=$(mktemp "${TMPDIR:-/tmp}/hearthside-install.XXXXXX")
finished=0
if [ -f "$MANIFEST" ]; then cat "$MANIFEST" >"$tmp_manifest"; cat "$MANIFEST" >"$old_manifest"; fi
record() { grep -qxF -- "$1" "$tmp_manifest" || printf '%s\n' "$1" >>"$tmp_manifest"; }
# Undo what this run recorded and an earlier install did not: files, the app tree, then the
# folders it made (deepest first, only when empty).
rollback() {
  grep -vxF -f "$old_manifest" "$tmp_manifest" >"$old_manifest.new" || true
  grep '^file:' "$old_manifest.new" | cut -d: -f2- | while IFS= read -r f; do
    if [ -L "$f" ] || [ -f "$f" ]; then rm -f "$f"; fi
  done
  grep '^tree:' "$old_manifest.new" | cut -d: -f2- | while IFS= read -r d; do
    case "$d" in */hearthside/app) rm -rf "$d" ;; esac
  done
  grep '^dir:' "$old_manifest.new" | cut -d: -f2- | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2- |
    while IFS= read -r d; do rmdir "$d" 2>/dev/null || true; done
  rm -f "$old_manifest.new"
}
on_exit() {
  rc=$?
  rm -rf "$APPDIR.new" "$DATA/applications/.hearthside.desktop.new" 2>/dev/null || true
  if [ "$finished" != 1 ]; then
    rollback
    printf 'install.sh: the install did not finish; what it had made was removed.\n' >&2
    [ "$rc" != 0 ] || rc=1
  fi
  rm -f "$tmp_manifest" "$old_manifest"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 1' HUP INT TERM
# mkdir -p that records each folder it creates (so uninstall can remove it if empty).
mkdirs() {
  _missing=""
  _d=$1
  while [ ! -d "$_d" ]; do _missing="$_d
$_missing"; _d=$(dirname "$_d"); done
  printf '%s' "$_missing" | while IFS= read -r _m; do [ -n "$_m" ] && record "dir:$_m"; done
  mkdir -p "$1"
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
  record "tree:$APPDIR"
  mv "$APPDIR.new" "$APPDIR"
fi

mkdirs "$BIN"
if [ -e "$BIN/hearthside" ] && [ ! -L "$BIN/hearthside" ]; then
  fail "$BIN/hearthside exists and is not a link this script made; move it away and run again."
fi
record "file:$BIN/hearthside"
ln -sfn "$TARGET" "$BIN/hearthside"

mkdirs "$DATA/applications"
exec_value=$(desktop_exec_arg "$BIN/hearthside")
tryexec_value=$(desktop_string "$BIN/hearthside")
record "file:$DATA/applications/hearthside.desktop"
while IFS= read -r line || [ -n "$line" ]; do
  case $line in
    Exec=*) printf 'Exec=%s\n' "$exec_value" ;;
    TryExec=*) printf 'TryExec=%s\n' "$tryexec_value" ;;
    *) printf '%s\n' "$line" ;;
  esac
done <"$DESKTOP_IN" >"$DATA/applications/.hearthside.desktop.new"
mv "$DATA/applications/.hearthside.desktop.new" "$DATA/applications/hearthside.desktop"

for src in "$ICONS"/*/apps/hearthside.*; do
  rel=${src#"$ICONS"/}
  dest=$DATA/icons/hicolor/$rel
  mkdirs "$(dirname "$dest")"
  record "file:$dest"
  cp "$src" "$dest"
done

cat "$tmp_manifest" >"$MANIFEST"
finished=1
say "Hearthside is installed: find it in your application menu, or run 'hearthside'."
case ":$PATH:" in
  *":$BIN:"*) ;;
  *) say "Note: $BIN is not on your PATH; add it (for example in ~/.profile) to type 'hearthside' in a terminal." ;;
esac
