#!/usr/bin/env bash
# Checks ckh's Debian package end to end, from an already built build folder:
#   1. `cpack -G DEB` makes ckh_<version>_<arch>.deb; its Version is the
#      project version and its Depends name libc6 and libyaml;
#   2. the package is unpacked into a scratch prefix (dpkg -x: the system is
#      not touched) and the unpacked ckh and headers carry that version;
#   3. examples/backend_example is built against the unpacked prefix with
#      pkg-config (its Makefile) and with find_package (its CMakeLists.txt),
#      and both plugins pass the unpacked `ckh validate-backend`;
#      examples/workload_example is built the same two ways, and the
#      unpacked `ckh run` passes its scenarios with those plugins
#      (found through CKH_PLUGIN_PATH);
#   3b. the package is whole: the docs (README.md, NEWS.md, docs/*.md of
#      the source tree) under share/doc/ckh, the examples, the manual page
#      ckh(1) (a roff page man reads, equal to what the unpacked ckh
#      writes with --help-man), the Python helper, the plugin folder under
#      lib/<triplet>/ckh/plugins; `ckh --help` names share/doc/ckh;
#   3c. plugin lookup in the installed layout: a plugin put in the
#      unpacked plugin folder is found by its bare name with no
#      CKH_PLUGIN_PATH, the verdict names that file and its build id; a
#      copy beside the scenario is taken first and the packaged one named
#      as shadowed;
#   3d. the walk-throughs of docs/WORKLOADS.md and docs/PROGRAMS.md run as
#      written on their installed route (tests/doc_run.py --route
#      installed), the package's files laid over /usr in a private mount
#      namespace (root only; the system's /usr is not touched, and is
#      not needed to hold a ckh);
#   4. only with CKH_PACKAGE_APT=1 (default: CI=true and root): the package is
#      installed with `apt-get install ./ckh_*.deb`, the example is built
#      against /usr and validated, then `apt-get remove ckh` leaves the
#      machine as it was.
# Usage: scripts/package-test.sh [BUILD_DIR]   (default: build)
# Exit status 0 only if every check passes.
set -euo pipefail
CKH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$CKH_ROOT/build}" && pwd)
example=$CKH_ROOT/examples/backend_example
wl_example=$CKH_ROOT/examples/workload_example
work=$(mktemp -d "${TMPDIR:-/tmp}/ckh-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() { echo "package-test: FAIL: $*" >&2; exit 1; }
step() { echo "package-test: $*"; }

# Builds the example plugin against one prefix with both build systems and
# puts each through that prefix's ckh validate-backend. $1 prefix, $2 label.
build_and_validate() {
  local prefix=$1 label=$2 out=$work/$2
  mkdir -p "$out/pc"
  # pkg-config: PKG_CONFIG_LIBDIR, not _PATH, so no other ckh.pc is found.
  PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig make -s -C "$example" OUT="$out/pc" >/dev/null \
    || fail "$label: the example does not build with pkg-config"
  cmake -S "$example" -B "$out/cmake" -Dckh_DIR="$prefix/lib/cmake/ckh" >/dev/null \
    || fail "$label: find_package(ckh) failed"
  cmake --build "$out/cmake" >/dev/null || fail "$label: the example does not build with CMake"
  for so in "$out/pc/libexample_backend.so" "$out/cmake/libexample_backend.so"; do
    "$prefix/bin/ckh" validate-backend "$so" >"$out/validate.log" 2>&1 \
      || { cat "$out/validate.log"; fail "$label: ckh validate-backend $so"; }
  done
  step "$label: example plugin built with pkg-config and find_package, validate-backend passed"
  PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig make -s -C "$wl_example" OUT="$out/pc" all bugs >/dev/null \
    || fail "$label: the workload example does not build with pkg-config"
  cmake -S "$wl_example" -B "$out/wl-cmake" -Dckh_DIR="$prefix/lib/cmake/ckh" >/dev/null \
    || fail "$label: find_package(ckh) failed for the workload example"
  cmake --build "$out/wl-cmake" >/dev/null || fail "$label: the workload example does not build with CMake"
  for dir in "$out/pc" "$out/wl-cmake"; do
    CKH_PLUGIN_PATH=$dir "$prefix/bin/ckh" run "$CKH_ROOT/scenarios/examples/loop-kill-mid-save-node-local.yaml" \
      "$CKH_ROOT/scenarios/examples/bug-rng-not-restored.yaml" >"$out/run.log" 2>&1 \
      || { cat "$out/run.log"; fail "$label: ckh run with the workload example's plugins from $dir"; }
  done
  step "$label: workload example built with pkg-config and find_package, its scenarios passed"
}

# Checks that ckh --version and ckh/version.h under a prefix say $2.
check_version() {
  local prefix=$1 want=$2 got
  got=$("$prefix/bin/ckh" --version)
  [ "$got" = "ckh $want" ] || fail "ckh --version says '$got', the package is $want"
  printf '#include <stdio.h>\n#include "ckh/version.h"\nint main(void){puts(CKH_VERSION_STRING);return 0;}\n' \
    >"$work/version.c"
  cc -I"$prefix/include" -o "$work/version" "$work/version.c"
  got=$("$work/version")
  [ "$got" = "$want" ] || fail "ckh/version.h says '$got', the package is $want"
}

step "cpack -G DEB in $build"
(cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) \
  || { cat "$work/cpack.log"; fail "cpack"; }
debs=("$work"/deb/ckh_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one ckh_*.deb, found: ${debs[*]}"
deb=${debs[0]}
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
depends=$(dpkg-deb -f "$deb" Depends)
want_version=$(sed -n 's/^project(ckh VERSION \([0-9.]*\).*/\1/p' "$CKH_ROOT/CMakeLists.txt")
[ "$(basename "$deb")" = "ckh_${version}_${arch}.deb" ] || fail "file name $(basename "$deb")"
[ "$version" = "$want_version" ] || fail "package version $version, project version $want_version"
case "$depends" in *libc6*) ;; *) fail "Depends lacks libc6: $depends" ;; esac
case "$depends" in *libyaml*) ;; *) fail "Depends lacks libyaml: $depends" ;; esac
step "$(basename "$deb"): Depends: $depends"

step "dpkg -x into a scratch prefix"
dpkg -x "$deb" "$work/root"
prefix=$work/root/usr
for f in bin/ckh include/ckh/plugin.h include/ckh/version.h lib/pkgconfig/ckh.pc \
         lib/cmake/ckh/ckhConfig.cmake lib/cmake/ckh/ckhConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || fail "the package lacks /usr/$f"
done
check_version "$prefix" "$version"

# ---- the package is whole ----
docdir=$prefix/share/doc/ckh
for f in README.md NEWS.md; do
  cmp -s "$CKH_ROOT/$f" "$docdir/$f" || fail "the package lacks /usr/share/doc/ckh/$f (or it differs)"
done
for page in "$CKH_ROOT"/docs/*.md; do
  cmp -s "$page" "$docdir/docs/$(basename "$page")" || fail "the package lacks /usr/share/doc/ckh/docs/$(basename "$page")"
done
for f in examples/backend_example/example_backend.c examples/workload_example/loop.c \
         examples/workload_example/CMakeLists.txt scenarios/examples/loop-kill-shared.yaml; do
  [ -f "$docdir/$f" ] || fail "the package lacks /usr/share/doc/ckh/$f"
done
[ -f "$prefix/share/ckh/python/ckh_result.py" ] || fail "the package lacks the Python helper share/ckh/python/ckh_result.py"
man=$prefix/share/man/man1/ckh.1
[ -f "$man" ] || fail "the package lacks the manual page /usr/share/man/man1/ckh.1"
"$prefix/bin/ckh" --help-man >"$work/ckh.1" || fail "ckh --help-man"
cmp -s "$man" "$work/ckh.1" || fail "the packaged ckh.1 is not what the packaged ckh --help-man writes"
if command -v man >/dev/null; then
  man -l "$man" >"$work/man.txt" 2>"$work/man.err" || { cat "$work/man.err"; fail "man cannot read ckh.1"; }
  grep -q "validate-backend" "$work/man.txt" || fail "ckh.1 does not list validate-backend"
fi
plugindir=
for d in "$prefix"/lib/*/ckh/plugins "$prefix"/lib/ckh/plugins; do
  [ -d "$d" ] && plugindir=${d#"$prefix"/} && break
done
[ -n "$plugindir" ] || fail "the package has no plugin folder under /usr/lib/"
"$prefix/bin/ckh" --help >"$work/help.txt"
grep -q "Reference: $docdir/docs/CLI.md" "$work/help.txt" || { cat "$work/help.txt"; fail "ckh --help does not name $docdir"; }
step "docs, examples, ckh(1), Python helper, /usr/$plugindir: in the package"

build_and_validate "$prefix" unpacked

# ---- plugin lookup in the installed layout ----
# The unpacked ckh finds a plugin in its own plugin folder by its bare name
# (no CKH_PLUGIN_PATH); a copy beside the scenario comes first.
lib=libckh_example_loop.so
cp "$work/unpacked/pc/$lib" "$prefix/$plugindir/$lib"
mkdir -p "$work/scn"
cp "$CKH_ROOT/scenarios/examples/loop-kill-mid-save-node-local.yaml" "$work/scn/"
(cd "$work" && env -u CKH_PLUGIN_PATH "$prefix/bin/ckh" run scn/loop-kill-mid-save-node-local.yaml) \
  >"$work/lookup.log" 2>&1 || { cat "$work/lookup.log"; fail "a plugin in /usr/$plugindir, named bare"; }
grep -q "plugin workload $lib: $prefix/$plugindir/$lib (build-id " "$work/lookup.log" ||
  { cat "$work/lookup.log"; fail "the verdict does not name /usr/$plugindir/$lib and its build id"; }
cp "$work/unpacked/wl-cmake/$lib" "$work/scn/$lib"
(cd "$work" && env -u CKH_PLUGIN_PATH "$prefix/bin/ckh" run scn/loop-kill-mid-save-node-local.yaml) \
  >"$work/lookup.log" 2>&1 || { cat "$work/lookup.log"; fail "a plugin beside the scenario"; }
grep -q "plugin workload $lib: $work/scn/$lib (build-id " "$work/lookup.log" &&
  grep -q "warning: $lib also names $prefix/$plugindir/$lib, shadowed" "$work/lookup.log" ||
  { cat "$work/lookup.log"; fail "the copy beside the scenario is not taken first, or the shadowed one not named"; }
rm -f "$prefix/$plugindir/$lib"
step "plugin lookup: beside the scenario, then /usr/$plugindir (no CKH_PLUGIN_PATH); shadowing named"

# ---- the walk-throughs on the installed route ----
# An overlay of the unpacked package on /usr, seen only by the page's
# session (unshare: a mount namespace of its own), is what `apt-get
# install` would give the user, without installing anything.
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
  step "walk-throughs on the installed route: not run (a private mount namespace needs root and unshare)"
else
  for page in WORKLOADS.md PROGRAMS.md; do
    st=0
    unshare --mount --propagation private sh -c \
      'mount -t overlay ckh-package -o "lowerdir=$1/usr:/usr" /usr && exec /usr/bin/python3 "$2" --route installed "$3"' \
      sh "$work/root" "$CKH_ROOT/tests/doc_run.py" "/usr/share/doc/ckh/docs/$page" >"$work/walk.log" 2>&1 || st=$?
    case $st in
      0) step "docs/$page: $(tail -n 1 "$work/walk.log") (installed route)" ;;
      77) step "docs/$page: $(grep SKIPPED "$work/walk.log" | head -n 1) (installed route)" ;;
      *) cat "$work/walk.log"; fail "docs/$page does not run as written with the installed package (status $st)" ;;
    esac
  done
fi

apt_default=0
if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ]; then apt_default=1; fi
if [ "${CKH_PACKAGE_APT:-$apt_default}" = 1 ]; then
  if dpkg-query -W -f='${Status}' ckh 2>/dev/null | grep -q "install ok installed"; then
    fail "a ckh package is already installed; not replacing it"
  fi
  step "apt-get install ./$(basename "$deb")"
  chmod -R a+rX "$work" # apt reads local packages as its unprivileged user
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/apt.log" 2>&1 \
    || { cat "$work/apt.log"; fail "apt-get install"; }
  status=0
  ( check_version /usr "$version" && build_and_validate /usr installed ) || status=$?
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq ckh >/dev/null 2>&1 \
    || fail "apt-get remove ckh"
  [ "$status" -eq 0 ] || fail "the installed package"
  step "apt-get remove ckh: done"
fi
step "ok"
