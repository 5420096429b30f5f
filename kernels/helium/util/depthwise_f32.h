// Depthwise convolution of one channel on MVE, from a copy of its input plane with a border of zeros (so no tap
// needs a bounds check): each output row is swept four columns per vector, one load and one VFMA by the tap's
// weight per tap. 3x3 taps at unit dilation (MobileNet's) are unrolled, at column stride 1 (contiguous loads) or
// 2 (a gather of every other column); any other kernel, stride or dilation takes the same sweep with its taps in
// loops.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

#include "kernels/helium/util/channel_gemm_f32.h"

namespace ember {
namespace helium {

// A bordered plane: `rows` x `cols` floats, the input at (top, left), zeros around it.
struct BorderedPlane {
  float* data;
  int32_t rows, cols, top, left;
};

// The sweep's last vector in a row reads up to three column strides past the row's last output, and the plane's
// last row has nothing after it: this many floats of slack follow the plane in the scratch.
inline int32_t depthwise_slack_floats(int32_t column_stride) { return 3 * column_stride + 4; }

// Zeros the whole plane and its slack (the border stays zero while each channel's interior is copied in).
inline void zero_plane(const BorderedPlane& p, int32_t slack) {
  float* d = p.data;
  for (int32_t n = p.rows * p.cols + slack; n > 0; n -= 4, d += 4) {
    vstrwq_p_f32(d, vdupq_n_f32(0.0f), vctp32q(static_cast<uint32_t>(n)));
  }
}

// An H x W plane into the plane's interior.
inline void fill_plane(const BorderedPlane& p, const float* x, int32_t H, int32_t W) {
  float* row = p.data + p.top * p.cols + p.left;
  for (int32_t r = 0; r < H; ++r, row += p.cols, x += W) {
    const float* s = x;
    float* d = row;
    for (int32_t n = W; n > 0; n -= 4, s += 4, d += 4) {
      const mve_pred16_t m = vctp32q(static_cast<uint32_t>(n));
      vstrwq_p_f32(d, vldrwq_z_f32(s, m), m);
    }
  }
}

struct DepthwiseRows {
  int32_t OH, OW;
  int32_t KH, KW, sh, sw, dh, dw;
  float lo, hi;
};

// Four columns from `p` at column stride S (0: the runtime stride in `offsets`).
template <int S>
inline float32x4_t load_columns(const float* p, uint32x4_t offsets) {
  if (S == 1) return vldrwq_f32(p);
  return vldrwq_gather_shifted_offset_f32(p, offsets);
}

template <bool Clamp>
inline void store_columns(float* out, float32x4_t v, int32_t n, float lo, float hi) {
  if (Clamp) v = clamp_lanes(v, lo, hi);
  if (n >= 4) {
    vstrwq_f32(out, v);
  } else {
    vstrwq_p_f32(out, v, vctp32q(static_cast<uint32_t>(n)));
  }
}

// 3x3 taps, unit dilation, column stride S (1 or 2).
template <int S, bool Clamp>
void depthwise3x3(const BorderedPlane& p, const DepthwiseRows& d, const float* w, float bias, float* out) {
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), S);
  const float32x4_t b = vdupq_n_f32(bias);
  for (int32_t oh = 0; oh < d.OH; ++oh, out += d.OW) {
    const float* r0 = p.data + oh * d.sh * p.cols;
    const float* r1 = r0 + p.cols;
    const float* r2 = r1 + p.cols;
    for (int32_t ow = 0; ow < d.OW; ow += 4, r0 += 4 * S, r1 += 4 * S, r2 += 4 * S) {
      float32x4_t acc = vfmaq_n_f32(b, load_columns<S>(r0, offsets), w0);
      acc = vfmaq_n_f32(acc, load_columns<S>(r0 + 1, offsets), w1);
      acc = vfmaq_n_f32(acc, load_columns<S>(r0 + 2, offsets), w2);
      acc = vfmaq_n_f32(acc, load_columns<S>(r1, offsets), w3);
      acc = vfmaq_n_f32(acc, load_columns<S>(r1 + 1, offsets), w4);
      acc = vfmaq_n_f32(acc, load_columns<S>(r1 + 2, offsets), w5);
      acc = vfmaq_n_f32(acc, load_columns<S>(r2, offsets), w6);
      acc = vfmaq_n_f32(acc, load_columns<S>(r2 + 1, offsets), w7);
      acc = vfmaq_n_f32(acc, load_columns<S>(r2 + 2, offsets), w8);
      store_columns<Clamp>(out + ow, acc, d.OW - ow, d.lo, d.hi);
    }
  }
}

// Any kernel size, stride and dilation.
template <bool Clamp>
void depthwise_any(const BorderedPlane& p, const DepthwiseRows& d, const float* w, float bias, float* out) {
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(d.sw));
  for (int32_t oh = 0; oh < d.OH; ++oh, out += d.OW) {
    const float* top = p.data + oh * d.sh * p.cols;
    for (int32_t ow = 0; ow < d.OW; ow += 4) {
      float32x4_t acc = vdupq_n_f32(bias);
      const float* tap_row = top + ow * d.sw;
      for (int32_t kh = 0; kh < d.KH; ++kh, tap_row += d.dh * p.cols) {
        for (int32_t kw = 0; kw < d.KW; ++kw) {
          acc = vfmaq_n_f32(acc, load_columns<0>(tap_row + kw * d.dw, offsets), w[kh * d.KW + kw]);
        }
      }
      store_columns<Clamp>(out + ow, acc, d.OW - ow, d.lo, d.hi);
    }
  }
}

template <bool Clamp>
void depthwise_channel(const BorderedPlane& p, const DepthwiseRows& d, const float* w, float bias, float* out) {
  if (d.KH == 3 && d.KW == 3 && d.dh == 1 && d.dw == 1) {
    if (d.sw == 1) return depthwise3x3<1, Clamp>(p, d, w, bias, out);
    if (d.sw == 2) return depthwise3x3<2, Clamp>(p, d, w, bias, out);
  }
  depthwise_any<Clamp>(p, d, w, bias, out);
}

}  // namespace helium
}  // namespace ember
