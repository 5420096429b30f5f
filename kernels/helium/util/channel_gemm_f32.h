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
template <int P, bool Clamp>
inline void tiles_of(ChannelBlockState& st, const ChannelGemm& g, int32_t p, int32_t count, float* out) {
  st.rewind = g.k * g.x_row * 4 - P * 4;
  channel_block_tiles<P, Clamp>(st, g.x + p, g.x_row * 4, out + p, count);
}

// Every pixel of channels oc0.. (n of them, 1 to 4).
template <bool Clamp>
void channel_rows(const ChannelGemm& g, int32_t oc0, int32_t n) {
  ChannelBlockState st;
  // Lanes past the last channel repeat it (weights, bias and output row): they store its values again.
  const uint32x4_t lane = vminq_u32(vidupq_n_u32(0, 1), vdupq_n_u32(static_cast<uint32_t>(n - 1)));
  const float* w0 = g.w + static_cast<intptr_t>(oc0) * g.w_row;
  st.rows = vaddq_n_u32(vmulq_n_u32(lane, static_cast<uint32_t>(g.w_row) * 4u),
                        static_cast<uint32_t>(reinterpret_cast<uintptr_t>(w0)) - 4u);
  st.bias = g.bias != nullptr ? vldrwq_gather_shifted_offset_f32(g.bias + oc0, lane) : vdupq_n_f32(0.0f);
  st.out_offsets = vmulq_n_u32(lane, static_cast<uint32_t>(g.o_row) * 4u);
  st.pairs = g.k / 2;
  st.odd = g.k % 2;
  st.lo = g.lo, st.hi = g.hi;
  float* out = g.o + static_cast<intptr_t>(oc0) * g.o_row;
  // Tiles of six pixels, the rest in tiles of three and one: fewer tile shapes, less flash.
  const int32_t sixes = g.pixels / 6, threes = (g.pixels - sixes * 6) / 3, p3 = sixes * 6, p1 = p3 + threes * 3;
  if (sixes > 0) tiles_of<6, Clamp>(st, g, 0, sixes, out);
  if (threes > 0) tiles_of<3, Clamp>(st, g, p3, threes, out);
  if (g.pixels > p1) tiles_of<1, Clamp>(st, g, p1, g.pixels - p1, out);
}

}  // namespace channel_gemm_detail

template <bool Clamp>
void run_channel_gemm(const ChannelGemm& g) {
  for (int32_t oc = 0; oc < g.channels; oc += 4) {
    channel_gemm_detail::channel_rows<Clamp>(g, oc, g.channels - oc < 4 ? g.channels - oc : 4);
  }
}

}  // namespace helium
}  // namespace ember
