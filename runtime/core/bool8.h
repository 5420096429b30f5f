// Bool tensor storage: one byte, true when it is not zero.
//
// A C++ `bool` object may only hold 0 or 1; loading any other byte as one is undefined behaviour, and compilers
// act on it (clang marks bool loads with range metadata, so `b ? x : y` may become a table lookup indexed by the
// byte). A Bool tensor's bytes are not always 0 or 1: a .pte constant, a raw input file, or a memory plan that
// places a Bool tensor on bytes another dtype wrote can hold anything (program_fuzz found a constant byte of 236).
// Kernels therefore see Bool elements as Bool8, which reads the byte and compares it with 0, as PyTorch's
// `tensor.bool()` would for a Byte tensor; they compute in `bool` (ComputeType<Bool8>), and what they store
// through Bool8 is always 0 or 1. Checking the bytes at the boundary instead would miss the aliased plans.
#pragma once

#include <stdint.h>

namespace ember {

struct Bool8 {
  uint8_t bits = 0;

  Bool8() = default;
  constexpr Bool8(bool b) : bits(b ? 1 : 0) {}
  constexpr operator bool() const { return bits != 0; }
};

static_assert(sizeof(Bool8) == 1, "Bool8 is the one-byte storage of a Bool tensor element");

}  // namespace ember
