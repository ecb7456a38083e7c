# Fuzz targets of ckh (tests/fuzz/, docs/FUZZING.md "Fuzzing ckh itself").
#
# Every build, any compiler:
#   fuzz_<target>_replay   the target linked with tests/fuzz/replay_main.c;
#                          CTest test fuzz_corpus_<target> replays
#                          tests/fuzz/corpus/<target>/ (seeds and the inputs
#                          of fixed crashes) under the build's sanitizers
#   gen_minidb_corpus      writes the minidb seeds (real files ckh saves)
# With clang and -DCKH_FUZZERS=ON (and -DCKH_SANITIZE=ON):
#   fuzz_<target>          libFuzzer binaries (-fsanitize=fuzzer,address,undefined);
#                          every object of the build carries the coverage
#                          instrumentation (-fsanitize=fuzzer-no-link).
# A dedicated build folder is meant:
#   CC=clang cmake -S . -B build-fuzz -DCKH_FUZZERS=ON -DCKH_SANITIZE=ON \
#         -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build build-fuzz -j2 --target ckh_fuzzers
#   scripts/fuzz.sh build-fuzz 30

option(CKH_FUZZERS "Build the libFuzzer targets of tests/fuzz (clang, with CKH_SANITIZE)" OFF)

# One entry per target: tests/fuzz/fuzz_<name>.c and tests/fuzz/corpus/<name>/.
# A JSON-result target (`json`: reports/ reading back its own output) goes
# here once its parser entry point is public.
set(CKH_FUZZ_TARGETS scenario minidb record_jsonl)

set(ckh_fuzz_dir ${CMAKE_SOURCE_DIR}/tests/fuzz)
if(DEFINED CKH_ALL_LIBS)
  set(ckh_fuzz_libs ${CKH_ALL_LIBS})
else()
  set(ckh_fuzz_libs ${CKH_INSTALL_LIBS})
endif()

# Adds executable name from sources, linked against ckh's libraries.
function(ckh_fuzz_executable name)
  add_executable(${name} ${ARGN})
  target_include_directories(${name} PRIVATE ${ckh_fuzz_dir})
  target_link_libraries(${name} PRIVATE ${ckh_fuzz_libs})
endfunction()

foreach(t ${CKH_FUZZ_TARGETS})
  ckh_fuzz_executable(fuzz_${t}_replay ${ckh_fuzz_dir}/fuzz_${t}.c ${ckh_fuzz_dir}/replay_main.c)
  add_test(NAME fuzz_corpus_${t} COMMAND fuzz_${t}_replay ${ckh_fuzz_dir}/corpus/${t})
  set_tests_properties(fuzz_corpus_${t} PROPERTIES TIMEOUT 300)
endforeach()
ckh_fuzz_executable(gen_minidb_corpus ${ckh_fuzz_dir}/gen_minidb_corpus.c)

if(CKH_FUZZERS)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CKH_FUZZERS needs clang (libFuzzer): CC=clang cmake ...")
  endif()
  if(NOT CKH_SANITIZE)
    message(FATAL_ERROR "CKH_FUZZERS needs -DCKH_SANITIZE=ON (the fuzzers run under ASan+UBSan)")
  endif()
  # CMAKE_C_FLAGS is read when the build files are generated, so this
  # reaches every target of the folder, the libraries included: the fuzzer
  # sees coverage of the code under test, not only of the harness.
  string(APPEND CMAKE_C_FLAGS " -fsanitize=fuzzer-no-link")
  set(ckh_fuzzers)
  foreach(t ${CKH_FUZZ_TARGETS})
    ckh_fuzz_executable(fuzz_${t} ${ckh_fuzz_dir}/fuzz_${t}.c)
    target_compile_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    list(APPEND ckh_fuzzers fuzz_${t})
  endforeach()
  add_custom_target(ckh_fuzzers DEPENDS ${ckh_fuzzers})
endif()
