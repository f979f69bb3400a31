#!/usr/bin/env bash
# Wall time and CPU time (user+sys of the test process and every command it started) of each
# test file, first with every CLI call in a new process (HEARTHSIDE_TEST_CLI=subprocess, how
# the suite ran before) and then as tests/conftest.py chooses (in-process for the files in
# IN_PROCESS_CLI_FILES). The two runs of a file are back to back, so they share the machine's
# load. Usage: scripts/time-tests.sh tests/test_mcp_cli.py tests/test_memory_cli.py
set -u
cd "$(dirname "$0")/.."
log=$(mktemp)
times=$(mktemp)
trap 'rm -f "$log" "$times"' EXIT
one() {  # $1: label, $2: file, rest: env assignments
  local label=$1 file=$2; shift 2
  local wall user sys result
  env "$@" /usr/bin/time -o "$times" -f "TIME %e %U %S" \
    scripts/run-tests.sh -q -p no:cacheprovider "$file" >"$log" 2>&1
  read -r _ wall user sys <<<"$(grep '^TIME' "$times" | tail -1)"
  result=$(grep -E "passed|failed|error" "$log" | tail -1)
  printf '%-36s %-11s wall %6.1f s  cpu %6.1f s  %s\n' "$file" "$label" "$wall" "$(echo "$user + $sys" | bc)" "$result"
}
for f in "$@"; do
  one subprocess "$f" HEARTHSIDE_TEST_CLI=subprocess
  one as-is "$f" HEARTHSIDE_TEST_CLI=
done
