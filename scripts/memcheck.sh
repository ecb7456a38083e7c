#!/usr/bin/env bash
# Runs every test binary of a build under valgrind memcheck (no forking, so
# valgrind sees the test bodies). Any memory error or definite leak fails.
# Usage: scripts/memcheck.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: memcheck.sh BUILD_DIR}
status=0
for t in "$build"/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  log="$build/memcheck-$name.log"
  if CK_FORK=no CKH_VALGRIND=1 CKH_SOURCE_DIR="$(cd "$(dirname "$0")/.." && pwd)" \
     valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
              --suppressions="$(cd "$(dirname "$0")/.." && pwd)/tests/valgrind.supp" \
              --quiet --log-file="$log" "$t" >/dev/null 2>&1; then
    echo "memcheck: $name ok"
  else
    echo "memcheck: $name FAILED (see $log)"
    tail -n 30 "$log"
    status=1
  fi
done
exit $status
