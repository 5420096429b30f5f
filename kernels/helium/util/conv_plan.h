// How the Helium int8 convolution runs a call, decided from shapes alone, so that the memory function (which sees
// only the program) and the kernel (which sees the tensors) agree on the scratch it needs:
//   depthwise  one input channel per group: each channel is copied once into a plane bordered with the input
//              zero point, and its output rows are swept four columns per vector with one VMLA per tap;
//   patches    everything else: the taps of a block of output pixels are gathered into contiguous patches
//              (the zero point where they fall in the padding), then each patch meets four weight rows at a time
//              in VMLADAVA dot products.
// Padding holds the zero point, which stands for real 0: (zp - zp) * w adds nothing, exactly as the scalar kernel's
// skipped taps, so the correction bias - zp * sum(w) applies to every output alike.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {
namespace helium {

struct ConvShape {
  int64_t C, H, W;       // input channels and plane
  int64_t OC, Cg, KH, KW;
  int64_t OH, OW;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t groups;
};

enum class ConvPath { kDepthwise, kPatches };

struct ConvPlan {
  ConvPath path;
  int64_t plane_rows, plane_cols;  // depthwise: the bordered plane
  int64_t taps;                    // patches: bytes per patch (Cg * KH * KW)
  size_t scratch;
};

// Output pixels gathered per block of patches: the transposing copy of a 1x1 convolution moves eight bytes per
// instruction pair, and the block bounds the scratch at eight patches.
constexpr int64_t kPatchPixels = 8;

// A bordered plane larger than this is not worth its scratch; such layers take the patches path.
constexpr int64_t kMaxBorderedPlane = 64 * 1024;

inline ConvPlan plan_conv(const ConvShape& s) {
  const bool depthwise = s.Cg == 1 && s.groups == s.C;
  const int64_t rows = s.H + 2 * s.ph, cols = s.W + 2 * s.pw;
  // The last vector of a row may read up to three strides past the row's end: slack after the plane keeps it
  // inside the scratch (those lanes are never stored).
  const int64_t slack = 3 * s.sw + 16;
  if (depthwise && rows <= kMaxBorderedPlane && cols <= kMaxBorderedPlane && rows * cols + slack <= kMaxBorderedPlane) {
    return ConvPlan{ConvPath::kDepthwise, rows, cols, 0, static_cast<size_t>(rows * cols + slack)};
  }
  const int64_t taps = s.Cg * s.KH * s.KW;
  return ConvPlan{ConvPath::kPatches, 0, 0, taps, static_cast<size_t>(kPatchPixels * taps)};
}

}  // namespace helium
}  // namespace ember
