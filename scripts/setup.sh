#!/usr/bin/env bash
# Installs whatever ckh's build and tests need that is missing (Debian 12,
# as root, apt-get only), then configures and builds ckh into build/.
# Sourced or run by scripts/main.sh and scripts/test.sh; safe to re-run.
set -euo pipefail

CKH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CKH_BUILD=${CKH_BUILD:-$CKH_ROOT/build}

# package name -> a file or command that shows it is installed
need=()
check_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || need+=("$1"); }
# CKH_SETUP_EXTRA names more packages a caller needs: scripts/test.sh adds
# chromium (the headless browser the HTML report test renders in), clang and
# libclang-rt-14-dev (the clang build and libFuzzer's runtime) and dpkg-dev
# (dpkg-shlibdeps, which computes the Debian package's dependencies).
# strace is in the base list: tests/test_programs.sh compares a saver's
# system calls with it; procps gives it ps (a hung program's process group
# is watched with it). Open MPI (libopenmpi-dev, openmpi-bin) and MPICH
# (libmpich-dev, mpich) are the real platform's launchers and collectives
# (`ckh run --platform real`, docs/REAL.md).
# libmicrohttpd-dev and libexpat1-dev build the S3 endpoint (harness/ckhfs/
# s3_endpoint.c); python3-boto3 and curl are the clients of its tests and of
# the object-store programs (docs/OBJECT_STORE.md); libcurl4-openssl-dev
# builds the libcurl saver (tests/programs/prog_s3_curl.c);
# python3-pytest, python3-munch, python3-isodate, python3-tz,
# python3-dateutil and python3-requests run the pinned part of Ceph's
# s3-tests against it (tests/test_s3_conformance.sh).
# CKH_BUILD (default build/) and CKH_CMAKE_ARGS choose the build folder and
# its options (CKH_CMAKE_ARGS=-DCMAKE_C_COMPILER=clang for a clang build).
for p in build-essential cmake pkg-config check lcov valgrind libjemalloc-dev libyaml-dev fuse3 libfuse3-dev python3-torch strace procps libopenmpi-dev openmpi-bin libmpich-dev mpich libmicrohttpd-dev libexpat1-dev python3-boto3 curl libcurl4-openssl-dev python3-pytest python3-munch python3-isodate python3-tz python3-dateutil python3-requests ${CKH_SETUP_EXTRA:-}; do
  check_pkg "$p"
done

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages (${need[*]}); run as root or install them with apt-get" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

cmake -S "$CKH_ROOT" -B "$CKH_BUILD" -DCMAKE_BUILD_TYPE=Release ${CKH_CMAKE_ARGS:-} >/dev/null
cmake --build "$CKH_BUILD" -j"$(nproc)"
