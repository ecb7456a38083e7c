#!/usr/bin/env bash
# ckh's whole test suite, what CI runs (.ci/run). Installs what is missing,
# then, each stage timed:
#   gcc       build/ (Release): every Check suite, the scenario library and
#             the fuzz corpora through CTest
#   package   the Debian package, unpacked and installed, the example plugin
#             built against it (scripts/package-test.sh)
#   memcheck  every test binary under valgrind memcheck (CKH_MEMCHECK=0 skips)
#   asan      build-asan/ (gcc, ASan + UBSan): the CTest suite again, but for
#             `programs` (the test programs on their own, outside ckh)
#   clang     build-clang/ (clang, Release, -Werror): the same as asan
#   fuzz      build-fuzz/ (clang, libFuzzer, ASan + UBSan): each fuzz target
#             for CKH_FUZZ_SECONDS (default 30) from its seed corpus
#             (scripts/fuzz.sh; CKH_FUZZ=0 skips)
# A failing stage does not stop the later ones; the summary lists each
# stage's time and result. Exit status 0 only if all pass.
set -euo pipefail
CKH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# chromium: the HTML report test's headless browser; clang and
# libclang-rt-14-dev: the clang build and libFuzzer; dpkg-dev: dpkg-shlibdeps
# for the package's dependencies.
extra="chromium clang libclang-rt-14-dev dpkg-dev"
jobs=$(nproc)
times=()

failed=()

# Runs "$@" as stage $1 (in a subshell, stopping at its first failing
# command), records its wall time and status, and goes on to the next stage
# either way, so one run shows every stage's result.
stage() {
  local name=$1 start=$SECONDS rc
  shift
  echo "== $name"
  set +e
  (set -e; "$@")
  rc=$?
  set -e
  [ "$rc" -eq 0 ] || failed+=("$name")
  times+=("$(printf '%-9s %4ds  %s' "$name" $((SECONDS - start)) "$([ "$rc" -eq 0 ] && echo ok || echo FAILED)")")
}

sanitizer_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

gcc_tests() {
  CKH_SETUP_EXTRA="$extra" bash "$CKH_ROOT/scripts/setup.sh"
  ctest --test-dir "$CKH_ROOT/build" --output-on-failure -j"$jobs"
}

asan_tests() {
  CKH_BUILD="$CKH_ROOT/build-asan" CKH_CMAKE_ARGS="-DCKH_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
    bash "$CKH_ROOT/scripts/setup.sh"
  # `programs` runs the test programs on their own (see clang_tests); the
  # scenario library runs their scenarios under ckh here.
  env "${sanitizer_env[@]}" ctest --test-dir "$CKH_ROOT/build-asan" --output-on-failure -j"$jobs" -E '^programs$'
}

clang_tests() {
  CKH_BUILD="$CKH_ROOT/build-clang" CKH_CMAKE_ARGS="-DCMAKE_C_COMPILER=clang" \
    bash "$CKH_ROOT/scripts/setup.sh"
  # `programs` runs the test programs (Python, shell, prog_saver) on their
  # own, outside ckh: the gcc stage's run of it says all it can.
  ctest --test-dir "$CKH_ROOT/build-clang" --output-on-failure -j"$jobs" -E '^programs$'
}

fuzz_short() {
  # Configures only: fuzz.sh builds the fuzz targets, not the whole tree.
  cmake -S "$CKH_ROOT" -B "$CKH_ROOT/build-fuzz" -DCMAKE_C_COMPILER=clang -DCKH_FUZZERS=ON \
    -DCKH_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  bash "$CKH_ROOT/scripts/fuzz.sh" "$CKH_ROOT/build-fuzz" "${CKH_FUZZ_SECONDS:-30}"
}

stage gcc gcc_tests
stage package bash "$CKH_ROOT/scripts/package-test.sh" "$CKH_ROOT/build"
if [ "${CKH_MEMCHECK:-1}" = 1 ]; then
  stage memcheck bash "$CKH_ROOT/scripts/memcheck.sh" "$CKH_ROOT/build"
fi
stage asan asan_tests
if command -v clang >/dev/null; then
  stage clang clang_tests
  if [ "${CKH_FUZZ:-1}" = 1 ]; then
    stage fuzz fuzz_short
  fi
else
  echo "== clang and fuzz: skipped (clang is not installed)"
fi

echo "== stage times:"
printf '  %s\n' "${times[@]}"
echo "  total     ${SECONDS}s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${failed[*]}"
  exit 1
fi
echo "== all passed"
