#!/usr/bin/env bash
# ckh's whole test suite, what CI runs (.ci/run). Installs what is missing,
# then, each stage timed:
#   gcc       build/ (Release): every Check suite, the test programs on
#             their own and the fuzz corpora through CTest; not the long
#             integration tests (see long_integration), which asan runs
#   package   the Debian package, unpacked and installed, the example plugin
#             built against it (scripts/package-test.sh)
#   memcheck  every test binary under valgrind memcheck (CKH_MEMCHECK=0 skips)
#   asan      build-asan/ (gcc, ASan + UBSan): the CTest suite again, but for
#             the tests with no C code of ckh under test (see no_ckh_code);
#             the only stage that runs the long integration tests
#   clang     build-clang/ (clang, Release, -Werror): the build, every Check
#             suite and the short integration tests; not the long
#             integration tests (see long_integration), which asan runs
#   coverage  only with CKH_COVERAGE_STAGE=1 (a nightly job: about 20 minutes
#             on two cores, more than the 15-minute budget): build-cov/,
#             the whole suite instrumented (scripts/coverage.sh); its
#             line, function and branch figures close the summary
#   fuzz      build-fuzz/ (clang, libFuzzer, ASan + UBSan): each fuzz target
#             for CKH_FUZZ_SECONDS (default 20: three targets, a minute
#             in all, within the 15-minute budget) from its seed corpus
#             (scripts/fuzz.sh; CKH_FUZZ=0 skips)
# A failing stage does not stop the later ones; the summary lists each
# stage's time and result. Exit status 0 only if all pass. After each CTest
# run, scripts/ctest.sh lists the skipped tests with their reasons.
# docs/CI.md says what each stage runs and leaves out, and why.
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
               LSAN_OPTIONS=suppressions=$CKH_ROOT/tests/lsan.supp:print_suppressions=0
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

# Tests with no C code of ckh under test: the test programs on their own
# (`programs`, `programs_torch`: Python, shell and prog_saver outside ckh),
# the Python result helper, the layer check (a CMake script). The gcc stage
# runs them; another build of ckh changes nothing in them. The library's
# expected failures (`programs_verdicts`) run ckh on the same scenarios as
# `scenario_library` does, without their expect sections: gcc only too.
no_ckh_code='programs|programs_torch|programs_verdicts|ckh_result_py|ckh_result_py_torch|layers|layers_catches'
# The long integration tests: the scenario library, the real platform under
# MPI (test_real_coll*), ckh explore on real programs (one node and several),
# ckh under mpirun, command jobs over the S3 endpoint, and the doc pages run
# as written (docs_*). They run once, in the asan stage: their time goes
# to the programs they run (PyTorch, MPI, shell), not to ckh's code, so a
# second run in the gcc or clang build would find little the sanitized
# run does not, at the cost of several minutes; the gcc and clang stages
# run every Check suite (the clang build's -Werror and the optimised gcc
# build are what they add).
long_integration='scenario_library|test_real_coll|test_real_coll_fuse|explore_program|explore_multi|explore_warm|explore_warm_torch|dist|object_store|docs_.*'

gcc_tests() {
  CKH_SETUP_EXTRA="$extra" bash "$CKH_ROOT/scripts/setup.sh"
  bash "$CKH_ROOT/scripts/ctest.sh" "$CKH_ROOT/build" --output-on-failure -j"$jobs" \
    -E "^($long_integration)\$"
}

asan_tests() {
  CKH_BUILD="$CKH_ROOT/build-asan" CKH_CMAKE_ARGS="-DCKH_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
    bash "$CKH_ROOT/scripts/setup.sh"
  env "${sanitizer_env[@]}" bash "$CKH_ROOT/scripts/ctest.sh" "$CKH_ROOT/build-asan" --output-on-failure \
    -j"$jobs" -E "^($no_ckh_code)\$"
}

clang_tests() {
  CKH_BUILD="$CKH_ROOT/build-clang" CKH_CMAKE_ARGS="-DCMAKE_C_COMPILER=clang" \
    bash "$CKH_ROOT/scripts/setup.sh"
  bash "$CKH_ROOT/scripts/ctest.sh" "$CKH_ROOT/build-clang" --output-on-failure -j"$jobs" \
    -E "^($no_ckh_code|$long_integration)\$"
}

fuzz_short() {
  # Configures only: fuzz.sh builds the fuzz targets, not the whole tree.
  cmake -S "$CKH_ROOT" -B "$CKH_ROOT/build-fuzz" -DCMAKE_C_COMPILER=clang -DCKH_FUZZERS=ON \
    -DCKH_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  bash "$CKH_ROOT/scripts/fuzz.sh" "$CKH_ROOT/build-fuzz" "${CKH_FUZZ_SECONDS:-20}"
}

coverage_log=$CKH_ROOT/build-cov/coverage-stage.log
coverage_run() {
  cmake -S "$CKH_ROOT" -B "$CKH_ROOT/build-cov" -DCKH_COVERAGE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build "$CKH_ROOT/build-cov" -j"$jobs" >/dev/null
  bash "$CKH_ROOT/scripts/coverage.sh" "$CKH_ROOT/build-cov" 2>&1 | tee "$coverage_log"
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

if [ "${CKH_COVERAGE_STAGE:-0}" = 1 ]; then
  stage coverage coverage_run
fi

echo "== stage times:"
printf '  %s\n' "${times[@]}"
echo "  total     ${SECONDS}s"
if [ "${CKH_COVERAGE_STAGE:-0}" = 1 ]; then
  echo "== coverage (build-cov/coverage/index.html):"
  sed -n 's/^  \(lines\|functions\|branches\): /  \1: /p' "$coverage_log" 2>/dev/null
  grep '^folders under' "$coverage_log" 2>/dev/null | sed 's/^/  /'
else
  echo "== coverage: not measured (CKH_COVERAGE_STAGE=1 adds the stage, about 20 minutes)"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${failed[*]}"
  exit 1
fi
echo "== all passed"
