# libFuzzer harnesses of ckh (tests/fuzz/): see docs/FUZZING.md.
option(CKH_FUZZERS "Build the libFuzzer harnesses of tests/fuzz (clang only)" OFF)
