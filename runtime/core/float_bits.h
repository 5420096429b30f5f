// Bit casts between float and its IEEE encoding, shared by the 16-bit float types. memcpy, not a union or a
// pointer cast: the only form that is defined behaviour and still compiles to a register move.
#pragma once

#include <stdint.h>
#include <string.h>

namespace ember {

namespace internal {
inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}
}  // namespace internal

}  // namespace ember
