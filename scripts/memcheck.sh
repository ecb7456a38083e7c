#!/usr/bin/env bash
# Runs every test binary of a build under valgrind memcheck (no forking, so
# valgrind sees the test bodies). Any memory error or definite leak fails.
# A binary whose every case was skipped (exit 77, tests/support/skip.h) is
# listed as skipped, with the reasons it printed.
# The binaries run JOBS at a time (default: the processors; ctest already
# runs the same binaries side by side); each one's verdict is printed in
# name order once all have ended. After a failure, the test's own output
# comes first (its end: the failed check is there), then valgrind's
# report without its warnings about system calls it does not know
# ("unhandled amd64-linux syscall: 434", pidfd_open, with their stacks and
# boilerplate: no suppression file can hide them), which are counted in
# one line instead.
# Usage: scripts/memcheck.sh BUILD_DIR [JOBS]
set -uo pipefail
build=${1:?usage: memcheck.sh BUILD_DIR [JOBS]}
jobs=${2:-$(nproc)}
root=$(cd "$(dirname "$0")/.." && pwd)

# Valgrind's log $1 without its debug lines ("--PID-- ...") and without its
# warnings about system calls it does not handle (each a WARNING line, its
# stack and four lines of boilerplate), which become one line at the end.
valgrind_report() {
  awk '
    /^--[0-9]+-- / && !/unhandled .* syscall/ { next }
    /WARNING: unhandled .* syscall: / {
      n++; nr = $NF; if (!(nr in seen)) { seen[nr] = 1; list = list (list ? ", " : "") nr }
      skip = 1; next
    }
    skip && /^(==|--)[0-9]+(==|--) +(at|by) / { next }
    skip && /You may be able to write your own handler|README_MISSING_SYSCALL_OR_IOCTL|Nevertheless we consider this a bug|bug_reports\.html/ { next }
    { skip = 0; print }
    END { if (n) printf "(%d warning%s of valgrind about system calls it does not handle (%s) left out: not memory errors)\n", n, n == 1 ? "" : "s", list }
  ' "$1"
}

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
    echo "  the test's own output, its end:"
    tail -n 40 "$build/memcheck-$name.out" | sed 's/^/    /'
    echo "  valgrind's report, its end:"
    valgrind_report "$build/memcheck-$name.log" | tail -n 40 | sed 's/^/    /'
    status=1
  fi
  rm -f "$build/memcheck-$name.rc" "$build/memcheck-$name.out"
done
exit $status
