/* The entry point every fuzz target of tests/fuzz defines (libFuzzer's
 * interface). A target is built twice: linked with libFuzzer
 * (-fsanitize=fuzzer, clang, CKH_FUZZERS=ON) to search, and linked with
 * replay_main.c (any compiler) so CTest replays its corpus folder,
 * tests/fuzz/corpus/<target>/, in every build. See docs/FUZZING.md. */
#ifndef CKH_FUZZ_H
#define CKH_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Runs one input of size bytes (borrowed for the call). Returns 0; a broken
 * invariant aborts, which libFuzzer and the replay driver report as a crash. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
