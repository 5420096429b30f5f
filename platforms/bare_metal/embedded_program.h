// What platforms/embed_program.py generates for one .pte: the program's bytes and its planned memory pools,
// each placed in the board memory its memory id maps to (board.yaml).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {

struct EmbeddedPool {
  uint8_t* data;
  size_t size;
  const char* memory;  // the board memory the linker placed it in (SRAM, DDR, ...)
};

extern const uint8_t* const kEmbeddedProgram;
extern const size_t kEmbeddedProgramSize;
extern const char* const kEmbeddedProgramName;
extern const char* const kEmbeddedMethod;
extern const EmbeddedPool kEmbeddedPools[];
extern const size_t kEmbeddedNumPools;

}  // namespace ember

namespace ember {

// Only in firmware built from a bundled program (ember_firmware(verify = True)): the whole .bpte, of which
// kEmbeddedProgram is the program.
extern const uint8_t* const kEmbeddedBundle;
extern const size_t kEmbeddedBundleSize;

}  // namespace ember
