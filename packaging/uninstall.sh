#!/bin/sh
# Remove what install.sh (or `make install`) created, exactly: the files and folders listed in
# $DATA/hearthside/installed-files.txt. Your personas, settings, memory, installed packs and
# keyring secrets are never touched (none of them is on that list).
set -eu

DATA=${XDG_DATA_HOME:-$HOME/.local/share}
MANIFEST=$DATA/hearthside/installed-files.txt
if [ ! -f "$MANIFEST" ]; then
  printf 'uninstall.sh: Hearthside is not installed for this user (%s is missing); nothing removed.\n' "$MANIFEST" >&2
  exit 1
fi

# Files first, then whole app trees, then the folders install created, deepest first and only
# when empty (a folder that now holds something else stays).
grep '^file:' "$MANIFEST" | cut -d: -f2- | while IFS= read -r f; do
  if [ -L "$f" ] || [ -f "$f" ]; then rm -f "$f"; fi
done
grep '^tree:' "$MANIFEST" | cut -d: -f2- | while IFS= read -r d; do
  case "$d" in */hearthside/app) rm -rf "$d" ;; esac   # only ever the app folder
done
dirs=$(grep '^dir:' "$MANIFEST" | cut -d: -f2- | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-)
rm -f "$MANIFEST"
printf '%s\n' "$dirs" | while IFS= read -r d; do
  [ -n "$d" ] && rmdir "$d" 2>/dev/null || true
done
printf 'Hearthside is uninstalled. Your personas, settings, memory, packs and secrets were kept.\n'
