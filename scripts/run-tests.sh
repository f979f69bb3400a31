#!/usr/bin/env bash
# Run the test suite inside a private D-Bus session with an unlocked GNOME Keyring, so the
# keyring tests use the real Secret Service and never the user's own keyring.
# pytest's exit code 5 ("no tests ran") is turned into a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export QT_QPA_PLATFORM=offscreen
# Cache bytecode as Python does by default (into the gitignored __pycache__ folders), even where
# the environment says not to: otherwise every test worker and every `python -m hearthside` the
# tests start compiles Hearthside and rewrites the test files' asserts again (~3 s per worker).
unset PYTHONDONTWRITEBYTECODE
keyring_home=$(mktemp -d)
trap 'rm -rf "$keyring_home"' EXIT
dbus-run-session -- env HOME="$keyring_home" REAL_HOME="${HOME:-}" sh -c '
  printf "hearthside-test" | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1
  export HOME="$REAL_HOME"
  exec .venv/bin/python -m pytest "$@"
' pytest "$@" 2> >(grep -v --line-buffered 'Failed to set fd limit' >&2)
rc=$?
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing." >&2; exit 1; fi
exit "$rc"
