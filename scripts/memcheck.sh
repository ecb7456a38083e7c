#!/usr/bin/env bash
# Runs every test binary of a build under valgrind memcheck (no forking, so
# valgrind sees the test bodies). Any memory error or definite leak fails.
# The binaries run JOBS at a time (default: the processors; ctest already
# runs the same binaries side by side); each one's verdict is printed in
# name order once all have ended, its log tail after a failure.
# Usage: scripts/memcheck.sh BUILD_DIR [JOBS]
set -uo pipefail
build=${1:?usage: memcheck.sh BUILD_DIR [JOBS]}
jobs=${2:-$(nproc)}
root=$(cd "$(dirname "$0")/.." && pwd)

# One binary under valgrind; its exit status in $build/memcheck-NAME.rc.
check_one() {
  local t=$1 name
  name=$(basename "$t")
  CK_FORK=no CKH_VALGRIND=1 CKH_SOURCE_DIR="$root" \
    valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
             --suppressions="$root/tests/valgrind.supp" \
             --quiet --log-file="$build/memcheck-$name.log" "$t" >/dev/null 2>&1
  echo $? > "$build/memcheck-$name.rc"
}

tests=()
for t in "$build"/test_*; do
  [ -x "$t" ] && [ -f "$t" ] && tests+=("$t")
done
running=0
for t in "${tests[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  check_one "$t" &
  running=$((running + 1))
done
wait

status=0
for t in "${tests[@]}"; do
  name=$(basename "$t")
  if [ "$(cat "$build/memcheck-$name.rc" 2>/dev/null)" = 0 ]; then
    echo "memcheck: $name ok"
  else
    echo "memcheck: $name FAILED (see $build/memcheck-$name.log)"
    tail -n 30 "$build/memcheck-$name.log"
    status=1
  fi
  rm -f "$build/memcheck-$name.rc"
done
exit $status
