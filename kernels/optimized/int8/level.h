// Which int8 kernels this CPU runs, chosen once per call at run time like compute/simd.h's instruction sets, and
// the register tile each one works in. One name per tier, whatever the architecture:
//   kDot512  x86-64 with AVX512-VNNI (with -BW and -VL): VPDPBUSD on 512-bit vectors, 16 output pixels per vector
//   kDot     x86-64 with AVX-VNNI (VEX VPDPBUSD on 256-bit vectors, 8 pixels), or aarch64 with the dot product
//            extension (SDOT, 4 pixels per 128-bit vector)
//   kWide16  x86-64 with AVX2 (VPMADDWD on int16 pairs, 8 pixels), or aarch64 without SDOT (SMULL + SADALP, 4)
//   kScalar  anything else: the op falls through to kernels/quantized's scalar kernel
// Every tier computes the scalar kernel's int32 sums exactly and requantizes them with its steps
// (kernels/quantized/util/requantize.h), so all tiers give the same bits.
#pragma once

#include <stdint.h>

namespace ember {
namespace optimized {

enum class Int8Level : int32_t { kScalar = 0, kWide16 = 1, kDot = 2, kDot512 = 3 };

// The tier this CPU runs, at most the cap below (and, on x86-64, what limit_x86_isa allows).
Int8Level int8_level();
// Caps int8_level(), so one CPU can run every tier (tests, benchmarks). kDot512 lifts the cap.
void limit_int8_level(Int8Level highest);
const char* int8_level_name(Int8Level level);

// How a tier lays out a GEMM: `rows` output channels per register tile (packed weights come in blocks of that
// many), `lanes` output pixels per vector, `group` products per 32-bit lane (the reduction dim is packed in groups
// of that many, 4 bytes per pixel per group at every tier), and `offset`, what the activations carry on top of
// their int8 value (VPDPBUSD multiplies unsigned by signed bytes: x + 128 fits a byte, and the correction
// bias - (zero_point + 128) * sum(w) takes it out again).
struct Int8Tile {
  int32_t rows, lanes, group, offset;
  int32_t max_vectors;  // pixel vectors per register tile
};

inline Int8Tile int8_tile(Int8Level level) {
#if defined(__aarch64__)
  switch (level) {
    case Int8Level::kDot: return Int8Tile{8, 4, 4, 0, 3};
    case Int8Level::kWide16: return Int8Tile{8, 4, 4, 0, 1};
    default: return Int8Tile{1, 1, 1, 0, 1};
  }
#else
  switch (level) {
    case Int8Level::kDot512: return Int8Tile{8, 16, 4, 128, 3};
    case Int8Level::kDot: return Int8Tile{4, 8, 4, 128, 3};
    case Int8Level::kWide16: return Int8Tile{4, 8, 2, 0, 2};
    default: return Int8Tile{1, 1, 1, 0, 1};
  }
#endif
}

}  // namespace optimized
}  // namespace ember
