# Install rules, the pkg-config file and the CMake package config of ckh.
# Included at the end of CMakeLists.txt, once every target exists.
#
# What `cmake --install BUILD --prefix P` puts under P:
#   bin/ckh                               the command (exports the public API to plugins)
#   include/ckh/*.h                       public headers, ckh/version.h included
#   lib/libckh_*.a                        the static libraries of CKH_INSTALL_LIBS
#   lib/pkgconfig/ckh.pc                  relocatable: finds P from its own location
#   lib/cmake/ckh/ckhConfig*.cmake        find_package(ckh) + ckh_add_backend()
#   share/ckh/python/ckh_result.py        the result protocol for Python jobs
#                                         (docs/PROGRAMS.md; PYTHONPATH=P/share/ckh/python)
#   share/doc/ckh/                        README.md, NEWS.md, docs/*.md, examples/,
#                                         scenarios/examples/ (`ckh --help` names it)
#   share/man/man1/ckh.1                  the manual page (`ckh --help-man`)
#   lib/<triplet>/ckh/plugins/            ckh's plugin folder (CKH_INSTALL_PLUGINDIR):
#                                         the last place a bare plugin name is looked up
#
# The build tree is usable the same way without installing:
#   PKG_CONFIG_PATH=BUILD/pkgconfig pkg-config --cflags ckh
#   cmake -Dckh_DIR=BUILD ...
# Both name BUILD/include, which mirrors the installed include folder: the
# generated ckh/version.h lives there, and every public header of include/ckh
# is copied beside it at build time (the project's own targets keep reading
# the sources: include/ comes first on their include path).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# ---- ckh's own folders, relative to the installed executable ----
# The plugin folder, the last place a bare plugin name is looked up
# (harness/exec/workloads.h): under lib/, in the multiarch folder where the
# toolchain has one (Debian: /usr/lib/x86_64-linux-gnu/ckh/plugins), as
# GNUInstallDirs places libraries under /usr.
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(ckh_plugindir_default lib/${CMAKE_LIBRARY_ARCHITECTURE}/ckh/plugins)
else()
  set(ckh_plugindir_default ${CMAKE_INSTALL_LIBDIR}/ckh/plugins)
endif()
set(CKH_INSTALL_PLUGINDIR ${ckh_plugindir_default} CACHE STRING
    "Where ckh looks for plugins named by file name, relative to the install prefix")
# ckh finds them from its own location (harness/exec/home.c), so a package
# unpacked anywhere (scripts/package-test.sh) and `--prefix P` both work.
file(RELATIVE_PATH ckh_bin_to_plugins ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_PREFIX}/${CKH_INSTALL_PLUGINDIR})
file(RELATIVE_PATH ckh_bin_to_docs ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_DOCDIR})
if(TARGET ckh_harness)
  set_property(SOURCE ${CMAKE_SOURCE_DIR}/harness/exec/home.c TARGET_DIRECTORY ckh_harness APPEND PROPERTY
    COMPILE_DEFINITIONS CKH_HOME_BUILD_DIR="${CMAKE_BINARY_DIR}"
    CKH_HOME_SOURCE_DIR="${CMAKE_SOURCE_DIR}" CKH_HOME_BIN_TO_PLUGINS="${ckh_bin_to_plugins}"
    CKH_HOME_BIN_TO_DOCS="${ckh_bin_to_docs}")
endif()

# Static libraries installed; the list follows the library layout of
# CMakeLists.txt (a name that is not a target is skipped).
if(NOT DEFINED CKH_INSTALL_LIBS)
  set(CKH_INSTALL_LIBS ckh_harness ckh_reference ckh_reports ckh_sim ckh_platform)
endif()

# ---- the build tree's include folder: BUILD/include/ckh = installed layout ----
set(CKH_BUILD_INCLUDEDIR ${CMAKE_BINARY_DIR}/include)
file(GLOB CKH_PUBLIC_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/include/ckh/*.h)
# A header removed from the sources must not linger in the mirror.
file(GLOB ckh_mirrored ${CKH_BUILD_INCLUDEDIR}/ckh/*.h)
foreach(h ${ckh_mirrored})
  get_filename_component(n ${h} NAME)
  if(NOT n STREQUAL "version.h" AND NOT EXISTS ${CMAKE_SOURCE_DIR}/include/ckh/${n})
    file(REMOVE ${h})
  endif()
endforeach()
set(ckh_mirror_outputs)
foreach(h ${CKH_PUBLIC_HEADERS})
  get_filename_component(n ${h} NAME)
  add_custom_command(OUTPUT ${CKH_BUILD_INCLUDEDIR}/ckh/${n}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${h} ${CKH_BUILD_INCLUDEDIR}/ckh/${n}
    DEPENDS ${h} VERBATIM)
  list(APPEND ckh_mirror_outputs ${CKH_BUILD_INCLUDEDIR}/ckh/${n})
endforeach()
add_custom_target(ckh_build_headers ALL DEPENDS ${ckh_mirror_outputs})

# ---- pkg-config: build tree (BUILD/pkgconfig/ckh.pc) and install ----
set(CKH_PC_PREFIX ${CMAKE_BINARY_DIR})
set(CKH_PC_INCLUDEDIR ${CKH_BUILD_INCLUDEDIR})
set(CKH_PC_LIBDIR ${CMAKE_BINARY_DIR})
configure_file(${CMAKE_SOURCE_DIR}/cmake/ckh.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/ckh.pc @ONLY)
# The installed file finds its prefix from its own location (pcfiledir),
# so `cmake --install --prefix DIR` anywhere gives a working ckh.pc.
file(RELATIVE_PATH CKH_PC_UP "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
set(CKH_PC_PREFIX "\${pcfiledir}/${CKH_PC_UP}")
set(CKH_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
set(CKH_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/ckh.pc.in ${CMAKE_BINARY_DIR}/install/ckh.pc @ONLY)

# ---- CMake package config: build tree (ckh_DIR=BUILD) and install ----
set(CKH_CFG_INCLUDE_DIR ${CKH_BUILD_INCLUDEDIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/ckhConfig.cmake.in
  ${CMAKE_BINARY_DIR}/ckhConfig.cmake INSTALL_DESTINATION ${CMAKE_BINARY_DIR}
  INSTALL_PREFIX ${CMAKE_BINARY_DIR} PATH_VARS CKH_CFG_INCLUDE_DIR)
set(CKH_CFG_INCLUDE_DIR ${CMAKE_INSTALL_INCLUDEDIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/ckhConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/ckhConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ckh PATH_VARS CKH_CFG_INCLUDE_DIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/ckhConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)

# ---- install rules ----
install(FILES ${CKH_PUBLIC_HEADERS} ${CMAKE_BINARY_DIR}/include/ckh/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ckh)
foreach(t ${CKH_INSTALL_LIBS})
  if(TARGET ${t})
    install(TARGETS ${t} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endforeach()
if(TARGET ckh)
  install(TARGETS ckh RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES ${CMAKE_BINARY_DIR}/install/ckh.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES ${CMAKE_BINARY_DIR}/install/ckhConfig.cmake ${CMAKE_BINARY_DIR}/ckhConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ckh)
# The documentation, laid out as in the source tree so the README's links
# work: PREFIX/share/doc/ckh/{README.md,NEWS.md,docs/*.md}, the example
# projects (examples/) and their scenarios (scenarios/examples/). `ckh
# --help` names this folder (harness/exec/home.c).
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/NEWS.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        PATTERN "*.so" EXCLUDE PATTERN "*.o" EXCLUDE PATTERN "build*" EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scenarios/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/scenarios/examples)
# The library of real programs (docs/PROGRAMS.md copies it from here): the
# scenarios name their programs as ../../tests/programs/..., so both keep
# the source tree's layout.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scenarios/programs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/scenarios/programs)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/tests/programs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/tests/programs
        USE_SOURCE_PERMISSIONS PATTERN "__pycache__" EXCLUDE)
# The manual page ckh(1), written at build time by the command itself from
# its help table (harness/cli/cli_man.c), so it cannot drift from it.
if(TARGET ckh)
  file(GLOB ckh_doc_pages CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/ckh.1
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND $<TARGET_FILE:ckh> --help-man > ${CMAKE_BINARY_DIR}/man/ckh.1
    DEPENDS ckh ${ckh_doc_pages}
    COMMENT "Writing the manual page man/ckh.1 (ckh --help-man)")
  add_custom_target(ckh_man ALL DEPENDS ${CMAKE_BINARY_DIR}/man/ckh.1)
  install(FILES ${CMAKE_BINARY_DIR}/man/ckh.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
# ckh's plugin folder: empty in the package, where plugins a scenario names
# by file name alone may be put for every user (harness/exec/workloads.h).
install(DIRECTORY DESTINATION ${CKH_INSTALL_PLUGINDIR})
# The result protocol's Python helper (standard library only): a training
# script imports it with PYTHONPATH=PREFIX/share/ckh/python.
install(FILES ${CMAKE_SOURCE_DIR}/tools/ckh_result.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ckh/python)
