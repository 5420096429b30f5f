// The arithmetic of each int8 tier (level.h), one translation unit per instruction set (x86_512.cc, x86_256.inc
// through x86_avxvnni.cc and x86_avx2.cc, neon.inc through neon.cc and neon_dot.cc), behind one table per tier.
// Everything here is planned by conv.h and gathered by panel.h; these only compute and store.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/optimized/int8/conv.h"
#include "kernels/optimized/int8/finish.h"
#include "kernels/quantized/util/channel_params.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace optimized {

// One panel of gathered pixels against every weight block of one convolution group.
struct GemmTask {
  const uint8_t* panel;  // [vectors][k_groups][lanes * 4 bytes] (panel.h)
  int32_t vectors;       // pixel vectors in the panel
  int32_t pixels;        // pixels in it (the last vector may be partial)
  int32_t k_groups;
  const int8_t* weights;  // this group's blocks: [blocks][k_groups][tile.rows][4 bytes]
  int32_t rows;           // output channels of the group
  const RowFinish* finish;                 // the group's first channel's
  const quantized::ChannelParams* params;  // the same channels', for those finished in 64 bits
  int32_t zero_point_plus_offset;
  OutputRange range;
  int8_t* out;         // the group's first output channel, at the panel's first pixel
  int64_t out_stride;  // elements between output channels (the output plane)
};

// One input channel of a depthwise convolution and its output channels (the channel multiplier's).
struct DepthwiseTask {
  const int8_t* x;  // the input plane, H x W
  int32_t H, W, ph, pw, zero_point;
  int32_t OH, OW, sh, sw, dh, dw, KH;
  int32_t kw_groups, group_step, window_rows, window_pitch, plane_cols;
  int32_t outputs;          // output channels of this input channel
  const uint8_t* weights;   // the first one's packed taps: [KH][kw_groups][4 bytes], then the next one's
  const RowFinish* finish;  // the first one's
  const quantized::ChannelParams* params;
  int32_t zero_point_plus_offset;
  OutputRange range;
  int8_t* out;  // the first one's output plane (the next ones follow)
  uint8_t* plane;    // scratch: the bordered plane, window_rows x plane_cols elements and slack (conv.h)
  size_t plane_elements;
  uint8_t* windows;  // scratch: window_rows x window_pitch windows of 4 bytes
};

// ember_quantized::add's plan (kernels/quantized/util/geometry.h's AddPlan, whose add_one the tiers follow): each
// input less its zero point, lifted by `lift` bits and rescaled, the sum requantized.
struct AddTask {
  quantized::RequantSteps self, other, out;
  int32_t zp_self, zp_other, zp_out, activation_min, activation_max;
  int32_t lift;
};

struct TierKernels {
  void (*gemm)(const GemmTask& task);
  void (*depthwise)(const DepthwiseTask& task);
  // The raw dot products (no correction) of one input row against `rows` weight rows of `n` products each. The
  // row is as the tier takes it (x86 dot tiers: offset by 128, in scratch).
  void (*dot_rows)(const uint8_t* x, const int8_t* w, int32_t n, int32_t rows, int32_t* sums);
  // ember_quantized::add over n elements: quantized::add_one's steps on lanes.
  void (*add)(const int8_t* a, const int8_t* b, int64_t n, const AddTask& task, int8_t* out);
  // One reduction group of a GEMM panel (panel.h's layout) from the group's rows of taps, `pixels` of each, the
  // vectors past them filled with the zero point: `panel` is the group's slot in pixel vector 0, `vector_step` the
  // bytes to the next vector's. Null: panel.cc's portable loop.
  void (*pack)(const int8_t* const* rows, int32_t pixels, int32_t vectors, int32_t zero_point, uint8_t* panel,
               size_t vector_step);
  // quantize_per_tensor from float32 to int8 as kernels/quantized computes it, in float32: x * inv_scale rounded to
  // nearest (ties to even), plus the zero point, clamped to [lo, hi] (NaN to lo), converted exactly.
  void (*quantize)(const float* x, int64_t n, float inv_scale, float zero_point, float lo, float hi, int8_t* out);
  // One exact channel's sums (RowFinish::exact, correction included) to output bytes by the tier's lanes: the step
  // every GEMM tile and depthwise row ends in, exposed so a test can drive it over the whole range of its inputs.
  void (*finish)(const int32_t* sums, int32_t n, const RowFinish& f, const OutputRange& range, int8_t* out);
};

// nullptr where the tier is not built (another architecture).
const TierKernels* x86_512_kernels();
const TierKernels* x86_avxvnni_kernels();
const TierKernels* x86_avx2_kernels();
const TierKernels* neon_dot_kernels();
const TierKernels* neon_kernels();

inline const TierKernels* tier_kernels(Int8Level level) {
  switch (level) {
#if defined(__aarch64__)
    case Int8Level::kDot: return neon_dot_kernels();
    case Int8Level::kWide16: return neon_kernels();
#else
    case Int8Level::kDot512: return x86_512_kernels();
    case Int8Level::kDot: return x86_avxvnni_kernels();
    case Int8Level::kWide16: return x86_avx2_kernels();
#endif
    default: return nullptr;
  }
}

}  // namespace optimized
}  // namespace ember
