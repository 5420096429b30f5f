// The convolutions' product: out[oc][p] = bias[oc] + sum_c w[oc][c] * x[c][p] over every output channel and pixel
// of one call, in channel blocks (util/gemm_f32.h) of four channels by six pixels, the last block of each kind
// narrower. Weights, inputs and outputs are read and written where they lie, through their row distances, so a
// pointwise layer runs on its input planes in place and the other layers on a block of gathered patches.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

#include "kernels/helium/util/gemm_f32.h"

namespace ember {
namespace helium {

struct ChannelGemm {
  const float* w;      // channel oc's weights at w + oc * w_row, k of them
  int32_t w_row;
  const float* x;      // step c's inputs at x + c * x_row, one per pixel
  int32_t x_row;
  const float* bias;   // one per channel, or null
  float* o;            // channel oc's outputs at o + oc * o_row, one per pixel
  int32_t o_row;
  int32_t channels, k, pixels;
  float lo, hi;        // the clamp when Clamp (convolution_clamp's bounds, never NaN)
};

// Element-wise clamp with the comparisons of the scalar kernels: a NaN output stays NaN.
inline float32x4_t clamp_lanes(float32x4_t v, float lo, float hi) {
  v = vpselq_f32(vdupq_n_f32(lo), v, vcmpltq_n_f32(v, lo));
  return vpselq_f32(vdupq_n_f32(hi), v, vcmpgtq_n_f32(v, hi));
}

namespace channel_gemm_detail {

// Pixel j's four channels, into their rows of the output (lanes `keep` only, for a partial channel block).
template <bool Clamp, bool Partial>
inline void store_pixel(float* out, uint32x4_t row_offsets, float32x4_t v, const ChannelGemm& g, mve_pred16_t keep) {
  if (Clamp) v = clamp_lanes(v, g.lo, g.hi);
  if (Partial) {
    vstrwq_scatter_offset_p_f32(out, row_offsets, v, keep);
  } else {
    vstrwq_scatter_offset_f32(out, row_offsets, v);
  }
}

template <int P, bool Clamp, bool Partial>
inline void pixel_block(const ChannelGemm& g, uint32x4_t rows, float32x4_t bias, const float* x, float* out,
                        uint32x4_t row_offsets, mve_pred16_t keep) {
  PixelSums s{bias, bias, bias, bias, bias, bias};
  channel_block_steps<P>(rows, x, g.x_row * 4, g.k, s);
  store_pixel<Clamp, Partial>(out, row_offsets, s.p0, g, keep);
  if (P >= 2) store_pixel<Clamp, Partial>(out + 1, row_offsets, s.p1, g, keep);
  if (P >= 3) store_pixel<Clamp, Partial>(out + 2, row_offsets, s.p2, g, keep);
  if (P >= 4) store_pixel<Clamp, Partial>(out + 3, row_offsets, s.p3, g, keep);
  if (P >= 5) store_pixel<Clamp, Partial>(out + 4, row_offsets, s.p4, g, keep);
  if (P >= 6) store_pixel<Clamp, Partial>(out + 5, row_offsets, s.p5, g, keep);
}

// Every pixel of channels oc0.. (n of them, 1 to 4).
template <bool Clamp, bool Partial>
void channel_rows(const ChannelGemm& g, int32_t oc0, int32_t n) {
  // Lanes past the last channel repeat its address (and bias): they compute and are never stored.
  const uint32x4_t lane = vminq_u32(vidupq_n_u32(0, 1), vdupq_n_u32(static_cast<uint32_t>(n - 1)));
  const float* w0 = g.w + static_cast<intptr_t>(oc0) * g.w_row;
  const uint32x4_t rows = vaddq_n_u32(vmulq_n_u32(lane, static_cast<uint32_t>(g.w_row) * 4u),
                                      static_cast<uint32_t>(reinterpret_cast<uintptr_t>(w0)) - 4u);
  const mve_pred16_t keep = vctp32q(static_cast<uint32_t>(n));
  const float32x4_t bias = g.bias != nullptr ? vldrwq_z_f32(g.bias + oc0, keep) : vdupq_n_f32(0.0f);
  const uint32x4_t row_offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(g.o_row) * 4u);
  float* out = g.o + static_cast<intptr_t>(oc0) * g.o_row;
  int32_t p = 0;
  for (; p + 6 <= g.pixels; p += 6) pixel_block<6, Clamp, Partial>(g, rows, bias, g.x + p, out + p, row_offsets, keep);
  switch (g.pixels - p) {
    case 5: return pixel_block<5, Clamp, Partial>(g, rows, bias, g.x + p, out + p, row_offsets, keep);
    case 4: return pixel_block<4, Clamp, Partial>(g, rows, bias, g.x + p, out + p, row_offsets, keep);
    case 3: return pixel_block<3, Clamp, Partial>(g, rows, bias, g.x + p, out + p, row_offsets, keep);
    case 2: return pixel_block<2, Clamp, Partial>(g, rows, bias, g.x + p, out + p, row_offsets, keep);
    case 1: return pixel_block<1, Clamp, Partial>(g, rows, bias, g.x + p, out + p, row_offsets, keep);
    default: return;
  }
}

}  // namespace channel_gemm_detail

template <bool Clamp>
void run_channel_gemm(const ChannelGemm& g) {
  int32_t oc = 0;
  for (; oc + 4 <= g.channels; oc += 4) channel_gemm_detail::channel_rows<Clamp, false>(g, oc, 4);
  if (oc < g.channels) channel_gemm_detail::channel_rows<Clamp, true>(g, oc, g.channels - oc);
}

}  // namespace helium
}  // namespace ember
