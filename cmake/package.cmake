# The Debian package of ckh (CPack). In the build folder:
#   cpack -G DEB        ->  ckh_<version>_<arch>.deb
# It holds what `cmake --install` installs (cmake/install.cmake), under /usr:
# the ckh command, the headers, the static libraries, ckh.pc and the CMake
# package, the Python helper, the documentation and examples under
# /usr/share/doc/ckh, the manual page ckh(1) and the (empty) plugin folder
# /usr/lib/<triplet>/ckh/plugins. The package version is PROJECT_VERSION, the same number
# ckh/version.h (CKH_VERSION_STRING) and so `ckh --version` carry.
#
# Dependencies: the runtime ones of the ckh binary (libc, libyaml, libjemalloc
# when linked) are computed by dpkg-shlibdeps (package dpkg-dev) from the
# binary itself, so they follow the build's options. Headers and static
# libraries need nothing at run time; a plugin author needs a C compiler and
# pkg-config or CMake, which the package suggests.
# Checked by scripts/package-test.sh.

set(CPACK_PACKAGE_NAME ckh)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "deterministic fault-injection harness for checkpoint/resume logic")
set(CPACK_PACKAGE_DESCRIPTION
    "ckh runs the checkpoint/resume logic of distributed training jobs in a deterministic
simulator, injects crashes, torn writes and storage faults, and judges every run
with oracles. The package holds the ckh command and its manual page, the headers
and static libraries, the pkg-config and CMake files for building plugins, the
Python result helper, and the documentation with examples in /usr/share/doc/ckh.")
set(CKH_PACKAGE_CONTACT "ckh maintainers <ckh@localhost>" CACHE STRING
    "Maintainer field of the ckh Debian package")
set(CPACK_PACKAGE_CONTACT ${CKH_PACKAGE_CONTACT})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # ckh_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
find_program(CKH_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(CKH_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  # Without dpkg-dev the runtime dependencies are written by hand from the
  # build's options.
  set(ckh_deb_depends "libc6")
  if(YAML_FOUND)
    string(APPEND ckh_deb_depends ", libyaml-0-2")
  endif()
  if(CKH_JEMALLOC)
    string(APPEND ckh_deb_depends ", libjemalloc2")
  endif()
  if(CKH_FUSE)
    string(APPEND ckh_deb_depends ", libfuse3-3")
  endif()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS ${ckh_deb_depends})
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "gcc | clang, pkg-config | cmake")
# Command jobs mount ckhfs: fusermount3 lets a user who is not root do it.
if(CKH_FUSE)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "fuse3")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/out/" "/reports/out/")
include(CPack)
