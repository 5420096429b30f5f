// ember_quantized::adaptive_avg_pool2d.out on MVE for global pooling (a 1x1 output: the classifier heads of
// MobileNet, DS-CNN, ResNet): each plane summed 16 bytes per VADDVA, then four planes' centered sums requantized
// as one vector with the plan's multiplier and the scalar pools' ties-to-even final rounding
// (kernels/quantized/util/geometry.h's PoolPlan: the same checks and steps as the scalar kernel). Other output
// sizes go to kernels/quantized.
#include <arm_mve.h>

#include "ember/selected_dtypes.h"
#include "kernels/helium/kernels.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/quantized/kernels.h"
#include "kernels/quantized/util/geometry.h"

namespace ember {
namespace helium {
namespace {

inline int32_t plane_sum(const int8_t* x, int32_t n) {
  int32_t sum = 0;
  for (; n >= 16; n -= 16, x += 16) sum = vaddvaq_s8(sum, vldrbq_s8(x));
  if (n > 0) sum = vaddvaq_s8(sum, vldrbq_z_s8(x, vctp8q(static_cast<uint32_t>(n))));
  return sum;
}

void global_pool(const int8_t* x, int8_t* o, int32_t planes, int32_t plane, const quantized::PoolPlan& p) {
  const quantized::RequantSteps& s = p.steps[0][0];
  const int32x4_t multiplier = vdupq_n_s32(s.multiplier), left = vdupq_n_s32(s.left);
  const int32x4_t lo = vdupq_n_s32(-128), hi = vdupq_n_s32(127);
  // The zero point once per window; |centered| <= 255 * plane, which the checks keep within int32.
  const int32_t zero_sum = p.zp_in * plane;
  for (int32_t c = 0; c < planes; c += 4, o += 4) {
    const int32_t n = planes - c < 4 ? planes - c : 4;
    int32_t lanes[4] = {0, 0, 0, 0};
    for (int32_t i = 0; i < n; ++i) lanes[i] = plane_sum(x + (c + i) * plane, plane) - zero_sum;
    const int32x4_t sums = vldrwq_s32(lanes);
    // Averages round their exact ties to even, as the scalar pools do (kernels/quantized/op_pool.cc).
    const int32x4_t v = requant_steps_lanes_ties_to_even(sums, multiplier, left, s.right);
    vstrbq_p_s32(o, to_output_range(v, p.zp_out, lo, hi), vctp32q(static_cast<uint32_t>(n)));
  }
}

}  // namespace

void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& input, double input_scale, int64_t input_zero_point,
                             ArrayRef<int64_t> output_size, double output_scale, int64_t output_zero_point,
                             Tensor& out) {
  const bool global = output_size.size() == 2 && output_size[0] == 1 && output_size[1] == 1;
  if (!global) {
    quantized::adaptive_avg_pool2d_out(ctx, input, input_scale, input_zero_point, output_size, output_scale,
                                       output_zero_point, out);
    return;
  }
  quantized::PoolPlan plan;
  if (!quantized::plan_adaptive_avg_pool(ctx, input, input_scale, input_zero_point, output_size, output_scale,
                                         output_zero_point, out, &plan)) {
    return;
  }
  constexpr uint32_t kMask = selected_dtypes::adaptive_avg_pool2d_out_helium & dtype_bit(ScalarType::Char);
  EMBER_DISPATCH(ctx, "ember_quantized::adaptive_avg_pool2d.out", kMask, input.scalar_type(), [&](auto) {
    const int32_t plane = static_cast<int32_t>(plan.H * plan.W);
    global_pool(input.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(),
                static_cast<int32_t>(input.numel() / plane), plane, plan);
  });
}

}  // namespace helium
}  // namespace ember
