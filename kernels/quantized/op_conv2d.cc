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
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
namespace {

using portable::fit_output;

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
                const Tensor& weight, const Tensor& /*weight_scales*/, const Tensor* /*bias*/,
                ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups,
                double /*output_scale*/, int64_t /*output_zero_point*/, int64_t /*activation_min*/,
                int64_t /*activation_max*/, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, input.dim() == 4 && weight.dim() == 4, InvalidArgument,
                     "ember_quantized::conv2d.out: input and weight must be 4-d (NCHW, OIHW), got %d-d and %d-d",
                     static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  EMBER_KERNEL_CHECK(ctx, (stride.size() == 1 || stride.size() == 2) && (padding.size() == 1 || padding.size() == 2) &&
                              (dilation.size() == 1 || dilation.size() == 2),
                     InvalidArgument, "ember_quantized::conv2d.out: stride, padding and dilation need 1 or 2 values, "
                     "got %d, %d and %d", static_cast<int>(stride.size()), static_cast<int>(padding.size()),
                     static_cast<int>(dilation.size()));
  const int64_t N = input.size(0), C = input.size(1), H = input.size(2), W = input.size(3);
  const int64_t OC = weight.size(0), Cg = weight.size(1), KH = weight.size(2), KW = weight.size(3);
  const int64_t sh = stride[0], sw = stride[stride.size() - 1];
  const int64_t ph = padding[0], pw = padding[padding.size() - 1];
  const int64_t dh = dilation[0], dw = dilation[dilation.size() - 1];
  EMBER_KERNEL_CHECK(ctx, groups > 0 && C % groups == 0 && OC % groups == 0 && Cg == C / groups, InvalidArgument,
                     "ember_quantized::conv2d.out: %lld input channels, %lld output channels and %lld groups do not "
                     "fit a weight of %lld channels per group", static_cast<long long>(C),
                     static_cast<long long>(OC), static_cast<long long>(groups), static_cast<long long>(Cg));
  // Bounded by int32 as tensor sizes are, so the output size arithmetic below cannot overflow int64.
  auto fits = [](int64_t v, int64_t lo) { return v >= lo && v <= INT32_MAX; };
  EMBER_KERNEL_CHECK(ctx, fits(sh, 1) && fits(sw, 1) && fits(dh, 1) && fits(dw, 1) && fits(ph, 0) && fits(pw, 0),
                     InvalidArgument, "ember_quantized::conv2d.out: stride and dilation must be in [1, 2^31), padding "
                     "in [0, 2^31)");
  const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
  const int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
  EMBER_KERNEL_CHECK(ctx, KH > 0 && KW > 0 && OH > 0 && OW > 0, InvalidArgument,
                     "ember_quantized::conv2d.out: a %lldx%lld kernel (dilation %lldx%lld) does not fit the padded "
                     "%lldx%lld input", static_cast<long long>(KH), static_cast<long long>(KW),
                     static_cast<long long>(dh), static_cast<long long>(dw), static_cast<long long>(H + 2 * ph),
                     static_cast<long long>(W + 2 * pw));
  const int64_t shape[4] = {N, OC, OH, OW};
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, 4), InvalidArgument,
                     "ember_quantized::conv2d.out: out must be [%lld, %lld, %lld, %lld]", static_cast<long long>(N),
                     static_cast<long long>(OC), static_cast<long long>(OH), static_cast<long long>(OW));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
                     "ember_quantized::conv2d.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                     InvalidArgument, "ember_quantized::conv2d.out: input and out must be int8, got %s and %s",
                     scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  // The weights, scales, bias, zero points and activation range were checked, and folded into per-channel
  // constants, by conv2d_prepare.
  EMBER_KERNEL_CHECK(ctx, prepared_for(ctx.state<RequantHeader>(), OC, Cg * KH * KW), InvalidState,
                     "ember_quantized::conv2d.out: the weight is not the one its prepare step saw at load (or the "
                     "kernel was called without it)");
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
