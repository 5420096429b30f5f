// bfloat16 storage: the high half of a float32, so widening is a shift and narrowing a rounded truncation
// (round-to-nearest-even, as PyTorch does).
#pragma once

#include <stdint.h>

#include "runtime/core/float_bits.h"

namespace ember {

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  BFloat16(float f) : bits(from_float(f)) {}
  operator float() const { return internal::bits_float(static_cast<uint32_t>(bits) << 16); }

  static uint16_t from_float(float f) {
    const uint32_t x = internal::float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet nan
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace ember
