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
  if (!plan_adaptive_avg_pool(ctx, input, input_scale, input_zero_point, output_size, output_scale, output_zero_point,
                              out, &plan)) {
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

// The checks and the plan are util/geometry.h's plan_avg_pool, and each window's bounds, divisor, sum and rounding
// its helpers, which kernels/helium's vector pool shares.
void avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                    ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, bool ceil_mode,
                    bool count_include_pad, Optional<int64_t> divisor_override, double output_scale,
                    int64_t output_zero_point, Tensor& out) {
  AvgPoolPlan plan;
  if (!plan_avg_pool(ctx, input, input_scale, input_zero_point, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override, output_scale, output_zero_point, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::avg_pool2d_out_quantized & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    const PoolGeometry& g = plan.g;
    const int8_t* x = input.const_data_ptr<int8_t>();
    int8_t* o = out.mutable_data_ptr<int8_t>();
    AvgPoolSteps steps;
    for (int64_t p = 0; p < g.batch * g.C; ++p) {
      const int8_t* xp = x + p * g.H * g.W;
      int8_t* op = o + p * g.OH * g.OW;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) op[oh * g.OW + ow] = avg_pool_window(plan, xp, oh, ow, &steps);
      }
    }
  });
}

}  // namespace quantized
}  // namespace ember
