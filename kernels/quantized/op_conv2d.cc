// Quantized 2-d convolution: int8 NCHW input, int8 weights symmetric per output channel, int32 bias, int32
// accumulation, fixed-point requantization per output channel (util/requantize.h), clamp to the activation
// range. Grouped and depthwise convolution (groups == C, with or without a channel multiplier) use the same
// loops with one input channel per group.
//
// Everything derived from the constants (each channel's multiplier, weight sum, headroom and bias) and every check
// of them runs once, at load, in conv2d_prepare (util/channel_params.h); execute checks only what a shape decides.
// Layout of the work: output channel outermost, so each channel's constants are read once per call; then a block of up to kBlock outputs of one row accumulates in a small stack array while the
// kernel taps stream over it. That keeps the innermost loop a branch-free multiply-add over contiguous outputs
// for every shape (the valid range of each tap is computed, not tested per element), needs no scratch memory,
// and makes 1x1 convolutions (a matrix product over the whole plane) a special case of the same scheme.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/channel_params.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
namespace {

// Outputs accumulated at once: 512 bytes of stack, small enough for a microcontroller's task stack.
constexpr int64_t kBlock = 128;

// The first and one-past-last output column whose input column ow * stride + offset lies in [0, width).
void valid_columns(int64_t offset, int64_t stride, int64_t width, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *hi = width - 1 - offset < 0 ? 0 : (width - 1 - offset) / stride + 1;
}

// conv2d.out(input, input_scale, input_zero_point, weight, weight_scales, bias, stride, padding, dilation, groups,
//            output_scale, output_zero_point, activation_min, activation_max, out)
constexpr RequantArgs kArgs = {"ember_quantized::conv2d.out", 4, 1, 2, 3, 4, 5, 10, 11, 12, 13};

}  // namespace

KernelMemory conv2d_memory(const KernelArgs& args) { return requant_memory(args, kArgs); }
Error conv2d_prepare(const KernelArgs& args, void* state) { return requant_prepare(args, kArgs, state); }

// The quantization arguments are read from the state conv2d_prepare filled, not from here.
void conv2d_out(KernelContext& ctx, const Tensor& input, double /*input_scale*/, int64_t /*input_zero_point*/,
                const Tensor& weight, const Tensor& /*weight_scales*/, const Tensor* /*bias*/, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, double /*output_scale*/,
                int64_t /*output_zero_point*/, int64_t /*activation_min*/, int64_t /*activation_max*/, Tensor& out) {
  Conv2dGeometry geo;
  if (!conv2d_geometry(ctx, input, weight, stride, padding, dilation, groups, out, &geo)) return;
  const int64_t N = geo.N, C = geo.C, H = geo.H, W = geo.W, OC = geo.OC, Cg = geo.Cg, KH = geo.KH, KW = geo.KW;
  const int64_t OH = geo.OH, OW = geo.OW, sh = geo.sh, sw = geo.sw, ph = geo.ph, pw = geo.pw, dh = geo.dh, dw = geo.dw;
  constexpr uint32_t kMask = selected_dtypes::conv2d_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::conv2d.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    const int8_t* w = weight.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const RequantHeader& q = *ctx.state<RequantHeader>();
    const ChannelParams* channels = channel_params(&q);
    const int32_t zp_in = q.input_zero_point, zp_out = q.output_zero_point;
    const int32_t lo = q.activation_min, hi = q.activation_max;
    const int64_t oc_per_group = OC / groups;
    const int64_t plane = H * W, out_plane = OH * OW, taps = Cg * KH * KW;
    // A 1x1 kernel without stride or padding reads each output's input at the same plane offset, so it can
    // run over the whole plane as one long row; it also never touches padding, so the zero point can be taken
    // out of the inner loop as zp_in * sum(w).
    const bool pointwise = KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
    int32_t acc[kBlock];
    for (int64_t oc = 0; oc < OC; ++oc) {
      const ChannelParams& c = channels[oc];
      const QuantizedMultiplier m{c.multiplier, c.shift};
      const int headroom = c.headroom;
      const int64_t bias_v = c.bias;
      const int8_t* wk = w + oc * taps;
      const int64_t g = oc / oc_per_group;
      const int64_t zp_correction = bias_v - static_cast<int64_t>(zp_in) * c.weight_sum;
      for (int64_t n = 0; n < N; ++n) {
        const int8_t* xg = x + (n * C + g * Cg) * plane;
        int8_t* op = o + (n * OC + oc) * out_plane;
        if (pointwise) {
          for (int64_t p0 = 0; p0 < out_plane; p0 += kBlock) {
            const int64_t nb = out_plane - p0 < kBlock ? out_plane - p0 : kBlock;
            for (int64_t j = 0; j < nb; ++j) acc[j] = 0;
            for (int64_t ci = 0; ci < Cg; ++ci) {
              const int32_t wv = wk[ci];
              const int8_t* xr = xg + ci * plane + p0;
              for (int64_t j = 0; j < nb; ++j) acc[j] += static_cast<int32_t>(xr[j]) * wv;
            }
            for (int64_t j = 0; j < nb; ++j) {
              op[p0 + j] = requantize(saturate_to_int32(acc[j] + zp_correction), m, headroom, zp_out, lo, hi);
            }
          }
          continue;
        }
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow0 = 0; ow0 < OW; ow0 += kBlock) {
            const int64_t nb = OW - ow0 < kBlock ? OW - ow0 : kBlock;
            for (int64_t j = 0; j < nb; ++j) acc[j] = 0;
            for (int64_t ci = 0; ci < Cg; ++ci) {
              const int8_t* xc = xg + ci * plane;
              const int8_t* wc = wk + ci * KH * KW;
              for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t ih = oh * sh - ph + kh * dh;
                // Padding is the input zero point, i.e. real 0: it contributes nothing, so skip it.
                if (ih < 0 || ih >= H) continue;
                const int8_t* xrow = xc + ih * W;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int32_t wv = wc[kh * KW + kw];
                  const int64_t offset = kw * dw - pw;
                  int64_t first, last;
                  valid_columns(offset, sw, W, &first, &last);
                  first = first > ow0 ? first : ow0;
                  last = last < ow0 + nb ? last : ow0 + nb;
                  for (int64_t ow = first; ow < last; ++ow) {
                    acc[ow - ow0] += (static_cast<int32_t>(xrow[ow * sw + offset]) - zp_in) * wv;
                  }
                }
              }
            }
            for (int64_t j = 0; j < nb; ++j) {
              op[oh * OW + ow0 + j] = requantize(saturate_to_int32(acc[j] + bias_v), m, headroom, zp_out, lo, hi);
            }
          }
        }
      }
    }
  });
}

}  // namespace quantized
}  // namespace ember
