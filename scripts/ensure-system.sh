#!/usr/bin/env bash
# Install the Debian packages Hearthside needs when they are missing (and we are allowed to).
# Usage: scripts/ensure-system.sh run|test|bundle
set -euo pipefail
want=(libglib2.0-0 libgl1 libegl1 libdbus-1-3 libfontconfig1 libxkbcommon0 libxkbcommon-x11-0
      libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0
      libxcb-render-util0 libxcb-shape0 libxcb-xkb1 dbus gnome-keyring bubblewrap)
# (bubblewrap: the sandbox every MCP program and shell command runs in; without it Hearthside
# says so in doctor and falls back to its argument guard.)
# (dbus brings dbus-run-session: in its own dbus-daemon package on Debian 12, inside dbus on
# older Ubuntu, where naming dbus-daemon would make apt-get fail.)
# The bundle build (make bundle, and the bundle test) needs binutils (PyInstaller reads shared
# libraries with objdump); the bundle/install tests also use xprop (x11-utils) and
# desktop-file-validate (desktop-file-utils); the check-in schedule tests move the wall clock with
# libfaketime (faketime).
if [ "${1:-run}" = test ]; then
  want+=(xvfb xauth trayer imagemagick xdotool x11-utils desktop-file-utils binutils faketime)
fi
if [ "${1:-run}" = bundle ]; then
  want+=(binutils)
fi
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  want+=(python3-venv python3-pip)
fi
command -v dpkg-query >/dev/null 2>&1 || exit 0   # not Debian: nothing to do here
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing system packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
  echo "Please install these Debian packages first: ${missing[*]}" >&2; exit 1; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
