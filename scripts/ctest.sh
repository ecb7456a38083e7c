#!/usr/bin/env bash
# Runs CTest on a build folder, then shows each failing test's own output
# (its last 80 lines, read back from the log: under -j, --output-on-failure
# prints it among the other tests' lines, far from the summary; a
# sanitizer's report is there), then lists every test CTest skipped with
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
log=$build/Testing/Temporary/LastTest.log
# The output of test $1 as the log holds it.
test_output() {
  awk -v t="$1" '
    /^[0-9]+\/[0-9]+ Test: / { name = $3; inside = 0; next }
    name == t && /^Output:$/ { inside = 1; getline; next }
    /^<end of output>$/ { inside = 0; name = "" }
    inside { print }' "$log" 2>/dev/null
}
failed=$(sed -n '/^The following tests FAILED:/,$ s/^[[:space:]]*[0-9]* - \(.*\) ([^)]*)$/\1/p' "$out")
if [ -n "$failed" ]; then
  echo "== failed tests, each one's own output (its end):"
  for t in $failed; do
    echo "---- $t"
    test_output "$t" | tail -n 80 | sed 's/^/  /'
  done
fi
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$out")
if [ -n "$skipped" ]; then
  echo "== skipped tests, and why:"
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
