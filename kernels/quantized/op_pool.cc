// Quantized average pooling of int8 [N, C, H, W] (or [C, H, W]) tensors: adaptive (output size given) and with a
// fixed window (PyTorch's avg_pool2d: kernel, stride, padding, ceil_mode, count_include_pad, divisor_override).
//
// The average and the change of scale are one fixed-point multiply: out = zp_out + sum(q - zp_in) * M with
// M = input_scale / (output_scale * divisor). The divisor is the window's size (or the override), which differs
// only between windows that meet the border, so each kernel derives multipliers ahead of, or once per change
// of divisor in, its loops rather than per output.
//
// Adaptive: output cell (i, j) averages rows [floor(i*H/OH), ceil((i+1)*H/OH)) and columns likewise: PyTorch's
// rule. Along one dim the rule only ever yields two lengths (ceil(H/OH) and one more, or exactly H/OH when it
// divides), so there are at most four window sizes and four multipliers, all derived before the loops.
#include "ember/selected_dtypes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"
#include "kernels/quantized/util/requantize.h"

namespace ember {
namespace quantized {
namespace {

using portable::fit_output;
using portable::PoolGeometry;

// An average over an even number of elements on one scale lands exactly halfway between two codes often (a
// quarter of 2x2 windows): rounded to even, as the reference's quantize rounds it, not away from zero.
constexpr bool kTiesToEven = true;

}  // namespace

// The checks and the plan (window lengths, the four multipliers) are util/geometry.h's plan_adaptive_avg_pool,
// which kernels/helium's vector pool shares.
void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                             ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point,
                             Tensor& out) {
  PoolPlan plan;
  if (!plan_adaptive_avg_pool(ctx, input, input_scale, input_zero_point, output_size, output_scale,
                              output_zero_point, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::adaptive_avg_pool2d_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::adaptive_avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int64_t H = plan.H, W = plan.W, OH = plan.OH, OW = plan.OW;
    const int64_t planes = input.numel() / (H * W);
    const int32_t zp_in = plan.zp_in, zp_out = plan.zp_out;
    for (int64_t p = 0; p < planes; ++p) {
      const int8_t* xp = x + p * H * W;
      int8_t* op = o + p * OH * OW;
      for (int64_t i = 0; i < OH; ++i) {
        const int64_t h0 = window_start(i, H, OH), h1 = window_end(i, H, OH);
        for (int64_t j = 0; j < OW; ++j) {
          const int64_t w0 = window_start(j, W, OW), w1 = window_end(j, W, OW);
          int32_t sum = 0;
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t w = w0; w < w1; ++w) sum += static_cast<int32_t>(xp[h * W + w]);
          }
          // The zero point once per window rather than once per element; |result| <= 255 * window <= INT32_MAX.
          const int64_t centered = sum - static_cast<int64_t>(zp_in) * (h1 - h0) * (w1 - w0);
          const RequantSteps& m = plan.steps[(h1 - h0) - plan.h_short][(w1 - w0) - plan.w_short];
          const int32_t scaled = apply_requant_steps<kTiesToEven>(static_cast<int32_t>(centered), m);
          op[i * OW + j] = clamp_to_int8(static_cast<int64_t>(scaled) + zp_out, -128, 127);
        }
      }
    }
  });
}

namespace {

// One window of avg_pool2d at output (oh, ow), as ATen bounds it: [h0, h1) x [w0, w1) inside the input, and the
// divisor PyTorch divides its sum by.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

AvgWindow avg_window(const PoolGeometry& g, int64_t oh, int64_t ow, bool count_include_pad,
                     const Optional<int64_t>& divisor_override) {
  AvgWindow a;
  a.h0 = oh * g.SH - g.PH;
  a.w0 = ow * g.SW - g.PW;
  // The window may reach into the padding but, with ceil_mode, not past it: the padded count stops there.
  const int64_t h_end = a.h0 + g.KH < g.H + g.PH ? a.h0 + g.KH : g.H + g.PH;
  const int64_t w_end = a.w0 + g.KW < g.W + g.PW ? a.w0 + g.KW : g.W + g.PW;
  const int64_t padded = (h_end - a.h0) * (w_end - a.w0);
  a.h1 = h_end < g.H ? h_end : g.H;
  a.w1 = w_end < g.W ? w_end : g.W;
  a.h0 = a.h0 > 0 ? a.h0 : 0;
  a.w0 = a.w0 > 0 ? a.w0 : 0;
  a.divisor = divisor_override.has_value() ? divisor_override.value()
              : count_include_pad          ? padded
                                           : (a.h1 - a.h0) * (a.w1 - a.w0);
  return a;
}

// The centered sum, sum(q - zp), of one window of a plane; |result| <= 255 * window elements.
int32_t window_sum(const int8_t* plane, int64_t W, const AvgWindow& a, int32_t zero_point) {
  int32_t sum = 0;
  for (int64_t h = a.h0; h < a.h1; ++h) {
    for (int64_t w = a.w0; w < a.w1; ++w) sum += static_cast<int32_t>(plane[h * W + w]);
  }
  return sum - zero_point * static_cast<int32_t>((a.h1 - a.h0) * (a.w1 - a.w0));
}

}  // namespace

void avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                    ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                    bool ceil_mode, bool count_include_pad, Optional<int64_t> divisor_override, double output_scale,
                    int64_t output_zero_point, Tensor& out) {
  PoolGeometry g;
  const int64_t one[2] = {1, 1};
  EMBER_KERNEL_CHECK(ctx, portable::pool_geometry(input, kernel_size, stride, padding, ArrayRef<int64_t>(one, 2),
                                                  ceil_mode, &g),
                     InvalidArgument, "ember_quantized::avg_pool2d.out: invalid geometry for a %d-d input (kernel and "
                     "stride in [1, 2^31), padding at most half the kernel, a non-empty output)",
                     static_cast<int>(input.dim()));
  EMBER_KERNEL_CHECK(ctx, portable::fit_pooled(out, input, g), InvalidArgument,
                     "ember_quantized::avg_pool2d.out: out must be the input's shape with a %lldx%lld plane",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && out.is_contiguous(), NotSupported,
                     "ember_quantized::avg_pool2d.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char,
                     InvalidArgument, "ember_quantized::avg_pool2d.out: input and out must be int8, got %s and %s",
                     scalar_type_name(input.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, valid_scale(input_scale) && valid_scale(output_scale), InvalidArgument,
                     "ember_quantized::avg_pool2d.out: scales must be positive, got %g and %g", input_scale,
                     output_scale);
  EMBER_KERNEL_CHECK(ctx, in_int8_range(input_zero_point) && in_int8_range(output_zero_point), InvalidArgument,
                     "ember_quantized::avg_pool2d.out: zero points %lld and %lld must be int8 values",
                     static_cast<long long>(input_zero_point), static_cast<long long>(output_zero_point));
  EMBER_KERNEL_CHECK(ctx, !divisor_override.has_value() || divisor_override.value() > 0, InvalidArgument,
                     "ember_quantized::avg_pool2d.out: divisor_override must be positive, got %lld",
                     static_cast<long long>(divisor_override.has_value() ? divisor_override.value() : 0));
  EMBER_KERNEL_CHECK(ctx, g.KH * g.KW <= INT32_MAX / 255, NotSupported,
                     "ember_quantized::avg_pool2d.out: a %lldx%lld window could overflow the int32 sum",
                     static_cast<long long>(g.KH), static_cast<long long>(g.KW));
  // The smallest divisor has the largest multiplier: a window has at least one element, or the override.
  const int64_t smallest = divisor_override.has_value() ? divisor_override.value() : 1;
  EMBER_KERNEL_CHECK(ctx, multiplier_in_range(input_scale / (output_scale * static_cast<double>(smallest))),
                     InvalidArgument, "ember_quantized::avg_pool2d.out: scales %g -> %g give no usable "
                     "requantization multiplier", input_scale, output_scale);
  // As in the adaptive kernel: the spare bits above a window's largest centered sum keep fraction bits through
  // the multiply's two roundings.
  const int headroom = headroom_bits(255 * g.KH * g.KW);
  constexpr uint32_t kMask = selected_dtypes::avg_pool2d_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    const int32_t zp_in = static_cast<int32_t>(input_zero_point);
    const int32_t zp_out = static_cast<int32_t>(output_zero_point);
    // Interior windows share one divisor; the multiplier is derived again only where a border changes it.
    int64_t divisor = 0;
    QuantizedMultiplier m;
    for (int64_t p = 0; p < g.batch * g.C; ++p) {
      const int8_t* xp = x + p * g.H * g.W;
      int8_t* op = o + p * g.OH * g.OW;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const AvgWindow a = avg_window(g, oh, ow, count_include_pad, divisor_override);
          if (a.divisor != divisor) {
            divisor = a.divisor;
            // A window with no input element (divisor 0) sums to 0: any multiplier gives the zero point.
            quantize_multiplier(input_scale / (output_scale * static_cast<double>(divisor > 0 ? divisor : 1)), &m);
          }
          const int32_t scaled =
              multiply_by_quantized_multiplier_lifted<kTiesToEven>(window_sum(xp, g.W, a, zp_in), m, headroom);
          op[oh * g.OW + ow] = clamp_to_int8(static_cast<int64_t>(scaled) + zp_out, -128, 127);
        }
      }
    }
  });
}

}  // namespace quantized
}  // namespace ember
