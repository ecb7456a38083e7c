#!/usr/bin/env bash
# Runs every test binary of a build under valgrind memcheck (no forking, so
# valgrind sees the test bodies). Any memory error or definite leak fails.
# A binary whose every case was skipped (exit 77, tests/support/skip.h) is
# listed as skipped, with the reasons it printed.
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
             --quiet --log-file="$build/memcheck-$name.log" "$t" >"$build/memcheck-$name.out" 2>&1
  echo $? > "$build/memcheck-$name.rc"
}

# The longest under valgrind first (test_real_coll alone takes about half
# the stage), so that the stage does not end with one of them running
# alone; then the rest in name order.
long="test_real_coll test_command test_cli test_explore"
tests=()
for n in $long; do
  [ -x "$build/$n" ] && [ -f "$build/$n" ] && tests+=("$build/$n")
done
for t in "$build"/test_*; do
  case " $long " in *" $(basename "$t") "*) continue ;; esac
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
for t in $(printf '%s\n' "${tests[@]}" | sort); do
  name=$(basename "$t")
  rc=$(cat "$build/memcheck-$name.rc" 2>/dev/null)
  if [ "$rc" = 0 ]; then
    echo "memcheck: $name ok"
  elif [ "$rc" = 77 ]; then
    echo "memcheck: $name skipped:"
    grep -E '^[A-Za-z0-9_.-]+: SKIPPED' "$build/memcheck-$name.out" | sort -u | sed 's/^/  /'
  else
    echo "memcheck: $name FAILED, exit status $rc (see $build/memcheck-$name.log)"
    grep -v -e '^--[0-9]*-- ' "$build/memcheck-$name.log" | tail -n 30
    echo "  the test's own output, its end:"
    tail -n 15 "$build/memcheck-$name.out" | sed 's/^/  /'
    status=1
  fi
  rm -f "$build/memcheck-$name.rc" "$build/memcheck-$name.out"
done
exit $status
