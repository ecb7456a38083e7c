# The out-of-tree example (examples/workload_example/: a training-loop
# workload plugin, a saver plugin and the loop's planted-bug variants),
# built as part of ckh's build into ${CMAKE_BINARY_DIR}/plugins/, the build
# tree's plugin folder: the last place a scenario's bare plugin name
# (`job.workload: libckh_example_loop.so`) is looked up, after the
# scenario's folder and CKH_PLUGIN_PATH (harness/exec/workloads.h). The example's own
# CMakeLists.txt is used unchanged: here ckh::headers is the source tree's
# include folders instead of find_package(ckh). Like the backend plugins,
# the libraries link nothing of ckh (the ckh command exports the API).
if(NOT TARGET ckh::headers)
  add_library(ckh_example_headers INTERFACE)
  target_include_directories(ckh_example_headers INTERFACE ${CMAKE_SOURCE_DIR}/include
                             ${CMAKE_BINARY_DIR}/include)
  add_library(ckh::headers ALIAS ckh_example_headers)
endif()
set(CKH_EXAMPLE_OUTPUT_DIR ${CMAKE_BINARY_DIR}/plugins)
add_subdirectory(${CMAKE_SOURCE_DIR}/examples/workload_example
                 ${CMAKE_BINARY_DIR}/examples/workload_example)

# Each planted bug is caught, and the one-line verdict names its cause
# (tests/test_example_bugs.sh runs the scenarios of scenarios/examples/).
if(TARGET ckh)
  add_dependencies(ckh ckh_example_loop ckh_example_saver ckh_example_bug_rng ckh_example_bug_sampler
                   ckh_example_bug_lr ckh_example_bug_momentum ckh_example_bug_latest
                   ckh_example_bug_async)
  add_test(NAME example_bugs
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/test_example_bugs.sh $<TARGET_FILE:ckh>
                   ${CMAKE_SOURCE_DIR})
  set_tests_properties(example_bugs PROPERTIES TIMEOUT 300)
endif()
