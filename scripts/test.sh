#!/usr/bin/env bash
# ckh's whole test suite: installs what is missing, builds, and runs every
# Check suite (and the scenario library) through CTest in the optimized
# build, then every test binary under valgrind memcheck, then the suite
# again under AddressSanitizer + UndefinedBehaviorSanitizer.
# CKH_MEMCHECK=0 skips the valgrind pass. Exit status 0 only if all pass.
set -euo pipefail
CKH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CKH_SETUP_EXTRA="chromium" bash "$CKH_ROOT/scripts/setup.sh"

jobs=$(nproc)
echo "== tests (optimized build)"
ctest --test-dir "$CKH_ROOT/build" --output-on-failure -j"$jobs"

if [ "${CKH_MEMCHECK:-1}" = 1 ]; then
  echo "== tests (valgrind memcheck)"
  bash "$CKH_ROOT/scripts/memcheck.sh" "$CKH_ROOT/build"
fi

echo "== tests (ASan + UBSan build)"
CKH_BUILD="$CKH_ROOT/build-asan" CKH_CMAKE_ARGS="-DCKH_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
  bash "$CKH_ROOT/scripts/setup.sh"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$CKH_ROOT/build-asan" --output-on-failure -j"$jobs"


