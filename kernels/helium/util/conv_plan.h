// How the Helium int8 convolution runs a call, decided from shapes alone, so that the memory function (which sees
// only the program) and the kernel (which sees the tensors) agree on the scratch it needs:
//   planar   few input channels per group and few taps (depthwise layers, a network's first layer): the group's
//            input planes are copied once into planes bordered with the input zero point, and each output row is
//            summed four columns per vector, one widening load and one VMLA per tap and input channel, into a
//            row of int32 sums that is then requantized (util/conv_planar.h);
//   patches  everything else: the taps of a block of output pixels are gathered into contiguous patches
//            (the zero point where they fall in the padding), then each patch meets four weight rows at a time
//            in VMLADAVA dot products (util/conv_patches.h).
// Padding holds the zero point, which stands for real 0: (zp - zp) * w adds nothing, exactly as the scalar kernel's
// skipped taps, so the correction bias - zp * sum(w) applies to every output alike.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {
namespace helium {

// Every extent, stride and padding fits int32 (the shape checks bound them): 32-bit arithmetic is what the core
// does in one instruction, where int64 multiplies and divisions are several, or library calls.
struct ConvShape {
  int32_t C, H, W;       // input channels and plane
  int32_t OC, Cg, KH, KW;
  int32_t OH, OW;
  int32_t sh, sw, ph, pw, dh, dw;
  int32_t groups;
};

enum class ConvPath { kPlanar, kPatches };

struct ConvPlan {
  ConvPath path;
  int32_t plane_rows, plane_cols;  // planar: one bordered plane
  int32_t plane_bytes;             // planar: its size with the slack a row's last vector may read past it
  bool flat;                       // planar: unit stride, the output plane summed as one run (conv_planar.cc)
  int32_t sum_vectors;             // planar: four-output vectors summed per loop (the plane's run, or a row)
  int32_t taps;                    // patches: bytes per patch (Cg * KH * KW)
  int32_t patch_pixels;            // patches: output pixels gathered per block
  size_t scratch;
};

// Output pixels gathered per block of patches: a multiple of eight (the transposing copy of a 1x1 convolution
// moves eight bytes per instruction pair), as many as kPatchBlockBytes of patches allow up to kMaxPatchPixels
// (each block's per-channel setup is then shared by more outputs), and never fewer than eight.
constexpr int32_t kMaxPatchPixels = 32;
constexpr int32_t kPatchBlockBytes = 4096;

// Bordered planes larger than this in all are not worth their scratch; such layers take the patches path.
constexpr int64_t kMaxBorderedPlanes = 64 * 1024;

// Planar layers: a 3x3 kernel over at most this many input channels per group, or one input channel per group
// with at most 16 taps. Beyond that the gathered patches' 16-product dot products win.
constexpr int32_t kPlanarMaxChannels = 4;

inline bool planar_shape(const ConvShape& s) {
  const bool three_by_three = s.KH == 3 && s.KW == 3 && s.dh == 1 && s.dw == 1;
  return (three_by_three && s.Cg <= kPlanarMaxChannels) || (s.Cg == 1 && s.KH * s.KW <= 16);
}

// `s` must be a shape the checks accepted, with Cg * KH * KW within kMaxAccumulatedProducts.
inline ConvPlan plan_conv(const ConvShape& s) {
  const int64_t rows = int64_t{s.H} + 2 * int64_t{s.ph}, cols = int64_t{s.W} + 2 * int64_t{s.pw};
  // The last vector of a row may read up to three strides past the row's end: slack after each plane keeps it
  // inside the scratch (those lanes are never stored).
  const int64_t slack = 3 * int64_t{s.sw} + 16;
  if (planar_shape(s) && rows <= kMaxBorderedPlanes && cols <= kMaxBorderedPlanes &&
      (rows * cols + slack) * s.Cg <= kMaxBorderedPlanes) {
    const int64_t plane = (rows * cols + slack + 15) & ~int64_t{15};
    // At unit stride: a run of OH * cols sums, and an int8 staging run the output rows are copied from.
    const bool flat = s.sh == 1 && s.sw == 1;
    const int64_t vectors = flat ? (int64_t{s.OH} * cols + 3) / 4 : (int64_t{s.OW} + 3) / 4;
    const int64_t staging = flat ? vectors * 4 : 0;
    return ConvPlan{ConvPath::kPlanar,
                    static_cast<int32_t>(rows),
                    static_cast<int32_t>(cols),
                    static_cast<int32_t>(plane),
                    flat,
                    static_cast<int32_t>(vectors),
                    0,
                    0,
                    static_cast<size_t>(plane * s.Cg + vectors * 16 + staging)};
  }
  const int32_t taps = s.Cg * s.KH * s.KW;
  int32_t pixels = (kPatchBlockBytes / taps) & ~7;
  pixels = pixels < 8 ? 8 : pixels > kMaxPatchPixels ? kMaxPatchPixels : pixels;
  return ConvPlan{
      ConvPath::kPatches, 0, 0, 0, false, 0, taps, pixels, static_cast<size_t>(pixels) * static_cast<size_t>(taps)};
}

}  // namespace helium
}  // namespace ember
