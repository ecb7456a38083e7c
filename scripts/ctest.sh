#!/usr/bin/env bash
# Runs CTest on a build folder, then lists every test CTest skipped with
# the reason it printed. CTest shows a skipped test (SKIP_RETURN_CODE 77,
# tests/support/skip.h and skip.sh) as "***Skipped" and in "The following
# tests did not run", but not its output; the reasons are read back from
# the build's Testing/Temporary/LastTest.log (the lines "NAME: SKIPPED ...").
# Usage: scripts/ctest.sh BUILD_DIR [CTEST ARGS...]; exit status: ctest's.
set -uo pipefail
build=${1:?usage: ctest.sh BUILD_DIR [CTEST ARGS...]}
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
ctest --test-dir "$build" "$@" | tee "$out"
rc=${PIPESTATUS[0]}
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$out")
if [ -n "$skipped" ]; then
  echo "== skipped tests, and why:"
  log=$build/Testing/Temporary/LastTest.log
  for t in $skipped; do
    # The lines of test t's output in the log that say what was skipped.
    why=$(awk -v t="$t" '
      /^[0-9]+\/[0-9]+ Test: / { name = $3; next }
      name == t && /^[A-Za-z0-9_.-]+: SKIPPED/ { print }
      /^<end of output>$/ { name = "" }' "$log" 2>/dev/null | sort -u)
    echo "  $t:"
    if [ -n "$why" ]; then
      printf '%s\n' "$why" | sed 's/^/    /'
    else
      echo "    (no reason printed: see $log)"
    fi
  done
fi
exit "$rc"
