#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a fixed time, starting from
# its seed corpus. Needs a build folder configured with clang,
# -DCKH_FUZZERS=ON and -DCKH_SANITIZE=ON (see docs/FUZZING.md, "Fuzzing ckh
# itself"); builds the targets there if missing.
#
#   scripts/fuzz.sh [BUILD_DIR [SECONDS]]        defaults: build-fuzz, 30
#
# The seed corpora in tests/fuzz/corpus/ are read only: new inputs go to
# BUILD_DIR/fuzz-corpus/<target>/ and crashes to BUILD_DIR/fuzz-artifacts/
# (crash-*, leak-*, timeout-*, oom-*). Exit status: 0 when no target found
# anything, 1 when one did (its artifacts are listed), 2 on bad usage.
set -euo pipefail
CKH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$CKH_ROOT/build-fuzz}
seconds=${2:-30}
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a number" >&2; exit 2 ;; esac
[ -f "$build/CMakeCache.txt" ] || { echo "fuzz.sh: $build is not a configured build folder" >&2; exit 2; }
grep -q '^CKH_FUZZERS:BOOL=ON' "$build/CMakeCache.txt" \
  || { echo "fuzz.sh: $build was not configured with -DCKH_FUZZERS=ON" >&2; exit 2; }
cmake --build "$build" -j"$(nproc)" --target ckh_fuzzers >/dev/null

targets=$(sed -n 's/^set(CKH_FUZZ_TARGETS \(.*\))$/\1/p' "$CKH_ROOT/cmake/fuzzing.cmake")
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
status=0
for t in $targets; do
  corpus=$build/fuzz-corpus/$t
  mkdir -p "$corpus"
  dict=()
  [ -f "$CKH_ROOT/tests/fuzz/$t.dict" ] && dict=(-dict="$CKH_ROOT/tests/fuzz/$t.dict")
  log=$build/fuzz-$t.log
  # New inputs go to the first folder; the second (the seeds) is only read.
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$build/fuzz_$t" "$corpus" "$CKH_ROOT/tests/fuzz/corpus/$t" "${dict[@]}" \
       -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$artifacts/$t-" >"$log" 2>&1; then
    echo "fuzz $t: ${seconds}s, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs," \
         "$(grep -o 'cov: [0-9]*' "$log" | tail -n 1) edges, no crash"
  else
    echo "fuzz $t: FAILED (log $log)"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -n 20
    status=1
  fi
done
[ "$status" -eq 0 ] || ls -l "$artifacts"
exit $status
