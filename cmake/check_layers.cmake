# Checks the #include lines of every layer against the allowed arrows
# (docs/ARCHITECTURE.md, "The layers"). Run as the `layers` test:
#   cmake -DCKH_ROOT=<source dir> -P cmake/check_layers.cmake
# Exits with an error listing each offending line.
#
# Why a script when the include paths already keep sim/'s private headers
# away from other layers: a relative path ("../sim/coro.h") gets round an
# include path, and the sim API's public headers (ckh/sim.h, ckh/simfs.h)
# sit in include/ckh/ beside the ops tables, where every layer can see
# them. The rules, for each quoted #include "X":
#   - X must not climb out of its folder ("..") nor be absolute;
#   - X is a public header "ckh/NAME.h", or a header of the layer's own
#     folder (harness/: a header of any harness/ folder, "dir/NAME.h");
#   - harness/ may also include the reports API ("report.h");
#   - platform/, reference/ and reports/ must not include the sim API
#     (ckh/sim.h, ckh/simfs.h, ckh/sim_testing.h, ckh/objstore.h): code under test never asks whether it runs
#     in the simulator, and the layers below sim/ cannot depend on it;
#   - reference/ must not include the real platform either (ckh/posix.h);
#   - real/ (the real platform, beside sim/) must not include the sim
#     API either: its fault rules and matcher are ckh/fault_rule.h, below
#     both (the link check ckh_layer_link_real proves no simulator code is
#     called), and only its rank program (real/rank_main.c, the
#     executable joining the layers, as harness/cli/main.c does) may
#     include harness/ headers.
#   - inside harness/, the wings are in data-flow order, each seeing only
#     itself and the wings before it (no back edges):
#       model   the scenario: grammar and fault descriptors
#       ckhfs   real programs' checkpoint folder over FUSE, their S3 endpoint
#       exec    the executors and their driver: a job's runs, what happened
#       judge   oracles and the verdict of what happened
#       search  engines: fuzzer, shrinker, explorers
#       cli     every verb
#     so "exec/x.h" may be included from exec/, judge/, search/ and cli/,
#     never from model/ or ckhfs/.
# Angle-bracket includes (<stdio.h>) are system headers and not checked.
cmake_minimum_required(VERSION 3.20)
if(NOT CKH_ROOT)
  message(FATAL_ERROR "usage: cmake -DCKH_ROOT=<source dir> -P check_layers.cmake")
endif()

set(sim_api "ckh/sim.h;ckh/simfs.h;ckh/sim_testing.h;ckh/objstore.h")
set(forbid_platform "${sim_api}")
set(forbid_sim "")
set(forbid_reference "${sim_api};ckh/posix.h")
set(forbid_reports "${sim_api}")
set(forbid_harness "")
set(forbid_real "${sim_api}")

set(wings "model;ckhfs;exec;judge;search;cli")

set(bad "")
set(nfiles 0)
foreach(layer platform sim reference reports harness real)
  file(GLOB_RECURSE files "${CKH_ROOT}/${layer}/*.c" "${CKH_ROOT}/${layer}/*.h")
  foreach(f ${files})
    math(EXPR nfiles "${nfiles} + 1")
    get_filename_component(dir "${f}" DIRECTORY)
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" inc "${line}")
      file(RELATIVE_PATH rel "${CKH_ROOT}" "${f}")
      set(ok FALSE)
      if(inc MATCHES "\\.\\." OR inc MATCHES "^/")
        set(why "climbs out of its folder")
      elseif(inc MATCHES "^ckh/[a-z0-9_]+\\.h$")
        list(FIND forbid_${layer} "${inc}" hit)
        if(hit EQUAL -1)
          set(ok TRUE)
        else()
          set(why "${layer}/ must not include ${inc}")
        endif()
      elseif(layer STREQUAL "harness" AND EXISTS "${CKH_ROOT}/harness/${inc}")
        # a header of a harness wing: its own or one before it
        file(RELATIVE_PATH hrel "${CKH_ROOT}/harness" "${f}")
        string(REGEX REPLACE "/.*" "" from "${hrel}")
        string(REGEX REPLACE "/.*" "" to "${inc}")
        list(FIND wings "${from}" rf)
        list(FIND wings "${to}" rt)
        if(rf EQUAL -1 OR rt EQUAL -1)
          set(why "harness/${from}/ or harness/${to}/ is not a wing (${wings})")
        elseif(rt GREATER rf)
          set(why "harness/${from}/ must not include a later wing (order: ${wings})")
        else()
          set(ok TRUE)
        endif()
      elseif(EXISTS "${dir}/${inc}" OR EXISTS "${CKH_ROOT}/${layer}/${inc}")
        set(ok TRUE) # a header of the layer's own folder
      elseif(layer STREQUAL "harness" AND inc STREQUAL "report.h")
        set(ok TRUE) # the reports API
      elseif(layer STREQUAL "real" AND f MATCHES "/rank_main\\.c$" AND EXISTS "${CKH_ROOT}/harness/${inc}")
        set(ok TRUE) # the rank program joins the layers
      else()
        set(why "not a public header nor one of ${layer}/")
      endif()
      if(NOT ok)
        string(APPEND bad "  ${rel}: #include \"${inc}\": ${why}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(bad)
  message(FATAL_ERROR "layer violations:\n${bad}")
endif()
message(STATUS "layers: ${nfiles} files follow the arrows")
