// IEEE binary16 storage. Arithmetic happens in float: convert, compute, convert back, with round-to-nearest-even
// on the way back (as PyTorch does), so results match eager bit for bit where it matters.
#pragma once

#include <stdint.h>

#include "runtime/core/float_bits.h"

namespace ember {

struct Half {
  uint16_t bits = 0;

  Half() = default;
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  Half(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    const uint32_t x = internal::float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or nan (keep nan quiet)
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: overflow
    if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
      // Add 0.5 as a float so the FPU performs the rounding at the subnormal half's precision.
      const float magic = internal::bits_float(0x3f000000u);  // 0.5
      const float r = internal::bits_float(abs) + magic;
      return static_cast<uint16_t>(sign | (internal::float_bits(r) - 0x3f000000u));
    }
    const uint32_t mant_odd = (abs >> 13) & 1u;
    const uint32_t rounded = abs + 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to even
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }

  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
      // zero or subnormal: mant * 2^-24, exactly representable in float
      const float v = static_cast<float>(mant) * internal::bits_float(0x33800000u);  // 2^-24
      return internal::bits_float(internal::float_bits(v) | sign);
    }
    if (exp == 31) return internal::bits_float(sign | 0x7f800000u | (mant << 13));
    return internal::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

}  // namespace ember
