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

// Element-wise clamp with the comparisons of the scalar kernels, so a NaN output stays NaN: MVE's LT also holds
// for unordered operands, so "below lo" is lo > v; GT holds for ordered operands only.
inline float32x4_t clamp_lanes(float32x4_t v, float lo, float hi) {
  const float32x4_t low = vdupq_n_f32(lo);
  v = vpselq_f32(low, v, vcmpgtq_f32(low, v));
  return vpselq_f32(vdupq_n_f32(hi), v, vcmpgtq_n_f32(v, hi));
}

namespace channel_gemm_detail {

// Pixels [p, p + count * P) of the channel block in `st`, count tiles of P.
template <int P, bool Clamp, bool Partial>
inline void tiles_of(ChannelBlockState& st, const ChannelGemm& g, int32_t p, int32_t count, float* out) {
  st.rewind = g.k * g.x_row * 4 - P * 4;
  channel_block_tiles<P, Clamp, Partial>(st, g.x + p, g.x_row * 4, out + p, count);
}

// Every pixel of channels oc0.. (n of them, 1 to 4).
template <bool Clamp, bool Partial>
void channel_rows(const ChannelGemm& g, int32_t oc0, int32_t n) {
  ChannelBlockState st;
  // Lanes past the last channel repeat its address (and bias): they compute and are never stored.
  const uint32x4_t lane = vminq_u32(vidupq_n_u32(0, 1), vdupq_n_u32(static_cast<uint32_t>(n - 1)));
  const float* w0 = g.w + static_cast<intptr_t>(oc0) * g.w_row;
  st.rows = vaddq_n_u32(vmulq_n_u32(lane, static_cast<uint32_t>(g.w_row) * 4u),
                        static_cast<uint32_t>(reinterpret_cast<uintptr_t>(w0)) - 4u);
  const mve_pred16_t keep = vctp32q(static_cast<uint32_t>(n));
  st.bias = g.bias != nullptr ? vldrwq_z_f32(g.bias + oc0, keep) : vdupq_n_f32(0.0f);
  st.out_offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(g.o_row) * 4u);
  st.pairs = g.k / 2;
  st.odd = g.k % 2;
  st.lo = g.lo, st.hi = g.hi;
  st.keep = keep;
  float* out = g.o + static_cast<intptr_t>(oc0) * g.o_row;
  const int32_t whole = g.pixels / 6, p = whole * 6;
  tiles_of<6, Clamp, Partial>(st, g, 0, whole, out);
  switch (g.pixels - p) {
    case 5: return tiles_of<5, Clamp, Partial>(st, g, p, 1, out);
    case 4: return tiles_of<4, Clamp, Partial>(st, g, p, 1, out);
    case 3: return tiles_of<3, Clamp, Partial>(st, g, p, 1, out);
    case 2: return tiles_of<2, Clamp, Partial>(st, g, p, 1, out);
    case 1: return tiles_of<1, Clamp, Partial>(st, g, p, 1, out);
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
